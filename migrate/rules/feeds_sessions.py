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

from typing import Dict, FrozenSet, List, Set

import libcst as cst

from tapeshift.migrate.engine.toolkit.dataflow import names_of
from tapeshift.migrate.engine.toolkit.walk import nodes
from tapeshift.migrate.engine.tf1_api import DENSE_PLACEHOLDERS, INITIALIZERS
from tapeshift.migrate.rules.feeds_graph import LAYER_PREFIXES


class SessionSections:
    """Part of :class:`tapeshift.migrate.rules.feeds.FeedsToFunctions`: which of
    several sessions in one block it converts (state on the rule)."""

    #: the names of sessions opened again on the graph (the class rule has none)
    _again: FrozenSet[str] = frozenset()

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
            if len(fed) != 1 or any(names_of(stmt)[0] & stateful
                                    for b in others for stmt in _region(b, same)):
                kept.extend(same)
                continue
            kept.extend(fed)
            self._other_sessions |= {id(b[1].body[b[2]]) for b in others}
        return kept

    def _sessions_started_again(self, blocks):
        """Fed sessions opened one after another in one block, on one graph, each
        after the first starting with a run of the initializer (a second training
        from scratch): read as the first session's, the others' names running it too
        (``self._again``); the session rule puts the variables back where the others
        initialise again. ``blocks`` as they are otherwise."""
        self._again = frozenset()
        if len(blocks) < 2 or len({id(b) for _, b, _ in blocks}) > 1:
            return blocks
        ordered = sorted(blocks, key=lambda b: b[2])
        block = ordered[0][1]
        names = set()
        for _, _, index in ordered[1:]:
            stmt = block.body[index]
            name = self._session_name(stmt)
            first = stmt.body.body[0] if isinstance(stmt, cst.With) and isinstance(
                stmt.body, cst.IndentedBlock) else block.body[index + 1] \
                if index + 1 < len(block.body) else None
            if name is None or first is None or not self._runs_initializer([first, *block.body], 0, name):
                return blocks
            names.add(name)
        self._again = frozenset(names)
        return ordered[:1]

    def _with_session_opened(self, body: List[cst.CSTNode], index: int):
        """``with tf.Session() as sess:`` whose body builds more graph (an evaluation
        after the training loop): read as ``sess = tf.Session()`` followed by the body,
        so that graph code is read after the session as at the block's own level (the
        session rule dissolves the block anyway: eager code has no session to close).
        The body so, and the session's index in it."""
        stmt = body[index]
        if not (isinstance(stmt, cst.With) and len(stmt.items) == 1
                and isinstance(stmt.items[0].asname, cst.AsName)
                and isinstance(stmt.items[0].asname.name, cst.Name)
                and isinstance(stmt.body, cst.IndentedBlock)):
            return body, index
        inner = list(stmt.body.body)
        if not any(self._builds_graph(s) for s in inner):
            return body, index
        opened = cst.SimpleStatementLine(
            [cst.Assign([cst.AssignTarget(stmt.items[0].asname.name)], stmt.items[0].item)],
            leading_lines=stmt.leading_lines)
        self._with_session = (stmt, len(inner))
        return [*body[:index], opened, *inner, *body[index + 1:]], index

    def _renested(self, rest, start: int) -> List[cst.CSTNode]:
        """The statements from the session on, ``(index, statement)``, as the program
        writes them: the body of a ``with`` session read flat goes back into its block
        (which the session rule dissolves, saying so where the block was)."""
        if self._with_session is None:
            return [stmt for _, stmt in rest]
        block, n = self._with_session
        inner = [stmt for i, stmt in rest if start < i <= start + n]
        out: List[cst.CSTNode] = [block.with_changes(body=block.body.with_changes(
            body=inner or [cst.SimpleStatementLine([cst.Pass()])]))]
        return out + [stmt for i, stmt in rest if i > start + n]

    def _builds_graph(self, stmt: cst.CSTNode) -> bool:
        """A plain assignment of TensorFlow ops (no session run in it)."""
        value, _ = self._assignment(stmt)
        if value is None or any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
                                and n.func.attr.value in ("run", "eval") for n in nodes(value)):
            return False
        return any(isinstance(n, cst.Call) and self.tf_api_name(n.func) is not None
                   for n in nodes(value))

    def _opened_early(self, body: List[cst.CSTNode], index: int):
        """``sess = tf.Session()`` at the top of a script, the graph built after it (its
        initializer perhaps run on the way): a session runs what the graph holds when
        ``sess.run`` is called, so the block is read with the session (and those
        initializer runs) moved to where the session is first used otherwise. Not when
        a variable is made after an initializer run (TF1 leaves it uninitialized).
        The body in that order, and the session's index in it."""
        stmt = body[index]
        name = self._session_name(stmt) if isinstance(stmt, cst.SimpleStatementLine) else None
        if name is None:
            return body, index
        inits: List[int] = []
        first = None
        for j in range(index + 1, len(body)):
            if not any(isinstance(n, cst.Name) and n.value == name for n in nodes(body[j])):
                continue
            if self._runs_initializer(body, j, name):
                inits.append(j)
                continue
            first = j
            break
        between = [k for k in range(index + 1, first or index) if k not in inits]
        if first is None or not any(self._makes_state(body[k]) or self._feeds_by(body[k])
                                    for k in between):
            # (no placeholder, variable or train op made between: graph code there is
            # read as graph code after the session, a Saver or a writer stays where it is)
            return body, index
        if inits and any(self._makes_variable(body[k]) for k in range(inits[0] + 1, first)):
            return body, index
        graph = [body[k] for k in between]
        if any(ln.comment is None for ln in stmt.leading_lines):
            self._gap_at = index  # the graph takes its place: the blank line before it too
        moved = [*body[:index], *graph, stmt, *(body[k] for k in inits), *body[first:]]
        return moved, index + len(graph)

    def _runs_initializer(self, body: List[cst.CSTNode], j: int, session: str) -> bool:
        """Statement ``j`` is ``sess.run(init)``, ``init`` an initializer (or bound
        only to initializers in ``body``)."""
        stmt = body[j]
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
                and isinstance(stmt.body[0], cst.Expr)):
            return False
        call = stmt.body[0].value
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                and call.func.attr.value == "run" and isinstance(call.func.value, cst.Name)
                and call.func.value.value == session and len(call.args) == 1):
            return False
        arg = call.args[0].value
        if isinstance(arg, cst.Call):
            return self.tf_api_name(arg.func) in INITIALIZERS
        if not isinstance(arg, cst.Name):
            return False
        values = [self._assignment(s) for s in body]
        bound = [value for value, target in values if target == arg.value]
        return bool(bound) and all(isinstance(v, cst.Call) and self.tf_api_name(v.func)
                                   in INITIALIZERS for v in bound)

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

    def _feeds_by(self, stmt: cst.CSTNode) -> bool:
        """The statement makes a placeholder."""
        return any(isinstance(n, cst.Call) and self.tf_api_name(n.func) in DENSE_PLACEHOLDERS
                   for n in nodes(stmt))

    def _makes_state(self, node: cst.CSTNode) -> bool:
        """Makes a variable, an update or train op (the feeds rule's own tests), or a
        layer (which makes its variables)."""
        return self._makes_variable(node) or self._changes_state(node) or any(
            isinstance(n, cst.Call) and (self.tf_api_name(n.func) or "").startswith(LAYER_PREFIXES)
            for n in nodes(node))


def _runs(value: cst.BaseExpression) -> bool:
    """``sess.run(...)``, ``t.eval()``: what it gives is NumPy."""
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
        and value.func.attr.value in ("run", "eval")


def _region(session, same) -> List[cst.CSTNode]:
    """The statements of the session ``(call, block, index)``: its ``with`` block, or
    (``sess = tf.Session()``) the statements up to the next session of the block."""
    _, block, index = session
    ends = sorted(i for _, _, i in same if i > index)
    return list(block.body[index:ends[0] if ends else len(block.body)])


def _feeds_in(session, same) -> bool:
    """Whether the session of ``(call, block, index)`` feeds, in its region."""
    return any(_feeds(stmt) for stmt in _region(session, same))


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
