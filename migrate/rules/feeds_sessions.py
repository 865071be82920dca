"""The feeds rule's reading of several sessions opened one after another in one block.

Tutorials write their sections that way: constants run in a first ``with
tf.Session() as sess:``, placeholders fed in a second; or a model trained in one
session and a curve computed from the learned values, already NumPy, in another.
The session that feeds is the feeds rule's (step functions), the others are the
session rule's (eager code). Each TF1 session starts its variables again while
eager variables keep their values, so another session may not read a variable,
nor a graph value computed from one.
"""

from __future__ import annotations

from typing import Dict, List, Set

import libcst as cst

from tapeshift.migrate.engine.toolkit.dataflow import names_of
from tapeshift.migrate.engine.toolkit.kinds import VARIABLE_MAKERS
from tapeshift.migrate.engine.toolkit.walk import nodes
from tapeshift.migrate.rules.feeds_graph import LAYER_PREFIXES, TRAIN_METHODS


class SessionSections:
    """Part of :class:`tapeshift.migrate.rules.feeds.FeedsToFunctions`: which of
    several sessions in one block it converts (state on the rule)."""

    def _fed_sessions_only(self, module: cst.Module, blocks):
        """Of the sessions opened one after another in one block, the one that feeds
        (when exactly one does); the others are noted as the session rule's, each
        provided it reads no variable and nothing computed from one."""
        by_block: Dict[int, list] = {}
        for b in blocks:
            by_block.setdefault(id(b[1]), []).append(b)
        if all(len(same) == 1 for same in by_block.values()):
            return blocks
        stateful = self._variable_values(module)
        kept = []
        for same in by_block.values():
            fed = [b for b in same if _feeds_in(b, same)]
            others = [b for b in same if b not in fed]
            if len(fed) != 1 or any(names_of(b[1].body[b[2]])[0] & stateful for b in others):
                kept.extend(same)
                continue
            kept.extend(fed)
            self._other_sessions |= {id(b[1].body[b[2]]) for b in others}
        return kept

    def _variable_values(self, module: cst.Module) -> Set[str]:
        """Names bound (anywhere in the module) to a variable, a layer's output, a
        train op, or a graph value computed from those; a ``sess.run`` or ``.eval``
        result is a NumPy value, not one of them."""
        assigns: List[cst.Assign] = [n for n in nodes(module) if isinstance(n, cst.Assign)]
        out: Set[str] = set()
        changed = True
        while changed:
            changed = False
            for a in assigns:
                targets = {n.value for t in a.targets for n in nodes(t.target)
                           if isinstance(n, cst.Name)}
                if targets <= out or _runs(a.value):
                    continue
                if names_of(a.value)[0] & out or self._makes_state(a.value):
                    out |= targets
                    changed = True
        return out

    def _makes_state(self, value: cst.BaseExpression) -> bool:
        for n in nodes(value):
            if isinstance(n, cst.Call):
                name = self.tf_api_name(n.func) or ""
                if name in VARIABLE_MAKERS or name.startswith(LAYER_PREFIXES) or (
                        isinstance(n.func, cst.Attribute) and n.func.attr.value in TRAIN_METHODS):
                    return True
        return False


def _runs(value: cst.BaseExpression) -> bool:
    """``sess.run(...)``, ``t.eval()``: what it gives is NumPy."""
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
        and value.func.attr.value in ("run", "eval")


def _feeds_in(session, same) -> bool:
    """Whether the session of ``(call, block, index)`` feeds: in its ``with`` block,
    or (``sess = tf.Session()``) in the statements up to the next session of the
    block."""
    _, block, index = session
    ends = sorted(i for _, _, i in same if i > index)
    end = ends[0] if ends else len(block.body)
    return any(_feeds(stmt) for stmt in block.body[index:end])


def _feeds(stmt: cst.CSTNode) -> bool:
    """Whether a statement passes a ``feed_dict`` (by keyword, or a dict literal as
    the second argument of a ``run``)."""
    for n in nodes(stmt):
        if isinstance(n, cst.Call):
            if any(a.keyword is not None and a.keyword.value == "feed_dict" for a in n.args):
                return True
            if isinstance(n.func, cst.Attribute) and n.func.attr.value == "run" \
                    and len(n.args) > 1 and isinstance(n.args[1].value, cst.Dict):
                return True
    return False
