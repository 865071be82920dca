"""KindMixin: what a name holds, read from the TensorFlow call that made it."""

from textwrap import dedent

import libcst as cst
from libcst.codemod import CodemodContext

from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.engine.toolkit.kinds import KindMixin


class _Kinds(KindMixin, TapeshiftCodemod):
    def visit_Module(self, node: cst.Module) -> bool:
        self.kinds, _ = self.infer_kinds(node)
        return False


def kinds(code: str) -> dict:
    rule = _Kinds(CodemodContext())
    rule.transform_module(cst.parse_module(dedent(code)))
    return rule.kinds


def test_tensors_variables_and_lists():
    found = kinds("""
        import tensorflow as tf
        x = tf.constant(1.0)
        w = tf.Variable(2.0)
        parts = tf.split(x, 2)
        y = x * w
    """)
    assert found == {"x": "tensor", "w": "variable", "parts": "list", "y": "tensor"}


def test_optimizers_writers_and_strategies_are_no_tensors():
    # `strategy.run(...)` is not a tensor's run(): nothing to call .numpy() on
    found = kinds("""
        import tensorflow as tf
        opt = tf.train.AdamOptimizer(0.1)
        writer = tf.summary.create_file_writer("logs")
        strategy = tf.distribute.MirroredStrategy()
        context = tf.distribute.get_replica_context()
    """)
    assert set(found.values()) == {"unknown"}


def test_calls_of_a_lambda_of_a_tf_op_and_averages_are_tensors():
    found = kinds("""
        import tensorflow as tf
        x = tf.constant([1.0, 2.0])
        f = lambda a, b: tf.sin(b * tf.cos(a * x))
        g = lambda a: a + 1
        pred = f(1.0, 2.0)
        other = g(x)
        w = tf.Variable(1.0)
        ema = tf.train.ExponentialMovingAverage(0.9)
        avg = ema.average(w)
        a, b = tf.while_loop(lambda i, v: i < 3, lambda i, v: (i + 1, v * 2.0), [0, x])
    """)
    assert found["pred"] == "tensor" and found["avg"] == "tensor"
    assert found["other"] == "unknown"  # g's body is not a TensorFlow op
    assert found["a"] == found["b"] == "tensor"  # while_loop gives tensors back, eager too


def test_calls_of_a_function_returning_tensors_only_are_tensors():
    found = kinds("""
        import tensorflow as tf
        x = tf.constant([[1.0, 2.0]])
        w = tf.Variable([[1.0], [2.0]])

        def net(inputs, train=True):
            h = tf.matmul(inputs, w)
            if train:
                return h
            return tf.sigmoid(h)

        def act(inputs, activation):
            return activation(tf.matmul(inputs, w))  # what activation returns is not known

        def pick(inputs):
            for h in [inputs, inputs]:
                pass
            return h  # bound by a loop: not followed

        def gen(inputs):
            yield tf.matmul(inputs, w)

        def shadow(x):
            return x  # the parameter, not the module's tensor

        y = net(x)
        z = act(x, tf.nn.relu)
        p = pick(x)
        g = gen(x)
        s = shadow(x)
    """)
    assert found["y"] == "tensor"
    assert found["z"] == found["p"] == found["g"] == found["s"] == "unknown"


def test_ops_returning_tuples_and_slices_of_lists_are_no_tensors():
    # (.numpy() of a tuple, a TopKV2 or a list fails)
    found = kinds("""
        import tensorflow as tf
        x = tf.constant([[1.0, 2.0, 3.0]])
        mean_var = tf.nn.moments(x, axes=[0])
        best = tf.nn.top_k(x, 2)
        values, idx = tf.unique(tf.constant([1, 1, 2]))
        w = tf.Variable(1.0)
        first_two = tf.trainable_variables()[:2]
        first = tf.trainable_variables()[0]

        def stats(t):
            return tf.nn.moments(t, axes=[0])

        s = stats(x)
    """)
    assert found["mean_var"] == found["best"] == found["s"] == "unknown"
    assert found["first_two"] == "list" and found["first"] == "tensor"
