"""The feeds rule's reading of a session opened in ``main()`` or the ``__main__`` guard.

Scripts often build the graph at module level and train it in a function run
once, or under the guard::

    x = tf.placeholder(tf.float32, [None, 2])
    ...
    train_op = tf.train.AdamOptimizer(0.01).minimize(loss)

    def main():
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for step in range(100):
                sess.run(train_op, feed_dict={x: data})

    if __name__ == "__main__":
        main()

The graph is the module's; the session only runs it. So the module is read as the
block, with the function (or the guard) standing where the session opens: the step
functions go before it, at module level, and its runs call them. Only when the
function runs once, after the whole graph is built, and builds no graph itself:
what it fetches is then what the module built, and its variables start where eager
variables start, at their creation.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set

import libcst as cst
import libcst.matchers as m

from tapeshift.migrate.engine.toolkit.statements import is_main_guard
from tapeshift.migrate.engine.toolkit.walk import nodes
from tapeshift.migrate.engine.tf1_api import DENSE_PLACEHOLDERS, INITIALIZERS, SESSIONS

#: TF calls a function that only runs the module's graph may make outside its runs (a
#: FileWriter adds nothing to the graph; the summaries rule makes it a TF2 writer)
_SESSION_SETUP = SESSIONS | INITIALIZERS | frozenset({"ConfigProto", "GPUOptions",
                                                      "summary.FileWriter", "summary.create_file_writer"})


class SessionInMain:
    """Part of :class:`tapeshift.migrate.rules.feeds.FeedsToFunctions`: a session in a
    module-level function or guard that runs the module's graph (state on the rule)."""

    #: the statement opening the session when it is nested in the block's statement
    _opening: Optional[cst.CSTNode] = None

    def _lifted(self, module: cst.Module, blocks):
        """``blocks`` (one session in a function or the guard, the graph at module
        level) read as the module's block, the session at the owner's index; else as
        they are, with the reason in ``self._not_lifted``."""
        self._opening = None
        self._not_lifted = ""
        if len(blocks) != 1 or blocks[0][1] is module:
            return blocks
        call, block, index = blocks[0]
        at = next((k for k, stmt in enumerate(module.body)
                   if isinstance(stmt, (cst.FunctionDef, cst.If)) and stmt.body is block), None)
        owner = module.body[at] if at is not None else None
        if owner is None:
            self._not_lifted = "the function is not defined at module level"
        elif not self._graph_above(module, at):
            self._not_lifted = (f"a placeholder is made elsewhere than by module code before "
                                f"{_title(owner)}, or module code after it calls TensorFlow or reads its graph")
        elif not self._only_runs(block, {stmt.name.value: stmt for stmt in module.body
                                         if isinstance(stmt, cst.FunctionDef)},
                                 {owner.name.value} if isinstance(owner, cst.FunctionDef) else set()):
            self._not_lifted = f"{_title(owner)} builds graph code too (or a function it calls does)"
        elif isinstance(owner, cst.FunctionDef) and (
                owner.decorators  # (a decorator may call it twice)
                or any(isinstance(n, (cst.Global, cst.Nonlocal)) for n in nodes(owner))
                or not self._called_once_after(module, owner.name.value, at)):
            self._not_lifted = (f"{_title(owner)} is not called once, by a statement of its own "
                                "after it (or it is decorated, or declares globals)")
        elif isinstance(owner, cst.If) and not is_main_guard(owner, without_else=True):
            self._not_lifted = "the session is in an `if` block"
        if self._not_lifted:
            return blocks
        self._opening = block.body[index]
        self._block_owners[id(module)] = None
        self.record_change(owner, f"the Session opened in {_title(owner)} runs the module's "
                           "graph: its step functions are written before it, at module level")
        return [(call, module, at)]

    def _graph_above(self, module: cst.Module, at: int) -> bool:
        """Every placeholder is made by module code before statement ``at``, and no
        module code after it calls TensorFlow (it would add to the graph after the
        session is opened)."""
        made = sum(1 for n in nodes(module) if isinstance(n, cst.Call)
                   and self.tf_api_name(n.func) in DENSE_PLACEHOLDERS)
        above = sum(1 for stmt in module.body[:at] if not isinstance(stmt, (cst.FunctionDef, cst.ClassDef))
                    for n in nodes(stmt) if isinstance(n, cst.Call)
                    and self.tf_api_name(n.func) in DENSE_PLACEHOLDERS)
        if not made or made != above:
            return False
        graph = self._graph_names(module.body[:at])
        for stmt in module.body[at + 1:]:
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                continue
            for line in stmt.body.body if is_main_guard(stmt, without_else=True) else [stmt]:
                if isinstance(line, cst.SimpleStatementLine) and all(
                        isinstance(s, (cst.Import, cst.ImportFrom)) for s in line.body):
                    continue
                if line is not stmt and (_call_statement(line) is not None) and not any(
                        isinstance(n, cst.Name) and n.value in graph for n in nodes(line)):
                    continue  # main() (or main(args)) in the guard
                # (`W2 = W * 3` after main is graph code too: TF1 adds it before main runs)
                if any(isinstance(n, cst.Call) and self.tf_api_name(n.func) is not None
                       or isinstance(n, cst.Name) and n.value in graph for n in nodes(line)):
                    return False
        return True

    def _graph_names(self, stmts: List[cst.CSTNode]) -> Set[str]:
        """Names module code binds to graph values: to what TensorFlow calls give, or
        what is computed from such names."""
        assigns = [n for stmt in stmts if not isinstance(stmt, (cst.FunctionDef, cst.ClassDef))
                   for n in nodes(stmt) if isinstance(n, cst.Assign)]
        graph: Set[str] = set()
        changed = True
        while changed:
            changed = False
            for a in assigns:
                targets = {n.value for t in a.targets for n in nodes(t.target) if isinstance(n, cst.Name)}
                if not targets <= graph and any(
                        isinstance(n, cst.Call) and self.tf_api_name(n.func) is not None
                        or isinstance(n, cst.Name) and n.value in graph for n in nodes(a.value)):
                    graph |= targets
                    changed = True
        return graph

    def _only_runs(self, block: cst.BaseSuite, functions: Dict[str, cst.FunctionDef],
                   seen: Set[str]) -> bool:
        """``block`` calls TensorFlow only to open and set up its session, to
        initialize, and inside the arguments of its runs; and so do the module's
        ``functions`` it calls (by name; ``seen``: those read already)."""
        inside_runs = set()
        for n in nodes(block):
            if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) \
                    and n.func.attr.value in ("run", "eval"):
                inside_runs |= {id(a) for arg in n.args for a in nodes(arg)}
        for n in nodes(block):
            if not isinstance(n, cst.Call) or id(n) in inside_runs:
                continue
            if self.tf_api_name(n.func) not in (None, *_SESSION_SETUP):
                return False
            called = n.func.value if isinstance(n.func, cst.Name) else None
            if called in functions and called not in seen:
                seen.add(called)  # (a helper that builds graph code builds it in main too)
                if not self._only_runs(functions[called].body, functions, seen):
                    return False
        return True

    def _called_once_after(self, module: cst.Module, name: str, at: int) -> bool:
        """``name`` is called once, ``name(...)``, by a statement of its own after
        statement ``at``, at module level or in the ``__main__`` guard; and read
        nowhere else. (``tf.app.run()`` calling ``main`` is TF1-only: TS109.)"""
        attrs = {id(n.attr) for n in nodes(module) if isinstance(n, cst.Attribute)}  # (`x.main`)
        reads = sum(1 for n in nodes(module) if isinstance(n, cst.Name) and n.value == name
                    and id(n) not in attrs)
        calls = [call for stmt in module.body[at + 1:]
                 for call in map(_call_statement, stmt.body.body if is_main_guard(stmt, without_else=True) else [stmt])
                 if call is not None and m.matches(call.func, m.Name(name))]
        return len(calls) == 1 and reads == 2  # (the def's own name, and the call)


def _call_statement(stmt: cst.CSTNode) -> Optional[cst.Call]:
    """The call a statement of its own is (``f()``), else None."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 \
            and isinstance(stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, cst.Call):
        return stmt.body[0].value
    return None


def _title(owner: cst.CSTNode) -> str:
    return f"`{owner.name.value}()`" if isinstance(owner, cst.FunctionDef) else "the `__main__` guard"
