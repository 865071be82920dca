"""The reference computation of ``../shared/reference``, written as a compat model.

``h = x @ W + b`` is the cut; the loss is the mean squared error of ``tanh(h)``.
"""

from __future__ import annotations

import numpy as np

from compat._tf import tensorflow
from compat.cuts import cut


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
