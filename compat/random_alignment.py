"""Make TF random ops draw the same numbers on the graph, tape and function backends.

A graph-level seed and ``tf.random.set_seed`` give different streams
(docs/tf1-vs-tf2.md, section 5), so a model that draws noise, dropout masks or initial values
differs between backends. Inside ``aligned_random(seed)``, the random ops that
model code calls are replaced by their stateless counterparts. The key of each
draw is ``[seed, n]``: ``n`` is the draw's position (0, 1, 2, ...) among the
random calls of its forward run, counted by a counter that the forward run owns
(``forward_run``, entered by ``tapeshift.compat.vjp.trace`` around the model call, so every
backend, every call and every ``tf.function`` trace starts its own count at 0).
The same model code therefore draws the same numbers on every backend, and on
every call. Draws made inside the block but outside any forward run (a net
called directly, ``SlimModel``'s discovery run) are counted by the block, from 0
at its start. (Keras 2's ``DeterministicRandomTestTool`` did this for the TF
migration guide; it is gone with Keras 3.)

Why not an identity: the counter used to be one per block, reset whenever
``id()`` of the active cut recorder changed. A recorder is freed when its run
ends, and CPython gives the next object of that size the freed address when
nothing else took it first, so a new run could carry the previous run's ``id``:
its count did not restart, it drew ``[seed, 2], [seed, 3]`` instead of
``[seed, 0], [seed, 1]``, and a backend disagreed with the others depending on
what had been allocated in between (the slim dropout test failed once in 140
runs in one process; a tape program rebuilt for each forward run, 25 and 33
runs in 1000). Nothing here depends on object identity or garbage collection now.

Only calls made through the module attributes are replaced (``tf.random.normal``,
``tf.nn.dropout``, their ``tf.compat.v1`` spellings, and the internal
``tensorflow.python.ops.nn.dropout`` that tf_slim reaches); a function imported
by name before the block keeps the original. The patches are process-wide
module attributes while the seed is per thread: use the block from one thread.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import threading
from typing import Iterator

from tapeshift.compat._tf import tensorflow

_state = threading.local()


class _Draws:
    """The random-call counter of one forward run (or of a block, outside any run)."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def take(self) -> int:
        n = self.count
        self.count += 1
        return n


_RUN: contextvars.ContextVar["_Draws | None"] = contextvars.ContextVar(
    "tapeshift_random_draws", default=None
)


@contextlib.contextmanager
def forward_run() -> Iterator[None]:
    """Count the random draws made inside as one forward run, from 0.

    ``tapeshift.compat.vjp.trace`` enters it around every model call. A run nested in
    another has its own count; the outer run's count resumes after it.
    """
    token = _RUN.set(_Draws())
    try:
        yield
    finally:
        _RUN.reset(token)


def _next_seed(tf):
    block = getattr(_state, "current", None)
    if block is None:
        raise RuntimeError(
            "a patched TF random op was called in a thread that did not enter "
            "aligned_random; aligned_random patches the whole process, use it "
            "from one thread"
        )
    draws = _RUN.get() or block["outside"]
    return tf.constant([block["seed"], draws.take()], dtype=tf.int64)


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
    """Within the block, TF random ops in model code are stateless and seeded by ``seed``.

    The ``n``-th random call of each forward run (0-based) is seeded by
    ``[seed, n]`` on every backend; see the module docstring.
    """
    tf = tensorflow()
    if getattr(_state, "current", None) is not None:
        raise RuntimeError("aligned_random blocks do not nest")
    patches = _patches(tf)
    saved = [(mod, attr, getattr(mod, attr)) for mod, attr, _ in patches]
    _state.current = {"seed": int(seed), "outside": _Draws()}
    try:
        for mod, attr, fn in patches:
            setattr(mod, attr, fn)
        yield
    finally:
        for mod, attr, original in saved:
            setattr(mod, attr, original)
        _state.current = None
