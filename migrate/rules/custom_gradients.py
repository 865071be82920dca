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
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple, Union

import libcst as cst
from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor

from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.tf_names import all_names, fresh_name, tf_module_alias
from tapeshift.migrate.rules.custom_gradients_ops import (
    BUILTIN_GRADIENTS,
    INPUT_KEYWORDS,
    NEUTRAL,
    OVERRIDABLE,
    OVERRIDABLE_TYPES,
    SAFE_BUILTINS,
)
from tapeshift.migrate.engine.toolkit.walk import children

DESCRIPTION = ("Rewrite @tf.RegisterGradient + gradient_override_map scopes into "
               "@tf.custom_gradient functions called where the overridden ops were built.")


_Key = Tuple  # ("str", value) or ("name", id(scope), name)


@dataclass
class _Reg:
    """One ``@RegisterGradient(...)`` function."""

    fn: cst.FunctionDef
    decorator: cst.Decorator
    key: _Key
    label: str
    scope: Optional[cst.FunctionDef]
    line: int
    uses: List["_Scope"] = field(default_factory=list)


@dataclass
class _Gen:
    """One generated ``@tf.custom_gradient`` function."""

    name: str
    op_type: str
    forward: str          # the callee spelling, e.g. "tf.identity"
    reg: Optional[_Reg]   # None: a built-in gradient (BUILTIN_GRADIENTS)


@dataclass
class _Scope:
    with_node: cst.With
    item: cst.WithItem
    line: int
    #: the module-level statement that holds the scope
    top: cst.CSTNode
    #: (op type, registered function or built-in gradient name) per map entry
    entries: List[Tuple[str, Union[_Reg, str]]] = field(default_factory=list)
    #: the calls in the scope that build an overridden op -> (op type, gradient)
    calls: Dict[cst.Call, Tuple[str, Union[_Reg, str]]] = field(default_factory=dict)


def _snake(text: str) -> str:
    text = re.sub(r"[^0-9A-Za-z]+", "_", text)
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text)
    return text.strip("_").lower() or "op"


def _has_call(node: cst.CSTNode) -> bool:
    found = []

    class _V(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> None:
            found.append(n)

    node.visit(_V())
    return bool(found)


def _int_literal(node: cst.BaseExpression) -> Optional[int]:
    if isinstance(node, cst.Integer):
        return int(node.value)
    return None


class CustomGradientsToTape(TapeshiftCodemod):
    DESCRIPTION = DESCRIPTION
    RULE = "custom_gradients"

    def __init__(self, context) -> None:
        super().__init__(context)
        self._active = False
        self._regs: Dict[cst.FunctionDef, _Reg] = {}
        self._params: Dict[cst.FunctionDef, Tuple[str, str]] = {}
        self._subs: Dict[cst.Subscript, str] = {}
        self._calls: Dict[cst.Call, Tuple[str, cst.BaseExpression]] = {}
        self._withs: Dict[cst.With, Set[cst.WithItem]] = {}
        self._remove: Set[cst.SimpleStatementLine] = set()
        self._after: Dict[cst.FunctionDef, List[_Gen]] = {}
        self._before: Dict[cst.CSTNode, List[_Gen]] = {}
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

    @staticmethod
    def _is_override_call(node: cst.CSTNode) -> bool:
        return (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and node.func.attr.value == "gradient_override_map")

    def visit_Module(self, node: cst.Module) -> bool:
        regs: List[_Reg] = []
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

        walk(node, [])
        if not scopes and not stray:
            return True

        for call in stray:
            self.report("TS120", call, "gradient_override_map(...) outside a `with` statement: "
                        "the codemod cannot see which ops it applies to")
            blocked = True

        by_key: Dict[_Key, _Reg] = {}
        for reg in regs:
            if reg.key[0] == "name" and assigned.get((reg.key[1], reg.key[2]), 0) != 1:
                continue  # a name bound more than once: not a static link
            by_key[reg.key] = reg

        parsed: List[_Scope] = []
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
        used_regs = {id(r): r for s in parsed for _, r in s.entries if isinstance(r, _Reg)}
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
        gens: Dict[Tuple[int, str], _Gen] = {}
        for scope in parsed:
            for call, (op_type, grad) in scope.calls.items():
                key = (id(grad), op_type)
                gen = gens.get(key)
                if gen is None:
                    label = (f"{_snake(grad)}_gradient" if isinstance(grad, str)
                             else _snake(grad.label))
                    name = fresh_name(f"{_snake(op_type)}_with_{label}", taken)
                    taken.add(name)
                    gen = _Gen(name=name, op_type=op_type, forward=code_of(call.func),
                               reg=grad if isinstance(grad, _Reg) else None)
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

    def _read_registration(self, fn: cst.FunctionDef, dec: cst.Decorator,
                           scope: Optional[cst.FunctionDef]) -> Optional[_Reg]:
        call = dec.decorator
        assert isinstance(call, cst.Call)
        if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
            return None
        arg = call.args[0].value
        line = self.position(fn)[0]
        if isinstance(arg, cst.SimpleString):
            value = arg.evaluated_value
            return _Reg(fn, dec, ("str", value), value, scope, line)
        if isinstance(arg, cst.Name):
            label = fn.name.value.lstrip("_") or fn.name.value
            return _Reg(fn, dec, ("name", id(scope), arg.value), label, scope, line)
        return None

    def _read_scope(self, with_node: cst.With, item: cst.WithItem, stack: List[cst.CSTNode],
                    by_key: Dict[_Key, _Reg]) -> Optional[_Scope]:
        call = item.item
        assert isinstance(call, cst.Call)
        line = self.position(with_node)[0]
        scope = _Scope(with_node, item, line, top=stack[1] if len(stack) > 1 else with_node)
        fn = None
        for n in reversed(stack):
            if isinstance(n, cst.FunctionDef):
                fn = n
                break
        if item.asname is not None:
            self.report("TS120", call, "gradient_override_map(...) bound with `as`: the "
                        "codemod cannot follow the context manager")
            return None
        if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star \
                or not isinstance(call.args[0].value, cst.Dict):
            self.report("TS120", call, "gradient_override_map(...) takes a map built at run "
                        "time; only a literal dict of string literals can be rewritten")
            return None
        entries: List[Tuple[str, Union[_Reg, str]]] = []
        ok = True
        for el in call.args[0].value.elements:
            if not isinstance(el, cst.DictElement) or not isinstance(el.key, cst.SimpleString):
                self.report("TS120", el, "gradient_override_map: a key that is not a string "
                            "literal (the op type must be known when the file is read)")
                ok = False
                continue
            op_type = el.key.evaluated_value
            value = el.value
            if isinstance(value, cst.SimpleString):
                key: _Key = ("str", value.evaluated_value)
                shown = f"\"{value.evaluated_value}\""
            elif isinstance(value, cst.Name):
                key = ("name", id(fn), value.value)
                shown = f"`{value.value}`"
            else:
                self.report("TS120", el, f"gradient_override_map: the gradient for \"{op_type}\" "
                            "is computed at run time; only a string literal (or a local name "
                            "also passed to @RegisterGradient) can be followed")
                ok = False
                continue
            if op_type not in OVERRIDABLE_TYPES:
                self.report("TS121", el, f"op type \"{op_type}\": the codemod has no tape form "
                            "for overriding it (supported: "
                            f"{', '.join(sorted(OVERRIDABLE_TYPES))})")
                ok = False
                continue
            reg = by_key.get(key)
            if reg is None:
                if key[0] == "str" and key[1] in BUILTIN_GRADIENTS:
                    entries.append((op_type, key[1]))
                else:
                    self.report("TS122", el, f"gradient {shown} (for \"{op_type}\") is not "
                                "registered in this file by a @RegisterGradient function the "
                                "codemod can read")
                    ok = False
                continue
            if reg.line > line or (reg.scope is not None and reg.scope is not fn):
                self.report("TS122", el, f"gradient {shown} is registered by "
                            f"`{reg.fn.name.value}` (line {reg.line}) after this scope or in "
                            "another function; the generated function could not be placed")
                ok = False
                continue
            entries.append((op_type, reg))
        if not ok:
            return None
        mapping = dict(entries)
        calls: Dict[cst.Call, Tuple[str, Union[_Reg, str]]] = {}
        seen: Set[str] = set()

        def walk(n: cst.CSTNode) -> None:
            nonlocal ok
            if isinstance(n, cst.With) and any(self._is_override_call(i.item) for i in n.items):
                self.report("TS121", n, "a gradient_override_map scope nested in another one")
                ok = False
            if isinstance(n, cst.Call):
                api = self.tf_api_name(n.func)
                if api in OVERRIDABLE:
                    op_type = OVERRIDABLE[api]
                    if op_type in mapping:
                        if self._input_of(n) is None:
                            self.report("TS121", n, f"{code_of(n.func)}(...) with arguments the "
                                        "codemod cannot pass to a @tf.custom_gradient function")
                            ok = False
                        else:
                            calls[n] = (op_type, mapping[op_type])
                            seen.add(op_type)
                elif api in NEUTRAL:
                    pass
                elif api is None and isinstance(n.func, cst.Name) and n.func.value in SAFE_BUILTINS:
                    pass
                else:
                    self.report("TS121", n, f"{code_of(n.func)}(...) inside a gradient_override_map "
                                "scope: the codemod cannot see which ops it builds")
                    ok = False
            for child in children(n):
                walk(child)

        walk(with_node.body)
        for op_type in mapping:
            if op_type not in seen:
                self.report("TS121", call, f"no call in this scope visibly builds a \"{op_type}\" "
                            "op; the override would apply to ops the codemod cannot see")
                ok = False
        if not ok:
            return None
        scope.entries = entries
        scope.calls = calls
        for _, g in entries:
            if isinstance(g, _Reg):
                g.uses.append(scope)
        return scope

    @staticmethod
    def _input_of(call: cst.Call) -> Optional[cst.BaseExpression]:
        """The tensor argument of ``f(x)`` / ``f(x, name=...)``; None otherwise."""
        tensor = None
        for i, arg in enumerate(call.args):
            if arg.star:
                return None
            if arg.keyword is None and i == 0:
                tensor = arg.value
            elif arg.keyword is not None and arg.keyword.value in INPUT_KEYWORDS and tensor is None:
                tensor = arg.value
            elif arg.keyword is not None and arg.keyword.value == "name":
                continue
            else:
                return None
        return tensor

    def _plan_registered(self, reg: _Reg, name_uses: Dict[str, int]) -> bool:
        fn = reg.fn
        p = fn.params
        simple = (len(p.params) == 2 and not p.posonly_params and not p.kwonly_params
                  and p.star_kwarg is None and not isinstance(p.star_arg, cst.Param)
                  and all(q.default is None for q in p.params))
        if not simple:
            self.report("TS123", fn, f"`{fn.name.value}` does not take exactly (op, grad): the "
                        "codemod rewrites gradients of one-output ops only")
            return False
        if name_uses.get(fn.name.value, 0) > 0:
            self.report("TS123", fn, f"`{fn.name.value}` is also used directly, not only as a "
                        "registered gradient; changing its parameters would break that use")
            return False
        op_name = p.params[0].name.value
        grad_name = p.params[1].name.value
        local = set()

        class _N(cst.CSTVisitor):
            def visit_Name(self, n: cst.Name) -> None:
                local.add(n.value)

        fn.body.visit(_N())
        in_name = fresh_name("op_input", local | {grad_name})
        out_name = fresh_name("op_output", local | {grad_name, in_name})
        subs: Dict[cst.Subscript, str] = {}
        ok = True

        def walk(n: cst.CSTNode, stack: List[cst.CSTNode]) -> None:
            nonlocal ok
            if isinstance(n, cst.Name) and n.value == op_name and stack:
                parent = stack[-1]
                grand = stack[-2] if len(stack) > 1 else None
                if isinstance(parent, cst.Attribute) and parent.value is n \
                        and parent.attr.value in ("inputs", "outputs") \
                        and isinstance(grand, cst.Subscript) and grand.value is parent \
                        and len(grand.slice) == 1 \
                        and isinstance(grand.slice[0].slice, cst.Index) \
                        and _int_literal(grand.slice[0].slice.value) == 0:
                    subs[grand] = in_name if parent.attr.value == "inputs" else out_name
                else:
                    use = code_of(grand if isinstance(grand, cst.Subscript) else parent) \
                        if isinstance(parent, (cst.Attribute, cst.Call, cst.Subscript)) else op_name
                    self.report("TS123", n, f"`{fn.name.value}` uses its op as `{use}`; only "
                                f"`{op_name}.inputs[0]` and `{op_name}.outputs[0]` have a tape form")
                    ok = False
            stack.append(n)
            for child in children(n):
                walk(child, stack)
            stack.pop()

        walk(fn.body, [])
        if not ok:
            return False
        self._subs.update(subs)
        self._params[fn] = (in_name, out_name)
        self._regs[fn] = reg
        return True

    # ------------------------------------------------------------------
    # generated code
    # ------------------------------------------------------------------
    def _generated(self, gen: _Gen, nested: bool) -> List[cst.BaseStatement]:
        avoid = {gen.forward.split(".")[0], self._alias}
        if gen.reg is not None:
            avoid.add(gen.reg.fn.name.value)
        x = fresh_name("x", avoid)
        y = fresh_name("y", avoid | {x})
        grad = fresh_name("grad", avoid | {x, y})
        dy = fresh_name("dy", avoid | {x, y, grad})
        if gen.reg is not None:
            back = f"{gen.reg.fn.name.value}({x}, {y}, {dy})"
        else:
            back = dy  # TensorFlow's "Identity" gradient passes the gradient through
        text = (
            f"@{self._alias}.custom_gradient\n"
            f"def {gen.name}({x}):\n"
            f"    {y} = {gen.forward}({x})\n"
            f"\n"
            f"    def {grad}({dy}):\n"
            f"        return {back}\n"
            f"\n"
            f"    return {y}, {grad}\n"
        )
        stmt = cst.parse_statement(text)
        blank = [cst.EmptyLine(indent=False)] * (1 if nested else 2)
        stmt = stmt.with_changes(leading_lines=blank)
        self._made.add(stmt)
        return [stmt]

    # ------------------------------------------------------------------
    # rewriting
    # ------------------------------------------------------------------
    def leave_Subscript(self, original_node, updated_node):
        if self._active and original_node in self._subs:
            return cst.Name(self._subs[original_node])
        return updated_node

    def leave_Call(self, original_node, updated_node):
        if self._active and original_node in self._calls:
            name, _ = self._calls[original_node]
            arg = self._input_of(updated_node)
            return cst.Call(func=cst.Name(name), args=[cst.Arg(value=arg)])
        return updated_node

    def leave_FunctionDef(self, original_node, updated_node):
        if not self._active or original_node not in self._params:
            return updated_node
        reg = self._regs[original_node]
        in_name, out_name = self._params[original_node]
        RemoveImportsVisitor.remove_unused_import_by_node(self.context, reg.decorator)
        decorators = [d for o, d in zip(original_node.decorators, updated_node.decorators)
                      if o is not reg.decorator]
        params = updated_node.params
        new_params = params.with_changes(params=[
            cst.Param(cst.Name(in_name)), cst.Param(cst.Name(out_name)),
            params.params[1].with_changes(comma=cst.MaybeSentinel.DEFAULT),
        ])
        leading = updated_node.leading_lines
        if not decorators and reg.decorator is original_node.decorators[0]:
            leading = list(leading) + list(reg.decorator.leading_lines)
        new = updated_node.with_changes(decorators=decorators, params=new_params,
                                        leading_lines=leading)
        nested = reg.scope is not None
        gens = self._after.get(original_node, [])
        out: List[cst.BaseStatement] = [new]
        for gen in gens:
            out.extend(self._generated(gen, nested))
        return cst.FlattenSentinel(out)

    def leave_With(self, original_node, updated_node):
        if not self._active or original_node not in self._withs:
            return updated_node
        drop = self._withs[original_node]
        for item in drop:
            RemoveImportsVisitor.remove_unused_import_by_node(self.context, item)
        keep = [u for o, u in zip(original_node.items, updated_node.items) if o not in drop]
        if keep:
            keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return updated_node.with_changes(items=keep)
        body = updated_node.body
        if isinstance(body, cst.SimpleStatementSuite):
            stmts: List[cst.BaseStatement] = [cst.SimpleStatementLine(body=body.body)]
        else:
            stmts = list(body.body)
        comments = list(updated_node.leading_lines)
        if stmts:
            stmts[0] = stmts[0].with_changes(leading_lines=comments + list(stmts[0].leading_lines))
        return cst.FlattenSentinel(stmts)

    def leave_SimpleStatementLine(self, original_node, updated_node):
        if self._active and original_node in self._remove:
            # dropped by the enclosing block, which keeps its comments
            RemoveImportsVisitor.remove_unused_import_by_node(self.context, original_node)
            self._drop.add(updated_node)
        return updated_node

    def on_leave(self, original_node, updated_node):
        result = super().on_leave(original_node, updated_node)
        if self._active and original_node in self._before:
            # generated functions for built-in gradients go before the module-level
            # statement that holds their first scope
            items = list(result.nodes) if isinstance(result, cst.FlattenSentinel) else [result]
            gens: List[cst.BaseStatement] = []
            for gen in self._before[original_node]:
                gens.extend(self._generated(gen, nested=False))
            return cst.FlattenSentinel([*gens, *items])
        return result

    def _spaced(self, body, blank: int):
        """Drop the removed statements (their comments go to the next statement); a
        statement right after a generated function gets blank lines before it."""
        out = []
        carry: List[cst.EmptyLine] = []
        for stmt in body:
            if stmt in self._drop:
                carry.extend(stmt.leading_lines)
                continue
            if carry or (not out and stmt is not body[0]):
                lines = carry + list(stmt.leading_lines)
                if not out:  # the block now starts here: no blank line first
                    while lines and lines[0].comment is None:
                        lines = lines[1:]
                stmt = stmt.with_changes(leading_lines=lines)
                carry = []
            out.append(stmt)
        for i in range(1, len(out)):
            if out[i - 1] in self._made and out[i] not in self._made:
                lines = list(out[i].leading_lines)
                have = 0
                while have < len(lines) and lines[have].comment is None:
                    have += 1
                if have < blank:
                    lines = [cst.EmptyLine(indent=False)] * (blank - have) + lines
                    out[i] = out[i].with_changes(leading_lines=lines)
        return out

    def leave_IndentedBlock(self, original_node, updated_node):
        if self._active:
            return updated_node.with_changes(body=self._spaced(updated_node.body, 1))
        return updated_node

    def leave_Module(self, original_node, updated_node):
        if self._active:
            return updated_node.with_changes(body=self._spaced(updated_node.body, 2))
        return updated_node
