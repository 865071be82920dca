"""Comparing gradients across backends, with tolerances that depend on the dtype.

Written down once and used by the tests, ``tapeshift demo`` and benchmarks:

    dtype      rtol    atol    why
    float16    1e-2    1e-3    10-bit mantissa
    bfloat16   2e-2    1e-2    7-bit mantissa
    float32    1e-5    1e-6    graph and eager differ in the 7th significant digit (up to 70 ulps)
                               (oneDNN reorders float32 reductions, docs/tf1-vs-tf2.md, section 6)
    float64    1e-10   1e-12   same computation, reordering only

Two arrays agree when ``|a - b| <= atol + rtol * |b|`` elementwise, as in
``numpy.allclose``, with ``atol`` scaled by the larger of 1 and ``max|b|`` so that
a tolerance means the same for a gradient of size 1e3 as for one of size 1.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

TOLERANCES: dict[str, tuple[float, float]] = {
    "float16": (1e-2, 1e-3),
    "bfloat16": (2e-2, 1e-2),
    "float32": (1e-5, 1e-6),
    "float64": (1e-10, 1e-12),
}

# A float64 central difference with step 1e-6 is accurate to about 1e-9 relative.
FINITE_DIFFERENCE_TOLERANCE = (1e-6, 1e-8)


def tolerance(dtype: Any) -> tuple[float, float]:
    """(rtol, atol) for an array of ``dtype``; exact for integers and booleans."""
    name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    if name in TOLERANCES:
        return TOLERANCES[name]
    if np.issubdtype(np.dtype(name), np.inexact):
        return TOLERANCES["float32"]
    return (0.0, 0.0)


def compare(actual: Any, expected: Any, *, rtol: float | None = None, atol: float | None = None):
    """Return (ok, message) for two arrays; the message names the worst element."""
    a = np.asarray(actual)
    b = np.asarray(expected)
    if a.shape != b.shape:
        return False, f"shape {a.shape} != {b.shape}"
    r, t = tolerance(np.result_type(a.dtype, b.dtype))
    rtol = r if rtol is None else rtol
    atol = t if atol is None else atol
    if a.size == 0:
        return True, "empty"
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    scale = max(1.0, float(np.nanmax(np.abs(b64)))) if np.isfinite(b64).any() else 1.0
    diff = np.abs(a64 - b64)
    same_nonfinite = (~np.isfinite(a64)) & (a64 == b64) | (np.isnan(a64) & np.isnan(b64))
    diff = np.where(same_nonfinite, 0.0, diff)
    bound = atol * scale + rtol * np.abs(b64)
    excess = np.where(np.isnan(diff), np.inf, diff - bound)
    worst = np.unravel_index(int(np.argmax(excess)), a.shape) if a.ndim else ()
    max_abs = float(np.nanmax(diff)) if np.isfinite(diff).any() else float("nan")
    rel = diff / np.maximum(np.abs(b64), np.finfo(np.float64).tiny)
    msg = (
        f"shape {a.shape}, dtype {a.dtype.name}, max abs diff {max_abs:.3g}, "
        f"max rel diff {float(np.nanmax(rel)):.3g}, worst at {tuple(int(i) for i in worst)}: "
        f"{float(a64[worst])!r} vs {float(b64[worst])!r} (rtol={rtol:g}, atol={atol:g})"
    )
    return bool((excess <= 0).all()), msg


def assert_close(actual, expected, *, name: str, rtol=None, atol=None) -> None:
    ok, msg = compare(actual, expected, rtol=rtol, atol=atol)
    if not ok:
        raise AssertionError(f"{name}: {msg}")


def finite_difference(
    f: Callable[[Mapping[str, np.ndarray]], float],
    values: Mapping[str, np.ndarray],
    name: str,
    eps: float = 1e-6,
) -> np.ndarray:
    """Central-difference gradient of scalar ``f(values)`` w.r.t. ``values[name]`` (float64)."""
    base = {k: np.array(v, dtype=np.float64) for k, v in values.items()}
    x = base[name]
    grad = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        old = x[idx]
        x[idx] = old + eps
        hi = float(f(base))
        x[idx] = old - eps
        lo = float(f(base))
        x[idx] = old
        grad[idx] = (hi - lo) / (2 * eps)
    return grad


# -- cross-backend assertions (used by the pytest plugin and by users) --------


def _results(model, params, inputs, backend, **options):
    from tapeshift.compat.api import GradientFunction

    with GradientFunction(model, params, backend=backend, **options) as fn:
        return fn(inputs, options.get("upstream"))


def _tensors(result) -> dict[str, Any]:
    out = {f"target {result.target_name!r}": result.target}
    out.update({f"gradient {n!r}": g for n, g in result.grads.items()})
    for s in result.stages:
        out[f"stage {s.name!r}"] = s.gradient
        out[f"stage {s.name!r} passed on"] = s.passed
    return out


def assert_results_agree(actual, expected, *, what: str, rtol=None, atol=None) -> None:
    """Every tensor of two ``GradientResult``s agrees; the message names the first that does not."""
    a, e = _tensors(actual), _tensors(expected)
    if set(a) != set(e):
        raise AssertionError(f"{what}: different tensors: {sorted(set(a) ^ set(e))}")
    for name, ev in e.items():
        av = a[name]
        if (av is None) != (ev is None):
            raise AssertionError(f"{what}: {name} is {'None' if av is None else 'set'} on one side only")
        if av is not None:
            assert_close(av, ev, name=f"{what}: {name}", rtol=rtol, atol=atol)


def assert_backends_agree(model, params=None, inputs=None, *, backends=None, rtol=None,
                          atol=None, **options):
    """Run the same gradient request on each backend; all must agree with the first.

    ``options`` are those of ``compat.build`` (``wrt``, ``cuts``, ``transforms``,
    ``mode``, ...). ``model`` may be a ``TF1Model`` (``params`` then default to
    its values, ``wrt`` to its trainable variables). Returns the results by backend.
    """
    from tapeshift.compat.backends import BACKENDS
    from tapeshift.compat.tf1_model import compat_arguments

    model, params, options = compat_arguments(model, params, options)

    backends = tuple(backends or BACKENDS)
    results = {b: _results(model, params, inputs, b, **options) for b in backends}
    first = backends[0]
    for b in backends[1:]:
        assert_results_agree(results[b], results[first], what=f"{b} vs {first}", rtol=rtol, atol=atol)
    return results


def assert_split_matches_direct(model, params=None, inputs=None, *, cuts, backend="tape",
                                rtol=None, atol=None, **options):
    """Without transforms, a split along ``cuts`` must equal the direct gradient.

    ``model`` may be a ``TF1Model``, as for ``assert_backends_agree``.
    """
    from tapeshift.compat.tf1_model import compat_arguments

    model, params, options = compat_arguments(model, params, options)
    if options.get("transforms"):
        raise ValueError("a split with transforms is not meant to equal the direct gradient")
    direct = _results(model, params, inputs, backend, **options)
    split = _results(model, params, inputs, backend, cuts=cuts, **options)
    for n, g in direct.grads.items():
        s = split.grads[n]
        if (g is None) != (s is None):
            raise AssertionError(f"split vs direct on {backend}: gradient {n!r} is None on one side only")
        if g is not None:
            assert_close(s, g, name=f"split vs direct on {backend}: gradient {n!r}", rtol=rtol, atol=atol)
    return split


def assert_matches_finite_differences(model, params, inputs=None, *, wrt=None, backend="tape",
                                      eps=1e-6, rtol=None, atol=None):
    """Compare the gradient in float64 with central differences of the model's value.

    Parameters and inputs are cast to float64. The model is evaluated on the
    graph backend with every parameter fed as an input, so one compiled graph
    serves all the perturbed evaluations.
    """
    from tapeshift.compat.api import GradientFunction

    rtol = FINITE_DIFFERENCE_TOLERANCE[0] if rtol is None else rtol
    atol = FINITE_DIFFERENCE_TOLERANCE[1] if atol is None else atol
    p64 = {k: np.asarray(v, np.float64) for k, v in params.items()}
    i64 = {k: np.asarray(v, np.float64) for k, v in (inputs or {}).items()}
    wrt = list(wrt or p64)
    grads = _results(model, p64, i64, backend, wrt=wrt).grads

    def as_inputs(_, both):
        return model({k: both[k] for k in p64}, {k: both[k] for k in i64})

    with GradientFunction(as_inputs, {}, backend="graph", wrt=()) as fn:
        for n in wrt:
            fd = finite_difference(lambda v: fn.value(v), {**p64, **i64}, n, eps)
            assert_close(grads[n], fd, name=f"{backend} vs finite differences: gradient {n!r}",
                         rtol=rtol, atol=atol)
    return grads


def aligned_random(seed: int = 0):
    """See ``tapeshift.compat.random_alignment.aligned_random``."""
    from tapeshift.compat.random_alignment import aligned_random as _aligned

    return _aligned(seed)
