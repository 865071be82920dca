"""The custom-gradients rule's rewrite: the generated ``@tf.custom_gradient`` functions and the edits that call them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple, Union

import libcst as cst
from libcst.codemod.visitors import RemoveImportsVisitor

from tapeshift.migrate.engine.toolkit.tf_names import fresh_name


Key = Tuple  # ("str", value) or ("name", id(scope), name)


@dataclass
class Registration:
    """One ``@RegisterGradient(...)`` function."""

    fn: cst.FunctionDef
    decorator: cst.Decorator
    key: Key
    label: str
    scope: Optional[cst.FunctionDef]
    line: int
    uses: List["OverrideScope"] = field(default_factory=list)


@dataclass
class Generated:
    """One generated ``@tf.custom_gradient`` function."""

    name: str
    op_type: str
    forward: str          # the callee spelling, e.g. "tf.identity"
    reg: Optional[Registration]   # None: a built-in gradient (BUILTIN_GRADIENTS)


@dataclass
class OverrideScope:
    with_node: cst.With
    item: cst.WithItem
    line: int
    #: the module-level statement that holds the scope
    top: cst.CSTNode
    #: (op type, registered function or built-in gradient name) per map entry
    entries: List[Tuple[str, Union[Registration, str]]] = field(default_factory=list)
    #: the calls in the scope that build an overridden op -> (op type, gradient)
    calls: Dict[cst.Call, Tuple[str, Union[Registration, str]]] = field(default_factory=dict)


class OverrideRewriting:
    """Part of :class:`tapeshift.migrate.rules.custom_gradients.CustomGradientsToTape`:
    the transform, from the plan its analysis left on the rule."""

    # ------------------------------------------------------------------
    # generated code
    # ------------------------------------------------------------------
    def _generated(self, gen: Generated, nested: bool) -> List[cst.BaseStatement]:
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
