"""A script's final numeric globals as numpy arrays with dtype labels, written to ``values.npz``/``meta.json``."""

from __future__ import annotations

import json
import os
import sys
import types

from tapeshift.migrate.legacy.watchers import SessionTracker

MAX_ELEMENTS = 10_000_000
_MAX_DEPTH = 3


class _Skip(Exception):
    """This value has no comparable number; the message says why."""


class _Ignore(Exception):
    """Not a numeric value at all (module, function, string...): say nothing."""


_PY_LABELS = {bool: "py:bool", int: "py:int", float: "py:float", complex: "py:complex"}


def _plain(arr):
    """A numpy array in a dtype ``np.load`` reads without pickle, and its dtype label."""
    import numpy as np

    label = arr.dtype.name
    if arr.dtype.kind in "biufc":
        return np.array(arr, copy=True), label
    if arr.dtype.kind == "V" or label.startswith(("bfloat16", "float8", "float4", "int4", "uint4")):
        try:  # ml_dtypes (bfloat16, float8...) -> float32
            return np.asarray(arr, dtype=np.float32), label
        except (TypeError, ValueError):
            pass
    raise _Skip(f"non-numeric array (dtype {label})")


def _convert(value, tf, sessions: SessionTracker):
    """``(ndarray, dtype label)`` for a numeric value; raise _Skip/_Ignore otherwise."""
    import numpy as np

    kind = type(value)
    if kind in _PY_LABELS:
        arr = np.asarray(value)
        if arr.dtype.kind == "O":
            raise _Skip("integer too large for int64")
        return arr, _PY_LABELS[kind]
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        if arr.size > MAX_ELEMENTS:
            raise _Skip(f"too large ({arr.size} elements)")
        return _plain(arr)
    if tf is not None:
        if isinstance(value, tf.Variable):
            try:
                return _plain(np.asarray(value.numpy()))
            except Exception:
                pass
            arr = sessions.value_of(value)
            if arr is None:
                raise _Skip("graph variable never read from a session")
            return _plain(arr)
        if isinstance(value, tf.Tensor):
            numpy = getattr(value, "numpy", None)
            if numpy is not None:
                try:
                    return _plain(np.asarray(numpy()))
                except _Skip:
                    raise
                except Exception:
                    pass
            # a graph tensor: only a constant one (tf.constant, a shape...) has a value
            try:
                static = tf.get_static_value(value)
            except Exception:
                static = None
            if static is None:
                raise _Skip("graph tensor (no value outside a session)")
            return _plain(np.asarray(static))
    raise _Ignore()


def _common_label(labels: list[str], stacked) -> str:
    if len(set(labels)) == 1:
        return labels[0]
    if all(lb.startswith("py:") for lb in labels):
        return {"b": "py:bool", "i": "py:int", "u": "py:int", "c": "py:complex"}.get(
            stacked.dtype.kind, "py:float")
    return stacked.dtype.name


def _collect(name: str, value, tf, sessions, out: dict, skipped: dict, depth: int = 0) -> None:
    """Add ``name`` (or its elements ``name[i]`` / ``name['k']``) to ``out``."""
    import numpy as np

    if isinstance(value, (list, tuple)) and depth < _MAX_DEPTH:
        if not value:
            return
        parts, labels, ok = [], [], True
        for item in value:
            try:
                arr, label = _convert(item, tf, sessions)
            except (_Skip, _Ignore):
                ok = False
                break
            parts.append(arr)
            labels.append(label)
        if ok and len({a.shape for a in parts}) == 1:
            try:
                stacked = np.stack(parts)
            except (TypeError, ValueError):
                stacked = None
            if stacked is not None and stacked.dtype.kind in "biufc" and stacked.size <= MAX_ELEMENTS:
                out[name] = (stacked, _common_label(labels, stacked))
                return
        for i, item in enumerate(value):
            _collect(f"{name}[{i}]", item, tf, sessions, out, skipped, depth + 1)
        return
    if isinstance(value, dict) and depth < _MAX_DEPTH:
        for key, item in value.items():
            if isinstance(key, (str, int)):
                _collect(f"{name}[{key!r}]", item, tf, sessions, out, skipped, depth + 1)
        return
    try:
        out[name] = _convert(value, tf, sessions)
    except _Skip as reason:
        skipped[name] = str(reason)
    except _Ignore:
        pass


def capture_globals(globs: dict, sessions: SessionTracker | None = None):
    """``({name: (ndarray, dtype label)}, {name: reason skipped})`` for a script's globals."""
    tf = sys.modules.get("tensorflow")
    if tf is not None and not hasattr(tf, "Tensor"):
        tf = None
    sessions = sessions or SessionTracker()
    out: dict = {}
    skipped: dict = {}
    for name, value in list(globs.items()):
        if name.startswith("__") and name.endswith("__"):
            continue
        if isinstance(value, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType)):
            continue
        try:
            _collect(name, value, tf, sessions, out, skipped)
        except Exception as exc:  # a strange object must not lose the whole capture
            skipped[name] = f"could not read ({type(exc).__name__}: {exc})"
    return out, skipped


def write_capture(directory: str, values: dict, skipped: dict, random_ops: dict, legacy: bool,
                  unseeded: dict | None = None, seed: int | None = None,
                  random_modes: dict | None = None, align: dict | None = None) -> None:
    import numpy as np

    os.makedirs(directory, exist_ok=True)
    names = list(values)
    arrays = {f"v{i}": values[n][0] for i, n in enumerate(names)}
    np.savez(os.path.join(directory, "values.npz"), **arrays)
    tf = sys.modules.get("tensorflow")
    meta = {
        "mode": "legacy" if legacy else "tf2",
        "names": names,
        "dtypes": [values[n][1] for n in names],
        "skipped": skipped,
        "random_ops": random_ops,
        "unseeded": unseeded or {},
        "random_modes": random_modes or {},
        "seed": seed,
        "align": align,
        "tensorflow": getattr(tf, "__version__", None),
    }
    with open(os.path.join(directory, "meta.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f)
