"""``@tf.RegisterGradient`` + ``gradient_override_map`` -> ``@tf.custom_gradient``.

TF1 code overrode an op's gradient by registering a gradient function under a
name and mapping op types onto that name for the ops built inside a scope::

    @tf.RegisterGradient("FlipGradient")
    def _flip(op, grad):
        return [tf.negative(grad) * l]

    g = tf.get_default_graph()
    with g.gradient_override_map({"Identity": "FlipGradient"}):
        y = tf.identity(x)

Under a tape (eager or ``tf.function``) the map is silently ignored (docs/tf1-vs-tf2.md, section 8). This rule rewrites it into tape form: the registered function
loses its decorator and its ``op`` parameter (``op.inputs[0]`` and
``op.outputs[0]`` become parameters), a ``@tf.custom_gradient`` function is
generated per (registered gradient, op type) pair right after it, each call
in the scope that builds an overridden op calls that function, and the
``with`` (with ``g = tf.get_default_graph()`` when nothing else uses ``g``)
goes::

    def _flip(op_input, op_output, grad):
        return [tf.negative(grad) * l]


    @tf.custom_gradient
    def identity_with_flip_gradient(x):
        y = tf.identity(x)

        def grad(dy):
            return _flip(x, y, dy)

        return y, grad

    y = identity_with_flip_gradient(x)

A map may also point at TensorFlow's own "Identity" gradient (the
straight-through estimator ``{"Sign": "Identity"}``), and the registered name
may be a local variable that both the decorator and the map read (the
``FlipGradientBuilder`` of the DANN code).

Nothing is dropped silently: a map that is not a literal dict (TS120), an op
type the codemod cannot find or rewrite in the scope, or a call there whose
ops it cannot see (TS121), a gradient name not registered in the file in a
form it can read (TS122), or a gradient function that uses ``op`` beyond
``op.inputs[i]`` / ``op.outputs[0]`` (TS123) is an error-level finding that
blocks tape form, and the file then keeps its graph semantics in compat mode.
When anything is reported the rule changes nothing.

Run it before the other tape rules: ``SessionToEager`` reports what is left
of an override as TS112.

This module is the rule's codes, its walk over the module and its plan; the
reading of one registration, scope or registered function is
:mod:`~tapeshift.migrate.rules.custom_gradients_read`, the rewrite
:mod:`~tapeshift.migrate.rules.custom_gradients_rewrite`.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Set, Tuple

import libcst as cst
from libcst.codemod.visitors import AddImportsVisitor

from tapeshift.migrate.engine.registry import register_rule
from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.tf_names import all_names, fresh_name, tf_module_alias
from tapeshift.migrate.engine.toolkit.walk import children, release, visit
from tapeshift.migrate.rules.custom_gradients_codes import TS120, TS121, TS122, TS123
from tapeshift.migrate.rules.custom_gradients_read import OverrideReading
from tapeshift.migrate.rules.custom_gradients_rewrite import (Generated, Key, OverrideRewriting, OverrideScope,
                                                          Registration)

DESCRIPTION = ("Rewrite @tf.RegisterGradient + gradient_override_map scopes into "
               "@tf.custom_gradient functions called where the overridden ops were built.")


def _snake(text: str) -> str:
    text = re.sub(r"[^0-9A-Za-z]+", "_", text)
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text)
    return text.strip("_").lower() or "op"


def _has_call(node: cst.CSTNode) -> bool:
    found = []

    class _V(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> None:
            found.append(n)

    visit(node, _V())
    return bool(found)


@register_rule
class CustomGradientsToTape(OverrideReading, OverrideRewriting, TapeshiftCodemod):
    DESCRIPTION = DESCRIPTION
    RULE = "custom_gradients"  # the spelling reports have always printed
    #: before the session and feeds rules, which would block on RegisterGradient /
    #: gradient_override_map / get_default_graph (TS112, TS106) it rewrites away
    PHASE = "pre"
    ORDER = 20
    CODES = (TS120, TS121, TS122, TS123)
    #: nothing without a gradient_override_map(...) scope
    SCREEN_NAMES = frozenset({"gradient_override_map"})

    def __init__(self, context) -> None:
        super().__init__(context)
        self._active = False
        self._regs: Dict[cst.FunctionDef, Registration] = {}
        self._params: Dict[cst.FunctionDef, Tuple[str, str]] = {}
        self._subs: Dict[cst.Subscript, str] = {}
        self._calls: Dict[cst.Call, Tuple[str, cst.BaseExpression]] = {}
        self._withs: Dict[cst.With, Set[cst.WithItem]] = {}
        self._remove: Set[cst.SimpleStatementLine] = set()
        self._after: Dict[cst.FunctionDef, List[Generated]] = {}
        self._before: Dict[cst.CSTNode, List[Generated]] = {}
        self._alias = "tf"
        self._made: Set[cst.CSTNode] = set()
        self._drop: Set[cst.CSTNode] = set()

    # ------------------------------------------------------------------
    # analysis
    # ------------------------------------------------------------------
    def _is_register(self, node: cst.CSTNode) -> bool:
        return any(n == "RegisterGradient" or n.endswith(".RegisterGradient")
                   for n in self.tf_api_names(node))

    def _is_default_graph_call(self, node: cst.CSTNode) -> bool:
        return isinstance(node, cst.Call) and any(
            n == "get_default_graph" or n.endswith(".get_default_graph")
            for n in self.tf_api_names(node.func))

    def visit_Module(self, node: cst.Module) -> bool:
        regs: List[Registration] = []
        scopes: List[Tuple[cst.With, cst.WithItem, List[cst.CSTNode]]] = []
        stray: List[cst.Call] = []
        name_uses: Dict[str, int] = {}
        graph_assigns: Dict[str, List[Tuple[int, cst.SimpleStatementLine]]] = {}
        name_assigns: Dict[Tuple[int, str], cst.SimpleStatementLine] = {}
        assigned: Dict[Tuple[int, str], int] = {}
        blocked = False

        def enclosing(stack: List[cst.CSTNode]) -> Optional[cst.FunctionDef]:
            for n in reversed(stack):
                if isinstance(n, cst.FunctionDef):
                    return n
            return None

        def walk(n: cst.CSTNode, stack: List[cst.CSTNode]) -> None:
            nonlocal blocked
            if isinstance(n, cst.FunctionDef):
                for dec in n.decorators:
                    if isinstance(dec.decorator, cst.Call) and self._is_register(dec.decorator.func):
                        reg = self._read_registration(n, dec, enclosing(stack))
                        if reg is not None:
                            regs.append(reg)
            elif isinstance(n, cst.With):
                for item in n.items:
                    if self._is_override_call(item.item):
                        scopes.append((n, item, stack[:]))
            elif isinstance(n, cst.Call) and self._is_override_call(n):
                if not (stack and isinstance(stack[-1], cst.WithItem)):
                    stray.append(n)
            elif isinstance(n, cst.Name):
                parent = stack[-1] if stack else None
                if not isinstance(parent, (cst.AssignTarget, cst.Param, cst.FunctionDef,
                                           cst.ClassDef, cst.Attribute)) \
                        or (isinstance(parent, cst.Attribute) and parent.value is n):
                    name_uses[n.value] = name_uses.get(n.value, 0) + 1
            elif isinstance(n, cst.Assign):
                fn = enclosing(stack)
                for t in n.targets:
                    if isinstance(t.target, cst.Name):
                        k = (id(fn), t.target.value)
                        assigned[k] = assigned.get(k, 0) + 1
                        if len(n.targets) == 1 and isinstance(stack[-1], cst.SimpleStatementLine) \
                                and len(stack[-1].body) == 1:
                            name_assigns[k] = stack[-1]
                if len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name) \
                        and self._is_default_graph_call(n.value) \
                        and isinstance(stack[-1], cst.SimpleStatementLine) \
                        and len(stack[-1].body) == 1:
                    graph_assigns.setdefault(n.targets[0].target.value, []).append(
                        (id(enclosing(stack)), stack[-1]))
            elif isinstance(n, (cst.AugAssign, cst.For, cst.AsName, cst.Global, cst.Nonlocal)):
                # other bindings make a name key ambiguous
                targets = []
                if isinstance(n, cst.AugAssign):
                    targets = [n.target]
                elif isinstance(n, cst.For):
                    targets = [n.target]
                elif isinstance(n, cst.AsName):
                    targets = [n.name]
                fn = enclosing(stack)
                for t in targets:
                    if isinstance(t, cst.Name):
                        k = (id(fn), t.value)
                        assigned[k] = assigned.get(k, 0) + 2
            stack.append(n)
            for child in children(n):
                walk(child, stack)
            stack.pop()

        try:
            walk(node, [])
        finally:
            release(walk)
        if not scopes and not stray:
            return True

        for call in stray:
            self.report(TS120.code, call, "gradient_override_map(...) outside a `with` statement: "
                        "the codemod cannot see which ops it applies to")
            blocked = True

        by_key: Dict[Key, Registration] = {}
        for reg in regs:
            if reg.key[0] == "name" and assigned.get((reg.key[1], reg.key[2]), 0) != 1:
                continue  # a name bound more than once: not a static link
            by_key[reg.key] = reg

        parsed: List[OverrideScope] = []
        receivers: Dict[str, int] = {}
        for with_node, item, stack in scopes:
            scope = self._read_scope(with_node, item, stack, by_key)
            if scope is None:
                blocked = True
                continue
            parsed.append(scope)
            recv = item.item.func.value  # type: ignore[attr-defined]
            if isinstance(recv, cst.Name):
                receivers[recv.value] = receivers.get(recv.value, 0) + 1

        # the registered functions the scopes use must convert
        used_regs = {id(r): r for s in parsed for _, r in s.entries if isinstance(r, Registration)}
        for reg in used_regs.values():
            if not self._plan_registered(reg, name_uses):
                blocked = True
        if blocked:
            return True

        # generated functions, one per (gradient, op type)
        taken = all_names(node)
        alias = tf_module_alias(node)
        if alias is None:
            alias = "tf" if "tf" not in taken else fresh_name("tensorflow_", taken)
            AddImportsVisitor.add_needed_import(self.context, "tensorflow", asname=alias)
        self._alias = alias
        gens: Dict[Tuple[int, str], Generated] = {}
        for scope in parsed:
            for call, (op_type, grad) in scope.calls.items():
                key = (id(grad), op_type)
                gen = gens.get(key)
                if gen is None:
                    label = (f"{_snake(grad)}_gradient" if isinstance(grad, str)
                             else _snake(grad.label))
                    name = fresh_name(f"{_snake(op_type)}_with_{label}", taken)
                    taken.add(name)
                    gen = Generated(name=name, op_type=op_type, forward=code_of(call.func),
                               reg=grad if isinstance(grad, Registration) else None)
                    gens[key] = gen
                    if gen.reg is not None:
                        self._after.setdefault(gen.reg.fn, []).append(gen)
                    else:
                        self._before.setdefault(scope.top, []).append(gen)
                self._calls[call] = (gen.name, self._input_of(call))
                self.record_change(call, f"{code_of(call.func)}(...) with the \"{op_type}\" "
                                   f"gradient override -> {gen.name}(...) (@tf.custom_gradient)")
            self._withs.setdefault(scope.with_node, set()).add(scope.item)
            self.record_change(scope.with_node, "gradient_override_map scope removed; the "
                               "overridden ops call @tf.custom_gradient functions")
        for reg in used_regs.values():
            self.record_change(reg.fn, f"@RegisterGradient function `{reg.fn.name.value}` now takes "
                               "the op's input and output instead of the op")
        # g = tf.get_default_graph(), when the rewritten scopes were its only use
        # grad_name = "Flip%d" % n, when only the decorator and the maps read it
        for reg in used_regs.values():
            if reg.key[0] != "name":
                continue
            stmt = name_assigns.get((reg.key[1], reg.key[2]))
            reads = 1 + sum(1 for s in reg.uses for _, r in s.entries if r is reg)
            if stmt is not None and name_uses.get(reg.key[2], 0) == reads \
                    and not _has_call(stmt):
                self._remove.add(stmt)
                self.record_change(stmt, f"`{reg.key[2]}` removed (only named the registered "
                                   "gradient)")
        # (every use of the name, in every function, is a rewritten scope's receiver)
        for name, stmts in graph_assigns.items():
            if receivers.get(name, 0) != name_uses.get(name, 0) or not receivers.get(name):
                continue
            if any(assigned.get((fn_id, name), 0) != 1 for fn_id, _ in stmts):
                continue
            for _, stmt in stmts:
                self._remove.add(stmt)
                self.record_change(stmt, f"`{name} = get_default_graph()` removed "
                                   "(only used for gradient_override_map)")
        self._active = True
        return True
