"""The backends that run the same model code: three on one device, one on several.

Each module provides ``compile(program, params, input_specs, upstream_spec)``
returning a callable ``(inputs, upstream) -> (numpy fetches, plan)``, with a
``close()``. A *program* is ``program(tracer, variables, inputs, upstream)``;
the backend supplies the tracer (how the forward run is recorded and queried)
and decides where the program runs (a graph, eagerly, or in ``tf.function``).

``mirrored`` (``DISTRIBUTED``) runs the ``function`` backend's program on every
replica of a ``tf.distribute`` strategy; its ``compile`` also takes a forward
``probe`` program, the ``ReplicaOptions`` and the target's name. It is not in
``BACKENDS``: loops over ``BACKENDS`` stay on one device.
"""

from __future__ import annotations

import importlib

BACKENDS = ("graph", "tape", "function")
DISTRIBUTED = ("mirrored",)
ALL = BACKENDS + DISTRIBUTED


def get(name: str):
    if name not in ALL:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(ALL)}")
    return importlib.import_module(f"tapeshift.compat.backends.{name}")
