"""The pytest plugin, exercised the way users meet it: a fresh directory, a small
test file, pytest run in a subprocess with the installed plugin (pytest11)."""

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tapeshift.compat import cut
from tapeshift.compat.testing import aligned_random, assert_backends_agree

pytestmark = pytest.mark.tf

pytest_plugins = ["pytester"]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "test_gradients_on_both_backends.py"


@pytest.mark.slow
def test_user_test_file_collects_as_three_tests_and_passes(pytester):
    pytester.makepyfile(test_user=EXAMPLE.read_text())
    result = pytester.runpytest_subprocess("-v", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines([
        "*test_split_equals_direct?graph? PASSED*",
        "*test_split_equals_direct?tape? PASSED*",
        "*test_split_equals_direct?function? PASSED*",
    ])
    result.assert_outcomes(passed=3)


@pytest.mark.slow
def test_marker_restricts_backends_and_rejects_unknown_names(pytester):
    pytester.makepyfile(test_two="""
        import pytest

        @pytest.mark.tf_backends("graph", "tape")
        def test_two(tf_backend):
            assert tf_backend.name in ("graph", "tape")
    """)
    result = pytester.runpytest_subprocess("-v", "-p", "no:cacheprovider", "test_two.py")
    result.stdout.fnmatch_lines(["*test_two?graph? PASSED*", "*test_two?tape? PASSED*"])
    result.assert_outcomes(passed=2)
    pytester.makepyfile(test_bad="""
        import pytest

        @pytest.mark.tf_backends("eager")
        def test_bad(tf_backend):
            pass
    """)
    bad = pytester.runpytest_subprocess("-p", "no:cacheprovider", "test_bad.py")
    assert bad.ret != 0
    bad.stdout.fnmatch_lines(["*tf_backends('eager'): choose among graph, tape, function*"])


@pytest.mark.slow
def test_user_test_of_an_unmodified_tf1_model_function_passes_on_each_backend(pytester):
    pytester.makepyfile(test_tf1="""
        import numpy as np
        import tensorflow.compat.v1 as tf

        from tapeshift.compat import gradient
        from tapeshift.compat.testing import assert_results_agree
        from tapeshift.compat.tf1_model import TF1Model

        rng = np.random.default_rng(0)
        INPUTS = {"x": rng.normal(size=(6, 4)).astype(np.float32),
                  "y": rng.normal(size=(6, 1)).astype(np.float32)}

        def tower(x):
            with tf.variable_scope("tower", reuse=tf.AUTO_REUSE):
                return tf.layers.dense(x, 3, activation=tf.tanh, name="fc")

        def net(inputs, is_training):  # TF1 code, as it was
            h = tower(inputs["x"]) + tower(2.0 * inputs["x"])
            h = tf.layers.batch_normalization(h, training=is_training)
            return tf.reduce_mean(tf.square(tf.layers.dense(h, 1) - inputs["y"]))

        MODEL = TF1Model(net, INPUTS)
        GRAPH = gradient(MODEL.model, MODEL.params, INPUTS, wrt=MODEL.trainable, backend="graph")

        def test_gradients_agree_with_the_graph(tf_backend):
            r = tf_backend.gradient(MODEL, inputs=INPUTS)
            assert sorted(r.grads) == ["batch_normalization/beta", "batch_normalization/gamma",
                                       "dense/bias", "dense/kernel", "tower/fc/bias",
                                       "tower/fc/kernel"]
            assert np.abs(r.grads["tower/fc/kernel"]).max() > 1e-3
            assert_results_agree(r, GRAPH, what=f"{tf_backend.name} vs graph")
    """)
    result = pytester.runpytest_subprocess("-v", "-p", "no:cacheprovider", "test_tf1.py")
    result.stdout.fnmatch_lines([
        "*test_gradients_agree_with_the_graph?graph? PASSED*",
        "*test_gradients_agree_with_the_graph?tape? PASSED*",
        "*test_gradients_agree_with_the_graph?function? PASSED*",
    ])
    result.assert_outcomes(passed=3)


P = {"W": np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)}
I = {"x": np.array([[0.1, 0.2], [0.3, 0.4]], np.float32)}


def test_a_model_changed_on_one_backend_fails_naming_tensor_and_worst_index():
    def model(p, i):
        h = cut("h", tf.matmul(i["x"], p["W"]))
        if tf.executing_eagerly():  # only the tape backend takes this branch:
            # same value, but the gradient through h[1, 1] is scaled by 1.25
            delta = h * tf.constant([[0.0, 0.0], [0.0, 0.25]])
            h = h + delta - tf.stop_gradient(delta)
        return tf.reduce_sum(tf.tanh(h))

    with pytest.raises(AssertionError) as exc:
        assert_backends_agree(model, P, I, cuts=["h"])
    msg = str(exc.value)
    # the target agrees; dW differs by x^T @ E with E nonzero at (1, 1) only,
    # so column 1 differs, most at row 1 (x[1, 1] = 0.4 > x[1, 0] = 0.3)
    assert msg.startswith("tape vs graph: gradient 'W': shape (2, 2), dtype float32, max abs diff")
    assert "worst at (1, 1)" in msg and "max rel diff" in msg


def noisy_model(p, i):
    noise = tf.random.normal([2, 2], seed=1)
    h = cut("h", tf.nn.dropout(tf.matmul(i["x"] + noise, p["W"]), rate=0.5, seed=2))
    return tf.reduce_sum(tf.square(h))


def test_random_model_agrees_with_alignment_and_not_without():
    tf.random.set_seed(0)
    with pytest.raises(AssertionError, match="function vs graph|tape vs graph"):
        assert_backends_agree(noisy_model, P, I, cuts=["h"])
    with aligned_random(seed=5):
        results = assert_backends_agree(noisy_model, P, I, cuts=["h"])
    # and the numbers really are random draws: another seed gives other numbers
    with aligned_random(seed=6):
        other = assert_backends_agree(noisy_model, P, I, cuts=["h"], backends=["tape"])
    assert not np.allclose(other["tape"].target, results["tape"].target)
