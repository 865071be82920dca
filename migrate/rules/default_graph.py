"""``with tf.Graph().as_default():`` around a whole program -> its statements.

A TF1 program often builds its graph and runs its session inside a fresh
graph::

    with tf.Graph().as_default():
        w = tf.Variable(5.0)
        ...
        with tf.Session() as sess:
            print(sess.run(w))

or names it (``graph = tf.Graph()``, ``with graph.as_default():``,
``tf.Session(graph=graph)``). Eager TF2 has no default graph to replace: a
graph that holds everything the program (or the function) builds is the
program itself, so the block dissolves and its statements take its place,
where the other rules read them as any module-level graph code. The graph's
name and a ``graph=`` argument that named it go with it.

Only a graph that is the whole of its body's TensorFlow code dissolves: one
block per body (module, ``__main__`` guard, function or method), no other statement of
that body uses TensorFlow, and the graph's name is used for nothing else
(``graph.get_operations()``, ``graph.finalize()``, a second session on it).
Otherwise the block stays and the file keeps what the other rules say of it.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Set

import libcst as cst
import libcst.matchers as m

from tapeshift.migrate.engine.registry import register_rule
from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.engine.toolkit.tf_names import tf_module_alias
from tapeshift.migrate.engine.toolkit.statements import is_main_guard
from tapeshift.migrate.engine.toolkit.walk import nodes


@register_rule
class DefaultGraphBlocks(TapeshiftCodemod):
    DESCRIPTION = "A `with tf.Graph().as_default():` block holding a whole program -> its statements."
    RULE = "default-graph"
    #: before the model-code and feeds rules, which read module-level graph code
    PHASE = "pre"
    ORDER = 22
    SCREEN_NAMES = frozenset({"as_default"})

    def visit_Module(self, node: cst.Module) -> bool:
        # read on the original tree (its names resolved), written back in leave_Module
        self._new_body: Optional[List[cst.BaseStatement]] = None
        if tf_module_alias(node) is None:
            return False
        self._alias = tf_module_alias(node)
        body = [self._inner(stmt) for stmt in node.body]
        body = self._body(body, node.body)
        if any(a is not b for a, b in zip(body, node.body)) or len(body) != len(node.body):
            self._new_body = body
        return False

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if self._new_body is None:
            return updated_node
        return updated_node.with_changes(body=self._new_body)

    def _inner(self, stmt: cst.BaseStatement) -> cst.BaseStatement:
        """A module-level function, a method (a test case's, often) or the ``__main__``
        guard with its own graph block dissolved."""
        if isinstance(stmt, cst.ClassDef) and isinstance(stmt.body, cst.IndentedBlock):
            members = [self._inner(s) if isinstance(s, cst.FunctionDef) else s
                       for s in stmt.body.body]
            if any(a is not b for a, b in zip(members, stmt.body.body)):
                return stmt.with_changes(body=stmt.body.with_changes(body=members))
            return stmt
        if isinstance(stmt, cst.FunctionDef) or (isinstance(stmt, cst.If) and is_main_guard(stmt)):
            if isinstance(stmt.body, cst.IndentedBlock):
                body = self._body(list(stmt.body.body), stmt.body.body)
                if body != list(stmt.body.body):
                    return stmt.with_changes(body=stmt.body.with_changes(body=body))
        return stmt

    # ------------------------------------------------------------------
    def _body(self, body: Sequence[cst.BaseStatement],
              original: Sequence[cst.BaseStatement]) -> List[cst.BaseStatement]:
        """``body`` with its one whole-program graph block dissolved (else as it is);
        ``original`` holds the same statements as parsed (names are resolved on them)."""
        if any(a is not b for a, b in zip(body, original)):
            return list(body)  # a function's own block went: its module stays as it is
        blocks = [i for i, stmt in enumerate(body) if self._graph_of(stmt) is not None]
        if len(blocks) != 1:
            return list(body)
        index = blocks[0]
        block = body[index]
        assert isinstance(block, cst.With)
        graph = self._graph_of(block)
        named = graph if isinstance(graph, str) else None
        made_at = None
        builders = {stmt.name.value for stmt in body
                    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef))
                    and any(isinstance(n, cst.Name) and n.value == self._alias for n in nodes(stmt))}
        for i, stmt in enumerate(body):
            if i == index:
                continue
            if named is not None and made_at is None and self._makes_graph(stmt, named):
                made_at = i
                continue
            if named is not None and i > index and self._session_on(stmt, named):
                continue  # `with tf.Session(graph=graph):` builds into the graph too
            if self._uses_tf(stmt, builders) or (named is not None and named in _loads(stmt)):
                return list(body)  # other TensorFlow code beside the graph: it stays
        if named is not None:
            if made_at is None or not all(self._only_sessions_use(stmt, named)
                                          for stmt in body[index:]):
                return list(body)
        if len(block.items) == 2:
            # `with tf.Graph().as_default(), tf.Session() as sess:`: the session's block stays
            session = block.with_changes(items=[block.items[1].with_changes(
                comma=cst.MaybeSentinel.DEFAULT)])
            if named is not None:
                session = session.visit(_DropGraphArgument(named))
            self.record_change(block, "`...as_default()` dropped from the `with`: eager TF2 "
                               "has no graph; the session's block is the program's")
            out = list(body)
            out[index] = session
            return self._without_graph(out, made_at)
        inner = list(block.body.body)
        if named is not None:
            inner = [s.visit(_DropGraphArgument(named)) for s in inner]
            body = [s.visit(_DropGraphArgument(named)) if i > index else s
                    for i, s in enumerate(body)]
        if inner:
            kept = list(block.leading_lines) + [
                ln for ln in inner[0].leading_lines if ln.comment is not None]
            inner[0] = inner[0].with_changes(leading_lines=kept)
        self.record_change(block, "`with ...as_default():` dissolved: eager TF2 has no graph; "
                           "its statements are the program's")
        out = list(body)
        out[index:index + 1] = inner
        return self._without_graph(out, made_at)

    @staticmethod
    def _without_graph(out: List[cst.BaseStatement], made_at: Optional[int]) -> List[cst.BaseStatement]:
        """``out`` without the statement that made the named graph, whose blank lines
        and comments go to what follows it."""
        if made_at is not None:
            made = out.pop(made_at)
            if made_at < len(out):
                follows = out[made_at]
                out[made_at] = follows.with_changes(
                    leading_lines=[*made.leading_lines, *follows.leading_lines])
        return out

    def _graph_of(self, stmt: cst.CSTNode):
        """``True`` for ``with tf.Graph().as_default():`` (no name kept), the name for
        ``with graph.as_default():``, else None."""
        if not isinstance(stmt, cst.With) or not 1 <= len(stmt.items) <= 2 \
                or not isinstance(stmt.body, cst.IndentedBlock):
            return None
        if len(stmt.items) == 2 and not (  # `with tf.Graph().as_default(), tf.Session() as s:`
                isinstance(stmt.items[1].item, cst.Call)
                and self.is_tf(stmt.items[1].item.func, "Session")):
            return None
        item = stmt.items[0]
        call = item.item
        if not m.matches(call, m.Call(func=m.Attribute(attr=m.Name("as_default")), args=[])):
            return None
        owner = call.func.value
        if isinstance(owner, cst.Call) and self.is_tf(owner.func, "Graph") and not owner.args:
            if item.asname is not None:
                return None  # `as g`: the graph is used by name
            return True
        if isinstance(owner, cst.Name) and item.asname is None:
            return owner.value
        return None

    def _makes_graph(self, stmt: cst.CSTNode, name: str) -> bool:
        return m.matches(stmt, m.SimpleStatementLine(body=[m.Assign(
            targets=[m.AssignTarget(target=m.Name(name))], value=m.Call(args=[]))])) \
            and self.is_tf(stmt.body[0].value.func, "Graph")

    def _uses_tf(self, stmt: cst.CSTNode, builders: Set[str]) -> bool:
        """The statement builds graph ops where it stands: it spells TensorFlow or calls
        one of ``builders`` (the body's functions and classes that use it). A ``def``
        or ``class`` builds nothing until it is called."""
        if m.matches(stmt, m.SimpleStatementLine(body=[m.OneOf(m.Import(), m.ImportFrom())])) \
                or isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            return False
        return any(isinstance(n, cst.Name) and (n.value == self._alias or n.value in builders)
                   for n in nodes(stmt))

    def _session_on(self, stmt: cst.CSTNode, name: str) -> bool:
        """``with tf.Session(graph=name) [as sess]:`` (a session's block enters its graph)."""
        return isinstance(stmt, cst.With) and len(stmt.items) == 1 and m.matches(
            stmt.items[0].item, m.Call(args=[m.ZeroOrMore(), m.Arg(
                keyword=m.Name("graph"), value=m.Name(name)), m.ZeroOrMore()])) \
            and self.is_tf(stmt.items[0].item.func, "Session", "InteractiveSession")

    def _only_sessions_use(self, stmt: cst.CSTNode, name: str) -> bool:
        """The graph's name is read only as a session's ``graph=`` (or the ``with`` itself)."""
        allowed: Set[int] = set()
        if self._graph_of(stmt) == name:
            stmt = stmt.body
        for n in nodes(stmt):
            if isinstance(n, cst.Arg) and n.keyword is not None:
                allowed.add(id(n.keyword))  # `graph=` names a parameter, not the graph
            if isinstance(n, cst.Call) and self.is_tf(n.func, "Session", "InteractiveSession"):
                for arg in n.args:
                    if arg.keyword is not None and arg.keyword.value == "graph" \
                            and m.matches(arg.value, m.Name(name)):
                        allowed.add(id(arg.value))
        return all(id(n) in allowed for n in nodes(stmt)
                   if isinstance(n, cst.Name) and n.value == name)


def _loads(stmt: cst.CSTNode) -> Set[str]:
    return {n.value for n in nodes(stmt) if isinstance(n, cst.Name)}


class _DropGraphArgument(cst.CSTTransformer):
    """``tf.Session(graph=graph)`` -> ``tf.Session()``."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self._name = name

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        args = [a for a in updated_node.args if not (
            a.keyword is not None and a.keyword.value == "graph"
            and m.matches(a.value, m.Name(self._name)))]
        if len(args) == len(updated_node.args):
            return updated_node
        if args:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated_node.with_changes(args=args)

