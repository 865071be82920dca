"""What a gradient computation returns: plain numpy values and what happened."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

DIRECT = "direct"
SPLIT = "split"
LEGACY = "legacy_elementwise"


@dataclass(frozen=True)
class Bypass:
    """``source`` reaches ``into`` along a path that does not pass through ``skips``.

    ``source`` is a source name or a cut name; ``into`` a cut name or the target.
    """

    source: str
    into: str
    skips: tuple[str, ...]
    added: bool

    def describe(self) -> str:
        skipped = ", ".join(repr(s) for s in self.skips)
        verb = "added to the split" if self.added else "NOT in the split"
        return (
            f"{self.source!r} reaches {self.into!r} without passing through cut "
            f"{skipped}; that term is {verb}"
        )


@dataclass(frozen=True)
class Stage:
    """The gradient arriving at one cut and the one passed on after its transform."""

    name: str
    gradient: np.ndarray
    passed: np.ndarray
    transform: str | None

    @property
    def norm(self) -> float:
        return _l2(self.gradient)

    @property
    def passed_norm(self) -> float:
        return _l2(self.passed)

    @property
    def nonfinite(self) -> int:
        return int(np.size(self.gradient) - np.isfinite(self.gradient).sum())


@dataclass(frozen=True)
class GradientResult:
    backend: str
    mode: str  # DIRECT, SPLIT or LEGACY
    target_name: str
    target: np.ndarray
    grads: Mapping[str, np.ndarray | None]
    stages: tuple[Stage, ...] = ()
    bypasses: tuple[Bypass, ...] = ()
    nonfinite: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())
    replicas: int = 1  # how many replicas computed it (the mirrored backend; else 1)

    @property
    def legacy(self) -> bool:
        """True when the numbers come from the legacy elementwise product."""
        return self.mode == LEGACY

    def stage(self, name: str) -> Stage:
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(f"no stage {name!r}; stages: {[s.name for s in self.stages]}")

    def norms(self) -> dict[str, float]:
        """L2 norm of every stage gradient (before its transform) and final gradient."""
        out = {f"stage:{s.name}": s.norm for s in self.stages}
        out.update({k: _l2(v) for k, v in self.grads.items() if v is not None})
        return out


def _l2(a: np.ndarray) -> float:
    return float(np.sqrt(np.sum(np.square(np.asarray(a, dtype=np.float64)))))
