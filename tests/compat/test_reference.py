"""The reference computation on every backend, against two independent oracles:
the legacy TF1 graph itself (tf.gradients in a compat.v1 graph) and numpy."""

import numpy as np
import pytest
import tensorflow as tf

from tapeshift.compat import gradient, reference, split_gradient
from tapeshift.compat.testing import assert_close

pytestmark = pytest.mark.tf


def legacy_tf1_numbers():
    """What the legacy script computes, built with tf.gradients in a TF1 graph."""
    p, i = reference.params(), reference.inputs()
    g = tf.Graph()
    with g.as_default():
        W = tf.compat.v1.Variable(p["W"])
        b = tf.compat.v1.Variable(p["b"])
        x, y0 = tf.constant(i["x"]), tf.constant(i["y0"])
        h = tf.matmul(x, W) + b
        loss = tf.reduce_mean(tf.square(tf.tanh(h) - y0))
        direct = tf.gradients(loss, W)[0]
        dl_dh = tf.gradients(loss, h)[0]
        vjp = tf.gradients(h, W, grad_ys=dl_dh)[0]
        elementwise = dl_dh * tf.gradients(h, W)[0]
        with tf.compat.v1.Session(graph=g) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            return sess.run({"direct": direct, "split": vjp, "legacy": elementwise})


def numpy_numbers():
    p = reference.params(np.float64)
    i = reference.inputs(np.float64)
    h = i["x"] @ p["W"] + p["b"]
    y = np.tanh(h)
    dl_dh = 2.0 * (y - i["y0"]) * (1 - y**2) / y.size
    return {"direct": i["x"].T @ dl_dh, "legacy": dl_dh * (i["x"].T @ np.ones_like(h))}


@pytest.fixture(scope="module")
def legacy():
    return legacy_tf1_numbers()


def run_all(backend):
    p, i = reference.params(), reference.inputs()
    kw = dict(wrt=["W"], backend=backend)
    return (
        gradient(reference.model, p, i, **kw),
        split_gradient(reference.model, p, i, cuts=["h"], **kw),
        split_gradient(reference.model, p, i, cuts=["h"], mode="legacy_elementwise", **kw),
    )


def test_reference_matches_legacy_graph_and_numpy(tf_backend, legacy):
    direct, split, elementwise = run_all(tf_backend.name)
    assert (direct.mode, split.mode, elementwise.mode) == ("direct", "split", "legacy_elementwise")
    assert elementwise.legacy and not split.legacy
    assert "not the chain rule" in elementwise.notes[0]
    # float32 tolerance: graph and eager reorder reductions differently (tapeshift.compat.testing)
    assert_close(direct.grads["W"], legacy["direct"], name="direct dloss/dW")
    assert_close(split.grads["W"], legacy["split"], name="split dloss/dW")
    assert_close(elementwise.grads["W"], legacy["legacy"], name="legacy elementwise")
    ref = numpy_numbers()
    assert_close(split.grads["W"], ref["direct"].astype(np.float32), name="split vs numpy")
    assert_close(elementwise.grads["W"], ref["legacy"].astype(np.float32), name="legacy vs numpy")
    # the elementwise product is not the chain rule: it is far from the direct gradient
    assert np.max(np.abs(elementwise.grads["W"] - direct.grads["W"])) > 1e-4


def test_graph_backend_reproduces_legacy_bit_for_bit(legacy):
    direct, split, elementwise = run_all("graph")
    np.testing.assert_array_equal(direct.grads["W"], legacy["direct"])
    np.testing.assert_array_equal(split.grads["W"], legacy["split"])
    np.testing.assert_array_equal(elementwise.grads["W"], legacy["legacy"])


def test_stage_records_the_cut_gradient_and_its_norm(tf_backend):
    p, i = reference.params(), reference.inputs()
    r = split_gradient(reference.model, p, i, cuts=["h"], wrt=["W", "b"], backend=tf_backend.name)
    stage = r.stage("h")
    ref64 = {k: v.astype(np.float64) for k, v in i.items()}
    h = ref64["x"] @ p["W"].astype(np.float64) + p["b"]
    dl_dh = 2.0 * (np.tanh(h) - ref64["y0"]) * (1 - np.tanh(h) ** 2) / h.size
    assert_close(stage.gradient, dl_dh.astype(np.float32), name="dloss/dh")
    assert stage.transform is None
    np.testing.assert_array_equal(stage.passed, stage.gradient)
    assert stage.norm == pytest.approx(np.linalg.norm(dl_dh), rel=1e-5)
    assert r.norms()["stage:h"] == stage.norm
    assert_close(r.grads["b"], dl_dh.sum(axis=0).astype(np.float32), name="dloss/db")
    assert r.bypasses == () and r.nonfinite == ()
