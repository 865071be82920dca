"""A source that reaches the target around a cut: detected on every backend,
added by default (split == direct), refused with bypass='raise', left out with
bypass='drop' exactly as the legacy chain of tf.gradients left it out."""

import numpy as np
import pytest
import tensorflow as tf

from tapeshift.compat import CutBypassError, cut, gradient, split_gradient
from tapeshift.compat.testing import assert_close

pytestmark = pytest.mark.tf

rng = np.random.default_rng(7)
PARAMS = {
    "W1": rng.normal(size=(3, 4)).astype(np.float32),
    "W2": rng.normal(size=(4, 2)).astype(np.float32),
}
INPUTS = {"x": rng.normal(size=(5, 3)).astype(np.float32)}


def skip_model(p, i):
    """ResNet-style: `a` is computed before the cut and added after it."""
    a = tf.tanh(tf.matmul(i["x"], p["W1"]))
    h = cut("h", tf.nn.softplus(a))
    out = tf.matmul(h + a, p["W2"])
    return tf.reduce_sum(tf.square(out))


def shared_weight_model(p, i):
    """W1 is used below the cut and again above it."""
    h = cut("h", tf.tanh(tf.matmul(i["x"], p["W1"])))
    back = tf.matmul(h, tf.transpose(p["W1"]))  # (5, 3), reuses W1 above the cut
    return tf.reduce_sum(tf.square(tf.matmul(back, p["W1"]) @ p["W2"]))


def input_skip_model(p, i):
    """The input reaches the loss directly as well as through the cut."""
    h = cut("h", tf.tanh(tf.matmul(i["x"], p["W1"])))
    return tf.reduce_sum(tf.square(tf.matmul(h, p["W2"]))) + tf.reduce_sum(i["x"] ** 3)


def legacy_chain(model, wrt):
    """What legacy code computes: tf.gradients(h, wrt, grad_ys=tf.gradients(loss, h))."""
    g = tf.Graph()
    with g.as_default():
        p = {k: tf.compat.v1.Variable(v) for k, v in PARAMS.items()}
        i = {k: tf.constant(v) for k, v in INPUTS.items()}
        marked = {}

        import tapeshift.compat.cuts as cuts_mod

        class Spy(cuts_mod.Recorder):
            def mark(self, name, tensor):
                marked[name] = tensor
                return tensor

        with Spy(()).active():
            loss = model(p, i)
        h = marked["h"]
        sources = [p[n] if n in p else i[n] for n in wrt]
        grads = tf.gradients(h, sources, grad_ys=tf.gradients(loss, h)[0])
        with tf.compat.v1.Session(graph=g) as s:
            s.run(tf.compat.v1.global_variables_initializer())
            return dict(zip(wrt, s.run(grads)))


CASES = [
    (skip_model, ["W1", "W2"], ("W1",)),
    (shared_weight_model, ["W1", "W2"], ("W1",)),
    (input_skip_model, ["W1", "x"], ("x",)),
]


@pytest.mark.parametrize("model,wrt,bypassing", CASES, ids=["skip", "shared", "input-skip"])
def test_bypass_detected_and_added(tf_backend, model, wrt, bypassing):
    direct = gradient(model, PARAMS, INPUTS, wrt=wrt, backend=tf_backend.name)
    split = split_gradient(model, PARAMS, INPUTS, cuts=["h"], wrt=wrt, backend=tf_backend.name)
    assert sorted(b.source for b in split.bypasses) == sorted(bypassing)
    for b in split.bypasses:
        assert b.skips == ("h",) and b.into == "target" and b.added
        assert any("without passing through cut 'h'" in n for n in split.notes)
    for n in wrt:
        assert_close(split.grads[n], direct.grads[n], name=f"split vs direct d/d{n}")


@pytest.mark.parametrize("model,wrt,bypassing", CASES, ids=["skip", "shared", "input-skip"])
def test_bypass_raise_names_source_and_cut(tf_backend, model, wrt, bypassing):
    with pytest.raises(CutBypassError) as exc:
        split_gradient(model, PARAMS, INPUTS, cuts=["h"], wrt=wrt, backend=tf_backend.name, bypass="raise")
    assert f"{bypassing[0]!r}" in str(exc.value) and "cut 'h'" in str(exc.value)


@pytest.mark.parametrize("model,wrt,bypassing", CASES, ids=["skip", "shared", "input-skip"])
def test_bypass_drop_reproduces_the_legacy_chain(tf_backend, model, wrt, bypassing):
    dropped = split_gradient(model, PARAMS, INPUTS, cuts=["h"], wrt=wrt, backend=tf_backend.name,
                             bypass="drop")
    direct = gradient(model, PARAMS, INPUTS, wrt=wrt, backend=tf_backend.name)
    legacy = legacy_chain(model, [n for n in wrt if n in bypassing])
    for n, value in legacy.items():
        assert_close(dropped.grads[n], value, name=f"dropped d/d{n} vs legacy chain")
        # and the legacy chain really misses a term here
        assert np.max(np.abs(dropped.grads[n] - direct.grads[n])) > 1e-3
    assert all(not b.added for b in dropped.bypasses)


def test_skip_between_cuts_is_a_bypass_of_the_upper_cut(tf_backend):
    def model(p, i):
        h1 = cut("h1", tf.tanh(tf.matmul(i["x"], p["W1"])))
        h2 = cut("h2", tf.tanh(h1 * 2.0))
        return tf.reduce_sum(tf.matmul(h2 + h1, p["W2"]) ** 2)

    split = split_gradient(model, PARAMS, INPUTS, cuts=["h2", "h1"], backend=tf_backend.name)
    direct = gradient(model, PARAMS, INPUTS, backend=tf_backend.name)
    assert [(b.source, b.into, b.skips) for b in split.bypasses] == [("h1", "target", ("h2",))]
    assert [s.name for s in split.stages] == ["h2", "h1"]
    for n in PARAMS:
        assert_close(split.grads[n], direct.grads[n], name=n)


def test_layerwise_split_of_a_chain_has_no_bypass(tf_backend):
    def model(p, i):
        h1 = cut("h1", tf.tanh(tf.matmul(i["x"], p["W1"])))
        return tf.reduce_sum(tf.matmul(h1, p["W2"]) ** 2)

    split = split_gradient(model, PARAMS, INPUTS, cuts=["h1"], backend=tf_backend.name, bypass="raise")
    assert split.bypasses == ()
    direct = gradient(model, PARAMS, INPUTS, backend=tf_backend.name)
    for n in PARAMS:
        assert_close(split.grads[n], direct.grads[n], name=n)
