"""TS202: a split loss -> h -> W where W also reaches loss around h.

DESCRIPTION: follow the assignments that define the target; warn when the
source is reachable without passing through the cut.
"""

from __future__ import annotations

from typing import List, Optional, Set

import libcst as cst

from tapeshift.migrate.checks import chain_rule
from tapeshift.migrate.checks.facts import Facts, Opaque, names_in
from tapeshift.migrate.checks.codes import SPLIT_BYPASS
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.findings import Finding, make_finding

DESCRIPTION = "split gradient whose source bypasses the cut"
CODE = SPLIT_BYPASS.code


def _splits(facts: Facts):
    """(node, target, cut, source, env) for each split: elementwise idiom or VJP."""
    for mt in chain_rule.matches(facts):
        yield (mt.product.node, mt.upstream_grad.target, mt.local.target, mt.local.source,
               mt.product.env)
    for site in facts.gradient_sites:
        g = site.grad
        if g.seed is None:
            continue
        up = facts.grad_of(g.seed, site.env)
        if up is not None and facts.key(up.source, site.env) == facts.key(g.target, site.env):
            yield g.call, up.target, g.target, g.source, site.env


def _reaches(env, start: cst.BaseExpression, source: str, cut: str) -> bool:
    todo: List[str] = sorted(names_in(start))
    seen: Set[str] = set()
    while todo:
        n = todo.pop()
        if n == cut or n in seen:
            continue
        if n == source:
            return True
        seen.add(n)
        value = env.get(n)
        if value is not None and not isinstance(value, Opaque):
            todo.extend(names_in(value))
    return False


def check(facts: Facts, path: str) -> List[Finding]:
    findings = []
    done = set()
    for node, target, cut, source, env in _splits(facts):
        if not (isinstance(cut, cst.Name) and isinstance(source, cst.Name)):
            continue
        key = (id(node),)
        if key in done:
            continue
        done.add(key)
        t: Optional[cst.BaseExpression] = env.get(target.value) if isinstance(target, cst.Name) else target
        if t is None or isinstance(t, Opaque):
            continue
        if _reaches(env, t, source.value, cut.value):
            findings.append(make_finding(
                CODE, path, facts.line(node), facts.col(node),
                f"{source.value} reaches {code_of(target).strip()} without passing through "
                f"{cut.value}: the split through {cut.value} misses that term, so it will "
                f"not equal the direct gradient",
            ))
    return findings
