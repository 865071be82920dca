"""Generated MLPs (depth, widths, activations, seeds, float32/float64): split at
every layer equals the direct gradient on each backend, the backends agree, and
in float64 all of them agree with central finite differences of a numpy forward
pass (an oracle that shares no code with TensorFlow)."""

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

from tapeshift.compat import BACKENDS, cut
from tapeshift.compat.testing import (
    FINITE_DIFFERENCE_TOLERANCE,
    assert_backends_agree,
    assert_close,
    assert_matches_finite_differences,
    assert_split_matches_direct,
    finite_difference,
)

pytestmark = pytest.mark.tf

ACTIVATIONS = {
    "tanh": (tf.tanh, np.tanh),
    "sigmoid": (tf.sigmoid, lambda z: 1.0 / (1.0 + np.exp(-z))),
    "softplus": (tf.nn.softplus, lambda z: np.log1p(np.exp(z))),
    "sin": (tf.sin, np.sin),
}


@st.composite
def mlps(draw):
    depth = draw(st.integers(1, 4))
    widths = draw(st.lists(st.integers(1, 5), min_size=depth + 1, max_size=depth + 1))
    acts = draw(st.lists(st.sampled_from(sorted(ACTIVATIONS)), min_size=depth, max_size=depth))
    seed = draw(st.integers(0, 2**16))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    batch = draw(st.integers(1, 4))
    rng = np.random.default_rng(seed)
    params = {}
    for l in range(depth):
        params[f"W{l}"] = (rng.normal(size=(widths[l], widths[l + 1])) / np.sqrt(widths[l])).astype(dtype)
        params[f"b{l}"] = rng.normal(size=(widths[l + 1],)).astype(dtype) * 0.1
    inputs = {"x": rng.normal(size=(batch, widths[0])).astype(dtype)}
    return depth, acts, params, inputs


def make_model(depth, acts):
    def model(p, i):
        h = i["x"]
        for l in range(depth):
            h = cut(f"h{l}", ACTIVATIONS[acts[l]][0](tf.matmul(h, p[f"W{l}"]) + p[f"b{l}"]))
        return tf.reduce_mean(tf.square(h - 0.5))

    def numpy_loss(v):
        h = v["x"]
        for l in range(depth):
            h = ACTIVATIONS[acts[l]][1](h @ v[f"W{l}"] + v[f"b{l}"])
        return np.mean(np.square(h - 0.5))

    return model, numpy_loss


@pytest.mark.slow
@settings(max_examples=12, deadline=None)
@given(mlps())
def test_split_at_every_layer_equals_direct_on_all_backends(case):
    depth, acts, params, inputs = case
    model, numpy_loss = make_model(depth, acts)
    cuts = [f"h{l}" for l in range(depth)]
    for backend in BACKENDS:
        split = assert_split_matches_direct(model, params, inputs, cuts=cuts, backend=backend,
                                            bypass="raise")
        assert [s.name for s in split.stages] == cuts[::-1]
    results = assert_backends_agree(model, params, inputs, cuts=cuts)
    if params["W0"].dtype == np.float64:
        rtol, atol = FINITE_DIFFERENCE_TOLERANCE
        values = {**params, **inputs}
        for n in params:
            fd = finite_difference(numpy_loss, values, n)
            assert_close(results["tape"].grads[n], fd, name=f"tape vs numpy finite differences d/d{n}",
                         rtol=rtol, atol=atol)


def test_finite_difference_helper_on_the_model_itself(tf_backend):
    model, _ = make_model(2, ["tanh", "sin"])
    rng = np.random.default_rng(3)
    params = {"W0": rng.normal(size=(3, 2)), "b0": rng.normal(size=2),
              "W1": rng.normal(size=(2, 2)), "b1": rng.normal(size=2)}
    assert_matches_finite_differences(model, params, {"x": rng.normal(size=(4, 3))},
                                      backend=tf_backend.name)
