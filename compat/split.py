"""Direct and split gradients, built on ``Forward.pullback`` alone.

Outputs are numbered in forward order: cuts ``0..k-1``, then the target ``k``.
Going from the target down, each cut's upstream gradient is the sum of what the
outputs above it pulled back into its leaf; a transform may change it; then the
cut's own output is pulled back with it. Sources collect terms from every
output whose segment uses them.

Cut completeness: a term that reaches a cut or a source from an output other
than the next one up (a skip connection, a weight shared across segments) is a
*bypass*: a split that only follows the chain of cuts would miss it. Bypasses
are found structurally (the pullback is connected, whatever its value) and by
default added, so split == direct; ``bypass="raise"`` refuses them and
``bypass="drop"`` leaves them out, as the legacy chain of ``tf.gradients`` did.

In a replica of the mirrored backend, ``fw.replicas`` gives each replica its
share of the seed and decides what a transform sees at each cut
(``tapeshift.compat.replicas``); the rest is the same code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from tapeshift.compat._tf import tensorflow
from tapeshift.compat.errors import (
    CutBypassError,
    CutError,
    LegacyShapeError,
    TransformError,
    UpstreamGradientError,
)
from tapeshift.compat.result import DIRECT, LEGACY, SPLIT, Bypass
from tapeshift.compat.vjp import Forward

BYPASS_POLICIES = ("add", "raise", "drop")
MODES = ("vjp", "legacy_elementwise")
UNCONNECTED = ("none", "zero")


@dataclass
class Plan:
    """Python-side facts of one computation (same for every call of a compiled program)."""

    mode: str
    target_name: str
    sources: tuple[str, ...]
    stages: list[tuple[str, str | None]] = field(default_factory=list)  # (cut, transform)
    bypasses: list[Bypass] = field(default_factory=list)
    unconnected: list[str] = field(default_factory=list)  # sources with no gradient


def backprop(
    fw: Forward,
    upstream: Any,
    *,
    transforms: Mapping[str, Callable],
    mode: str,
    bypass: str,
    unconnected_gradients: str,
    target_name: str,
) -> tuple[dict[str, Any], Plan]:
    """Build the gradient computation; return (tensors to fetch, plan)."""
    tf = tensorflow()
    cuts = list(fw.cuts)
    k = len(cuts)
    names = [c.name for c in cuts] + [target_name]
    kind = DIRECT if k == 0 else (LEGACY if mode == "legacy_elementwise" else SPLIT)
    plan = Plan(mode=kind, target_name=target_name, sources=tuple(fw.sources))
    fetches: dict[str, Any] = {"target": fw.target}

    replicas = fw.replicas
    if replicas is not None:
        upstream = replicas.upstream(fw.target, upstream)
    seed = _seed(tf, fw.target, upstream, target_name)
    # terms[name] = [(output index, tensor)] pulled back into a leaf or source
    terms: dict[str, list[tuple[int, Any]]] = {}
    legacy = kind == LEGACY
    cot = seed
    for i in range(k, -1, -1):
        if i < k:
            name = cuts[i].name
            arrived = terms.pop(name, [])
            if not arrived:
                raise CutError(
                    f"cut {name!r} is not between the target {target_name!r} and the "
                    f"sources: the target does not depend on it"
                )
            chain = [t for j, t in arrived if j == i + 1]
            skips = [(j, t) for j, t in arrived if j > i + 1]
            added = _note_bypasses(plan, bypass, name, skips, names, entry=i + 1, legacy=legacy)
            if legacy:
                raw = _legacy_raw(chain, name, names[i + 1])
            else:
                raw = _sum(tf, chain + added)
                if raw is None:  # only bypass terms, and they were dropped
                    raw = tf.zeros_like(cuts[i].output)
            transform = transforms.get(name)
            if replicas is None:
                cot = passed = _apply_transform(tf, transform, raw, name)
            else:
                raw, passed, cot = replicas.stage(
                    name, raw, transform, lambda t, g, n=name: _apply_transform(tf, t, g, n))
            plan.stages.append((name, _transform_name(transform)))
            fetches[f"stage/{name}/gradient"] = raw
            if passed is not raw:  # without a transform the two are one tensor: fetch it once
                fetches[f"stage/{name}/passed"] = passed
        seed_i = cot if not (legacy and i < k) else tf.ones_like(fw.outputs[i])
        pulled = fw.pullback(i, seed_i)
        if i < k and all(g is None for g in pulled.values()):
            raise CutError(
                f"cut {names[i]!r} is not between the target and the sources: it does "
                f"not depend on any of {list(fw.sources)}"
                + (f" or on cut {names[i - 1]!r}" if i else "")
            )
        for n, g in pulled.items():
            if g is None:
                continue
            if legacy and i < k:
                # the legacy idiom: upstream gradient times d(sum output)/dx, elementwise
                g = _legacy_product(tf, cot, g, names[i], n)
            terms.setdefault(n, []).append((i, g))

    for s in fw.sources:
        arrived = sorted(terms.get(s, []), key=lambda jt: jt[0])
        if not arrived:
            plan.unconnected.append(s)
            if unconnected_gradients == "zero":
                fetches[f"grad/{s}"] = tf.zeros_like(fw.sources[s])
            continue
        entry = arrived[0][0]
        later = arrived[1:]
        added = _note_bypasses(plan, bypass, s, later, names, entry=entry, legacy=legacy)
        fetches[f"grad/{s}"] = _sum(tf, [arrived[0][1]] + added)
    return fetches, plan


def check_upstream(target, upstream, target_name: str):
    """The seed of a backward pass from ``target``; ``UpstreamGradientError`` if
    ``upstream`` (None for a scalar target) does not fit it."""
    return _seed(tensorflow(), target, upstream, target_name)


def _seed(tf, target, upstream, target_name):
    shape = target.shape
    if upstream is None:
        if shape.rank != 0:
            raise UpstreamGradientError(
                f"target {target_name!r} has shape {_shape(shape)}, not a scalar: pass an "
                "upstream gradient of that shape (the vector in the vector-Jacobian "
                "product), or reduce the target to a scalar loss"
            )
        return tf.ones_like(target)
    if upstream.dtype != target.dtype:
        raise UpstreamGradientError(
            f"upstream gradient for target {target_name!r} has dtype {upstream.dtype.name}, "
            f"but the target has dtype {target.dtype.name}; they must match"
        )
    if not upstream.shape.is_compatible_with(shape) or upstream.shape.rank != shape.rank:
        raise UpstreamGradientError(
            f"upstream gradient for target {target_name!r} has shape "
            f"{_shape(upstream.shape)}, but the target has shape {_shape(shape)} "
            f"({target.dtype.name}); a vector-Jacobian product takes one upstream "
            "entry per target element"
        )
    return upstream


def _note_bypasses(plan, policy, source, later, names, *, entry, legacy):
    """Record bypass terms into ``source``; return those to add to its gradient."""
    added = []
    for j, g in later:
        skipped = tuple(names[entry:j])
        keep = policy == "add" and not legacy
        if policy == "raise" and not legacy:
            raise CutBypassError(
                f"{source!r} reaches {names[j]!r} without passing through cut "
                f"{', '.join(repr(s) for s in skipped)}: a split through the cuts misses "
                "that term. Use bypass='add' to include it, or move the cut."
            )
        plan.bypasses.append(Bypass(source, names[j], skipped, added=keep))
        if keep:
            added.append(g)
    return added


def _legacy_raw(chain, name, above):
    if not chain:
        raise CutError(f"cut {name!r}: output {above!r} does not depend on it")
    return chain[0]


def _legacy_product(tf, upstream, unit, output, x):
    a, b = upstream.shape, unit.shape
    if not (a.is_fully_defined() and b.is_fully_defined()):
        return upstream * unit
    try:
        np.broadcast_shapes(tuple(a.as_list()), tuple(b.as_list()))
    except ValueError:
        raise LegacyShapeError(
            f"legacy_elementwise: d(target)/d{output} has shape {_shape(upstream.shape)} "
            f"and d{output}/d{x} has shape {_shape(unit.shape)}; they cannot be multiplied "
            "elementwise (the legacy idiom only runs when the shapes broadcast)"
        ) from None
    return upstream * unit


def _apply_transform(tf, transform, g, name):
    if transform is None:
        return g
    out = tf.convert_to_tensor(transform(g))
    if out.dtype != g.dtype or not out.shape.is_compatible_with(g.shape):
        raise TransformError(
            f"transform {_transform_name(transform)} at cut {name!r} returned "
            f"{_shape(out.shape)} {out.dtype.name}; it must keep the gradient's "
            f"shape {_shape(g.shape)} and dtype {g.dtype.name}"
        )
    return out


def _transform_name(t) -> str | None:
    return None if t is None else getattr(t, "name", repr(t))


def _sum(tf, ts):
    if not ts:
        return None
    return ts[0] if len(ts) == 1 else tf.add_n(ts)


def _shape(shape) -> str:
    dims = shape.as_list() if shape.rank is not None else None
    return "unknown" if dims is None else str(tuple(dims))
