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
TF2 step function draws them in statement order. An op in a ``tf.cond``
branch or a ``while_loop`` is not planned (the run may not execute it, or may
execute it many times): it takes the next count each time it runs, as does an
op a run reached otherwise (``make_callable``, ``partial_run``). A run that
raises before any planned op ran (``OutOfRangeError`` at the end of a
dataset) gives its counts back. Session runs from several threads at once
(queue feeders) draw in no fixed order.

Part of :class:`tapeshift.migrate.legacy.align.RandomAligner` (state on the
aligner). TensorFlow is imported only inside the methods, in the child process.
"""

from __future__ import annotations

import functools
import weakref

_PLANS_KEPT = 256  # (fetches, feeds) -> the ops they run, remembered per graph


class RunKeys:
    """Part of :class:`tapeshift.migrate.legacy.align.RandomAligner`: the run-time keys of TF1
    graph random ops (module docstring)."""

    def _init_run_keys(self) -> None:
        # graph -> {op name: creation index} of the order-keyed ops a run may plan, and
        # graph -> {(fetch names, fed names): the creation indexes they run}
        self._run_ops: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._plans: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._planned: dict = {}     # creation index -> order count of its next execution
        self.run_planned = 0         # draws keyed by a session run's plan
        self.run_unplanned = 0       # draws keyed as they ran (loops, unforeseen)

    def _run_key(self, n: int, args: dict | None):
        """The int64 scalar key half of the graph op created ``n``-th: read when the op runs,
        after the op's own tensor arguments (``args``, its shape say), so a run that fails
        before them (the end of a dataset) reads no key."""

        def key() -> int:
            with self._lock:
                self.executions[n] = self.executions.get(n, 0) + 1
                k = self._planned.pop(n, None)
                if k is not None:
                    self.run_planned += 1
                    return k
                self.run_unplanned += 1
                return self._next_created()

        return self._py_int(key, _graph_tensors(args), "tapeshift_align_run_key")

    def _note_run_op(self, op, n: int) -> None:
        """A random op created in a graph: planned by the runs that reach it, unless a
        tf.cond branch or a while_loop holds it (keyed as it runs)."""
        from tensorflow.python.ops import control_flow_util

        try:
            if control_flow_util.IsInCond(op) or control_flow_util.IsInWhileLoop(op):
                return
        except Exception:
            return
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
                plan = aligner._plan(sess.graph, fetches, feed_dict)
            except Exception:  # a run the plan cannot read: its draws are keyed as they run
                with aligner._lock:
                    aligner._planned = {}
                plan = None
            try:
                return original(sess, fetches, feed_dict, *args, **kwargs)
            except BaseException:
                if plan:
                    aligner._give_back(plan)
                raise

        run._tapeshift_align = True
        session.BaseSession.run = run

    def _plan(self, graph, fetches, feeds):
        """Give the order-keyed random ops this run executes the next counts, in creation
        order; (the counts given, the order count before them), or None."""
        index = self._run_ops.get(graph)
        if not index:
            with self._lock:
                self._planned = {}  # (no stale count for an op another way runs)
            return None
        starts, fed = _elements(graph, fetches, feeds)
        plans = self._plans.setdefault(graph, {})
        signature = (tuple(op.name for op in starts), frozenset(fed))
        ran = plans.get(signature)
        if ran is None:
            ran = _random_ops_run(starts, fed, index)
            if len(plans) >= _PLANS_KEPT:
                plans.clear()
            plans[signature] = ran
        with self._lock:
            before = self.order_draws
            self._planned = {n: self._next_created() for n in ran}
            return (dict(self._planned), before) if ran else None

    def _give_back(self, plan) -> None:
        """A run raised before any op it planned ran: its counts are given back (when
        nothing has drawn since), so the next run draws what this one would have."""
        given, before = plan
        with self._lock:
            if self._planned == given and self._counter is None \
                    and self.order_draws == before + len(given):
                self.order_draws = before
            self._planned = {}


def _graph_tensors(args: dict | None) -> list:
    """The tensors among ``args`` that belong to the current graph."""
    from tensorflow.python.framework import ops
    from tensorflow.python.framework import tensor as tensor_lib

    graph = ops.get_default_graph()
    return [v for v in (args or {}).values()
            if isinstance(v, tensor_lib.Tensor) and getattr(v, "graph", None) is graph]


def _elements(graph, fetches, feeds):
    """(the ops a run's fetches name, the names of the tensors it feeds)."""
    from tensorflow.python.client import session
    from tensorflow.python.framework import ops
    from tensorflow.python.util import nest

    try:  # what Session.run itself reads: strings, Variables, ops, nested structures
        fetches = session._FetchMapper.for_fetch(fetches).unique_fetches()
    except Exception:
        pass
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
