"""A split gradient computed by replicas that each hold a shard of the batch.

The ``mirrored`` backend (``tapeshift.compat.backends.mirrored``) runs the same
program on every replica of a ``tf.distribute`` strategy, each on its rows of
every input. ``ReplicaSplit`` is what ``split.backprop`` asks, inside one
replica, wherever the numbers of one replica are not yet those of one device:

* **the seed.** A target that reduces the batch (a scalar loss, or any target of
  the same shape on a replica as on one device) is seeded with ``1/R`` of the
  upstream gradient for ``batch_reduction="mean"`` (the mean of ``R`` equal
  shards is ``1/R`` of their sum) and with the upstream itself for ``"sum"``. A
  target with one row per example (its first axis the batch) gets its rows of
  the upstream gradient. Either way every stage gradient of a replica is exactly
  its part of one device's stage gradient, not ``R`` times it.
* **each stage.** A cut whose first axis is the batch (``B`` rows on one device,
  ``B/R`` on a replica) is *sharded*: one device's stage gradient is the
  replicas' rows stacked. A cut of the same shape everywhere (a tensor computed
  from parameters only) is *replicated*: one device's stage gradient is the sum
  of the replicas'. A transform then sees what it would see on one device:
  elementwise ones the rows as they are, ``clip_by_norm`` the norm of the whole
  stage gradient (an all-reduce of its squared norm), any other the whole stage
  gradient (all-gathered, then each replica passes its rows on). On a replicated
  cut the replicas sum their shares first and each passes ``1/R`` of the
  transformed sum down its (identical) segment. ``replica_transforms=
  "per_replica"`` applies every transform to the replica's own share instead,
  as a hand-written distributed step does; that changes the numbers of every
  transform that is not elementwise (sharded) or linear (replicated), and says so.
* **the results.** Each fetched tensor has a rule that turns the replicas'
  values into one device's: ``gather`` (rows stacked in replica order),
  ``sum``, ``mean`` or ``same`` (already whole on every replica).

What this cannot make equal: computations that mix the examples of a batch
(batch statistics in training mode, in-batch negatives) see one shard, random
draws differ per replica; the backend's target check catches most of these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from tapeshift.compat._tf import tensorflow
from tapeshift.compat.errors import CompatError

BATCH_REDUCTIONS = ("mean", "sum")
REPLICA_TRANSFORMS = ("global", "per_replica")
REPLICA_CHECKS = ("raise", "warn", "off")

SHARDED = "sharded"
REPLICATED = "replicated"

# rules that turn the replicas' values of one fetch into one device's value
GATHER, SUM, MEAN, SAME = "gather", "sum", "mean", "same"


@dataclass(frozen=True)
class ReplicaOptions:
    """How the target reduces the batch, how transforms see a stage, what is checked."""

    batch_reduction: str = "mean"
    transforms: str = "global"
    check: str = "raise"


@dataclass
class ReplicaSplit:
    """One replica's answers to ``split.backprop`` (built inside the replica function).

    ``shapes`` are one device's static shapes of the target (``"target"``) and of
    each requested cut (``"cut/<name>"``), read from a trace on the whole batch; ``batch``
    is one device's batch size, ``replicas`` how many replicas share it.
    """

    context: Any  # the tf.distribute.ReplicaContext
    replicas: int
    batch: int
    shapes: dict
    options: ReplicaOptions
    target_name: str
    rules: dict = field(default_factory=dict)  # fetch key -> GATHER, SUM, MEAN or SAME
    notes: list = field(default_factory=list)

    @property
    def rows(self) -> int:
        return self.batch // self.replicas

    # -- kinds -------------------------------------------------------------
    def kind(self, name: str, local_shape, what: str) -> str:
        """SHARDED or REPLICATED, from one device's shape and a replica's."""
        whole = self.shapes[name]
        local = local_shape.as_list() if local_shape.rank is not None else None
        if whole == local and (local is None or None not in local):
            return REPLICATED
        if (local is not None and whole and len(whole) == len(local) and None not in local
                and whole[0] == self.batch and local[0] == self.rows and whole[1:] == local[1:]):
            return SHARDED
        raise CompatError(
            f"{what} has shape {_fmt(whole)} on one device and {_fmt(local)} on each of "
            f"{self.replicas} replicas (batch {self.batch}, {self.rows} rows each): the "
            "mirrored backend needs the same shape on both, or the batch as its first axis "
            f"({self.batch} rows on one device, {self.rows} on a replica)"
        )

    # -- the seed ------------------------------------------------------------
    def upstream(self, target, upstream):
        """This replica's share of the upstream gradient of ``target``."""
        tf = tensorflow()
        if self.target_rule(target) == GATHER:
            return None if upstream is None else self.own_rows(upstream)
        if self.options.batch_reduction == "sum":
            return upstream
        scale = 1.0 / self.replicas
        if upstream is None:
            return None if target.shape.rank != 0 else tf.constant(scale, target.dtype)
        return upstream * tf.constant(scale, upstream.dtype)

    def target_rule(self, target) -> str:
        kind = self.kind("target", target.shape, f"target {self.target_name!r}")
        self.rules["target"] = GATHER if kind == SHARDED else (
            MEAN if self.options.batch_reduction == "mean" else SUM)
        return self.rules["target"]

    # -- stages --------------------------------------------------------------
    def stage(self, name: str, raw, transform, apply: Callable[[Any, Any], Any]):
        """(stage gradient, gradient passed on, this replica's cotangent) at cut ``name``.

        The first two are fetched and combined by ``self.rules``; the third is
        what this replica pulls back through its segment below the cut.
        """
        tf = tensorflow()
        kind = self.kind(f"cut/{name}", raw.shape, f"cut {name!r}")
        grad_key, passed_key = f"stage/{name}/gradient", f"stage/{name}/passed"
        per_replica = self.options.transforms == "per_replica"
        if transform is None:
            self.rules[grad_key] = GATHER if kind == SHARDED else SUM
            return raw, raw, raw
        elementwise = bool(getattr(transform, "elementwise", False))
        if per_replica:
            out = apply(transform, raw)
            share = GATHER if kind == SHARDED else SUM
            self.rules[grad_key] = self.rules[passed_key] = share
            exact = elementwise if kind == SHARDED else _linear(transform)
            if not exact:
                self._warn(name, transform, kind)
            return raw, out, out
        if kind == REPLICATED:
            total = self.context.all_reduce(tf.distribute.ReduceOp.SUM, raw)
            out = apply(transform, total)
            self.rules[grad_key] = self.rules[passed_key] = SAME
            return total, out, out * tf.constant(1.0 / self.replicas, out.dtype)
        if elementwise:
            out = apply(transform, raw)
            self.rules[grad_key] = self.rules[passed_key] = GATHER
            return raw, out, out
        clip_with = getattr(transform, "clip_with", None)
        if clip_with is not None:
            l2sum = self.context.all_reduce(tf.distribute.ReduceOp.SUM,
                                            tf.reduce_sum(raw * raw, keepdims=True))
            out = apply(lambda g: clip_with(g, l2sum), raw)
            self.rules[grad_key] = self.rules[passed_key] = GATHER
            return raw, out, out
        whole = self.gather(raw)
        out = apply(transform, whole)
        self.rules[grad_key] = self.rules[passed_key] = SAME
        return whole, out, self.own_rows(out)

    def gather(self, rows):
        """One device's tensor from each replica's rows of it (stacked in replica order)."""
        tf = tensorflow()
        whole = self.context.all_gather(rows, axis=0)
        return tf.ensure_shape(whole, [rows.shape[0] * self.replicas] + rows.shape.as_list()[1:])

    def own_rows(self, whole):
        """This replica's rows of a tensor whose first axis is the whole batch."""
        tf = tensorflow()
        rid = tf.cast(self.context.replica_id_in_sync_group, tf.int32)
        rest = whole.shape.as_list()[1:]
        begin = tf.concat([[rid * self.rows], tf.zeros([len(rest)], tf.int32)], 0)
        return tf.slice(whole, begin, [self.rows] + [-1] * len(rest))

    def _warn(self, name, transform, kind):
        label = getattr(transform, "name", repr(transform))
        what = (f"each replica's {self.rows} of the {self.batch} rows" if kind == SHARDED
                else "each replica's share (the sum over replicas is one device's)")
        message = (f"replica_transforms='per_replica': transform {label} at cut {name!r} sees "
                   f"{what} of the stage gradient; it is not "
                   f"{'elementwise' if kind == SHARDED else 'linear'}, so its result differs from "
                   "one device's (replica_transforms='global' gives one device's numbers)")
        if message not in self.notes:  # the backend warns once, outside the replicas
            self.notes.append(message)

    # -- results -------------------------------------------------------------
    def combine(self, fetches: dict, input_kinds: dict) -> dict:
        """One device's values on every replica, from each replica's own."""
        tf = tensorflow()
        if "target" not in self.rules:  # a forward run: no backward pass asked for the seed
            self.target_rule(fetches["target"])
        for key in fetches:
            if key.startswith("grad/"):
                self.rules[key] = input_kinds.get(key[len("grad/"):], SUM)
        by_rule: dict = {GATHER: {}, SUM: {}, MEAN: {}}
        out = {}
        for key, value in fetches.items():
            rule = self.rules.get(key, SAME)
            if rule == SAME:
                out[key] = value
            else:
                by_rule[rule][key] = value
        if by_rule[SUM]:
            out.update(self.context.all_reduce(tf.distribute.ReduceOp.SUM, by_rule[SUM]))
        if by_rule[MEAN]:
            out.update(self.context.all_reduce(tf.distribute.ReduceOp.MEAN, by_rule[MEAN]))
        for key, value in by_rule[GATHER].items():
            out[key] = self.gather(value)
        return out


def _linear(transform) -> bool:
    from tapeshift.compat.transforms import Mask, Scale

    return isinstance(transform, (Scale, Mask))


def _fmt(dims) -> str:
    return "unknown" if dims is None else str(tuple(dims))
