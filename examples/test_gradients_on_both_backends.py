"""A user's dual-backend regression test: runs on graph, tape and function.

    pytest examples/test_gradients_on_both_backends.py
"""
import numpy as np
import tensorflow as tf

from tapeshift.compat import cut
from tapeshift.compat.testing import assert_close

params = {"W": np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)}
inputs = {"x": np.array([[0.1, 0.2], [0.3, 0.4]], np.float32)}


def model(p, i):
    h = cut("h", tf.matmul(i["x"], p["W"]))
    return tf.reduce_sum(tf.tanh(h))


def test_split_equals_direct(tf_backend):
    direct = tf_backend.gradient(model, params, inputs)
    split = tf_backend.split_gradient(model, params, inputs, cuts=["h"])
    assert_close(split.grads["W"], direct.grads["W"], name="dloss/dW")
