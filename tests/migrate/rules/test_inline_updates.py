"""``sess.run(tf.assign(v, x))``: an update made and run at that line.

TF1 adds the op to the graph where the line runs and runs it there, each time the
line runs; eager ``v.assign(x)`` does exactly that. (A named update op fetched
later is another matter: the feeds rule runs it when fetched.) Only for a
variable the file makes, with the value as the only other argument; the value
of the run, when used, is the variable's new value.
"""


import pytest

from tapeshift.migrate.engine.pipeline import migrate_source
from rule_programs import codes, migrated, src as _src  # tests/support

TIMEOUT = 300  # seconds per TensorFlow run (the machine is shared and slow)


PLAIN = _src("""
    import tensorflow as tf

    W = tf.Variable(0.0)
    lr = tf.Variable(0.1, trainable=False)

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for epoch in range(3):
            sess.run(tf.assign(lr, 0.1 * 0.5 ** epoch))
            sess.run(W.assign_add(lr))
            new = sess.run(tf.assign_sub(W, 0.01))
            print(epoch, sess.run(lr), new)
""")

# a learning rate decayed by assigning a variable, in a fed training loop
FED = _src("""
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [2])
    W = tf.Variable([0.5, 1.0])
    lr = tf.Variable(0.1, trainable=False)
    loss = tf.reduce_sum(tf.square(W * x - 1.0))
    train_op = tf.train.GradientDescentOptimizer(lr).minimize(loss)

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for epoch in range(3):
            sess.run(tf.assign(lr, 0.1 * 0.9 ** epoch))
            print(sess.run([train_op, loss], feed_dict={x: [1.0, 2.0]})[1])
""")


def test_an_update_made_in_sess_run_runs_where_the_line_runs():
    r = migrated(PLAIN)
    assert r.mode == "tape", codes(r)
    assert codes(r) == []
    assert _src("""
        for epoch in range(3):
            lr.assign(0.1 * 0.5 ** epoch)
            W.assign_add(lr)
            new = W.assign_sub(0.01).numpy()
            print(epoch, lr.numpy(), new)
    """) in r.output
    assert not migrate_source(r.output, "f.py").changed


def test_an_update_in_a_fed_training_loop():
    r = migrated(FED)
    assert r.mode == "tape", codes(r)
    assert "\n    lr.assign(0.1 * 0.9 ** epoch)\n" in r.output
    assert "print(run_train_op_loss(x=[1.0, 2.0])[1])" in r.output


@pytest.mark.parametrize("update", [
    "sess.run(tf.assign(get_var(), 1.0))",  # not a variable of this file
    "sess.run(tf.assign(W, 1.0, validate_shape=False))",  # an argument eager assign lacks
])
def test_what_is_not_a_plain_update_of_a_variable_keeps_compat_mode(update):
    r = migrated(PLAIN.replace("sess.run(tf.assign(lr, 0.1 * 0.5 ** epoch))", update))
    assert r.mode == "compat"
    assert any(f.code in ("TS108", "TS109") for f in r.findings), codes(r)


@pytest.mark.tf
@pytest.mark.slow
@pytest.mark.parametrize("name", ["PLAIN", "FED"])
def test_updates_compute_the_legacy_numbers(name, tmp_path):
    from tapeshift.migrate.legacy.verify import verify_sources

    source = globals()[name]
    r = migrated(source)
    assert r.mode == "tape", codes(r)
    report = verify_sources(source, r.output, tmp_path / "f.py", timeout=TIMEOUT)
    assert report.status == "ok", report.to_text()
    printed = [row for row in report.rows if row.name.startswith("stdout:") and row.compared]
    assert len(printed) == 3, report.to_text()
