"""TF1 summaries (``tf.summary.*`` ops, ``merge_all``, ``FileWriter``) -> a TF2 writer with a step.

A TF1 program builds summary ops in its graph, merges them (``merged =
tf.summary.merge_all()``), fetches ``merged`` with a training step and hands
the serialized result to a ``tf.summary.FileWriter`` with the step number.
TF2 has no graph to collect summaries from and writes through a default
writer. This rule keeps what is written, byte for byte:

* each summary op becomes the v1 op of the same name, bound to a name
  (``W1_summary = tf.compat.v1.summary.histogram("Layer1/W1", W1)``): run
  eagerly, it returns the serialized ``Summary`` TF1's op returned (same tags,
  same histogram buckets; TF2's own ``tf.summary.histogram`` buckets
  differently), and the feeds rule computes it where ``merged`` is fetched;
* ``tf.summary.merge_all()`` -> ``tf.raw_ops.MergeSummary(inputs=[...])`` of the
  summaries made before it (TF1's SUMMARIES collection, in order), moved out of
  the session block into the graph code when it stood there;
* ``tf.summary.FileWriter(logdir, graph)`` -> ``tf.summary.create_file_writer(logdir)``
  (TF2 code has no graph to write), ``writer.add_graph(...)`` goes, and
  ``writer.add_summary(s, step)`` -> ``with writer.as_default():
  tf.summary.experimental.write_raw_pb(s, step=step)``.

Summary ops made inside functions, loops or the session block (a new op at
every step) are not converted (TS108).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set

import libcst as cst

from tapeshift.migrate.engine.registry import register_rule
from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.engine.tf1_api import SESSIONS
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.tf_names import all_names, fresh_name, tf_module_alias
from tapeshift.migrate.engine.toolkit.walk import nodes
from tapeshift.migrate.rules.model_code_calls import SUMMARY_OPS
from tapeshift.migrate.rules.session import TS108

_MERGES = frozenset({"summary.merge_all", "summary.merge"})


class _Skip(Exception):
    """Not converted; the reason was reported."""


@register_rule
class SummariesToWriter(TapeshiftCodemod):
    DESCRIPTION = "TF1 summary ops, merge_all and FileWriter -> v1 ops written by a TF2 writer with a step."
    RULE = "summaries"
    #: after the model-code rule (which writes the scopes into the tags), before feeds
    PHASE = "pre"
    ORDER = 27
    SCREEN_NAMES = frozenset({"merge_all", "FileWriter", "merge"})

    def __init__(self, context) -> None:
        super().__init__(context)
        self._new_body: Optional[List[cst.BaseStatement]] = None

    def visit_Module(self, node: cst.Module) -> bool:
        self._alias = tf_module_alias(node)
        if self._alias is None:
            return False
        try:
            self._new_body = self._convert(node)
        except _Skip:
            self._new_body = None
        return False

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if self._new_body is None:
            return updated_node
        return updated_node.with_changes(body=self._new_body)

    def _fail(self, node: cst.CSTNode, message: str) -> None:
        self.report(TS108.code, node, message)
        raise _Skip()

    # ------------------------------------------------------------------
    def _convert(self, module: cst.Module) -> Optional[List[cst.BaseStatement]]:
        body = list(module.body)
        merges = [n for n in nodes(module) if isinstance(n, cst.Call)
                  and self.tf_api_name(n.func) in _MERGES]
        writers = [n for n in nodes(module) if isinstance(n, cst.Call)
                   and self.tf_api_name(n.func) == "summary.FileWriter"]
        if not merges and not writers:
            return None
        session = next((i for i, s in enumerate(body) if any(
            isinstance(n, cst.Call) and self.tf_api_name(n.func) in SESSIONS for n in nodes(s))),
            len(body))
        # the summary ops of the graph code, in the order TF1 collects them
        taken = set(all_names(module))
        made: List[str] = []
        out: List[cst.BaseStatement] = []
        for i, stmt in enumerate(body):
            ops = self._summary_ops(stmt)
            if not ops:
                out.append(stmt)
                continue
            if i >= session or not isinstance(stmt, cst.SimpleStatementLine) or len(ops) > 1:
                self._fail(ops[0], f"`{code_of(ops[0].func)}(...)` here makes a summary op each "
                           "time it runs (or in a block the rule does not follow): not converted")
            out.append(self._bind(stmt, ops[0], taken, made))
        # merge_all / merge: the v1 ops merged, in the graph code (moved there from
        # the session block); writers
        self._writer_names = {n.targets[0].target.value for n in nodes(module)
                              if isinstance(n, cst.Assign) and isinstance(n.value, cst.Call)
                              and self.tf_api_name(n.value.func) == "summary.FileWriter"
                              and len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name)}
        moved: List[cst.BaseStatement] = []
        after: List[cst.BaseStatement] = []
        final: List[cst.BaseStatement] = []
        for i, stmt in enumerate(out):
            merge = self._merge_statement(stmt)
            if merge is not None and i < session:
                final.append(self._merged(stmt, merge, made))
            elif i < session:
                final.append(self._session_code(stmt, made, moved))
            else:
                new = self._session_code(stmt, made, moved)
                if not isinstance(new, cst.RemovalSentinel):
                    after.append(new)
        final += moved + after
        if self._merge_left(final):
            self._fail(merges[0], "tf.summary.merge_all() in a place the rule does not follow")
        return final

    def _summary_ops(self, stmt: cst.CSTNode) -> List[cst.Call]:
        return [n for n in nodes(stmt) if isinstance(n, cst.Call)
                and self.tf_api_name(n.func) in SUMMARY_OPS]

    def _v1(self, call: cst.Call) -> cst.Call:
        api = self.tf_api_name(call.func)
        return call.with_changes(func=cst.parse_expression(f"{self._alias}.compat.v1.{api}"))

    def _bind(self, stmt: cst.SimpleStatementLine, call: cst.Call, taken: Set[str],
              made: List[str]) -> cst.SimpleStatementLine:
        small = stmt.body[0]
        if isinstance(small, cst.Assign) and small.value is call and len(small.targets) == 1 \
                and isinstance(small.targets[0].target, cst.Name):
            made.append(small.targets[0].target.value)
            return stmt.with_changes(body=[small.with_changes(value=self._v1(call))])
        if not (isinstance(small, cst.Expr) and small.value is call and len(stmt.body) == 1):
            self._fail(call, f"`{code_of(call.func)}(...)` inside an expression is not converted")
        tag = code_of(call.args[0].value) if call.args else ""
        base = "".join(ch if ch.isalnum() else "_" for ch in tag.strip("\"'").rpartition("/")[2])
        name = fresh_name(f"{base.strip('_') or 'merged'}_summary", taken)
        taken.add(name)
        made.append(name)
        self.record_change(stmt, f"`{code_of(call.func)}(...)` -> `{name} = "
                           f"tf.compat.v1.{self.tf_api_name(call.func)}(...)`: TF1's serialized "
                           "summary, written by the writer")
        return stmt.with_changes(body=[cst.Assign([cst.AssignTarget(cst.Name(name))],
                                                  self._v1(call))])

    def _merge_statement(self, stmt: cst.CSTNode) -> Optional[cst.Call]:
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 \
                and isinstance(stmt.body[0], cst.Assign) and isinstance(stmt.body[0].value, cst.Call) \
                and self.tf_api_name(stmt.body[0].value.func) in _MERGES:
            return stmt.body[0].value
        return None

    def _merged(self, stmt: cst.SimpleStatementLine, call: cst.Call,
                made: List[str]) -> cst.SimpleStatementLine:
        api = self.tf_api_name(call.func)
        if api == "summary.merge_all":
            if call.args:
                self._fail(call, "tf.summary.merge_all(key=...) is not converted")
            inputs: cst.BaseExpression = cst.List([cst.Element(cst.Name(n)) for n in made])
        else:
            inputs = call.args[0].value if call.args else cst.List([])
        new = cst.Call(func=cst.parse_expression(f"{self._alias}.raw_ops.MergeSummary"),
                       args=[cst.Arg(inputs, keyword=cst.Name("inputs"),
                                     equal=cst.AssignEqual(cst.SimpleWhitespace(""),
                                                           cst.SimpleWhitespace("")))])
        self.record_change(call, f"`{code_of(call)}` -> tf.raw_ops.MergeSummary of "
                           f"{code_of(inputs)}: the bytes TF1's merged summary holds")
        small = stmt.body[0]
        return stmt.with_changes(body=[small.with_changes(value=new)])

    def _merge_left(self, body: List[cst.CSTNode]) -> bool:
        return any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
                   and n.func.attr.value == "merge_all" for s in body for n in nodes(s))

    # -- the session block and the writers -----------------------------------
    def _session_code(self, stmt: cst.CSTNode, made: List[str], moved: List) -> cst.CSTNode:
        """One pass (each decision on the original node, whose TensorFlow names are
        known): ``merged = tf.summary.merge_all()`` moves to ``moved`` (it merges the
        summaries the graph code made, so it goes before the session);
        ``FileWriter`` -> ``create_file_writer``; ``add_graph`` goes;
        ``add_summary`` -> ``write_raw_pb`` in the writer. A statement with none
        of these is the statement itself (LibCST's visit would build it again)."""
        if not self._in_session_code(stmt):
            return stmt
        owner = self

        class _T(cst.CSTTransformer):
            def leave_Call(self, original_node, updated_node):
                if owner.tf_api_name(original_node.func) == "summary.FileWriter":
                    logdir = updated_node.args[0] if updated_node.args else None
                    if logdir is None:
                        owner._fail(original_node, "tf.summary.FileWriter() without a logdir")
                    owner.record_change(original_node, "tf.summary.FileWriter -> "
                                        "tf.summary.create_file_writer (TF2 writes no graph)")
                    return cst.Call(func=cst.parse_expression(
                        f"{owner._alias}.summary.create_file_writer"),
                        args=[logdir.with_changes(comma=cst.MaybeSentinel.DEFAULT)])
                return updated_node

            def leave_SimpleStatementLine(self, original_node, updated_node):
                merge = owner._merge_statement(original_node)
                if merge is not None:
                    moved.append(owner._merged(original_node, merge, made))
                    return cst.RemoveFromParent()
                call = owner._writer_call(original_node)
                if call is None:
                    return updated_node
                method = call.func.attr.value
                if method == "add_graph":
                    owner.record_change(original_node, "writer.add_graph(...) removed: TF2 "
                                        "code has no graph to write")
                    return cst.RemoveFromParent()
                if method == "add_summary":
                    return owner._add_summary(original_node, call)
                return updated_node

        return stmt.visit(_T())

    def _in_session_code(self, stmt: cst.CSTNode) -> bool:
        """``stmt`` holds something :meth:`_session_code` changes (what its
        transformer's hooks test, on the same nodes)."""
        for node in nodes(stmt):
            if type(node) is cst.Call:
                if self.tf_api_name(node.func) == "summary.FileWriter":
                    return True
            elif type(node) is cst.SimpleStatementLine:
                if self._merge_statement(node) is not None or self._writer_call(node) is not None:
                    return True
        return False

    def _writer_call(self, stmt: cst.SimpleStatementLine) -> Optional[cst.Call]:
        """``writer.method(...)``, the whole of ``stmt``, on one of the file's writers."""
        small = stmt.body[0] if len(stmt.body) == 1 else None
        call = small.value if isinstance(small, cst.Expr) else None
        if (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                and isinstance(call.func.value, cst.Name)
                and call.func.value.value in self._writer_names):
            return call
        return None

    def _add_summary(self, stmt: cst.SimpleStatementLine, call: cst.Call) -> cst.With:
        writer = call.func.value.value
        args: Dict[str, cst.BaseExpression] = {}
        for k, arg in enumerate(call.args):
            key = arg.keyword.value if arg.keyword is not None else ("summary", "global_step")[k]
            args[key] = arg.value
        step = args.get("global_step", cst.Integer("0"))
        body = cst.parse_statement(
            f"with {writer}.as_default():\n"
            f"    {self._alias}.summary.experimental.write_raw_pb({code_of(args['summary'])}, "
            f"step={code_of(step)})\n")
        self.record_change(stmt, f"`{code_of(call)}` -> write_raw_pb in `{writer}.as_default()`: "
                           "the same Summary at the same step")
        return body.with_changes(leading_lines=stmt.leading_lines)
