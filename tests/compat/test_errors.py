"""Bad input gets an error that names the tensor, on every backend."""

import numpy as np
import pytest
import tensorflow as tf

from tapeshift.compat import (
    CompatError,
    CutError,
    LegacyShapeError,
    NonFiniteGradientError,
    TransformError,
    UpstreamGradientError,
    build,
    cut,
    gradient,
    reference,
    split_gradient,
)

pytestmark = pytest.mark.tf

P, I = reference.params(), reference.inputs()


def test_unknown_cut_lists_the_marked_ones(tf_backend):
    with pytest.raises(CutError, match=r"unknown cut 'hh': the model marked 'h'"):
        split_gradient(reference.model, P, I, cuts=["hh"], backend=tf_backend.name)


def test_cut_the_target_does_not_depend_on(tf_backend):
    def model(p, i):
        cut("side", tf.reduce_sum(p["W"]) * 2.0)
        return reference.model(p, i)

    with pytest.raises(CutError, match=r"cut 'side' is not between .* does not depend on it"):
        split_gradient(model, P, I, cuts=["side"], backend=tf_backend.name)


def test_cut_that_depends_on_no_source(tf_backend):
    def model(p, i):
        y0 = cut("target_values", i["y0"] * 1.0)
        h = tf.matmul(i["x"], p["W"]) + p["b"]
        return tf.reduce_mean(tf.square(tf.tanh(h) - y0))

    with pytest.raises(CutError, match=r"cut 'target_values' .* does not depend on any of \['W'\]"):
        split_gradient(model, P, I, cuts=["target_values"], wrt=["W"], backend=tf_backend.name)


def test_cut_marked_twice(tf_backend):
    def model(p, i):
        h = cut("h", tf.matmul(i["x"], p["W"]))
        h = cut("h", h + 1.0)
        return tf.reduce_sum(h)

    with pytest.raises(CutError, match="cut 'h' was marked twice"):
        split_gradient(model, P, I, cuts=["h"], backend=tf_backend.name)


def test_non_scalar_target_needs_upstream(tf_backend):
    def model(p, i):
        return tf.matmul(i["x"], p["W"])

    with pytest.raises(UpstreamGradientError, match=r"target 'target' has shape \(2, 2\), not a scalar"):
        gradient(model, P, I, backend=tf_backend.name)
    # with an upstream gradient it is a vector-Jacobian product: x^T @ u
    u = np.array([[1.0, -1.0], [0.5, 2.0]], np.float32)
    r = gradient(model, P, I, wrt=["W"], upstream=u, backend=tf_backend.name)
    np.testing.assert_allclose(r.grads["W"], I["x"].T @ u, rtol=1e-6)


def test_upstream_of_wrong_shape_or_dtype(tf_backend):
    def model(p, i):
        return tf.matmul(i["x"], p["W"])

    with pytest.raises(UpstreamGradientError, match=r"has shape \(3,\), but the target has shape \(2, 2\)"):
        gradient(model, P, I, upstream=np.ones(3, np.float32), backend=tf_backend.name)
    with pytest.raises(UpstreamGradientError, match="dtype float64, but the target has dtype float32"):
        gradient(model, P, I, upstream=np.ones((2, 2)), backend=tf_backend.name)


def test_nonfinite_stage_is_reported_by_name_or_raised(tf_backend):
    def model(p, i):
        h = cut("h", tf.matmul(i["x"], p["W"]))
        return tf.reduce_sum(tf.sqrt(h - 1.0))  # sqrt of negatives: NaN below

    r = split_gradient(model, P, I, cuts=["h"], wrt=["W"], backend=tf_backend.name)
    assert "stage 'h'" in r.nonfinite and "gradient for 'W'" in r.nonfinite
    assert r.stage("h").nonfinite > 0
    with pytest.raises(NonFiniteGradientError, match="NaN or Inf in .*stage 'h'"):
        split_gradient(model, P, I, cuts=["h"], wrt=["W"], backend=tf_backend.name, check_numerics="raise")


def test_transform_must_keep_shape(tf_backend):
    with pytest.raises(TransformError, match=r"at cut 'h' returned \(2,\) float32; .* shape \(2, 2\)"):
        split_gradient(reference.model, P, I, cuts=["h"], backend=tf_backend.name,
                       transforms={"h": lambda g: tf.reduce_sum(g, axis=0)})


def test_transform_for_a_name_that_is_not_a_cut():
    with pytest.raises(TransformError, match="transform given for 'y', which is not one of the cuts"):
        build(reference.model, P, cuts=["h"], transforms={"y": lambda g: g})


def test_legacy_elementwise_with_shapes_that_do_not_broadcast(tf_backend):
    def model(p, i):
        h = cut("h", tf.matmul(i["x3"], p["V"]))  # (2, 4) = (2, 3) @ (3, 4)
        return tf.reduce_sum(tf.tanh(h))

    params = {"V": np.ones((3, 4), np.float32)}
    with pytest.raises(LegacyShapeError, match=r"shape \(2, 4\) .* shape \(3, 4\); they cannot be multiplied"):
        split_gradient(model, params, {"x3": np.ones((2, 3), np.float32)}, cuts=["h"],
                       mode="legacy_elementwise", backend=tf_backend.name)


def test_bad_options_name_the_option_and_the_choices():
    with pytest.raises(ValueError, match="unknown backend 'eager'; choose one of graph, tape, function"):
        build(reference.model, P, backend="eager")
    with pytest.raises(ValueError, match="bypass='ignore'; choose one of 'add', 'raise', 'drop'"):
        build(reference.model, P, bypass="ignore")
    with pytest.raises(CompatError, match="wrt names 'Q', which is neither a parameter"):
        gradient(reference.model, P, I, wrt=["Q"])
    with pytest.raises(CompatError, match="both a parameter and an input: \\['W'\\]"):
        gradient(reference.model, P, {**I, "W": P["W"]})


def test_model_returning_a_tuple(tf_backend):
    with pytest.raises(TypeError, match="the model must return one tensor"):
        gradient(lambda p, i: (tf.reduce_sum(p["W"]), 1.0), P, I, backend=tf_backend.name)
