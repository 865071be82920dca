"""``verify --align-random``: a TF1 graph's random ops keyed by the session runs that execute them.

A random op of a TF1 graph draws new numbers each time a session runs it, and
the TF2 program it was migrated to draws at each call, in program order
(``z = tf.random_normal(...)`` or ``tf.nn.dropout`` recomputed in a step
function). So such an op's key is not fixed when the op is created. Before
each ``Session.run`` the aligner finds the order-keyed random ops the run will
execute (those the fetches depend on through inputs and control inputs, not
looking past fed tensors) and gives them the next order counts, in the order
the ops were created. A stateful ``py_func`` in the op's key reads that count
when the op runs, and counts the execution for the record.

The initializer's run draws the variables' initial values in the order they
were created, as a TF2 program that makes them one after another does; each
training run then draws its dropout masks or noise in creation order, as the
TF2 step function draws them in statement order. What a run cannot foresee
takes the next count when it runs: a second execution in the same run (a
``while_loop``), or an op no plan found. Ops planned but not run (the other
branch of a ``tf.cond``) leave their counts unused, which the TF2 program
does not: the record lists ops in loops, and the report names them.

Part of :class:`tapeshift.migrate.legacy.align.RandomAligner` (state on the
aligner). TensorFlow is imported only inside the methods, in the child process.
"""

from __future__ import annotations

import functools

_PLANS_KEPT = 256  # (graph, fetches, feeds) -> the ops they run, remembered per process


class RunKeys:
    """Part of :class:`tapeshift.migrate.legacy.align.RandomAligner`: the run-time keys of TF1
    graph random ops (module docstring)."""

    def _init_run_keys(self) -> None:
        self._run_ops: dict = {}     # graph -> {op name: creation index} of order-keyed ops
        self._planned: dict = {}     # creation index -> order count of its next execution
        self._plans: dict = {}       # (graph, fetch names, fed names) -> creation indexes
        self.run_planned = 0         # draws keyed by a session run's plan
        self.run_unplanned = 0       # draws keyed as they ran (loops, unforeseen)

    def _run_key(self, n: int):
        """The int64 scalar key half of the graph op created ``n``-th: read when the op runs."""
        import numpy as np
        from tensorflow.python.framework import dtypes, ops
        from tensorflow.python.ops import script_ops

        def key(*_):
            with self._lock:
                self.executions[n] = self.executions.get(n, 0) + 1
                k = self._planned.pop(n, None)
                if k is not None:
                    self.run_planned += 1
                    return np.int64(k)
                self.run_unplanned += 1
                return np.int64(self._next_order())

        with ops.colocate_with(None, ignore_existing=True), ops.device("/device:CPU:0"):
            out = script_ops.py_func(key, [], dtypes.int64, stateful=True,
                                     name="tapeshift_align_run_key")
        out.set_shape([])
        return out

    def _note_run_op(self, op, n: int) -> None:
        self._run_ops.setdefault(op.graph, {})[op.name] = n

    def _install_session_run(self) -> None:
        """Wrap ``BaseSession.run``: each run plans its random ops' keys first."""
        from tensorflow.python.client import session

        original = session.BaseSession.run
        if getattr(original, "_tapeshift_align", False):
            return
        aligner = self

        @functools.wraps(original)
        def run(sess, fetches, feed_dict=None, *args, **kwargs):
            try:
                aligner._plan(sess.graph, fetches, feed_dict)
            except Exception:  # a run the plan cannot read: its draws are keyed as they run
                with aligner._lock:
                    aligner._planned = {}
            return original(sess, fetches, feed_dict, *args, **kwargs)

        run._tapeshift_align = True
        session.BaseSession.run = run

    def _plan(self, graph, fetches, feeds) -> None:
        """Give the order-keyed random ops this run executes the next counts, in creation order."""
        index = self._run_ops.get(graph)
        if not index:
            return
        starts, fed = _elements(graph, fetches, feeds)
        signature = (graph, tuple(op.name for op in starts), frozenset(fed))
        ran = self._plans.get(signature)
        if ran is None:
            ran = _random_ops_run(starts, fed, index)
            if len(self._plans) >= _PLANS_KEPT:
                self._plans.clear()
            self._plans[signature] = ran
        with self._lock:
            self._planned = {}
            for n in ran:
                self._planned[n] = self._next_order()

    def _next_order(self) -> int:
        """The next order count (the caller holds the lock)."""
        if self._counter is not None:  # a TF2 program that also runs a TF1 graph
            return self._next_created()
        n, self.order_draws = self.order_draws, self.order_draws + 1
        return n


def _elements(graph, fetches, feeds):
    """(the ops a run's fetches name, the names of the tensors it feeds)."""
    from tensorflow.python.framework import ops
    from tensorflow.python.util import nest

    fed = set()
    for key in nest.flatten(list((feeds or {}).keys()), expand_composites=True):
        try:
            fed.add(graph.as_graph_element(key, allow_tensor=True, allow_operation=False).name)
        except Exception:
            continue
    starts = []
    for fetch in nest.flatten(fetches, expand_composites=True):
        try:
            element = graph.as_graph_element(fetch, allow_tensor=True, allow_operation=True)
        except Exception:
            continue
        if isinstance(element, ops.Operation):
            starts.append(element)
        elif element.name not in fed:  # a fed tensor fetched is its fed value: nothing runs
            starts.append(element.op)
    return starts, fed


def _random_ops_run(starts, fed, index: dict) -> list:
    """Creation indexes of the ops in ``index`` that running ``starts`` executes, sorted."""
    seen = set()
    stack = list(starts)
    found = []
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        n = index.get(op.name)
        if n is not None:
            found.append(n)
        stack.extend(t.op for t in op.inputs if t.name not in fed)
        stack.extend(op.control_inputs)
    return sorted(found)
