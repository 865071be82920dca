"""``verify --align-random``: the counts that key the draws, and the record of what was drawn.

Part of :class:`tapeshift.migrate.legacy.align.RandomAligner` (module
docstring of :mod:`tapeshift.migrate.legacy.align`): the order count of the
next draw (a Python count, or the new run's int64 counter variable), the
executions of each draw site (a ``py_func`` counter in a TF1 graph, a per-site
int64 variable in a TF2 program, a Python count eagerly), the names of the
graph ops made, and :meth:`record`, what goes into meta.json's ``align`` (read
by :mod:`tapeshift.migrate.legacy.align_report`). TensorFlow is imported only
inside the methods, in the child process.
"""

from __future__ import annotations

_SHOWN = 20   # op names kept per list in the record


class DrawCounts:
    """Part of :class:`tapeshift.migrate.legacy.align.RandomAligner`: its counters
    and its record (state on the aligner, made in its ``__init__``)."""

    # -- counting -------------------------------------------------------------
    def _bump(self, table: dict, site) -> int:
        """``table[site]`` before adding one to it (thread-safe)."""
        with self._lock:
            n = table.get(site, 0)
            table[site] = n + 1
        return n

    def _py_counter(self, table: dict, site, inputs: list, name: str):
        """A TF1 graph's int64 scalar: ``table[site]`` before the op ran, incremented when it runs."""
        return self._py_int(lambda: self._bump(table, site), inputs, name)

    @staticmethod
    def _py_int(value, inputs: list, name: str):
        """A TF1 graph's int64 scalar that ``value()`` gives each time it runs (after ``inputs``).

        Placed on the CPU, outside any colocation (a py_func has no GPU kernel)."""
        import numpy as np
        from tensorflow.python.framework import dtypes, ops
        from tensorflow.python.ops import script_ops

        def call(*_):
            return np.int64(value())

        with ops.colocate_with(None, ignore_existing=True), ops.device("/device:CPU:0"):
            out = script_ops.py_func(call, inputs, dtypes.int64, stateful=True, name=name)
        out.set_shape([])
        return out

    def _count_eager(self, site: str) -> None:
        self._bump(self.executions, site)

    def _site_var(self, site: tuple):
        """The int64 variable counting a site's executions in a TF2 program (created at first use)."""
        var = self._site_vars.get(site)
        if var is None:
            from tensorflow.python.framework import dtypes, ops
            from tensorflow.python.ops import resource_variable_ops

            with ops.init_scope():
                var = resource_variable_ops.ResourceVariable(
                    0, dtype=dtypes.int64, trainable=False, name="tapeshift_align_site_counter")
            self._site_vars[site] = var
        return var

    def _next_run(self) -> int:
        """The next order count, for a draw run now (eagerly)."""
        if self._counter is None:
            n, self.order_draws = self.order_draws, self.order_draws + 1
            return n
        return int(self._counter.assign_add(1).numpy()) - 1

    def _next_created(self) -> int:
        """The next order count, for a draw in a graph: made in a function graph (keyed once,
        when created) or run by a session (:mod:`tapeshift.migrate.legacy.align_runs`)."""
        if self._counter is not None:
            from tensorflow.python.eager import context

            try:
                with context.eager_mode():
                    return self._next_run()
            except Exception:
                pass
        n, self.order_draws = self.order_draws, self.order_draws + 1
        return n

    def _created(self, out, how: str, n) -> None:
        """Bookkeeping for an aligned draw made in a graph: op names for the record."""
        if how in ("eager", "traced"):
            return
        self.own_types.update(_own_types(out))
        if how in ("weight", "layer"):
            return
        op = out.op
        if how == "function":
            _keep(self.in_functions, op.name)
            return
        self._graph_ops[n] = op.name
        self._note_run_op(op, n)
        try:
            from tensorflow.python.ops import control_flow_util

            if control_flow_util.GetContainingWhileContext(op._control_flow_context) is not None:
                _keep(self.in_loops, op.name)
        except Exception:
            pass

    # -- the record -----------------------------------------------------------
    def total_order_draws(self) -> int:
        if self._counter is None:
            return self.order_draws
        from tensorflow.python.eager import context

        try:
            with context.eager_mode():
                return max(self.order_draws, int(self._counter.numpy()))
        except Exception:
            return self.order_draws

    def _site_counts(self) -> dict:
        """The TF2 program's per-site variables, read: (kind, site) -> executions."""
        if not self._site_vars:
            return {}
        from tensorflow.python.eager import context

        try:
            with context.eager_mode():
                return {site: int(var.numpy()) for site, var in list(self._site_vars.items())}
        except Exception:
            return {}

    def record(self) -> dict:
        """What goes into meta.json's ``align`` (see docs/verify.md, '--align-random')."""
        layer_runs = dict(self.layer_runs)
        graph_ops: dict[str, int] = {}     # TF1 graph op keyed by order -> executions
        lines: dict[str, int] = {}         # script line -> order-keyed draws run there
        for where, n in list(self.executions.items()):
            if isinstance(where, int):
                name = self._graph_ops.get(where, f"random op {where}")
                graph_ops[name] = graph_ops.get(name, 0) + n
            else:
                lines[where] = lines.get(where, 0) + n
        for (kind, site), n in self._site_counts().items():
            table = layer_runs if kind == "layer" else lines
            table[site] = table.get(site, 0) + n

        def more_than_once(table):
            ranked = sorted(((k, n) for k, n in table.items() if n > 1), key=lambda kv: -kv[1])
            return dict(ranked[:_SHOWN])
        return {
            "seed": self.seed,
            "role": "legacy" if self.legacy else "new",
            "order_draws": self.total_order_draws(),
            "created": self.created,
            "function_created": self.function_created,
            "run_draws": self.run_planned + self.run_unplanned,
            "run_unplanned": self.run_unplanned,
            "by_op": dict(sorted(self.by_op.items())),
            "weights": dict(self.weights),
            "layer_draws": dict(sorted(layer_runs.items())),
            "layer_shared": {site: n for site, n in sorted(self.layer_ops.items()) if n > 1},
            "unaligned": dict(sorted(self.unaligned.items())),
            "failed": dict(self.failed),
            "stateless": dict(sorted(self.stateless.items())),
            "traced": self.traced,
            "repeated": more_than_once(graph_ops),
            "drew_at": more_than_once(lines),
            "in_loops": self.in_loops,
            "in_functions": self.in_functions,
            "renamed": self.renamed[:_SHOWN],
        }


def _keep(names: list, name: str) -> None:
    if len(names) < _SHOWN:
        names.append(name)


def _own_types(out) -> set:
    """The op types of ``out``'s op and its inputs' (key, key/counter): what this module created."""
    try:
        op = out.op
        types = {op.type}
        for t in op.inputs:
            types.add(t.op.type)
        return types
    except Exception:
        return set()
