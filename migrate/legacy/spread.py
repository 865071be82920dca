"""``verify --legacy-runs N``: the legacy program's own run-to-run spread, and the rule
that judges a new value against it.

Some TF1 programs are not deterministic by themselves: a ``sess.run`` that
fetches two train ops runs both updates concurrently, and one may land before
the other's backward pass reads the variable, so the same script prints
slightly different numbers from one run to the next. Compared with one such
run, a deterministic migration then differs, although it lies within what the
legacy program itself gives.

**The envelope rule.** The legacy script ran N times. For one element of a
value (or one printed number) let ``lo`` and ``hi`` be the smallest and the
largest of the N legacy values, and ``c`` the new value ``x`` clipped to
``[lo, hi]``, the nearest point of that range (for complex values the real and
imaginary parts are clipped separately). ``x`` agrees when::

    |x - c| <= atol + rtol * |c|

with verify's usual tolerance for the dtype (or ``--rtol``/``--atol``). Inside
the range ``c == x`` and it agrees; outside, it may lie as far beyond the
nearest extreme as the normal rule allows around a single value. When every
legacy run gave the same value, ``lo == hi == c`` and this is the normal rule.
Integers and booleans have a zero tolerance: the new value must lie in
``[lo, hi]``. An element that is NaN or infinite in a legacy run or in the new
run agrees when it agrees with at least one legacy run by the normal rule.

No TensorFlow here; numpy is imported inside the functions.
"""

from __future__ import annotations

import math
from typing import Sequence

from tapeshift.migrate.legacy.values import (
    compare_values,
    diff_stats,
    dtype_text,
    num_text,
    shape_text,
    tolerance_for,
)
from tapeshift.migrate.legacy.report import ValueRow


def identical(values: Sequence) -> bool:
    """Whether every legacy value equals the first, element for element (NaN equals NaN)."""
    import numpy as np

    first = np.asarray(values[0])
    for other in values[1:]:
        other = np.asarray(other)
        if other.shape != first.shape:
            return False
        max_abs, _, _, special_equal = diff_stats(first, other)
        if max_abs != 0 or not special_equal:
            return False
    return True


def run_spread(values: Sequence) -> tuple[float, float]:
    """``(max abs diff, max rel diff)`` between any two of the legacy values.

    The relative difference of two values is measured against the first of the
    pair, over every ordered pair, so it is the larger of the two readings.
    Values of different shapes differ by ``inf``.
    """
    import numpy as np

    arrays = [np.asarray(v) for v in values]
    worst_abs = worst_rel = 0.0
    for i, a in enumerate(arrays):
        for j, b in enumerate(arrays):
            if i == j:
                continue
            if a.shape != b.shape:
                return math.inf, math.inf
            max_abs, max_rel, _, special_equal = diff_stats(a, b)
            if not special_equal:
                max_abs = max_rel = math.inf
            worst_abs, worst_rel = max(worst_abs, max_abs), max(worst_rel, max_rel)
    return worst_abs, worst_rel


def envelope(stack, new, rtol, atol):
    """Judge ``new`` against the legacy values ``stack`` (shape ``(N, *new.shape)``).

    ``rtol`` and ``atol`` are numbers or arrays of ``new``'s shape. Returns
    ``(agrees, distance, nearest)``, elementwise: whether each element agrees
    by the envelope rule (module docstring), its distance from the nearest
    point of the legacy range, and that point.
    """
    import numpy as np

    stack = np.asarray(stack)
    x = np.asarray(new)
    is_complex = stack.dtype.kind == "c" or x.dtype.kind == "c"
    ctype = np.complex128 if is_complex else np.float64
    s = stack.astype(ctype)
    x = x.astype(ctype)
    rtol = np.broadcast_to(np.asarray(rtol, dtype=np.float64), x.shape)
    atol = np.broadcast_to(np.asarray(atol, dtype=np.float64), x.shape)
    finite = np.all(np.isfinite(s), axis=0) & np.isfinite(x)
    agrees = np.zeros(x.shape, dtype=bool)
    distance = np.zeros(x.shape, dtype=np.float64)
    nearest = np.zeros(x.shape, dtype=ctype)

    # finite everywhere: the nearest point of the legacy range [lo, hi]
    fs, fx = s[:, finite], x[finite]
    if is_complex:
        c = (np.clip(fx.real, fs.real.min(axis=0), fs.real.max(axis=0))
             + 1j * np.clip(fx.imag, fs.imag.min(axis=0), fs.imag.max(axis=0)))
    else:
        c = np.clip(fx, fs.min(axis=0), fs.max(axis=0))
    d = np.abs(fx - c)
    nearest[finite] = c
    distance[finite] = d
    agrees[finite] = d <= atol[finite] + rtol[finite] * np.abs(c)

    # NaN or infinity somewhere: agree with at least one legacy run by the normal rule
    rest = ~finite
    if rest.any():
        rx = x[rest]
        best = np.full(rx.shape, np.inf)
        best_c = s[0][rest].copy()
        ok = np.zeros(rx.shape, dtype=bool)
        for run in s:
            ra = run[rest]
            both_finite = np.isfinite(ra) & np.isfinite(rx)
            same = (np.isnan(ra) & np.isnan(rx)) | (np.isinf(ra) & np.isinf(rx) & (ra == rx))
            d = np.full(rx.shape, np.inf)
            d[same] = 0.0
            with np.errstate(invalid="ignore"):
                d[both_finite] = np.abs(rx[both_finite] - ra[both_finite])
            within = same | (both_finite & (d <= atol[rest] + rtol[rest] * np.abs(ra)))
            closer = d < best
            best = np.where(closer, d, best)
            best_c = np.where(closer, ra, best_c)
            ok |= within
        agrees[rest], distance[rest], nearest[rest] = ok, best, best_c
    return agrees, distance, nearest


def compare_with_spread(name: str, legacy_values: Sequence, new, legacy_dtypes: Sequence[str],
                        new_dtype: str, *, rtol: float | None = None, atol: float | None = None,
                        kind: str = "value", exact=None) -> ValueRow:
    """Compare ``new`` with the values the legacy runs gave, by the envelope rule.

    When the legacy values are identical this is :func:`compare_values` with
    the first one, unchanged. Otherwise the row has ``spread`` set, its
    ``max_abs``/``max_rel`` are the new value's distance from the legacy range
    (0 inside it), and ``spread_abs``/``spread_rel`` say how far the legacy
    runs differ from each other. ``exact``: a boolean mask of elements whose
    tolerance is zero whatever the dtype (printed integers and booleans).
    """
    import numpy as np

    arrays = [np.asarray(v) for v in legacy_values]
    if len(arrays) == 1 or identical(arrays):
        return compare_values(name, arrays[0], new, legacy_dtypes[0], new_dtype, rtol=rtol,
                              atol=atol, kind=kind)
    spread_abs, spread_rel = run_spread(arrays)
    b = np.asarray(new)
    dtype = dtype_text(legacy_dtypes[0], new_dtype)
    shapes = sorted({a.shape for a in arrays})
    if len(shapes) > 1:
        # no range to speak of: agree with one legacy run, by the normal rule
        rows = [compare_values(name, a, b, label, new_dtype, rtol=rtol, atol=atol, kind=kind)
                for a, label in zip(arrays, legacy_dtypes, strict=True)]
        row = next((r for r in rows if r.status == "ok"), rows[0])
        row.note = "; ".join(filter(None, [
            "the legacy runs gave shapes " + ", ".join(str(s) for s in shapes), row.note]))
    elif arrays[0].shape != b.shape:
        row = ValueRow(name, kind, f"{shape_text(arrays[0])}/{shape_text(b)}", dtype, None, None,
                       "mismatch", note=f"shape {shape_text(arrays[0])} in legacy, {shape_text(b)} in new")
    else:
        r, t = tolerance_for([*legacy_dtypes, new_dtype], rtol, atol)
        rt = np.full(b.shape, r, dtype=np.float64)
        at = np.full(b.shape, t, dtype=np.float64)
        if exact is not None:
            rt[np.asarray(exact)] = 0.0
            at[np.asarray(exact)] = 0.0
        agrees, distance, nearest = envelope(np.stack(arrays), b, rt, at)
        ref = np.abs(nearest)
        rel = np.zeros(b.shape, dtype=np.float64)
        moved = distance > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            rel[moved] = np.where(ref[moved] > 0, distance[moved] / np.where(ref[moved] > 0,
                                                                            ref[moved], 1.0), np.inf)
        ok = bool(np.all(agrees))
        note = f"legacy runs differ by up to {_fmt(spread_abs)}"
        if not ok:
            idx = np.unravel_index(int(np.argmax(np.where(agrees, -1.0, distance))), b.shape) \
                if b.size else ()
            values = [a[idx] for a in arrays]
            lo, hi = min(values, key=_sort_key), max(values, key=_sort_key)
            where = f"at {tuple(int(i) for i in idx)}: " if b.size > 1 else ""
            column = np.stack(arrays)[(slice(None), *idx)].astype(np.complex128)
            with np.errstate(invalid="ignore"):
                width = float(np.max(np.abs(column[:, None] - column[None, :])))  # hi - lo
            beyond = f"by {_fmt(float(distance[idx]))}"
            if width > 0 and math.isfinite(width) and math.isfinite(float(distance[idx])):
                beyond += f", {float(distance[idx]) / width:.2g} times their spread there"
            note = (f"{where}{num_text(b[idx])} outside the legacy runs' {num_text(lo)} .. {num_text(hi)} "
                    f"({beyond}); " + note)
        row = ValueRow(name, kind, shape_text(b), dtype,
                       float(distance.max()) if distance.size else 0.0,
                       float(rel.max()) if rel.size else 0.0,
                       "ok" if ok else "mismatch", note=note, rtol=r, atol=t)
    row.spread, row.spread_abs, row.spread_rel = True, spread_abs, spread_rel
    return row


def _sort_key(value) -> float:
    import numpy as np

    value = complex(np.asarray(value).reshape(()))
    return value.real if math.isfinite(value.real) else math.inf


def _fmt(x: float) -> str:
    return "0" if x == 0 else f"{x:.3g}"
