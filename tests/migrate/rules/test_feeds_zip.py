"""``feed_dict=dict(zip(KEYS, VALUES))`` -> ``run_f(*VALUES)``.

Real TF1 code often feeds a batch tuple through a list of its placeholders:
``sess.run(train, feed_dict=dict(zip(holders, batch)))``. The step function
then takes the placeholders KEYS lists as its first parameters, in that order,
and the run passes the values by position; the list itself, read nowhere else,
goes with the placeholders.
"""


import pytest

from tapeshift.migrate.engine.pipeline import migrate_source
from rule_programs import codes, migrated, src as _src  # tests/support

TIMEOUT = 300  # seconds per TensorFlow run (the machine is shared and slow)


SCRIPT = _src("""
    import numpy as np
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [None, 2])
    y = tf.placeholder(tf.float32, [None, 1])
    W = tf.Variable([[0.5], [-0.25]])
    loss = tf.reduce_mean(tf.square(tf.matmul(x, W) - y))
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    inputs = KEYS

    batches = [(np.full((4, 2), 0.5 * i, np.float32), np.ones((4, 1), np.float32))
               for i in range(3)]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for batch in batches:
            _, l = sess.run([train_op, loss], feed_dict=dict(zip(inputs, batch)))
            print(l)
        print(sess.run(loss, dict(zip([x, y], batches[0]))))
""")


def test_a_zipped_feed_passes_the_values_by_position():
    r = migrated(SCRIPT.replace("KEYS", "[x, y]"))
    assert r.mode == "tape", codes(r)
    assert codes(r) == []
    assert r.output == _src('''
        import numpy as np
        import tensorflow as tf

        W = tf.Variable([[0.5], [-0.25]])
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)

        batches = [(np.full((4, 2), 0.5 * i, np.float32), np.ones((4, 1), np.float32))
                   for i in range(3)]


        def run_train_op_loss(x, y):
            """sess.run([train_op, loss]) as a function of the fed values."""
            x = tf.convert_to_tensor(x, tf.float32)
            y = tf.convert_to_tensor(y, tf.float32)
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.matmul(x, W) - y))
            optimizer.apply_gradients(zip(tape.gradient(loss, [W]), [W]))
            return [None, loss.numpy()]


        def run_loss(x, y):
            """sess.run(loss) as a function of the fed values."""
            x = tf.convert_to_tensor(x, tf.float32)
            y = tf.convert_to_tensor(y, tf.float32)
            loss = tf.reduce_mean(tf.square(tf.matmul(x, W) - y))
            return loss.numpy()


        for batch in batches:
            _, l = run_train_op_loss(*batch)
            print(l)
        print(run_loss(*batches[0]))
    ''')
    assert not migrate_source(r.output, "f.py").changed


def test_the_parameters_follow_the_order_of_the_keys():
    # the placeholders are made x, y; the keys list them y, x
    r = migrated(SCRIPT.replace("KEYS", "[y, x]"))
    assert r.mode == "tape", codes(r)
    assert "def run_train_op_loss(y, x):" in r.output
    assert "def run_loss(y, x):" not in r.output  # that run zips [x, y]: its own order
    assert "def run_loss(x, y):" in r.output


def test_a_key_list_bound_in_the_session_block_goes_too():
    src = SCRIPT.replace("inputs = KEYS\n", "").replace(
        "    sess.run(tf.global_variables_initializer())\n",
        "    sess.run(tf.global_variables_initializer())\n    inputs = (x, y)\n")
    r = migrated(src)
    assert r.mode == "tape", codes(r)
    assert "inputs" not in r.output
    assert "_, l = run_train_op_loss(*batch)" in r.output


CLASS = _src("""
    import numpy as np
    import tensorflow as tf


    class Model:
        def __init__(self):
            self.source = tf.placeholder(tf.float32, [None, 2])
            self.target = tf.placeholder(tf.float32, [None, 1])
            self.W = tf.Variable([[0.5], [-0.25]])
            self.cost = tf.reduce_mean(tf.square(tf.matmul(self.source, self.W) - self.target))
            self.update = tf.train.GradientDescentOptimizer(0.1).minimize(self.cost)
            self.sess = tf.Session()
            self.sess.run(tf.global_variables_initializer())

        def train(self, batch):
            holder = [self.source, self.target]
            return self.sess.run([self.update, self.cost], feed_dict=dict(zip(holder, batch)))


    model = Model()
    for i in range(3):
        print(model.train((np.full((4, 2), 0.5 * i, np.float32), np.ones((4, 1), np.float32)))[1])
""")


def test_a_class_method_feeding_a_zipped_batch():
    r = migrated(CLASS)
    assert r.mode == "tape", codes(r)
    assert "    def _run_update_cost(self, source, target):" in r.output
    assert "    def train(self, batch):\n        return self._run_update_cost(*batch)\n" \
        in r.output
    assert "holder" not in r.output
    assert not migrate_source(r.output, "f.py").changed


@pytest.mark.parametrize("keys, why", [
    ("[x, W]", "not a list of this graph's placeholders"),
    ("[x, x]", "not a list of this graph's placeholders"),
    ("[x] + [y]", "not a list of this graph's placeholders"),
])
def test_keys_that_are_not_placeholders_written_out_are_not_converted(keys, why):
    r = migrated(SCRIPT.replace("KEYS", keys))
    assert r.mode == "compat"
    assert any(f.code == "TS107" and why in f.message and f.line == 16
               for f in r.findings), codes(r)


def test_a_key_list_read_elsewhere_is_not_converted():
    r = migrated(SCRIPT.replace("KEYS", "[x, y]").replace("print(l)", "print(l, len(inputs))"))
    assert r.mode == "compat"
    assert any(f.code == "TS107" for f in r.findings), codes(r)


def test_one_step_fed_in_two_orders_is_not_converted():
    src = SCRIPT.replace("KEYS", "[x, y]").replace(
        "print(sess.run(loss, dict(zip([x, y], batches[0]))))",
        "print(sess.run([train_op, loss], dict(zip([y, x], batches[0][::-1]))))")
    r = migrated(src)
    assert r.mode == "compat"
    assert any(f.code == "TS107" and "two orders" in f.message for f in r.findings), codes(r)


def test_a_defaulted_placeholder_before_a_required_one_is_not_converted():
    src = SCRIPT.replace("KEYS", "[x, y]").replace(
        "y = tf.placeholder(tf.float32, [None, 1])",
        "y = tf.placeholder(tf.float32, [None, 1])\nscale = tf.placeholder_with_default(1.0, [])"
    ).replace("tf.matmul(x, W) - y", "scale * tf.matmul(x, W) - y").replace(
        "dict(zip(inputs, batch))", "dict(zip([scale, x, y], (2.0, *batch)))")
    r = migrated(src)
    assert r.mode == "compat"
    assert any(f.code == "TS107" and "a default before one without" in f.message
               for f in r.findings), codes(r)


@pytest.mark.tf
@pytest.mark.slow
@pytest.mark.parametrize("which", ["script", "class"])
def test_zipped_feeds_compute_the_legacy_numbers(which, tmp_path):
    from tapeshift.migrate.legacy.verify import verify_sources

    source = SCRIPT.replace("KEYS", "[y, x]").replace(
        "zip(inputs, batch)", "zip(inputs, batch[::-1])") if which == "script" else CLASS
    r = migrated(source)
    assert r.mode == "tape", codes(r)
    report = verify_sources(source, r.output, tmp_path / "f.py", timeout=TIMEOUT)
    assert report.status == "ok", report.to_text()
    printed = [row for row in report.rows if row.name.startswith("stdout:") and row.compared]
    assert len(printed) >= 3, report.to_text()  # each training step's loss
