"""Make TF random ops draw the same numbers on the graph, tape and function backends.

A graph-level seed and ``tf.random.set_seed`` give different streams
(docs/tf1-vs-tf2.md, section 5), so a model that draws noise, dropout masks or initial values
differs between backends. Inside ``aligned_random(seed)``, the random ops that
model code calls are replaced by their stateless counterparts, seeded by
``(seed, n)`` where ``n`` counts random calls from the start of each forward
run. The same model code therefore draws the same numbers on every backend,
and on every call. (Keras 2's ``DeterministicRandomTestTool`` did this for the
TF migration guide; it is gone with Keras 3.)

Only calls made through the module attributes are replaced (``tf.random.normal``,
``tf.nn.dropout``, their ``tf.compat.v1`` spellings, and the internal
``tensorflow.python.ops.nn.dropout`` that tf_slim reaches); a function imported
by name before the block keeps the original.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from typing import Iterator

from compat._tf import tensorflow

_state = threading.local()


def _next_seed(tf):
    st = _state.current
    from compat.cuts import _ACTIVE

    run = _ACTIVE.get()
    key = id(run)
    if st["run"] != key:  # a new forward run starts counting from zero
        st["run"], st["count"] = key, 0
    n = st["count"]
    st["count"] += 1
    return tf.constant([st["seed"], n], dtype=tf.int64)


def _patches(tf):
    def normal(shape, mean=0.0, stddev=1.0, dtype=tf.float32, seed=None, name=None):
        return tf.random.stateless_normal(shape, _next_seed(tf), mean, stddev, dtype, name=name)

    def uniform(shape, minval=0, maxval=None, dtype=tf.float32, seed=None, name=None):
        return tf.random.stateless_uniform(shape, _next_seed(tf), minval, maxval, dtype, name=name)

    def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=tf.float32, seed=None, name=None):
        return tf.random.stateless_truncated_normal(
            shape, _next_seed(tf), mean, stddev, dtype, name=name
        )

    def dropout(x, rate=None, noise_shape=None, seed=None, name=None):
        return tf.nn.experimental.stateless_dropout(
            x, rate, _next_seed(tf), noise_shape=noise_shape, name=name
        )

    def dropout_v1(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
        if rate is None:
            rate = 1.0 - keep_prob
        return dropout(x, rate, noise_shape=noise_shape, name=name)

    v1 = tf.compat.v1
    return [
        (tf.random, "normal", normal),
        (tf.random, "uniform", uniform),
        (tf.random, "truncated_normal", truncated_normal),
        (tf.nn, "dropout", dropout),
        (v1, "random_normal", normal),
        (v1, "random_uniform", uniform),
        (v1, "truncated_normal", truncated_normal),
        (v1.random, "normal", normal),
        (v1.random, "uniform", uniform),
        (v1.random, "truncated_normal", truncated_normal),
        (v1.nn, "dropout", dropout_v1),
        # tf_slim's dropout (through the Keras legacy Dropout layer) calls this one
        (sys.modules["tensorflow.python.ops.nn"], "dropout", dropout_v1),
    ]


@contextlib.contextmanager
def aligned_random(seed: int = 0) -> Iterator[None]:
    """Within the block, TF random ops in model code are stateless and seeded by ``seed``."""
    tf = tensorflow()
    if getattr(_state, "current", None) is not None:
        raise RuntimeError("aligned_random blocks do not nest")
    patches = _patches(tf)
    saved = [(mod, attr, getattr(mod, attr)) for mod, attr, _ in patches]
    _state.current = {"seed": int(seed), "run": None, "count": 0}
    try:
        for mod, attr, fn in patches:
            setattr(mod, attr, fn)
        yield
    finally:
        for mod, attr, original in saved:
            setattr(mod, attr, original)
        _state.current = None
