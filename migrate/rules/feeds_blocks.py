"""The feeds rule's reading of graph code in compound statements.

Graph code under Python control flow (``if``, ``for``, ``while``, ``with tf.device(...)``)
is recomputed in the step functions with the statement around it, when what
steers it is fixed Python (the update ops: feeds_updates.py).
"""

from __future__ import annotations

from typing import Dict, List, Set

import libcst as cst

from tapeshift.migrate.engine.toolkit.dataflow import block_info, last_def, mutated_names, names_of
from tapeshift.migrate.engine.toolkit.walk import nodes
from tapeshift.migrate.engine.tf1_api import DENSE_PLACEHOLDERS
from tapeshift.migrate.rules.feeds_updates import groups_only
from tapeshift.migrate.rules.session import TS107, TS108


class GraphBlocks:
    """Part of :class:`tapeshift.migrate.rules.feeds.FeedsToFunctions`: graph code
    under ``if``/``for``/``while``/``with`` statements (state on the rule)."""

    def _compound_graph_statement(self, i: int, node: cst.BaseCompoundStatement,
                                  body: List[cst.CSTNode], tainted: Set[str]) -> None:
        """``if CLIP: g = tf.clip_by_norm(g, 1.0)``, ``for l in losses:
        grads.append(tf.gradients(l, w)[0])``, ``while k < n: h = layer(h); k += 1``,
        ``with tf.device(...):``: graph code
        under Python control flow is copied into the step functions with it, which
        gives the same ops when what steers it is plain Python fixed by then (a
        condition, a loop over a list or a range) and the body only computes values.
        A list the body fills (``grads.append``) is made again with it: its binding
        (``grads = []``) is graph code too."""
        kind = type(node).__name__
        header = node.test if isinstance(node, (cst.If, cst.While)) else (
            node.iter if isinstance(node, cst.For) else None)
        if isinstance(node, cst.With) and not self._scope_items_only(node):
            self._bail(TS107.code, node, "graph code in a `with` block other than tf.device, "
                       "tf.name_scope or tf.control_dependencies is not converted")
        if isinstance(node, (cst.If, cst.While)) and names_of(header, self.BASE)[0] & tainted:
            article = "an" if isinstance(node, cst.If) else "a"
            self._bail(TS107.code, node, f"{article} `{kind.lower()}` on a graph value decides at each "
                       "sess.run in TF1 only through tf.cond / tf.while_loop: not converted")
        if getattr(node, "orelse", None) is not None and isinstance(node, (cst.For, cst.While)):
            self._bail(TS107.code, node, f"graph code in a `{kind.lower()} ... else` is not "
                       "converted")
        later = set()  # names the session region rebinds: the header would read them again
        for stmt in self._stmts[i + 1:]:
            later |= stmt.writes
        if header is not None and names_of(header, self.BASE)[0] & later - tainted:
            self._bail(TS107.code, node, f"the `{kind.lower()}` over names bound again later "
                       "would see other values at each sess.run: not converted")
        for n in nodes(node.body):
            if isinstance(n, (cst.Break, cst.Continue, cst.Return, cst.Yield, cst.While,
                              cst.FunctionDef, cst.ClassDef, cst.Try)):
                self._bail(TS107.code, node, f"graph code in a `{kind}` statement with "
                           f"`{type(n).__name__.lower()}` is not converted")
        if self._changes_state(node) or self._makes_variable(node):
            self._bail(TS108.code, node, f"a `{kind}` statement that builds an update op or a "
                       "variable is not converted")
        mutated = mutated_names(node)
        st = self._stmts[i]
        st.writes = st.writes | mutated
        # what the statement fills or accumulates (grads.append(g), total = total + t)
        # starts again with it: its binding before is graph code too
        looped = {n.value for n in nodes(node.target) if isinstance(n, cst.Name)} \
            if isinstance(node, cst.For) else set()
        # what a pass reads before binding it comes from before the statement or from the
        # pass before (`h = tf.sigmoid(h @ w)`); a name bound before it is read in each pass
        # (`X = tf.reshape(x_t, [1, 2])`) is made afresh by every pass
        carried = _read_before_bound(node.body.body, self.BASE)
        if isinstance(node, cst.While):
            carried |= names_of(node.test, self.BASE)[0] & st.writes
        for name in sorted(mutated | carried - looped):
            j = last_def(self._stmts, name, i)
            made, target = self._assignment(body[j]) if j >= 0 else (None, None)
            if j in self._graph:
                tainted.add(name)  # computed again in the step function anyway
                continue
            if name in mutated and not (isinstance(made, (cst.List, cst.Dict))
                                        and not made.elements):
                self._bail(TS107.code, node, f"`{name}` is filled by graph code in a "
                           f"`{kind.lower()}` statement but neither made empty before it nor "
                           "graph code itself")
            if target != name or self._changes_state(body[j]) or self._makes_variable(body[j]):
                self._bail(TS107.code, node, f"`{name}` is accumulated by graph code in a "
                           f"`{kind.lower()}` statement but not bound by a plain assignment "
                           "before it")
            if j not in self._graph:
                self._graph_statement(j, body[j])  # made again with what fills it
            tainted.add(name)
        self._graph_statement(i, node)
        if isinstance(node, cst.With) and groups_only(node, self.tf_api_name):
            # with tf.control_dependencies([train_step, averages_op]): train_op = tf.no_op():
            # an op that runs what it depends on, fetched as None
            self._train.add(i)
            self._groupings.add(i)
            self._note_unordered(node, node.items[0].item, i)

    def _scoped_placeholders(self, i: int, node: cst.With) -> Set[str]:
        """``with tf.device('/cpu:0'): x = tf.placeholder(...); c = x * 2``, ``with
        tf.name_scope('S'): S = tf.placeholder(...)``: placeholders made in a scope
        block become parameters as the others do (their op names and device do not
        reach the fed values); the rest of the block, if any, is graph code,
        copied into the step functions without them. The names, registered."""
        made: Dict[str, cst.Call] = {}
        kept: List[cst.BaseStatement] = []
        for stmt in node.body.body:
            value, target = self._assignment(stmt)
            if target is not None and isinstance(value, cst.Call) \
                    and self.tf_api_name(value.func) in DENSE_PLACEHOLDERS:
                made[target] = value
            else:
                kept.append(stmt)
        if not made:
            return set()
        self._placeholders.update(made)
        if kept:
            st = self._stmts[i]
            st.writes = st.writes - set(made)  # (the parameters define them)
            first = kept[0]  # (the blank line after the placeholders goes with them)
            kept[0] = first.with_changes(leading_lines=[
                ln for ln in first.leading_lines if ln.comment is not None])
            self._rewrites[i] = node.with_changes(body=node.body.with_changes(body=kept))
        return set(made)

    def _scope_items_only(self, node: cst.With) -> bool:
        """A ``with`` of contexts that mean the same in eager code (device placement,
        name scopes, control dependencies: eager ops run in order)."""
        return all(isinstance(item.item, cst.Call) and self.tf_api_name(item.item.func) in (
            "device", "name_scope", "control_dependencies") and item.asname is None
            for item in node.items)


def _read_before_bound(body, base) -> Set[str]:
    """The names a block (or one pass of a loop) reads before binding them (``total =
    total + t``); ``a = x * y; b = a + z`` reads none."""
    bound: Set[str] = set()
    out: Set[str] = set()
    for st in block_info(body, base):
        out |= st.reads - bound
        bound |= st.writes
    return out & bound
