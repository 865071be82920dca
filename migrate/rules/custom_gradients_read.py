"""Part of the custom-gradients rule (custom_gradients.py): reading one override.

:class:`OverrideReading` reads what the rule's walk over the module found: a
``@RegisterGradient(...)`` decorator (the name it registers), a
``gradient_override_map`` scope (the op types it maps, to which gradients, and
the calls in its block that build those ops) and a registered gradient function
(whether its ``op`` parameter has a tape form: the substitutions and new
parameters the rewrite then makes). Each returns None or False where the
override cannot be rewritten, having reported why.

It reports TS120 to TS123 by their code strings: their declarations (and
documentation) stay beside the rule in custom_gradients.py, which imports this
module, so importing them back would be a cycle.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple, Union

import libcst as cst

from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.tf_names import fresh_name
from tapeshift.migrate.engine.toolkit.walk import children, release, visit
from tapeshift.migrate.rules.custom_gradients_ops import (BUILTIN_GRADIENTS, INPUT_KEYWORDS, NEUTRAL,
                                                          OVERRIDABLE, OVERRIDABLE_TYPES, SAFE_BUILTINS)
from tapeshift.migrate.rules.custom_gradients_rewrite import Key, OverrideScope, Registration
from tapeshift.migrate.rules.custom_gradients_codes import TS120, TS121, TS122, TS123


def _int_literal(node: cst.BaseExpression) -> Optional[int]:
    if isinstance(node, cst.Integer):
        return int(node.value)
    return None


class OverrideReading:
    """Part of :class:`tapeshift.migrate.rules.custom_gradients.CustomGradientsToTape`:
    reading registrations, override scopes and registered functions (the rule's
    ``visit_Module`` calls these and makes the plan)."""

    @staticmethod
    def _is_override_call(node: cst.CSTNode) -> bool:
        return (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                and node.func.attr.value == "gradient_override_map")

    def _read_registration(self, fn: cst.FunctionDef, dec: cst.Decorator,
                           scope: Optional[cst.FunctionDef]) -> Optional[Registration]:
        call = dec.decorator
        assert isinstance(call, cst.Call)
        if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
            return None
        arg = call.args[0].value
        line = self.position(fn)[0]
        if isinstance(arg, cst.SimpleString):
            value = arg.evaluated_value
            return Registration(fn, dec, ("str", value), value, scope, line)
        if isinstance(arg, cst.Name):
            label = fn.name.value.lstrip("_") or fn.name.value
            return Registration(fn, dec, ("name", id(scope), arg.value), label, scope, line)
        return None

    def _read_scope(self, with_node: cst.With, item: cst.WithItem, stack: List[cst.CSTNode],
                    by_key: Dict[Key, Registration]) -> Optional[OverrideScope]:
        call = item.item
        assert isinstance(call, cst.Call)
        line = self.position(with_node)[0]
        scope = OverrideScope(with_node, item, line, top=stack[1] if len(stack) > 1 else with_node)
        fn = None
        for n in reversed(stack):
            if isinstance(n, cst.FunctionDef):
                fn = n
                break
        if item.asname is not None:
            self.report(TS120.code, call, "gradient_override_map(...) bound with `as`: the "
                        "codemod cannot follow the context manager")
            return None
        if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star \
                or not isinstance(call.args[0].value, cst.Dict):
            self.report(TS120.code, call, "gradient_override_map(...) takes a map built at run "
                        "time; only a literal dict of string literals can be rewritten")
            return None
        entries: List[Tuple[str, Union[Registration, str]]] = []
        ok = True
        for el in call.args[0].value.elements:
            if not isinstance(el, cst.DictElement) or not isinstance(el.key, cst.SimpleString):
                self.report(TS120.code, el, "gradient_override_map: a key that is not a string "
                            "literal (the op type must be known when the file is read)")
                ok = False
                continue
            op_type = el.key.evaluated_value
            value = el.value
            if isinstance(value, cst.SimpleString):
                key: Key = ("str", value.evaluated_value)
                shown = f"\"{value.evaluated_value}\""
            elif isinstance(value, cst.Name):
                key = ("name", id(fn), value.value)
                shown = f"`{value.value}`"
            else:
                self.report(TS120.code, el, f"gradient_override_map: the gradient for \"{op_type}\" "
                            "is computed at run time; only a string literal (or a local name "
                            "also passed to @RegisterGradient) can be followed")
                ok = False
                continue
            if op_type not in OVERRIDABLE_TYPES:
                self.report(TS121.code, el, f"op type \"{op_type}\": the codemod has no tape form "
                            "for overriding it (supported: "
                            f"{', '.join(sorted(OVERRIDABLE_TYPES))})")
                ok = False
                continue
            reg = by_key.get(key)
            if reg is None:
                if key[0] == "str" and key[1] in BUILTIN_GRADIENTS:
                    entries.append((op_type, key[1]))
                else:
                    self.report(TS122.code, el, f"gradient {shown} (for \"{op_type}\") is not "
                                "registered in this file by a @RegisterGradient function the "
                                "codemod can read")
                    ok = False
                continue
            if reg.line > line or (reg.scope is not None and reg.scope is not fn):
                self.report(TS122.code, el, f"gradient {shown} is registered by "
                            f"`{reg.fn.name.value}` (line {reg.line}) after this scope or in "
                            "another function; the generated function could not be placed")
                ok = False
                continue
            entries.append((op_type, reg))
        if not ok:
            return None
        mapping = dict(entries)
        calls: Dict[cst.Call, Tuple[str, Union[Registration, str]]] = {}
        seen: Set[str] = set()

        def walk(n: cst.CSTNode) -> None:
            nonlocal ok
            if isinstance(n, cst.With) and any(self._is_override_call(i.item) for i in n.items):
                self.report(TS121.code, n, "a gradient_override_map scope nested in another one")
                ok = False
            if isinstance(n, cst.Call):
                api = self.tf_api_name(n.func)
                if api in OVERRIDABLE:
                    op_type = OVERRIDABLE[api]
                    if op_type in mapping:
                        if self._input_of(n) is None:
                            self.report(TS121.code, n, f"{code_of(n.func)}(...) with arguments the "
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
                    self.report(TS121.code, n, f"{code_of(n.func)}(...) inside a gradient_override_map "
                                "scope: the codemod cannot see which ops it builds")
                    ok = False
            for child in children(n):
                walk(child)

        try:
            walk(with_node.body)
        finally:
            release(walk)
        for op_type in mapping:
            if op_type not in seen:
                self.report(TS121.code, call, f"no call in this scope visibly builds a \"{op_type}\" "
                            "op; the override would apply to ops the codemod cannot see")
                ok = False
        if not ok:
            return None
        scope.entries = entries
        scope.calls = calls
        for _, g in entries:
            if isinstance(g, Registration):
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

    def _plan_registered(self, reg: Registration, name_uses: Dict[str, int]) -> bool:
        fn = reg.fn
        p = fn.params
        simple = (len(p.params) == 2 and not p.posonly_params and not p.kwonly_params
                  and p.star_kwarg is None and not isinstance(p.star_arg, cst.Param)
                  and all(q.default is None for q in p.params))
        if not simple:
            self.report(TS123.code, fn, f"`{fn.name.value}` does not take exactly (op, grad): the "
                        "codemod rewrites gradients of one-output ops only")
            return False
        if name_uses.get(fn.name.value, 0) > 0:
            self.report(TS123.code, fn, f"`{fn.name.value}` is also used directly, not only as a "
                        "registered gradient; changing its parameters would break that use")
            return False
        op_name = p.params[0].name.value
        grad_name = p.params[1].name.value
        local = set()

        class _N(cst.CSTVisitor):
            def visit_Name(self, n: cst.Name) -> None:
                local.add(n.value)

        visit(fn.body, _N())
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
                    self.report(TS123.code, n, f"`{fn.name.value}` uses its op as `{use}`; only "
                                f"`{op_name}.inputs[0]` and `{op_name}.outputs[0]` have a tape form")
                    ok = False
            stack.append(n)
            for child in children(n):
                walk(child, stack)
            stack.pop()

        try:
            walk(fn.body, [])
        finally:
            release(walk)
        if not ok:
            return False
        self._subs.update(subs)
        self._params[fn] = (in_name, out_name)
        self._regs[fn] = reg
        return True
