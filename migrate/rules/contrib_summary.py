"""``tf.contrib.summary.*`` -> ``tf.summary.*``, the same writers in TensorFlow 2.

``tf.contrib.summary`` was TF 1.x's preview of TF2's summary API: a default
writer, recording conditions and an explicit step. It is gone in TensorFlow 2
(compat.v1 included), and ``tf.summary`` has its functions under the same
names::

    tf.contrib.summary.create_file_writer(logdir, flush_millis=10000)
        -> tf.summary.create_file_writer(logdir, flush_millis=10000)
    tf.contrib.summary.always_record_summaries()  -> tf.summary.record_if(True)
    tf.contrib.summary.record_summaries_every_n_global_steps(100, step)
        -> tf.summary.record_if(lambda: tf.equal(step % 100, 0))
    tf.contrib.summary.scalar('loss', loss)
        -> tf.summary.scalar('loss', data=loss,
                             step=tf.compat.v1.train.get_or_create_global_step())

A summary written without a step was written at the global step (created if
there was none), which TF2 does not default to: the step is written out. In a
file that falls back to compat mode the functions are ``tf.compat.v2.summary.*``.

What is written differs in form, reported once per file (TS133, info): TF2
writes a scalar as a tensor summary (TF1: ``simple_value``; TensorBoard shows
the same curve) and buckets histograms its own way, and TF1 recorded only
inside a recording condition (``always_record_summaries()``...), where TF2
records whenever a default writer is set. Not converted, so still reported as
``tf.contrib`` by the contrib rule (TS117): ``family=``; ``image`` (TF1 scaled
a float image so its largest value is 255, TF2 clips it to [0, 1]) and
``audio`` (TF1 took 2-D clips, TF2 only 3-D), whose values would change;
``generic``, ``graph``, ``import_event``, ``summary_writer_initializer_op``,
``create_db_writer`` and the module bound to a name.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Tuple

import libcst as cst

from tapeshift.migrate.engine.findings import CodeInfo, Severity
from tapeshift.migrate.engine.registry import register_rule
from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.engine.toolkit.builders import code_of, keyword_arg
from tapeshift.migrate.engine.toolkit.tf_names import tf_module_alias

TS133 = CodeInfo(
    code="TS133",
    name="contrib-summary-form",
    severity=Severity.INFO,
    blocks_tape=False,
    summary="tf.contrib.summary became tf.summary: the same values, written in TF2's form",
    what="Reports, once per file, that `tf.contrib.summary` calls became `tf.summary`: scalars "
         "are written as tensor summaries, histograms bucketed by TF2's rule, and TF2 records "
         "whenever a default writer is set (TF1 only inside a recording condition). "
         "`tf.summary.scalar` and `histogram` are TensorBoard's code: it must be installed.",
    why="TF2's summary functions are the successors of tf.contrib.summary, but the event "
        "records differ in form, and a summary TF1 skipped for want of a recording "
        "condition is written.",
    example="tf.contrib.summary.scalar('loss', loss)",
    use_instead="tf.summary.scalar('loss', data=loss, "
                "step=tf.compat.v1.train.get_or_create_global_step())",
    fix_safety="The scalars' values are the same and a histogram summarises the same values; "
               "TensorBoard reads both forms.",
)

#: contrib function -> (its parameters in order, the tf.summary function, TF1 name -> TF2 name
#: of the parameters kept, whether it takes a step); a parameter mapped to None is not converted
_SUMMARY = ("name", "tensor", "family", "step")
_CONVERSIONS: Dict[str, Tuple[Tuple[str, ...], str, Dict[str, Optional[str]], bool]] = {
    "scalar": (_SUMMARY, "scalar", {"name": "name", "tensor": "data", "family": None,
                                    "step": "step"}, True),
    "histogram": (_SUMMARY, "histogram", {"name": "name", "tensor": "data", "family": None,
                                          "step": "step"}, True),
    "create_file_writer": (("logdir", "max_queue", "flush_millis", "filename_suffix", "name"),
                           "create_file_writer",
                           {p: p for p in ("logdir", "max_queue", "flush_millis",
                                           "filename_suffix", "name")}, False),
    "flush": (("writer", "name"), "flush", {"writer": "writer", "name": "name"}, False),
    "should_record_summaries": ((), "should_record_summaries", {}, False),
    "always_record_summaries": ((), "record_if", {}, False),
    "never_record_summaries": ((), "record_if", {}, False),
    "record_summaries_every_n_global_steps": (("n", "global_step"), "record_if",
                                              {"n": "n", "global_step": "global_step"}, False),
}
#: the order of each tf.summary function's parameters (to keep an argument positional)
_TF2_ORDER = {
    "scalar": ("name", "data", "step"), "histogram": ("name", "data", "step"),
    "create_file_writer": ("logdir", "max_queue", "flush_millis", "filename_suffix", "name"),
    "flush": ("writer", "name"),
}
_GLOBAL_STEP = "train.get_or_create_global_step()"


def _bind(call: cst.Call, params: Tuple[str, ...]) -> Optional[Dict[str, Tuple[int, cst.Arg]]]:
    """TF1 parameter -> (position given, or -1 by keyword; the argument); None when the
    arguments do not bind (``*args``, an unknown keyword, too many)."""
    bound: Dict[str, Tuple[int, cst.Arg]] = {}
    for i, arg in enumerate(call.args):
        if arg.star:
            return None
        if arg.keyword is None:
            if i >= len(params) or params[i] in bound:
                return None
            bound[params[i]] = (i, arg)
        else:
            if arg.keyword.value not in params or arg.keyword.value in bound:
                return None
            bound[arg.keyword.value] = (-1, arg)
    return bound


def converts(call: cst.Call, api_name: Callable[[cst.CSTNode], Optional[str]]) -> bool:
    """``call`` is a ``tf.contrib.summary`` call this rule converts (the contrib rule
    does not report those)."""
    api = api_name(call.func) or ""
    if not api.startswith("contrib.summary."):
        return False
    entry = _CONVERSIONS.get(api[len("contrib.summary."):])
    if entry is None:
        return False
    params, _, renamed, _ = entry
    bound = _bind(call, params)
    return bound is not None and all(renamed[p] is not None for p in bound)


@register_rule
class ContribSummaryToTF2(TapeshiftCodemod):
    DESCRIPTION = "tf.contrib.summary functions -> tf.summary, with the global step written out."
    RULE = "contrib-summary"
    #: after the renames (which would read tf.summary.scalar as TF1's); in compat form too
    PHASE = ("tape", "compat-post")
    ORDER = 35
    CODES = (TS133,)
    #: (one it does not convert is reported by the contrib rule: TS117)
    HANDLES = frozenset(f"contrib.summary.{name}" for name in _CONVERSIONS)
    SCREEN_NAMES = frozenset({"contrib"})
    USES_SHARED_FACTS = False

    def visit_Module(self, node: cst.Module) -> bool:
        alias = tf_module_alias(node)
        self._alias = alias or "tf"
        # after the fallback the alias is tensorflow.compat.v1: TF2's summaries are compat.v2's
        self._prefix = f"{self._alias}.compat.v2." if self._is_v1(node) else f"{self._alias}."
        self._v1 = f"{self._alias}." if self._is_v1(node) else f"{self._alias}.compat.v1."
        self._converted: List[cst.Call] = []
        return alias is not None

    def _is_v1(self, module: cst.Module) -> bool:
        for stmt in module.body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Import) and any(
                            code_of(a.name) == "tensorflow.compat.v1" for a in small.names):
                        return True
        return False

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if not converts(original_node, self.tf_api_name):
            return updated_node
        short = (self.tf_api_name(original_node.func) or "")[len("contrib.summary."):]
        params, target, renamed, stepped = _CONVERSIONS[short]
        bound = _bind(updated_node, params) or {}
        func = cst.parse_expression(f"{self._prefix}summary.{target}")
        if short in ("always_record_summaries", "never_record_summaries"):
            args = [cst.Arg(cst.Name("True" if short.startswith("always") else "False"))]
        elif short == "record_summaries_every_n_global_steps":
            n = bound["n"][1].value
            step = bound["global_step"][1].value if "global_step" in bound \
                else cst.parse_expression(self._v1 + _GLOBAL_STEP)
            condition = cst.parse_expression(
                f"lambda: {self._alias}.equal({_operand(step)} % {_operand(n)}, 0)")
            args = [cst.Arg(condition)]
        else:
            args = self._arguments(bound, renamed, _TF2_ORDER.get(target, ()))
            if stepped and "step" not in bound:
                args.append(keyword_arg("step", cst.parse_expression(self._v1 + _GLOBAL_STEP)))
        self._converted.append(original_node)
        self.record_change(original_node, f"tf.contrib.summary.{short} -> tf.summary.{target}"
                           + (" at the global step" if stepped and "step" not in bound else ""))
        return updated_node.with_changes(func=func, args=_commas(args))

    @staticmethod
    def _arguments(bound, renamed, order) -> List[cst.Arg]:
        """The arguments under their TF2 names: positional while each keeps its position."""
        out: List[cst.Arg] = []
        positional = True
        for param, (position, arg) in sorted(bound.items(), key=lambda kv: (
                kv[1][0] < 0, kv[1][0])):
            new = renamed[param]
            if positional and position == len(out) and len(out) < len(order) \
                    and order[len(out)] == new:
                out.append(arg.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT))
                continue
            positional = False
            out.append(keyword_arg(new, arg.value))
        return out

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if self._converted:
            self.report(TS133.code, self._converted[0], "tf.contrib.summary -> tf.summary: TF2 "
                        "writes scalars as tensor summaries and buckets histograms its own way, "
                        "and records whenever a default writer is set, where TF1 recorded only "
                        "inside always_record_summaries() or record_summaries_every_n_global_"
                        "steps(); TensorBoard must be installed (docs/migrate.md, 'tf.contrib.summary')")
        return updated_node


def _operand(expr: cst.BaseExpression) -> str:
    """``expr`` as an operand of ``%``: in parentheses unless it is a name, a number,
    an attribute, a call or a subscript (``(gs + 1) % (2 * 5)``)."""
    text = code_of(expr)
    simple = (cst.Name, cst.Integer, cst.Attribute, cst.Call, cst.Subscript)
    return text if isinstance(expr, simple) or expr.lpar else f"({text})"


def _commas(args: List[cst.Arg]) -> List[cst.Arg]:
    """The arguments separated by ``, `` (the last without a comma)."""
    out = []
    for i, arg in enumerate(args):
        comma = cst.MaybeSentinel.DEFAULT if i == len(args) - 1 else cst.Comma(
            whitespace_after=cst.SimpleWhitespace(" "))
        if i < len(args) - 1 and isinstance(arg.comma, cst.Comma):
            comma = arg.comma
        out.append(arg.with_changes(comma=comma))
    return out
