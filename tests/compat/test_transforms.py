"""Per-cut transforms change the gradient passed on, identically on all backends.

Oracle: the reference model's split is W-grad = x^T @ T(dloss/dh), which numpy
computes from the stage gradient the backend reports."""

import numpy as np
import pytest
import tensorflow as tf

from tapeshift.compat import (
    clip_by_norm,
    clip_by_value,
    cut,
    gradient,
    mask,
    reference,
    scale,
    split_gradient,
)
from tapeshift.compat.testing import assert_close

pytestmark = pytest.mark.tf

P, I = reference.params(), reference.inputs()


def np_clip_by_norm(g, c):
    n = np.linalg.norm(g)
    return g * (c / n) if n > c else g


TRANSFORMS = [
    ("clip_by_norm", clip_by_norm(0.005), lambda g: np_clip_by_norm(g, 0.005)),
    ("clip_by_value", clip_by_value(-0.002, 0.002), lambda g: np.clip(g, -0.002, 0.002)),
    ("mask", mask([[1.0, 0.0], [0.0, 1.0]]), lambda g: g * np.array([[1, 0], [0, 1]])),
    ("scale", scale(-2.0), lambda g: -2.0 * g),
    ("callable", lambda g: tf.square(g) * 100.0, lambda g: np.square(g) * 100.0),
]


@pytest.mark.parametrize("name,transform,oracle", TRANSFORMS, ids=[t[0] for t in TRANSFORMS])
def test_transform_at_the_cut(tf_backend, name, transform, oracle):
    r = split_gradient(reference.model, P, I, cuts=["h"], wrt=["W"], backend=tf_backend.name,
                       transforms={"h": transform})
    stage = r.stage("h")
    expected_passed = oracle(stage.gradient.astype(np.float64))
    assert_close(stage.passed, expected_passed.astype(np.float32), name=f"{name}(dloss/dh)")
    assert_close(r.grads["W"], (I["x"].T.astype(np.float64) @ expected_passed).astype(np.float32),
                 name="dloss/dW after transform")
    assert not np.allclose(stage.passed, stage.gradient)  # the transform did act here
    assert stage.transform == getattr(transform, "name", "<lambda>")


def test_unconnected_gradients_none_or_zero(tf_backend):
    params = {**P, "unused": np.ones((3,), np.float32)}
    r = gradient(reference.model, params, I, wrt=["W", "unused"], backend=tf_backend.name)
    assert r.grads["unused"] is None and r.grads["W"] is not None
    z = gradient(reference.model, params, I, wrt=["W", "unused"], backend=tf_backend.name,
                 unconnected_gradients="zero")
    np.testing.assert_array_equal(z.grads["unused"], np.zeros(3, np.float32))
    assert_close(z.grads["W"], r.grads["W"], name="W")


def test_gradient_with_respect_to_inputs_needs_no_special_handling(tf_backend):
    r = gradient(reference.model, P, I, wrt=["x", "W"], backend=tf_backend.name)
    s = split_gradient(reference.model, P, I, cuts=["h"], wrt=["x", "W"], backend=tf_backend.name)
    p64, i64 = reference.params(np.float64), reference.inputs(np.float64)
    h = i64["x"] @ p64["W"] + p64["b"]
    dl_dh = 2.0 * (np.tanh(h) - i64["y0"]) * (1 - np.tanh(h) ** 2) / h.size
    expected = (dl_dh @ p64["W"].T).astype(np.float32)
    assert_close(r.grads["x"], expected, name="dloss/dx direct")
    assert_close(s.grads["x"], expected, name="dloss/dx split")


def test_cut_order_is_forward_order_whatever_the_request_order(tf_backend):
    def model(p, i):
        h1 = cut("h1", tf.matmul(i["x"], p["W"]))
        h2 = cut("h2", tf.tanh(h1))
        return tf.reduce_sum(h2 * h2)

    a = split_gradient(model, P, I, cuts=["h1", "h2"], backend=tf_backend.name, wrt=["W"])
    b = split_gradient(model, P, I, cuts=["h2", "h1"], backend=tf_backend.name, wrt=["W"])
    assert [s.name for s in a.stages] == [s.name for s in b.stages] == ["h2", "h1"]
    np.testing.assert_array_equal(a.grads["W"], b.grads["W"])


def test_model_code_that_assigns_to_a_parameter_updates_it_on_every_backend(tf_backend):
    def model(p, i):
        h = cut("h", tf.matmul(i["x"], p["W"]))
        with tf.control_dependencies([p["count"].assign_add(1.0)]):
            return tf.reduce_sum(tf.tanh(h))

    params = {**P, "count": np.zeros((), np.float32)}
    with tf_backend.build(model, params, wrt=["W"], cuts=["h"]) as fn:
        fn(I), fn(I)
        values = fn.variable_values(I)
    assert values["count"] == 2.0
    np.testing.assert_array_equal(values["W"], P["W"])
