"""Variables held in a dict literal, as many public TF1 examples keep their weights::

    weights = {'h1': tf.Variable(...), 'out': tf.Variable(...)}

TF1's default var_list is every trainable variable in creation order, which for
a dict literal is the order of its entries: the feeds rule lists them as
``*weights.values()``, and the gradients rule takes ``*weights.values()`` as
variables (recorded by the tape without ``watch``) when the dict holds only
variables. ``var_list=weights.values()`` is kept as that list. A model function
that takes its dict as a default argument (``def D(x, w=d_weights)``, as GAN
scripts share weights) computes with it at each call that leaves it out: the
tape records those calls.
"""


import pytest

from tapeshift.migrate.engine.pipeline import migrate_source
from rule_programs import findings, migrated, src as _src  # tests/support

TIMEOUT = 300  # seconds per TensorFlow run (the machine is shared and slow)


WEIGHT_DICTS = _src("""
    import numpy as np
    import tensorflow as tf

    X = tf.placeholder(tf.float32, [None, 2])
    Y = tf.placeholder(tf.float32, [None, 1])
    weights = {
        'h1': tf.Variable(tf.constant([[0.1, 0.2, 0.3], [0.3, -0.2, 0.1]])),
        'out': tf.Variable(tf.constant([[0.5], [-0.4], [0.2]])),
    }
    biases = {
        'b1': tf.Variable(tf.zeros([3])),
        'out': tf.Variable(tf.zeros([1])),
    }
    layer_1 = tf.nn.relu(tf.add(tf.matmul(X, weights['h1']), biases['b1']))
    pred = tf.matmul(layer_1, weights['out']) + biases['out']
    loss_op = tf.reduce_mean(tf.square(pred - Y))
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss_op)
    bias_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss_op, var_list=biases.values())

    init = tf.global_variables_initializer()
    with tf.Session() as sess:
        sess.run(init)
        x = np.array([[0., 1.], [1., 0.], [1., 1.]], np.float32)
        y = np.array([[1.], [1.], [0.]], np.float32)
        for step in range(5):
            _, l = sess.run([train_op, loss_op], feed_dict={X: x, Y: y})
            sess.run(bias_op, feed_dict={X: x, Y: y})
            print(step, l)
""")


def test_the_default_var_list_lists_each_dict_s_values_in_creation_order():
    r = migrated(WEIGHT_DICTS)
    assert r.mode == "tape", findings(r)
    out = r.output
    assert ("optimizer.apply_gradients(zip(tape.gradient(loss_op, [*weights.values(), "
            "*biases.values()]), [*weights.values(), *biases.values()]))") in out
    assert ("bias_optimizer.apply_gradients(zip(tape.gradient(loss_op, [*biases.values()]), "
            "[*biases.values()]))") in out
    assert "tape.watch" not in out  # variables: the tape records them by itself
    # the dicts stay where they were, made once
    assert out.count("weights = {") == 1 and out.index("weights = {") < out.index("def run_")
    assert not migrate_source(out, "f.py").changed


def test_a_dict_with_a_variable_that_is_not_trained_still_needs_var_list():
    src = WEIGHT_DICTS.replace("'out': tf.Variable(tf.zeros([1])),",
                               "'out': tf.Variable(tf.zeros([1]), trainable=False),")
    r = migrated(src)
    assert r.mode == "compat"
    assert any(f.code == "TS108" and "bound to no name" in f.message for f in r.findings), findings(r)


def test_values_of_a_dict_of_tensors_are_not_taken_for_variables():
    # tf.gradients(y, [*d.values()]) of tensors: the tape would have to watch them
    r = migrated(_src("""
        import tensorflow as tf

        a = tf.constant(1.0)
        d = {'a': a * 2.0, 'b': a * 3.0}
        y = d['a'] * d['b']
        g = tf.gradients(y, [*d.values()])
        print(g)
    """))
    assert r.mode == "compat"
    assert any(f.code == "TS104" for f in r.findings), findings(r)


DEFAULT_WEIGHTS = _src("""
    import numpy as np
    import tensorflow as tf

    g_weights = {'w': tf.Variable(tf.constant([[0.5, -0.3], [0.2, 0.4]]))}
    d_weights = {'w': tf.Variable(tf.constant([[0.3], [-0.6]])), 'b': tf.Variable(tf.zeros([1]))}

    def G(z, w=g_weights):
        return tf.tanh(tf.matmul(z, w['w']))

    def D(x, w=d_weights):
        return tf.matmul(x, w['w']) + w['b']

    z = tf.placeholder(tf.float32, [None, 2])
    X = tf.placeholder(tf.float32, [None, 2])
    d_fake = D(G(z))
    G_obj = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
        logits=d_fake, labels=tf.ones_like(d_fake)))
    D_obj = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
        logits=D(X), labels=tf.ones_like(d_fake))) + tf.reduce_mean(
        tf.nn.sigmoid_cross_entropy_with_logits(logits=d_fake, labels=tf.zeros_like(d_fake)))
    G_opt = tf.train.AdamOptimizer(0.01).minimize(G_obj, var_list=g_weights.values())
    D_opt = tf.train.AdamOptimizer(0.01).minimize(D_obj, var_list=d_weights.values())

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(5):
            zs = np.random.normal(size=(4, 2))
            xs = np.random.normal(1.0, 0.5, size=(4, 2))
            sess.run(D_opt, feed_dict={X: xs, z: zs})
            sess.run(G_opt, feed_dict={z: zs})
            print(i, sess.run(G_obj, feed_dict={z: zs}))
""")


def test_a_dict_read_through_a_default_argument_is_recorded_by_the_tape():
    r = migrated(DEFAULT_WEIGHTS)
    assert r.mode == "tape", findings(r)
    out = r.output
    step = out.split("def run_D_opt(", 1)[1].split("\n\n\n", 1)[0]
    assert "    with tf.GradientTape() as tape:\n        d_fake = D(G(z))\n" in step
    assert "tape.gradient(D_obj, [*d_weights.values()])" in step
    assert "def D(x, w=d_weights):" in out and "tape.watch" not in out
    assert not migrate_source(out, "f.py").changed


@pytest.mark.tf
@pytest.mark.slow
@pytest.mark.parametrize("source, prints", [(WEIGHT_DICTS, 5), (DEFAULT_WEIGHTS, 5)],
                         ids=["weight-dicts", "default-weights"])
def test_weight_dicts_compute_the_legacy_numbers(tmp_path, source, prints):
    from tapeshift.migrate.legacy.verify import verify_sources

    report = verify_sources(source, migrated(source).output, tmp_path / "f.py",
                            timeout=TIMEOUT, seed=0)
    assert report.status == "ok", report.to_text()
    printed = [row for row in report.rows if row.name.startswith("stdout:") and row.compared]
    assert len(printed) == prints, report.to_text()
