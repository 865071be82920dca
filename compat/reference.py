"""The reference computation of ``examples/reference_tf1.py``, written as a compat model.

``h = x @ W + b`` is the cut; the loss is the mean squared error of ``tanh(h)``.

Also the multi-stage example (``multistage_*``): a 3-layer network cut at every
layer, used by ``examples/multistage.py`` and ``tapeshift demo --plot``.
"""

from __future__ import annotations

import numpy as np

from tapeshift.compat._tf import tensorflow
from tapeshift.compat.cuts import cut


def params(dtype=np.float32) -> dict[str, np.ndarray]:
    return {
        "W": np.array([[1.0, 2.0], [3.0, 4.0]], dtype=dtype),
        "b": np.array([0.5, 0.5], dtype=dtype),
    }


def inputs(dtype=np.float32) -> dict[str, np.ndarray]:
    return {
        "x": np.array([[0.1, 0.2], [0.3, 0.4]], dtype=dtype),
        "y0": np.array([[0.8, 0.9], [0.7, 0.6]], dtype=dtype),
    }


def model(p, i):
    tf = tensorflow()
    h = cut("h", tf.matmul(i["x"], p["W"]) + p["b"])
    y = tf.tanh(h)
    return tf.reduce_mean(tf.square(y - i["y0"]))


# -- the multi-stage example (examples/multistage.py, tapeshift demo --plot) ----

MULTISTAGE_CUTS = ("out", "h2", "h1")
MULTISTAGE_CLIP_NORM = 0.05  # the example clips the gradient at h2 to this norm


def _multistage_arrays():
    # one generator, drawn in this order, so the numbers never change
    rng = np.random.default_rng(0)
    params = {
        "W1": (rng.normal(size=(8, 16)) / np.sqrt(8)).astype(np.float32),
        "W2": (rng.normal(size=(16, 16)) / 4.0).astype(np.float32),
        "W3": (rng.normal(size=(16, 1)) / 4.0).astype(np.float32),
    }
    inputs = {
        "x": rng.normal(size=(32, 8)).astype(np.float32),
        "y": rng.normal(size=(32, 1)).astype(np.float32),
    }
    return params, inputs


def multistage_params() -> dict[str, np.ndarray]:
    """W1 (8, 16), W2 (16, 16), W3 (16, 1), float32, from ``default_rng(0)``."""
    return _multistage_arrays()[0]


def multistage_inputs() -> dict[str, np.ndarray]:
    """x (32, 8) and y (32, 1), float32, drawn after the parameters."""
    return _multistage_arrays()[1]


def multistage_model(p, i):
    """A 3-layer network with a cut at every layer: h1, h2 (tanh) and out (linear)."""
    tf = tensorflow()
    h1 = cut("h1", tf.tanh(tf.matmul(i["x"], p["W1"])))
    h2 = cut("h2", tf.tanh(tf.matmul(h1, p["W2"])))
    out = cut("out", tf.matmul(h2, p["W3"]))
    return tf.reduce_mean(tf.square(out - i["y"]))
