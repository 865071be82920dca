"""Custom backward rules: the same gradient on graph, tape and tf.function, checked
against independent oracles: the legacy TF1 idiom (``@tf.RegisterGradient`` with
``gradient_override_map`` in a ``tf.Graph``, authoritative on the graph) for
gradient reversal and guided ReLU, numpy by hand for the others."""

import numpy as np
import pytest
import tensorflow as tf

from tapeshift.compat import clip_by_norm, cut, gradient
from tapeshift.compat.custom_gradients import (
    RULES,
    Rule,
    RuleError,
    clip_backward,
    custom_rule,
    gradient_reversal,
    guided_relu,
    register,
    straight_through,
)
from tapeshift.compat.testing import assert_backends_agree, assert_close, assert_split_matches_direct

pytestmark = pytest.mark.tf

rng = np.random.default_rng(3)
P = {"W": rng.normal(size=(3, 4)).astype(np.float32)}
I = {"x": rng.normal(size=(5, 3)).astype(np.float32)}
C = rng.normal(size=(5, 4)).astype(np.float32)  # mixed-sign upstream gradient


def _register(name, fn):
    try:
        tf.RegisterGradient(name)(fn)
    except KeyError:  # already registered (module imported twice)
        pass
    return name


# The legacy TF1 gradient functions, as users wrote them.
REVERSE = _register("TapeshiftTestReverseHalf", lambda op, grad: -0.5 * grad)
GUIDED = _register(
    "TapeshiftTestGuidedRelu",
    lambda op, grad: tf.where(grad > 0.0, grad * tf.cast(op.inputs[0] > 0.0, grad.dtype),
                              tf.zeros_like(grad)),
)


def legacy_graph_gradient(override, op_type, build_op):
    """d sum(C * op(x @ W)) / dW with the op's gradient overridden, in a TF1 graph."""
    g = tf.Graph()
    with g.as_default():
        W = tf.compat.v1.Variable(P["W"])
        h = tf.matmul(tf.constant(I["x"]), W)
        with g.gradient_override_map({op_type: override}):
            z = build_op(h)
        loss = tf.reduce_sum(tf.constant(C) * z)
        grad = tf.gradients(loss, W)[0]
        with tf.compat.v1.Session(graph=g) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            return sess.run(grad)


def rule_model(apply):
    def model(p, i):
        h = cut("h", tf.matmul(i["x"], p["W"]))
        return tf.reduce_sum(tf.constant(C) * apply(h))

    return model


def check_on_all_backends(apply, expected, **options):
    results = assert_backends_agree(rule_model(apply), P, I, **options)
    for backend, r in results.items():
        assert_close(r.grads["W"], expected, name=f"dloss/dW on {backend}")
    return results


@pytest.mark.parametrize("split", [False, True], ids=["direct", "split"])
def test_gradient_reversal_matches_the_legacy_override_map(split):
    legacy = legacy_graph_gradient(REVERSE, "Identity", tf.identity)
    # the legacy graph itself is an oracle only if the override acted
    assert_close(legacy, -0.5 * I["x"].T @ C, name="legacy graph vs numpy")
    check_on_all_backends(lambda h: gradient_reversal(h, scale=0.5), legacy,
                          cuts=["h"] if split else ())


def test_guided_relu_matches_the_legacy_override_map():
    legacy = legacy_graph_gradient(GUIDED, "Relu", tf.nn.relu)
    results = check_on_all_backends(guided_relu, legacy, cuts=["h"])
    h = I["x"] @ P["W"]
    expected = I["x"].T @ np.where((C > 0) & (h > 0), C, 0.0)
    assert_close(legacy, expected.astype(np.float32), name="legacy graph vs numpy")
    plain = I["x"].T @ np.where(h > 0, C, 0.0)
    assert np.abs(plain - expected).max() > 1e-2  # the data tells guided from plain relu
    stage = results["graph"].stage("h").gradient
    np.testing.assert_array_equal(stage >= 0, True)  # only positive gradients pass


@pytest.mark.parametrize("fn", [tf.sign, tf.round], ids=["sign", "round"])
def test_straight_through_is_identity_backward(fn):
    expected = I["x"].T @ C  # d/dh of sum(C * h)
    results = check_on_all_backends(straight_through(fn), expected)
    np_fn = {tf.sign: np.sign, tf.round: np.round}[fn]
    assert_close(results["tape"].target, np.sum(C * np_fn(I["x"] @ P["W"])), name="forward")
    # without the rule the gradient of sign/round is zero everywhere
    plain = gradient(rule_model(fn), P, I, backend="tape", unconnected_gradients="zero")
    assert not plain.grads["W"].any()


def test_clip_backward_clips_the_gradient_by_value():
    expected = I["x"].T @ np.clip(C, -0.5, 0.25)
    assert np.abs(np.clip(C, -0.5, 0.25) - C).max() > 0.1  # clipping acts on this data
    results = check_on_all_backends(lambda h: clip_backward(h, -0.5, 0.25), expected,
                                    cuts=["h"])
    assert_close(results["function"].target, np.sum(C * (I["x"] @ P["W"])), name="forward")
    with pytest.raises(RuleError, match="low 1.0 is above high 0.0"):
        clip_backward(tf.constant(1.0), 1.0, 0.0)


def test_custom_rule_with_two_inputs_and_as_decorator():
    @custom_rule(backward=lambda dy, a, b, y: (2.0 * dy * b, 3.0 * dy * a))
    def scaled_product(a, b):
        return a * b

    assert isinstance(scaled_product, Rule) and scaled_product.name == "scaled_product"

    def model(p, i):
        h = cut("h", tf.matmul(i["x"], p["W"]))
        return tf.reduce_sum(tf.constant(C) * scaled_product(h, tf.tanh(h)))

    h = (I["x"] @ P["W"]).astype(np.float64)
    dh = 2.0 * C * np.tanh(h) + 3.0 * C * h * (1 - np.tanh(h) ** 2)
    results = assert_backends_agree(model, P, I, cuts=["h"])
    for backend, r in results.items():
        assert_close(r.grads["W"], (I["x"].T @ dh).astype(np.float32), name=backend)

    same = custom_rule(lambda a, b: a * b, lambda dy, a, b, y: (2.0 * dy * b, 3.0 * dy * a),
                       name="scaled_product")
    r2 = gradient(lambda p, i: tf.reduce_sum(tf.constant(C) * same(tf.matmul(i["x"], p["W"]),
                  tf.tanh(tf.matmul(i["x"], p["W"])))), P, I, backend="graph")
    assert_close(r2.grads["W"], results["graph"].grads["W"], name="factory form")


def test_rule_errors_name_the_rule():
    bad_shape = custom_rule(tf.identity, lambda dy, x, y: tf.reduce_sum(dy), name="bad_shape")
    with pytest.raises(RuleError, match=r"rule 'bad_shape': the gradient for input 0 is \(\)"):
        gradient(rule_model(bad_shape), P, I, backend="tape")

    def reads_variable(p, i):
        rule = custom_rule(lambda x: tf.matmul(x, p["W"]), lambda dy, x, y: dy, name="reader")
        return tf.reduce_sum(rule(i["x"]))

    for backend in ("graph", "tape"):
        with pytest.raises(RuleError, match=r"rule 'reader': its forward reads variables"):
            gradient(reads_variable, P, I, backend=backend)
    with pytest.raises(RuleError, match="needs a backward"):
        custom_rule(tf.identity)


def test_registry():
    assert set(RULES) == {"gradient_reversal", "straight_through", "guided_relu", "clip_backward"}
    assert RULES["gradient_reversal"].legacy_ops == ("Identity",)
    assert RULES["guided_relu"].legacy_ops == ("Relu",)
    x = tf.constant([1.0, -2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = RULES["gradient_reversal"](x, scale=2.0)
    np.testing.assert_array_equal(tape.gradient(y, x), [-2.0, -2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = RULES["straight_through"](x, forward_fn=tf.sign)
    np.testing.assert_array_equal(y, [1.0, -1.0])
    np.testing.assert_array_equal(tape.gradient(y, x), [1.0, 1.0])
    mine = custom_rule(tf.identity, lambda dy, x, y: 0.0 * dy, name="tapeshift_test_block")
    try:
        assert register(mine) is mine and RULES["tapeshift_test_block"] is mine
        with pytest.raises(RuleError, match="already registered"):
            register(custom_rule(tf.identity, lambda dy, x, y: dy, name="tapeshift_test_block"))
    finally:
        RULES.pop("tapeshift_test_block", None)


# -- composability with cuts and per-cut transforms ------------------------------

P2 = {"W1": rng.normal(size=(3, 4)).astype(np.float32),
      "W2": rng.normal(size=(4, 2)).astype(np.float32)}
I2 = {"x": I["x"], "y": rng.normal(size=(5, 2)).astype(np.float32)}
CLIP = 0.1


def reversal_between_cuts(p, i):
    h1 = cut("h1", tf.tanh(tf.matmul(i["x"], p["W1"])))
    z = gradient_reversal(h1, scale=0.5)
    h2 = cut("h2", tf.matmul(z, p["W2"]))
    return tf.reduce_mean(tf.square(h2 - i["y"]))


def numpy_reversal_between_cuts(clip):
    x, W1, W2, y = (a.astype(np.float64) for a in (I2["x"], P2["W1"], P2["W2"], I2["y"]))
    h1 = np.tanh(x @ W1)
    g2 = 2.0 * (h1 @ W2 - y) / y.size
    n = np.linalg.norm(g2)
    passed = g2 * (clip / n) if clip is not None and n > clip else g2
    g1 = -0.5 * passed @ W2.T  # through h2 = z @ W2, then the reversal
    return {"h2": g2, "h1": g1, "W2": h1.T @ passed, "W1": x.T @ (g1 * (1 - h1**2))}


def test_reversal_between_cuts_with_a_clip_agrees_across_backends():
    expected = numpy_reversal_between_cuts(CLIP)
    assert np.linalg.norm(expected["h2"]) > CLIP  # the clip acts
    results = assert_backends_agree(reversal_between_cuts, P2, I2, cuts=["h1", "h2"],
                                    transforms={"h2": clip_by_norm(CLIP)})
    for backend, r in results.items():
        assert [s.name for s in r.stages] == ["h2", "h1"]
        for name in ("h2", "h1"):
            assert_close(r.stage(name).gradient, expected[name].astype(np.float32),
                         name=f"{backend} stage {name}")
        for name in ("W1", "W2"):
            assert_close(r.grads[name], expected[name].astype(np.float32),
                         name=f"{backend} d/d{name}")


def test_reversal_between_cuts_split_equals_direct(tf_backend):
    split = assert_split_matches_direct(reversal_between_cuts, P2, I2, cuts=["h1", "h2"],
                                        backend=tf_backend.name)
    expected = numpy_reversal_between_cuts(None)
    assert_close(split.grads["W1"], expected["W1"].astype(np.float32), name="d/dW1")
    assert split.bypasses == ()


# -- docs/tf1-vs-tf2.md, section 8: the hazard the rules fix ---------------------------------

X = {"x": np.array([1.0, 2.0], np.float32)}
REVERSE_FULL = _register("TapeshiftTestReverse", lambda op, grad: -grad)


def legacy_reversal_model(p, i):
    with tf.compat.v1.get_default_graph().gradient_override_map({"Identity": REVERSE_FULL}):
        y = tf.identity(i["x"])
    return tf.reduce_sum(3.0 * y)


def rule_reversal_model(p, i):
    return tf.reduce_sum(3.0 * gradient_reversal(i["x"]))


def test_override_map_is_silently_ignored_off_the_graph_but_the_rule_is_not(tf_backend):
    legacy = tf_backend.gradient(legacy_reversal_model, {}, X, wrt=["x"]).grads["x"]
    rule = tf_backend.gradient(rule_reversal_model, {}, X, wrt=["x"]).grads["x"]
    # the legacy idiom: reversed in a graph; under a tape (eager, or inside
    # tf.function) the override map is ignored, with no error or warning
    expected_legacy = [-3.0, -3.0] if tf_backend.name == "graph" else [3.0, 3.0]
    np.testing.assert_array_equal(legacy, expected_legacy)
    np.testing.assert_array_equal(rule, [-3.0, -3.0])
