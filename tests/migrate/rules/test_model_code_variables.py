"""Model functions that make plain tf.Variables, called by graph code.

Public TF1 scripts often build a network in a function of the placeholder
(``y_pred = build_DQN(x)``) whose weights are ``W1 = tf.Variable(...)``. The
feeds rule runs that call at each step; the variables must be made once, where
TF1 made them: before the call, at module level, the function computing with them.
"""
from textwrap import dedent

import pytest

from tapeshift.migrate.engine.pipeline import migrate_source

DQN = dedent('''\
    import numpy as np
    import tensorflow as tf

    state_size = 4
    hidden_size = 8


    def build_net(x):
        # the network: two layers
        W1 = tf.Variable(tf.truncated_normal(shape=[state_size, hidden_size], stddev=0.5))
        b1 = tf.Variable(tf.zeros([hidden_size]), name="b1")
        h = tf.nn.relu(tf.matmul(x, W1) + b1)
        W2 = tf.Variable(tf.truncated_normal([hidden_size, 1], stddev=0.5))
        return tf.matmul(h, W2)


    x = tf.placeholder(tf.float32, [None, state_size])
    y = tf.placeholder(tf.float32, [None, 1])
    y_pred = build_net(x)
    loss = tf.reduce_mean(tf.square(y - y_pred))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

    rng = np.random.RandomState(0)
    xs = rng.randn(16, state_size).astype(np.float32)
    ys = xs.sum(axis=1, keepdims=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(50):
            _, l = sess.run([train, loss], feed_dict={x: xs, y: ys})
            if step % 10 == 0:
                print(step, l)
''')


def codes(r):
    return [(f.code, f.message) for f in r.findings if f.code not in ("TS116",)]


def test_the_variables_of_a_function_graph_code_calls_are_made_once_before_the_call():
    r = migrate_source(DQN, "dqn.py")
    assert r.mode == "tape", codes(r)
    out = r.output
    # the function computes with module names; its heading comment stays
    assert dedent('''\
        def build_net(x):
            # the network: two layers
            h = tf.nn.relu(tf.matmul(x, W1) + b1)
            return tf.matmul(h, W2)


        W1 = tf.Variable(tf.random.truncated_normal(shape=[state_size, hidden_size], stddev=0.5))
        b1 = tf.Variable(tf.zeros([hidden_size]), name="b1")
        W2 = tf.Variable(tf.random.truncated_normal([hidden_size, 1], stddev=0.5))
    ''') in out
    assert "y_pred = build_net(x)\n" in out  # (in the step function)
    assert "zip(tape.gradient(loss, [W1, b1, W2]), [W1, b1, W2])" in out
    assert not migrate_source(out, "dqn.py").changed


def test_a_local_named_like_a_module_name_gets_a_fresh_one():
    source = DQN.replace("hidden_size = 8\n", "hidden_size = 8\nW2 = None\n")
    r = migrate_source(source, "dqn.py")
    assert r.mode == "tape", codes(r)
    assert "W2_1 = tf.Variable(" in r.output and "return tf.matmul(h, W2_1)" in r.output


@pytest.mark.parametrize("change, why", [
    # a second call would make a second set: the code read once shares one
    (("y_pred = build_net(x)\n", "y_pred = build_net(x)\ny_other = build_net(x)\n"),
     "`build_net` is called again"),
    # the initial value reads a value of the call
    (("[hidden_size, 1]", "[hidden_size, x.shape[0]]"), "a value of the call"),
])
def test_what_the_codemod_cannot_make_once_keeps_compat_form(change, why):
    r = migrate_source(DQN.replace(*change), "dqn.py")
    assert r.mode == "compat"
    assert any(why in m for _, m in codes(r)), codes(r)


def test_a_variable_factory_and_a_function_called_on_values_stay_as_written():
    # `return tf.Variable(...)` makes one where each call is; a function called on
    # NumPy values runs once, eagerly, where it is called
    source = dedent('''\
        import numpy as np
        import tensorflow as tf


        def weight(shape):
            return tf.Variable(tf.ones(shape))


        def grads(value):
            w = tf.Variable(2.0)
            v = tf.constant(value)
            return tf.gradients(w * v, [w])


        x = tf.placeholder(tf.float32, [None, 2])
        w = weight([2, 1])
        y = tf.matmul(x, w)
        g = grads(np.float32(3.0))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            print(sess.run(y, feed_dict={x: np.ones((1, 2))}), sess.run(g))
    ''')
    r = migrate_source(source, "factory.py")
    assert r.mode == "tape", codes(r)
    assert "def weight(shape):\n    return tf.Variable(tf.ones(shape))\n" in r.output
    assert "    w = tf.Variable(2.0)\n" in r.output


def test_a_removed_placeholder_after_a_def_leaves_its_two_blank_lines():
    source = dedent('''\
        import numpy as np
        import tensorflow as tf


        def helper(v):
            return v * 2.0


        x = tf.placeholder(tf.float32, [None, 2])
        w = tf.Variable(tf.ones([2, 1]))
        y = helper(tf.matmul(x, w))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            print(sess.run(y, feed_dict={x: np.ones((1, 2))}))
    ''')
    r = migrate_source(source, "blank.py")
    assert r.mode == "tape", codes(r)
    assert "    return v * 2.0\n\n\nw = tf.Variable(tf.ones([2, 1]))\n" in r.output


@pytest.mark.tf
@pytest.mark.slow
def test_the_migrated_network_computes_the_legacy_numbers(tmp_path):
    from tapeshift.migrate.legacy.verify import verify_sources

    r = migrate_source(DQN, "dqn.py")
    assert r.mode == "tape", codes(r)
    report = verify_sources(DQN, r.output, tmp_path / "dqn.py", timeout=300, seed=0, align_random=True)
    assert report.status == "ok", report.to_text()
    printed = [row for row in report.rows if row.name.startswith("stdout:") and row.compared]
    assert len(printed) == 5, report.to_text()


def test_layers_called_through_an_alias_keep_compat_form():
    # the layer's variables would be missed by the collection after it (it listed none)
    source = dedent('''\
        import tensorflow as tf

        dense = tf.layers.dense


        class Policy:
            def __init__(self):
                self.state = tf.placeholder(tf.float32, [None, 4])
                self.head = dense(self.state, 2)
                variables = tf.trainable_variables()
                self.grads = tf.gradients(tf.reduce_sum(self.head), variables)
    ''')
    r = migrate_source(source, "alias.py")
    assert r.mode == "compat"
    assert any(c == "TS125" and "`dense = tf.layers.dense`: model code called through `dense`"
               in m for c, m in codes(r)), codes(r)
