"""Marking intermediate tensors by name: ``cut("h", tensor)``.

Model code calls ``cut`` on the tensors a split may pass through. Outside a
gradient computation, and for names a computation did not ask for, ``cut``
returns its argument unchanged, so the same model code runs everywhere.

For a requested cut the active recorder returns a *leaf*: the same value with
gradient flow stopped (``tf.stop_gradient``) and watched as a source of its own.
Everything downstream is then built on the leaf, which is what lets each output
be pulled back through its own segment only (see ``tapeshift.compat.vjp``).
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass
from typing import Any, Iterator

from tapeshift.compat.errors import CutError

_ACTIVE: contextvars.ContextVar["Recorder | None"] = contextvars.ContextVar(
    "tapeshift_cut_recorder", default=None
)


def cut(name: str, tensor: Any) -> Any:
    """Mark ``tensor`` as the cut called ``name`` and return the tensor to use."""
    recorder = _ACTIVE.get()
    if recorder is None:
        return tensor
    return recorder.mark(name, tensor)


@dataclass(frozen=True)
class CutRecord:
    name: str
    output: Any  # the tensor the model computed
    leaf: Any  # what the rest of the model was built on


class Recorder:
    """Collects the cuts of one forward run. Backends subclass ``make_leaf``."""

    def __init__(self, requested: tuple[str, ...]):
        self.requested = tuple(requested)
        self.cuts: list[CutRecord] = []
        self.seen: list[str] = []

    def mark(self, name: str, tensor: Any) -> Any:
        from tapeshift.compat._tf import tensorflow

        tf = tensorflow()
        if not isinstance(name, str) or not name:
            raise CutError(f"cut names must be non-empty strings, got {name!r}")
        if name in self.seen:
            raise CutError(
                f"cut {name!r} was marked twice in one forward run; give each cut "
                "its own name (a cut inside a loop needs the step in its name)"
            )
        self.seen.append(name)
        tensor = tf.convert_to_tensor(tensor)
        if name not in self.requested:
            return tensor
        if not tensor.dtype.is_floating and not tensor.dtype.is_complex:
            raise CutError(
                f"cut {name!r} marks a tensor of dtype {tensor.dtype.name}; "
                "gradients only flow through floating-point tensors"
            )
        leaf = self.make_leaf(tf.stop_gradient(tensor))
        self.cuts.append(CutRecord(name, tensor, leaf))
        return leaf

    def make_leaf(self, leaf: Any) -> Any:
        return leaf

    def check_complete(self) -> None:
        missing = [n for n in self.requested if n not in self.seen]
        if missing:
            marked = ", ".join(repr(n) for n in self.seen) or "none"
            raise CutError(
                f"unknown cut {missing[0]!r}: the model marked {marked}. "
                "Mark it in the model with compat.cut(name, tensor)."
            )

    @contextlib.contextmanager
    def active(self) -> Iterator["Recorder"]:
        token = _ACTIVE.set(self)
        try:
            yield self
        finally:
            _ACTIVE.reset(token)
