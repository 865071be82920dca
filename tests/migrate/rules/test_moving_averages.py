"""``averages_op = ema.apply(var_list)`` of a ``tf.train.ExponentialMovingAverage``.

TF1 updates the averages at each sess.run that fetches the op; eager code would
update them once, where the line runs. The feeds rule runs the op in the step
functions of the sess.run calls that fetch it, after the other updates, and keeps
the statement where it was: its first eager call makes the averages (each equal
to its variable, as TF1's initializer makes them). ``with
tf.control_dependencies([...]): train_op = tf.no_op()`` and ``tf.group(...)`` only
run what they depend on. Two updates TF1 ran at the same time are reported
(TS132): the step runs them in the order they are written.
"""


import pytest

from tapeshift.migrate.engine.pipeline import migrate_source
from rule_programs import codes, migrated, src as _src  # tests/support

TIMEOUT = 300  # seconds per TensorFlow run (the machine is shared and slow)


PLAIN = _src("""
    import tensorflow as tf

    W1 = tf.Variable(0, dtype=tf.float32)
    ema = tf.train.ExponentialMovingAverage(0.9)
    ema_op = ema.apply([W1])
    bump = W1.assign_add(1.0)

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(3):
            sess.run(bump)
            sess.run(ema_op)
            print(sess.run([W1, ema.average(W1)]))
""")

# the well-ordered TF1 form: the averages read the weights after the step
ORDERED = _src("""
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [2])
    W1 = tf.Variable([0.5, 1.0])
    loss = tf.reduce_sum(W1 * x)
    train_step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    ema = tf.train.ExponentialMovingAverage(0.99)
    with tf.control_dependencies([train_step]):
        averages_op = ema.apply(tf.trainable_variables())
    train_op = tf.group(train_step, averages_op)

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        print(sess.run(ema.average(W1)))
        for i in range(3):
            sess.run(train_op, feed_dict={x: [1.0, 2.0 + i]})
            print(sess.run([W1, ema.average(W1)]))
""")

# the book example's form: tf.trainable_variables() of layers, the program in main()
LAYERS = _src("""
    import numpy as np
    import tensorflow as tf


    def main():
        x = tf.placeholder(tf.float32, [None, 3])
        y = tf.placeholder(tf.float32, [None, 1])
        h = tf.layers.dense(x, 4, tf.nn.relu)
        pred = tf.layers.dense(h, 1)
        loss = tf.reduce_mean(tf.square(pred - y))
        ema = tf.train.ExponentialMovingAverage(0.9)
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        with tf.control_dependencies([train]):
            averages_op = ema.apply(tf.trainable_variables())
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for i in range(3):
                print(sess.run([averages_op, loss], {x: np.ones((2, 3)), y: np.ones((2, 1))})[1])
            print(sess.run(ema.average(tf.trainable_variables()[0])))


    if __name__ == "__main__":
        main()
""")

# the common TF1 form: the step and the averages start together
RACING = _src("""
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [2])
    W1 = tf.Variable([0.5, 1.0])
    loss = tf.reduce_sum(W1 * x)
    train_step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    ema = tf.train.ExponentialMovingAverage(0.99)
    averages_op = ema.apply(tf.trainable_variables())
    with tf.control_dependencies([train_step, averages_op]):
        train_op = tf.no_op(name="train")

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(3):
            sess.run(train_op, feed_dict={x: [1.0, 2.0]})
        print(sess.run(ema.average(W1)))
""")

# the book example's other form: the graph in a function that main() calls,
# run by tf.app.run(); tf.trainable_variables() is read where the function runs
IN_A_FUNCTION = "import tensorflow as tf\n\n\ndef train():\n" + "".join(
    f"    {line}\n" if line else "\n" for line in RACING.split("\n", 2)[2].rstrip().split("\n")) + \
    '\n\ndef main(argv=None):\n    train()\n\n\nif __name__ == "__main__":\n    tf.app.run()\n'

STEP = '''
    def run_train_op(x):
        """sess.run(train_op) as a function of the fed values."""
        x = tf.convert_to_tensor(x, tf.float32)
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(W1 * x)
        optimizer.apply_gradients(zip(tape.gradient(loss, [W1]), [W1]))
        ema.apply([W1])
        return None
'''


def test_the_update_of_the_averages_runs_when_fetched():
    r = migrated(PLAIN)
    assert r.mode == "tape", codes(r)
    assert codes(r) == []
    out = r.output
    # made where it was written (its first call makes the averages), run again when fetched
    assert "ema = tf.train.ExponentialMovingAverage(0.9)\nema_op = ema.apply([W1])\n" in out
    assert _src('''
        def run_ema_op():
            """sess.run(ema_op) as a function of the fed values."""
            ema.apply([W1])
            return None
    ''') in out
    assert "    run_bump()\n    run_ema_op()\n" in out
    assert "print([W1.numpy(), ema.average(W1).numpy()])" in out  # the average is a variable
    assert not migrate_source(out, "f.py").changed


def test_averages_ordered_after_the_step_run_after_it():
    r = migrated(ORDERED)
    assert r.mode == "tape", codes(r)
    assert codes(r) == []  # ordered in TF1 too: nothing to report
    out = r.output
    # the statement leaves its control_dependencies block (the step function runs in order)
    assert "ema = tf.train.ExponentialMovingAverage(0.99)\naverages_op = ema.apply([W1])\n" in out
    assert _src(STEP) in out  # tf.group only runs what it groups: not written
    assert "control_dependencies" not in out and "tf.group" not in out
    assert not migrate_source(out, "f.py").changed


def test_updates_tf1_ran_together_are_reported():
    r = migrated(RACING)
    assert r.mode == "tape", codes(r)
    assert [(f.code, f.line) for f in r.findings] == [("TS132", 9)]
    assert "`averages_op` and `train_step` at the same time" in r.findings[0].message
    assert _src(STEP) in r.output
    assert "tf.no_op" not in r.output


def test_the_averages_of_layers_build_them_where_they_are_made():
    r = migrated(LAYERS)
    assert r.mode == "tape", codes(r)
    out = r.output
    # the statement's first eager call makes the averages: the layers exist by then
    assert "    dense(tf_keras.Input([3]))  # built now: its variables are read before its " \
        "first call\n    dense_1(tf_keras.Input([4]))\n" in out
    assert "averages_op = ema.apply([*dense.trainable_variables, " \
        "*dense_1.trainable_variables])\n" in out
    assert not migrate_source(out, "f.py").changed


def test_the_trainable_variables_averaged_in_a_function_are_written_out():
    r = migrated(IN_A_FUNCTION)
    assert r.mode == "tape", codes(r)
    assert [f.code for f in r.findings] == ["TS132"]
    out = r.output
    assert "    ema = tf.train.ExponentialMovingAverage(0.99)\n    averages_op = ema.apply([W1])\n" in out
    assert "        optimizer.apply_gradients(zip(tape.gradient(loss, [W1]), [W1]))\n" \
        "        ema.apply([W1])\n        return None\n" in out
    assert any("var_list: the trainable variables created before this line, [W1]" in c.description
               for c in r.changes)
    assert "    tf.compat.v1.app.run()\n" in out  # absl's command line, as in TF1
    assert not migrate_source(out, "f.py").changed


def test_trainable_variables_it_cannot_write_out_keep_compat_mode():
    # a variable bound to no name is in TF1's list, and no name can say it
    r = migrated(IN_A_FUNCTION.replace("    ema = tf.train", "    tf.Variable(2.0)\n    ema = tf.train"))
    assert r.mode == "compat"
    assert any(f.code == "TS108" and "a variable bound to no name (line 9)" in f.message
               for f in r.findings), codes(r)


@pytest.mark.parametrize("apply, why", [
    # the variables averaged are not a list the file writes out
    ("averages_op = ema.apply(get_vars())",
     "for a list of this file's variables and layers' variables written out"),
    # the op inside an expression
    ("averages_op = [ema.apply([W1])][0]", "as the whole right-hand side"),
])
def test_what_the_rule_cannot_follow_keeps_compat_mode(apply, why):
    r = migrated(RACING.replace("averages_op = ema.apply(tf.trainable_variables())", apply))
    assert r.mode == "compat"
    assert any(f.code == "TS108" and why in f.message for f in r.findings), codes(r)


def test_a_moving_average_in_a_class_keeps_compat_mode():
    src = _src("""
        import tensorflow as tf


        class Agent:
            def __init__(self):
                self.w = tf.Variable(1.0)
                self.ema = tf.train.ExponentialMovingAverage(0.9)
                self.ema_op = self.ema.apply([self.w])
                self.sess = tf.Session()
                self.sess.run(tf.global_variables_initializer())

            def average(self):
                self.sess.run(self.ema_op)
                return self.sess.run(self.ema.average(self.w))
    """)
    r = migrated(src)
    assert r.mode == "compat"


@pytest.mark.tf
@pytest.mark.slow
@pytest.mark.parametrize("name", ["PLAIN", "ORDERED", "LAYERS", "IN_A_FUNCTION"])
def test_moving_averages_compute_the_legacy_numbers(name, tmp_path):
    from tapeshift.migrate.legacy.verify import verify_sources

    source = globals()[name]
    r = migrated(source)
    assert r.mode == "tape", codes(r)
    # (the layers' initial values are random: drawn from one stream in both runs)
    report = verify_sources(source, r.output, tmp_path / "f.py", timeout=TIMEOUT,
                            seed=0, align_random=True)
    assert report.status == "ok", report.to_text()
    printed = [row for row in report.rows if row.name.startswith("stdout:") and row.compared]
    assert len(printed) == {"PLAIN": 3, "ORDERED": 4, "LAYERS": 4, "IN_A_FUNCTION": 1}[name], report.to_text()
