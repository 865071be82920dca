"""The one primitive: a recorded forward run whose outputs can be pulled back.

``Forward`` is the shape of ``jax.vjp`` at tensor level: the model has run, and
``pullback(i, cotangent)`` returns the vector-Jacobian product of output ``i``
(a cut, or the target) with respect to every leaf below it (earlier cuts) and
every source. Because each cut's downstream code was built on a stopped,
separately watched leaf, a pullback walks only its own segment: splitting at
every layer costs about what one direct gradient costs.

Backends differ only in how they record and answer a query:
    graph     tf.gradients(y, xs, grad_ys=cotangent)
    tape      tape.gradient(y, xs, output_gradients=cotangent)
    function  the tape, traced by tf.function
Direct and split gradients (``tapeshift.compat.split``) are built on ``pullback`` alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from tapeshift.compat._tf import tensorflow
from tapeshift.compat.cuts import CutRecord, Recorder
from tapeshift.compat.random_alignment import forward_run

# query(y, xs, cotangent) -> list of gradients (None where unconnected)
Query = Callable[[Any, Sequence[Any], Any], Sequence[Any]]


@dataclass
class Forward:
    target: Any
    sources: Mapping[str, Any]
    cuts: Sequence[CutRecord]
    query: Query
    # set by the mirrored backend in each replica: a ``tapeshift.compat.replicas.ReplicaSplit``
    replicas: Any = None

    @property
    def outputs(self) -> list:
        """Cut outputs in forward order, then the target."""
        return [c.output for c in self.cuts] + [self.target]

    def pullback(self, index: int, cotangent: Any) -> dict[str, Any]:
        """VJP of output ``index`` with ``cotangent``: {leaf or source name: grad or None}."""
        tf = tensorflow()
        below = self.cuts[:index]
        names = [c.name for c in below] + list(self.sources)
        xs = [c.leaf for c in below] + list(self.sources.values())
        grads = self.query(self.outputs[index], xs, cotangent)
        return {
            n: (None if g is None else tf.convert_to_tensor(g)) for n, g in zip(names, grads)
        }


def trace(
    model: Callable,
    params: Mapping[str, Any],
    inputs: Mapping[str, Any],
    sources: Mapping[str, Any],
    recorder: Recorder,
    query: Query,
) -> Forward:
    """Run ``model(params, inputs)`` under ``recorder`` and package the result.

    The call is one forward run for ``tapeshift.compat.random_alignment``: its random
    draws are counted from 0, whatever ran before.
    """
    tf = tensorflow()
    with recorder.active(), forward_run():
        target = model(params, inputs)
    recorder.check_complete()
    if isinstance(target, (tuple, list, dict)):
        raise TypeError(
            "the model must return one tensor (the target); it returned a "
            f"{type(target).__name__}. Return the loss, or the output you want "
            "the gradient of."
        )
    target = tf.convert_to_tensor(target)
    # cuts stay in forward order, whatever order they were asked for in
    return Forward(target=target, sources=sources, cuts=list(recorder.cuts), query=query)
