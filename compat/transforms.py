"""Transforms applied to the upstream gradient at a cut, before it is passed on.

Each transform is a small callable on tensors with a readable ``name`` (it
appears in results). Any plain callable ``f(tensor) -> tensor`` works too.

``elementwise`` says whether each element of the result depends on that element
alone. The mirrored backend (``tapeshift.compat.replicas``) applies an
elementwise transform to each replica's rows of a stage gradient as they are; a
norm clip gets the norm of the whole stage gradient (one all-reduce of its
squared norm, ``ClipByNorm.clip_with``); anything else sees the whole gathered
gradient. So every transform gives the one-device numbers there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from tapeshift.compat._tf import tensorflow


@dataclass(frozen=True)
class ClipByNorm:
    clip_norm: float

    elementwise = False

    @property
    def name(self) -> str:
        return f"clip_by_norm({self.clip_norm:g})"

    def __call__(self, g):
        return tensorflow().clip_by_norm(g, self.clip_norm)

    def clip_with(self, g, l2sum):
        """``tf.clip_by_norm(g)`` when ``g`` is a slice of a tensor whose squared L2
        norm is ``l2sum``: the same formula as TensorFlow's, with the whole norm."""
        tf = tensorflow()
        clip_norm = max(self.clip_norm, 0.0)
        positive = l2sum > 0
        l2norm = tf.where(positive, tf.sqrt(tf.where(positive, l2sum, tf.ones_like(l2sum))), l2sum)
        return g * clip_norm / tf.maximum(l2norm, clip_norm)


@dataclass(frozen=True)
class ClipByValue:
    low: float
    high: float

    def __post_init__(self):
        if self.low > self.high:
            raise ValueError(f"clip_by_value: low {self.low} is above high {self.high}")

    elementwise = True

    @property
    def name(self) -> str:
        return f"clip_by_value({self.low:g}, {self.high:g})"

    def __call__(self, g):
        return tensorflow().clip_by_value(g, self.low, self.high)


@dataclass(frozen=True)
class Scale:
    factor: float

    elementwise = True

    @property
    def name(self) -> str:
        return f"scale({self.factor:g})"

    def __call__(self, g):
        return g * self.factor


@dataclass(frozen=True, eq=False)
class Mask:
    """Multiply by a fixed 0/1 (or any) array broadcastable to the gradient."""

    mask: Any

    elementwise = False  # a mask may hold one row per example

    @property
    def name(self) -> str:
        return "mask"

    def __call__(self, g):
        tf = tensorflow()
        return g * tf.cast(self.mask, g.dtype)


@dataclass(frozen=True, eq=False)
class Custom:
    fn: Callable[[Any], Any]

    elementwise = False

    @property
    def name(self) -> str:
        return getattr(self.fn, "__name__", type(self.fn).__name__)

    def __call__(self, g):
        return self.fn(g)


def clip_by_norm(clip_norm: float) -> ClipByNorm:
    return ClipByNorm(float(clip_norm))


def clip_by_value(low: float, high: float) -> ClipByValue:
    return ClipByValue(float(low), float(high))


def scale(factor: float) -> Scale:
    return Scale(float(factor))


def mask(values: Any) -> Mask:
    return Mask(values)


def as_transform(obj: Any):
    """Accept a transform object or any callable on tensors."""
    if hasattr(obj, "name") and callable(obj):
        return obj
    if callable(obj):
        return Custom(obj)
    raise TypeError(f"a transform must be callable on tensors, got {type(obj).__name__}")
