"""Variables made by a helper that only returns a new one, as tutorials write them::

    def init_weights(shape):
        return tf.Variable(tf.random_normal(shape, stddev=0.01))

    W1 = init_weights([D, M])

Each call makes a variable where it is written, so ``W1`` is a variable made
once, at that line, and in TF1's default var_list in that order; the gradients
rule takes it for a variable (no ``tape.watch``). And ``tf.Variable(init,
tf.float32)``, a dtype passed where ``trainable`` goes, is a trainable variable,
as TF1 took it.
"""


import pytest

from tapeshift.migrate.engine.pipeline import migrate_source
from rule_programs import findings, migrated, src as _src  # tests/support

TIMEOUT = 300  # seconds per TensorFlow run (the machine is shared and slow)


FACTORY = _src("""
    import numpy as np
    import tensorflow as tf

    X = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]], np.float32)
    T = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]], np.float32)

    def init_weights(shape):
        \"\"\"A small variable.\"\"\"
        return tf.Variable(tf.constant(0.1, shape=shape))

    def forward(X, W1, b1, W2):
        Z = tf.nn.sigmoid(tf.matmul(X, W1) + b1)
        return tf.matmul(Z, W2)

    tfX = tf.placeholder(tf.float32, [None, 2])
    tfY = tf.placeholder(tf.float32, [None, 2])
    W1 = init_weights([2, 3])
    b1 = init_weights([3])
    W2 = init_weights([3, 2])
    logits = forward(tfX, W1, b1, W2)
    cost = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=tfY, logits=logits))
    train_op = tf.train.GradientDescentOptimizer(0.5).minimize(cost)
    predict_op = tf.argmax(logits, 1)

    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    for i in range(4):
        sess.run(train_op, feed_dict={tfX: X, tfY: T})
        print(i, sess.run(predict_op, feed_dict={tfX: X}), sess.run(W2))
""")


def test_variables_a_helper_returns_are_made_once_and_trained():
    r = migrated(FACTORY)
    assert r.mode == "tape", findings(r)
    out = r.output
    # made once, where they were, and listed in TF1's default var_list
    assert "W1 = init_weights([2, 3])\nb1 = init_weights([3])\nW2 = init_weights([3, 2])\n" in out
    assert "optimizer.apply_gradients(zip(tape.gradient(cost, [W1, b1, W2]), [W1, b1, W2]))" \
        in out
    assert "tape.watch" not in out
    assert not migrate_source(out, "f.py").changed


def test_a_helper_called_in_fed_graph_code_still_is_not_converted():
    # a new variable at each step: made in the step function it would be made again
    src = FACTORY.replace("logits = forward(tfX, W1, b1, W2)",
                          "logits = forward(tfX, W1, b1, W2) + init_weights([2])")
    r = migrated(src)
    assert r.mode == "compat"
    assert any(f.code == "TS107" and "a variable whose initial value depends on a fed or "
               "computed tensor" in f.message and f.line == 20 for f in r.findings), findings(r)


def test_a_helper_that_does_more_than_return_a_variable_is_not_a_factory():
    src = FACTORY.replace('    """A small variable."""\n', "    global made\n    made = True\n")
    assert src != FACTORY
    r = migrated(src)
    assert r.mode == "compat", r.output
    assert any(f.code == "TS108" for f in r.findings), findings(r)


DTYPE_AS_TRAINABLE = _src("""
    import tensorflow as tf
    x = tf.Variable(tf.constant([-4, 4], tf.float32), tf.float32)
    y = tf.reduce_sum(tf.square(x))
    session = tf.Session()
    session.run(tf.global_variables_initializer())
    opti = tf.train.GradientDescentOptimizer(0.25).minimize(y)
    for i in range(2):
        session.run(opti)
        print(session.run(x))
""")


def test_a_dtype_passed_as_trainable_is_a_trainable_variable():
    r = migrated(DTYPE_AS_TRAINABLE)
    assert r.mode == "tape", findings(r)
    assert "opti_optimizer.apply_gradients(zip(tape.gradient(y, [x]), [x]))" in r.output
    assert "tape.watch" not in r.output
    src = DTYPE_AS_TRAINABLE.replace("tf.float32), tf.float32)", "tf.float32), False)")
    r = migrated(src)
    assert r.mode == "compat"
    assert any("no trainable variable" in f.message for f in r.findings), findings(r)


@pytest.mark.tf
@pytest.mark.slow
@pytest.mark.parametrize("source, prints", [(FACTORY, 4), (DTYPE_AS_TRAINABLE, 2)],
                         ids=["factory", "dtype-as-trainable"])
def test_the_migrations_compute_the_legacy_numbers(tmp_path, source, prints):
    from tapeshift.migrate.legacy.verify import verify_sources

    report = verify_sources(source, migrated(source).output, tmp_path / "f.py", timeout=TIMEOUT)
    assert report.status == "ok", report.to_text()
    printed = [row for row in report.rows if row.name.startswith("stdout:") and row.compared]
    assert len(printed) == prints, report.to_text()
