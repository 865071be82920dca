"""The tolerances of ``tapeshift verify`` and the comparison of one value with its legacy namesake."""

from __future__ import annotations

from typing import Sequence

from tapeshift.migrate.legacy.report import ValueRow

# dtype label -> (rtol, atol). A value agrees when |new - legacy| <= atol + rtol * |legacy|.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-9, 1e-12),
    "complex128": (1e-9, 1e-12),
    "float32": (1e-5, 1e-6),
    "complex64": (1e-5, 1e-6),
    "py:float": (1e-5, 1e-6),    # Python floats usually come from float32 tensors
    "py:complex": (1e-5, 1e-6),
    "printed": (1e-5, 1e-6),     # printed numbers carry no dtype
    "float16": (1e-3, 1e-3),
    "bfloat16": (1e-2, 1e-2),
}
EXACT = (0.0, 0.0)  # integers, booleans, printed integers and True/False

TOLERANCE_HELP = """\
default tolerances (a value agrees when |new - legacy| <= atol + rtol * |legacy|):
  dtype                                       rtol    atol
  float64, complex128                         1e-9    1e-12
  float32, complex64, Python float, printed   1e-5    1e-6
  float16                                     1e-3    1e-3
  bfloat16                                    1e-2    1e-2
  int*, uint*, bool, printed integers/bools   exact   exact
Two values of different dtypes use the looser of the two. --rtol/--atol replace
that parameter for every dtype (booleans stay exact).

with --legacy-runs N, where the legacy runs differ a new value agrees when
|new - c| <= atol + rtol * |c|, c the nearest value in the legacy runs' range.

exit codes: 0 every common value agrees and at least one was compared
              (with --legacy-runs: or lies within the legacy runs' spread);
            1 a mismatch, or nothing could be compared; 2 a script failed or timed out."""


def _is_exact_label(label: str) -> bool:
    return label in ("py:int", "py:bool", "bool", "printed-int", "printed-bool") or label.startswith(
        ("int", "uint"))


def default_tolerance(label: str) -> tuple[float, float]:
    """``(rtol, atol)`` for a dtype label (``float32``, ``py:float``, ``int64``...)."""
    if _is_exact_label(label):
        return EXACT
    return TOLERANCES.get(label, TOLERANCES["float32"])


def tolerance_for(labels: Sequence[str], rtol: float | None = None,
                  atol: float | None = None) -> tuple[float, float]:
    """The tolerance for comparing values with these dtype labels (the loosest wins)."""
    pairs = [default_tolerance(lb) for lb in labels]
    r = max(p[0] for p in pairs)
    a = max(p[1] for p in pairs)
    if all(lb in ("bool", "py:bool", "printed-bool") for lb in labels):
        return EXACT
    return (r if rtol is None else rtol, a if atol is None else atol)


def shape_text(arr) -> str:
    return str(tuple(arr.shape))


def dtype_text(a: str, b: str) -> str:
    def show(label: str) -> str:
        return label[3:] + "(py)" if label.startswith("py:") else label
    return show(a) if a == b else f"{show(a)}/{show(b)}"


def diff_stats(legacy, new):
    """``(max abs diff, max rel diff, elementwise |new - legacy|, nan/inf pattern equal)``."""
    import numpy as np

    a = np.asarray(legacy)
    b = np.asarray(new)
    ctype = np.complex128 if (a.dtype.kind == "c" or b.dtype.kind == "c") else np.float64
    a = a.astype(ctype)
    b = b.astype(ctype)
    a_nan, b_nan = np.isnan(a), np.isnan(b)
    a_inf, b_inf = np.isinf(a), np.isinf(b)
    special_equal = bool(np.array_equal(a_nan, b_nan)
                         and np.array_equal(a_inf, b_inf) and np.all(a[a_inf] == b[b_inf]))
    finite = ~(a_nan | b_nan | a_inf | b_inf)
    diff = np.zeros(a.shape, dtype=np.float64)
    diff[finite] = np.abs(b[finite] - a[finite])
    diff[~finite & ~((a_nan & b_nan) | ((a_inf & b_inf) & (a == b)))] = np.inf
    if diff.size == 0:
        return 0.0, 0.0, diff, special_equal
    ref = np.abs(a)
    rel = np.zeros(a.shape, dtype=np.float64)
    moved = diff > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        rel[moved] = np.where(np.isfinite(ref[moved]) & (ref[moved] > 0),
                              diff[moved] / np.where(ref[moved] > 0, ref[moved], 1.0), np.inf)
    return float(diff.max()), float(rel.max()), diff, special_equal


def num_text(x) -> str:
    """A number as its own dtype prints it (shortest repr: float32 0.6 stays 0.6)."""
    import numpy as np

    if isinstance(x, np.ndarray):
        x = x[()]
    if isinstance(x, np.generic):
        return str(x)
    return repr(x)


def compare_values(name: str, legacy, new, legacy_dtype: str, new_dtype: str, *,
                   rtol: float | None = None, atol: float | None = None,
                   kind: str = "value") -> ValueRow:
    """Compare one legacy value with the new value of the same name."""
    import numpy as np

    a, b = np.asarray(legacy), np.asarray(new)
    dtype = dtype_text(legacy_dtype, new_dtype)
    if a.shape != b.shape:
        return ValueRow(name, kind, f"{shape_text(a)}/{shape_text(b)}", dtype, None, None, "mismatch",
                        note=f"shape {shape_text(a)} in legacy, {shape_text(b)} in new")
    r, t = tolerance_for([legacy_dtype, new_dtype], rtol, atol)
    max_abs, max_rel, diff, special_equal = diff_stats(a, b)
    if (r, t) == EXACT or (a.dtype.kind in "biu" and b.dtype.kind in "biu" and r == 0 and t == 0):
        ok = bool(np.array_equal(a, b))
    else:
        ref = np.abs(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64))
        finite = np.isfinite(diff)
        within = np.zeros(a.shape, dtype=bool)
        within[finite] = diff[finite] <= t + r * ref[finite]
        ok = bool(special_equal and np.all(within | (diff == 0)))
    note = ""
    if not ok:
        idx = np.unravel_index(int(np.argmax(np.where(np.isnan(diff), np.inf, diff))), a.shape) \
            if a.size else ()
        if a.size > 1:
            note = f"at {tuple(int(i) for i in idx)}: {num_text(a[idx])} vs {num_text(b[idx])}"
        elif a.size == 1:
            note = f"{num_text(a.reshape(()))} vs {num_text(b.reshape(()))}"
    return ValueRow(name, kind, shape_text(a), dtype, max_abs, max_rel, "ok" if ok else "mismatch",
                    note=note, rtol=r, atol=t)
