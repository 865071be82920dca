"""TS201: the elementwise product of dloss/dh and dh/dW, and its fix.

DESCRIPTION: ``a * b`` where ``a = d target/d h`` and ``b = d h/d W``
(``tf.gradients`` or ``tape.gradient``, followed through assignments) becomes
the vector-Jacobian product ``tf.gradients(h, W, grad_ys=a)[0]`` or
``tape.gradient(h, W, output_gradients=a)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional

import libcst as cst

from tapeshift.migrate.checks.facts import Facts, Grad, Product
from tapeshift.migrate.checks.codes import CHAIN_RULE
from tapeshift.migrate.engine.toolkit.builders import code_of, keyword_arg
from tapeshift.migrate.engine.findings import Finding, make_finding

DESCRIPTION = "elementwise product of dloss/dh and dh/dW -> vector-Jacobian product"
CODE = CHAIN_RULE.code


@dataclass
class Match:
    product: Product
    upstream: cst.BaseExpression  # the operand holding d target / d h, as written
    upstream_grad: Grad
    local: Grad  # d h / d W, unseeded


def matches(facts: Facts) -> List[Match]:
    out = []
    for p in facts.products:
        for up, loc in ((p.left, p.right), (p.right, p.left)):
            g_up, g_loc = facts.grad_of(up, p.env), facts.grad_of(loc, p.env)
            if g_up is None or g_loc is None or g_loc.seed is not None:
                continue
            if facts.key(g_up.source, p.env) == facts.key(g_loc.target, p.env):
                out.append(Match(p, up, g_up, g_loc))
                break
    return out


def check(facts: Facts, path: str) -> List[Finding]:
    findings = []
    for mt in matches(facts):
        h = code_of(mt.local.target).strip()
        w = code_of(mt.local.source).strip()
        target = code_of(mt.upstream_grad.target).strip()
        node = mt.product.node
        findings.append(make_finding(
            CODE, path, facts.line(node), facts.col(node),
            f"elementwise product of d{target}/d{h} and d{h}/d{w} is not the chain rule "
            f"(the second factor is the gradient of sum({h})); use "
            f"{code_of(_vjp(mt)).strip()}",
            changes_numbers=True,
        ))
    return findings


def _vjp(mt: Match) -> cst.BaseExpression:
    """The vector-Jacobian product that replaces the product."""
    call = mt.local.call
    seed_kw = "grad_ys" if mt.local.kind == "tf1" else "output_gradients"
    args = [a for a in call.args]
    args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    upstream = mt.upstream
    if isinstance(upstream, cst.BinaryOperation):
        upstream = upstream.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    new_call = call.with_changes(args=[*args, keyword_arg(seed_kw, upstream)])
    if mt.local.kind == "tf1":
        return cst.Subscript(value=new_call, slice=[cst.SubscriptElement(cst.Index(cst.Integer("0")))])
    return new_call


class Fix(cst.CSTTransformer):
    """Replace each matched product by its vector-Jacobian product."""

    def __init__(self, facts: Facts):
        self.replacements: Dict[cst.CSTNode, cst.BaseExpression] = {
            mt.product.node: _vjp(mt) for mt in matches(facts)
        }

    def leave_BinaryOperation(self, original, updated):
        return self._swap(original, updated)

    def leave_Call(self, original, updated):
        return self._swap(original, updated)

    def _swap(self, original, updated) -> Optional[cst.CSTNode]:
        new = self.replacements.get(original)
        if new is None:
            return updated
        return new.with_changes(lpar=updated.lpar, rpar=updated.rpar) if updated.lpar else new
