"""``mirrored``: the tape under ``tf.distribute``, the batch split across replicas.

The strategy is the one whose scope is active (a ``MirroredStrategy`` over
chosen devices, or a ``MultiWorkerMirroredStrategy`` made at the start of each
worker), else a ``MirroredStrategy`` over the visible devices: the GPUs, or the
logical CPUs (``tapeshift.compat.logical_cpus``). Parameters are mirrored
variables; every input is split along its first axis, replica ``r`` getting rows
``r*B/R`` to ``(r+1)*B/R``; each replica runs the same program as the
``function`` backend on its rows, traced once by ``tf.function``, and the
replicas' numbers are combined by collectives into one device's
(``tapeshift.compat.replicas``), so every worker holds the whole result.

A trace of the model on the whole batch on the ``graph`` backend gives one
device's shapes (which tensors have the batch as their first axis) and, on the
first call of each signature, one device's target: a target that differs on the
replicas (a sum taken for a mean, examples mixed by batch statistics, random
draws) raises ``ReplicaMismatchError`` (``replica_check="raise"``), warns
(``"warn"``) or is not looked at (``"off"``).
"""

from __future__ import annotations

import warnings

import numpy as np

from tapeshift.compat import devices
from tapeshift.compat._tf import tensorflow
from tapeshift.compat.backends import graph, tape
from tapeshift.compat.errors import CompatError, ReplicaMismatchError, ReplicaWarning
from tapeshift.compat.replicas import GATHER, SUM, ReplicaOptions, ReplicaSplit

_DEFAULT_STRATEGIES: dict = {}


def strategy():
    """The strategy of the active scope, else a MirroredStrategy over the visible devices."""
    tf = tensorflow()
    if tf.distribute.has_strategy():
        if not tf.distribute.in_cross_replica_context():
            raise CompatError(
                "the mirrored backend was called inside a replica (strategy.run): call it "
                "where the strategy's scope is entered, outside strategy.run")
        active = tf.distribute.get_strategy()
        if not isinstance(active, (tf.distribute.MirroredStrategy,
                                   tf.distribute.MultiWorkerMirroredStrategy)):
            raise CompatError(
                f"the mirrored backend runs under a MirroredStrategy or a "
                f"MultiWorkerMirroredStrategy; the active scope is a {type(active).__name__}")
        return active
    names = devices.replica_devices()
    if names not in _DEFAULT_STRATEGIES:
        _DEFAULT_STRATEGIES[names] = tf.distribute.MirroredStrategy(list(names))
    return _DEFAULT_STRATEGIES[names]


class Compiled:
    def __init__(self, program, params, input_specs, upstream_spec, *, probe,
                 options: ReplicaOptions, target_name: str):
        tf = tensorflow()
        self.strategy = strategy()
        self.replicas = int(self.strategy.num_replicas_in_sync)
        self.options = options
        self.target_name = target_name
        self.plan = None
        self.notes: list[str] = []
        self.batch = _batch_size(input_specs, self.replicas)
        # one device's shapes (and, at the first call, its target) from the graph backend
        self._probe = graph.compile(probe, params, input_specs, upstream_spec)
        self.shapes = {k: t.shape.as_list() if t.shape.rank is not None else None
                       for k, t in self._probe.fetches.items()}
        self._checked = options.check == "off"
        with self.strategy.scope():
            self.variables = {
                n: tf.Variable(v, name=n, aggregation=tf.VariableAggregation.MEAN)
                for n, v in params.items()
            }
        self._input_kinds = {n: GATHER if len(shape) else SUM
                             for n, (shape, _) in input_specs.items()}
        strategy_, replicas = self.strategy, self.replicas

        def replica_step(inputs, upstream):
            context = tf.distribute.get_replica_context()
            split = ReplicaSplit(context, replicas, self.batch, self.shapes, options, target_name)

            def tracer(model, variables, inputs_, sources, cut_names):
                fw = tape.tracer(model, variables, inputs_, sources, cut_names)
                fw.replicas = split
                return fw

            fetches, self.plan = program(tracer, self.variables, inputs, upstream)
            for note in split.notes:
                if note not in self.notes:
                    self.notes.append(note)
            return split.combine(fetches, self._input_kinds)

        def step(inputs, upstream=None):
            return strategy_.run(replica_step, args=(inputs, upstream))

        self._step = tf.function(step, autograph=False)

    def _distribute(self, inputs):
        tf = tensorflow()
        rows = self.batch // self.replicas

        def shard(context):
            r = context.replica_id_in_sync_group
            return {n: tf.constant(v[r * rows:(r + 1) * rows] if np.ndim(v) else v)
                    for n, v in inputs.items()}

        return self.strategy.experimental_distribute_values_from_function(shard)

    def __call__(self, inputs, upstream):
        tf = tensorflow()
        seen = len(self.notes)
        args = (self._distribute(inputs),)
        if upstream is not None:
            args += (tf.constant(upstream),)
        if self.plan is None:  # traced outside __call__: no retracing warning per compiled program
            self._step.get_concrete_function(*args)
        out = self._step(*args)
        fetches = {k: self.strategy.experimental_local_results(v)[0].numpy()
                   for k, v in out.items()}
        for note in self.notes[seen:]:
            warnings.warn(note, ReplicaWarning, stacklevel=3)
        if not self._checked:
            self._checked = True
            self._check_target(fetches["target"], inputs, upstream)
        return fetches, self.plan

    def _check_target(self, target, inputs, upstream):
        from tapeshift.compat.testing import compare

        whole = self._probe(inputs, upstream)[0]["target"]
        ok, detail = compare(target, whole)
        if ok:
            return
        message = _mismatch(self.target_name, target, whole, detail, self.replicas, self.batch,
                            self.options.batch_reduction)
        if self.options.check == "raise":
            raise ReplicaMismatchError(message)
        self.notes.append(message)
        warnings.warn(message, ReplicaWarning, stacklevel=3)

    def variable_values(self) -> dict:
        return {n: v.numpy() for n, v in self.variables.items()}

    def close(self) -> None:
        self._probe.close()
        self._step = None
        self.variables = {}


def compile(program, params, input_specs, upstream_spec, *, probe, options, target_name):
    return Compiled(program, params, input_specs, upstream_spec, probe=probe, options=options,
                    target_name=target_name)


def _batch_size(input_specs, replicas: int) -> int:
    batched = {n: shape[0] for n, (shape, _) in input_specs.items() if len(shape)}
    if not batched:
        raise CompatError(
            "the mirrored backend splits the inputs along their first axis (the batch), "
            "but no input has one; pass the batch as an input (parameters are mirrored)")
    sizes = sorted(set(batched.values()))
    if len(sizes) > 1:
        first = next(iter(batched))
        other = next(n for n, b in batched.items() if b != batched[first])
        raise CompatError(
            f"the mirrored backend splits every input along its first axis (the batch), but "
            f"input {first!r} has {batched[first]} rows and {other!r} has {batched[other]}; "
            "pass what is not one row per example (a table, a constant) as a parameter "
            "(leave it out of wrt) or as a scalar")
    batch = sizes[0]
    if batch % replicas:
        raise CompatError(
            f"the batch of {batch} examples (input {next(iter(batched))!r}) does not split "
            f"evenly across {replicas} replicas; pass a multiple of {replicas} examples (a mean "
            "over unequal shards is not the mean over the batch)")
    return batch


def _mismatch(name, target, whole, detail, replicas, batch, reduction) -> str:
    hint = ""
    t, w = np.asarray(target, np.float64), np.asarray(whole, np.float64)
    if t.size == 1 and w.size == 1 and float(t) != 0.0:
        ratio = float(w) / float(t)
        if reduction == "mean" and abs(ratio - replicas) <= 1e-3 * replicas:
            hint = (f" One device's value is {replicas}x the replicas': the target sums over "
                    "the batch; pass batch_reduction='sum'.")
        elif reduction == "sum" and abs(ratio * replicas - 1.0) <= 1e-3:
            hint = (f" One device's value is 1/{replicas} of the replicas': the target is a "
                    "mean over the batch; pass batch_reduction='mean'.")
    return (
        f"target {name!r} on {replicas} replicas ({batch // replicas} of the {batch} examples "
        f"each, combined as a {reduction}: batch_reduction={reduction!r}) is not the target "
        f"on one device over all {batch}: {detail}.{hint or ' The model mixes the examples of a batch (batch statistics in training mode, in-batch negatives) or draws random numbers, which differ per replica.'} "
        "replica_check='warn' runs it anyway"
    )
