"""Part of the gradients rule (gradients.py): the rewrite, from the plans its analysis left.

``TapeRewriting`` turns each planned block into its ``with tf.GradientTape() as tape:``
statements (``_apply``: the regions of a block's tapes, nested for higher orders, with
their watches and deletions), each ``tf.gradients`` call into ``tape.gradient`` (kept a
one-element list where TensorFlow gave one, ``[0]`` and ``g, =`` unwrapped), a gradient
helper into a function that takes its caller's tape, and adds the TensorFlow import when
the file has none. What to rewrite was decided by ``GradientsToTape.visit_Module`` and
``TapePlans._plan`` (gradients_plan.py); this module reports no code.
"""

from __future__ import annotations

from typing import Dict, List

import libcst as cst
from libcst.codemod.visitors import AddImportsVisitor

from tapeshift.migrate.engine.toolkit.builders import keyword_arg
from tapeshift.migrate.engine.toolkit.gradient_helpers import TAPE_PARAM
from tapeshift.migrate.rules.gradients_plan import _Plan
from tapeshift.migrate.engine.toolkit.walk import release


#: tf.gradients' parameters, in positional order.
GRADIENTS_PARAMS = (
    "ys", "xs", "grad_ys", "name", "colocate_gradients_with_ops",
    "gate_gradients", "aggregation_method", "stop_gradients", "unconnected_gradients",
)


class TapeRewriting:
    """Part of :class:`tapeshift.migrate.rules.gradients.GradientsToTape`: the
    transform (state on the rule: the calls' rewrites, the blocks' plans, the
    helpers that take a tape, the TensorFlow alias)."""

    # ------------------------------------------------------------------
    # rewriting
    # ------------------------------------------------------------------
    def _tape_call(self, call: cst.Call, tape: str) -> cst.Call:
        values: Dict[str, cst.BaseExpression] = {}
        for i, arg in enumerate(call.args):
            key = arg.keyword.value if arg.keyword is not None else GRADIENTS_PARAMS[i]
            values[key] = arg.value
        xs = values["xs"]
        if isinstance(xs, cst.Tuple):
            xs = cst.List(elements=xs.elements)
        args = [cst.Arg(value=values["ys"]), cst.Arg(value=xs)]
        if "grad_ys" in values:
            args.append(keyword_arg("output_gradients", values["grad_ys"]))
        if "unconnected_gradients" in values:
            args.append(keyword_arg("unconnected_gradients", values["unconnected_gradients"]))
        return cst.Call(func=cst.Attribute(value=cst.Name(tape), attr=cst.Name("gradient")),
                        args=args)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        mode = self._call_mode.get(original_node)
        if mode is None:
            return updated_node
        tape, how = mode
        if how == "helper":
            return updated_node.with_changes(args=[*updated_node.args, cst.Arg(
                cst.Name(tape), keyword=cst.Name(TAPE_PARAM), equal=cst.AssignEqual(
                    cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))])
        new = self._tape_call(updated_node, tape)
        if how == "list":
            return cst.List(elements=[cst.Element(value=new)])
        return new

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef):
        """A gradient helper takes the tape its caller recorded with (keyword-only after
        parameters with defaults or ``*args``)."""
        if original_node not in self._helper_defs:
            return updated_node
        params = updated_node.params
        tape = cst.Param(cst.Name(TAPE_PARAM))
        if any(p.default is not None for p in params.params) or params.kwonly_params \
                or isinstance(params.star_arg, cst.Param):
            star = params.star_arg if isinstance(params.star_arg, cst.Param) else cst.ParamStar()
            params = params.with_changes(star_arg=star, kwonly_params=[*params.kwonly_params, tape])
        else:
            params = params.with_changes(params=[*params.params, tape])
        self.record_change(original_node, f"`{original_node.name.value}` takes the tape that "
                           "recorded what it differentiates (`tape.gradient` for `tf.gradients`)")
        return updated_node.with_changes(params=params)

    def leave_Subscript(self, original_node: cst.Subscript, updated_node: cst.Subscript):
        if original_node in self._subscripts:
            return updated_node.value
        return updated_node

    def leave_Assign(self, original_node: cst.Assign, updated_node: cst.Assign):
        if original_node in self._unpacks:
            target = updated_node.targets[0].target.elements[0].value
            return updated_node.with_changes(
                targets=[updated_node.targets[0].with_changes(target=target)])
        return updated_node

    def leave_IndentedBlock(self, original_node, updated_node):
        plan = self._plans.get(original_node)
        if plan is None:
            return updated_node
        return updated_node.with_changes(body=self._apply(list(updated_node.body), plan))

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        plan = self._plans.get(original_node)
        if plan is not None:
            updated_node = updated_node.with_changes(body=self._apply(list(updated_node.body), plan))
        if self._plans:
            if self._needs_import:
                AddImportsVisitor.add_needed_import(self.context, "tensorflow",
                                                    asname=self._needs_import)
            self._remove_from_imports(original_node)
        return updated_node

    def _remove_from_imports(self, module: cst.Module) -> None:
        self.remove_tf_from_imports(module, lambda name, bound: name == "gradients")

    def _statement(self, code: str) -> cst.SimpleStatementLine:
        return cst.parse_statement(code + "\n")

    def _apply(self, body: List[cst.CSTNode], plan: _Plan) -> List[cst.CSTNode]:
        def with_watches(j: int) -> List[cst.CSTNode]:
            stmt = body[j]
            # blank lines moved into a block must not pick up its indentation
            lines = [ln.with_changes(indent=False) if ln.comment is None else ln
                     for ln in stmt.leading_lines]
            out = [stmt.with_changes(leading_lines=lines)]
            for tape, x in plan.post_watch.get(j, []):
                out.append(self._statement(f"{tape}.watch({x})"))
            for tape in plan.delete_after.get(j, []):
                out.append(self._statement(f"del {tape}"))
            return out

        skip = {j for indices in plan.moved.values() for j in indices}

        def span(a: int, b: int) -> List[cst.CSTNode]:
            out: List[cst.CSTNode] = []
            for j in range(a, b + 1):
                if j not in skip:
                    out.extend(with_watches(j))
            return out

        def build(level: int) -> List[cst.CSTNode]:
            start, end = plan.regions[level]
            lead = body[start].leading_lines
            body[start] = body[start].with_changes(leading_lines=())
            content: List[cst.CSTNode] = [
                self._statement(f"{plan.tapes[level]}.watch({x})") for x in plan.pre_watch[level]]
            if level == 0:
                content.extend(span(start, end))
            else:
                s0, e0 = plan.regions[level - 1]
                content.extend(span(start, s0 - 1))
                content.extend(build(level - 1))
                content.extend(span(e0 + 1, end))
            args = "persistent=True" if plan.persistent[level] else ""
            with_node = cst.With(
                items=[cst.WithItem(
                    item=cst.parse_expression(f"{self._alias}.GradientTape({args})"),
                    asname=cst.AsName(name=cst.Name(plan.tapes[level])))],
                body=cst.IndentedBlock(body=content),
                leading_lines=lead,
            )
            after: List[cst.CSTNode] = []
            for j in plan.moved.get(level, []):
                after.extend(with_watches(j))
            return [with_node, *after]

        top = len(plan.regions) - 1
        start, end = plan.regions[top]
        out: List[cst.CSTNode] = list(body[:start])
        try:
            out.extend(build(top))
        finally:
            release(build)
        for j in range(end + 1, len(body)):  # outside the tape: formatting untouched
            out.append(body[j])
            for tape in plan.delete_after.get(j, []):
                out.append(self._statement(f"del {tape}"))
        return out
