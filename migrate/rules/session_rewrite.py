"""Part of the session rule (session.py): the rewrite, from the plan its analysis left.

``SessionRewriting`` turns each planned ``sess.run(fetch)`` into the fetched value
(``_convert``: ``t.numpy()`` for a tensor or variable, the structure of a list,
tuple or dict of them kept, ``tf.nest.map_structure`` otherwise), ``tf.assign(v, x)``
run at its line into ``v.assign(x)`` and ``t.eval()`` into ``t.numpy()``. It removes
the statements the plan lists (the Session's construction, the initializer and its
runs, the graph housekeeping), ``sess.close()`` and a run of the initializer, keeping
the blank lines and comments above them (a block left empty gets ``pass``); it
dissolves a ``with tf.Session() as sess:`` block into its body and drops those names
from ``from tensorflow import ...``. What to rewrite was decided by
``SessionToEager.visit_Module`` and its ``_plan_*`` methods (session.py), which call
``_convert`` to check a fetch: it reports TS115 where a fetch has no eager value.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from tapeshift.migrate.engine.tf1_api import GRAPH_HOUSEKEEPING, INITIALIZERS, SESSIONS
from tapeshift.migrate.engine.toolkit.removal import merged_lines
from tapeshift.migrate.engine.toolkit.walk import nodes
from tapeshift.migrate.rules.session_codes import TS115
from tapeshift.migrate.rules.session_resets import reset_statements

#: what a comment right above a removed initializer says when it speaks of it (it goes too)
INITIALIZING = ("initiali",)

#: ops that have no value for a sess.run to fetch (TS115)
NO_VALUE = frozenset({"group", "no_op"})


class SessionRewriting:
    """Part of :class:`tapeshift.migrate.rules.session.SessionToEager`: the
    transform (state on the rule: the runs, evals and inline updates it planned,
    the statements to remove, the ``with`` blocks to dissolve, the session names,
    the names' kinds and the TensorFlow alias)."""

    def _numpy(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        return cst.Call(func=cst.Attribute(value=expr, attr=cst.Name("numpy")))

    def _convert(self, fetch: cst.BaseExpression,
                 original: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """The eager expression for a fetch, or None (reported) when unsupported.
        ``original`` is the fetch as parsed: names and kinds are read from it
        (metadata knows only the parsed nodes), the result is built from ``fetch``."""
        if isinstance(original, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            self.report(TS115.code, original, "fetching a tensor by its string name")
            return None
        if isinstance(original, (cst.List, cst.Tuple)):
            elements = []
            for el, el0 in zip(fetch.elements, original.elements):
                if isinstance(el0, cst.StarredElement):
                    self.report(TS115.code, original, "a starred element in the fetches")
                    return None
                value = self._convert(el.value, el0.value)
                if value is None:
                    return None
                elements.append(el.with_changes(value=value))
            return fetch.with_changes(elements=elements)
        if isinstance(original, cst.Dict):
            elements = []
            for el, el0 in zip(fetch.elements, original.elements):
                if not isinstance(el0, cst.DictElement):
                    self.report(TS115.code, original, "`**` in a fetch dict")
                    return None
                value = self._convert(el.value, el0.value)
                if value is None:
                    return None
                elements.append(el.with_changes(value=value))
            return fetch.with_changes(elements=elements)
        if isinstance(original, cst.Call) and self.is_tf(original.func, *NO_VALUE):
            self.report(TS115.code, original, "fetching an operation that has no value")
            return None
        if isinstance(original, cst.Name):
            if original.value not in self._kinds:
                self.report(TS115.code, original, f"`{original.value}` is not defined by an assignment "
                            "in this file")
                return None
        kind = self.expr_kind(original, self._kinds)
        if kind in ("tensor", "variable"):
            if not isinstance(fetch, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
                fetch = fetch.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            return self._numpy(fetch)
        lam = cst.parse_expression("lambda t: t.numpy()")
        return cst.Call(
            func=cst.parse_expression(f"{self._alias}.nest.map_structure"),
            args=[cst.Arg(value=lam), cst.Arg(value=fetch)])

    # ------------------------------------------------------------------
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        if not self._active:
            return updated_node
        update = self._inline_updates.get(original_node)
        if update is not None:  # tf.assign(v, x) -> v.assign(x)
            if isinstance(original_node.func, cst.Attribute) \
                    and self.tf_api_name(original_node.func) is None:
                return updated_node
            ref, value = updated_node.args[0].value, updated_node.args[1]
            return cst.Call(func=cst.Attribute(value=ref, attr=cst.Name(update)),
                            args=[value.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT,
                                                     comma=cst.MaybeSentinel.DEFAULT)])
        if original_node in self._runs:
            if original_node in self._discarded and original_node.args[0].value in \
                    self._inline_updates:
                return updated_node.args[0].value  # its value goes: the update alone
            new = self._convert(updated_node.args[0].value, original_node.args[0].value)
            return new if new is not None else updated_node
        if original_node in self._evals:
            return updated_node.with_changes(
                func=updated_node.func.with_changes(attr=cst.Name("numpy")), args=[])
        return updated_node

    def leave_SimpleStatementLine(self, original_node, updated_node):
        if not self._active:
            return updated_node
        if len(original_node.body) == 1 and isinstance(original_node.body[0], cst.Expr):
            reset = reset_statements(self._resets, original_node.body[0].value,
                                     original_node.leading_lines)
            if reset is not None:
                return reset
        if original_node in self._remove:
            initializes = any(isinstance(n, cst.Call) and self.tf_api_name(n.func) in INITIALIZERS
                              for n in nodes(original_node))
            return self.remove_statement(original_node, INITIALIZING if initializes else ())
        if len(original_node.body) == 1 and isinstance(original_node.body[0], cst.Expr):
            value = original_node.body[0].value
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
                recv = value.func.value
                attr = value.func.attr.value
                if attr == "close" and isinstance(recv, cst.Name) and not value.args:
                    if self._is_session_name(recv):
                        self.record_change(original_node, "sess.close() removed")
                        return self.remove_statement(original_node)
                if attr == "run" and value.args and isinstance(recv, cst.Name) \
                        and self._is_session_name(recv) and value not in self._runs:
                    self.record_change(original_node, "running the initializer removed")
                    return self.remove_statement(original_node, INITIALIZING)
        return self.with_carried_lines(original_node, updated_node)

    def _is_session_name(self, name: cst.Name) -> bool:
        return name.value in self._sessions

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if not self._active:
            return updated_node
        removable = SESSIONS | INITIALIZERS | GRAPH_HOUSEKEEPING
        self.remove_tf_from_imports(original_node, lambda name, bound: name in removable)
        return updated_node

    def leave_With(self, original_node: cst.With, updated_node: cst.With):
        if not self._active or original_node not in self._flatten:
            return self._carry(original_node, updated_node)
        body = list(updated_node.body.body)
        if not body:
            return self.remove_statement(original_node)
        first = body[0]
        body[0] = self.with_carried_lines(original_node, first.with_changes(
            leading_lines=merged_lines(original_node.leading_lines, first.leading_lines)))
        return cst.FlattenSentinel(body)

    # a statement removed just before a compound statement leaves it its lines
    def _carry(self, original_node, updated_node):
        return self.with_carried_lines(original_node, updated_node) if self._active \
            else updated_node

    leave_If = leave_For = leave_While = leave_Try = leave_FunctionDef = leave_ClassDef = _carry

    def leave_IndentedBlock(self, original_node, updated_node):
        if self._active and not updated_node.body:
            return updated_node.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
        return updated_node
