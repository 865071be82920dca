"""The three backends that run the same model code.

Each module provides ``compile(program, params, input_specs, upstream_spec)``
returning a callable ``(inputs, upstream) -> (numpy fetches, plan)``, with a
``close()``. A *program* is ``program(tracer, variables, inputs, upstream)``;
the backend supplies the tracer (how the forward run is recorded and queried)
and decides where the program runs (a graph, eagerly, or in ``tf.function``).
"""

from __future__ import annotations

import importlib

BACKENDS = ("graph", "tape", "function")


def get(name: str):
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
    return importlib.import_module(f"tapeshift.compat.backends.{name}")
