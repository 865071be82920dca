"""A placeholder learning rate (a fed setting of an optimizer made once) -> a variable.

``lr = tf.placeholder(tf.float32, shape=[])`` read by ``tf.train.AdamOptimizer(lr)``
and fed at each training run becomes ``lr = tf.Variable(0.0, trainable=False)``;
the optimizer reads it, and each step function that trains takes the fed value as
``lr_value`` and assigns it first. Tests: the exact output (module and class), the
named feed dicts that feed it (one binding per run, read in its block), what stays
in compat form and why, and the legacy numbers with a learning rate that changes
at every step.
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
    # the learning rate, halved at each step
    lr = tf.placeholder(tf.float32, shape=[])
    W = tf.Variable([[0.5], [-0.25]])
    loss = tf.reduce_mean(tf.square(tf.matmul(x, W) - y))
    train_op = tf.train.MomentumOptimizer(lr, 0.9).minimize(loss)

    X = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)
    Y = np.array([[1.0], [2.0]], np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        rate = 0.1
        for step in range(4):
            _, l = sess.run([train_op, loss], feed_dict={x: X, y: Y, lr: rate})
            rate /= 2
            print(step, l)
        print(sess.run(loss, feed_dict={x: X, y: Y}))
        final_W = sess.run(W)
""")


def test_a_fed_learning_rate_becomes_a_variable_the_step_assigns():
    r = migrated(SCRIPT)
    assert r.mode == "tape", codes(r)
    assert codes(r) == []
    assert r.output == _src('''
        import numpy as np
        import tensorflow as tf

        # the learning rate, halved at each step
        lr = tf.Variable(0.0, trainable=False)
        W = tf.Variable([[0.5], [-0.25]])
        optimizer = tf.compat.v1.train.MomentumOptimizer(lr, 0.9)

        X = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)
        Y = np.array([[1.0], [2.0]], np.float32)


        def run_train_op_loss(x, y, lr_value):
            """sess.run([train_op, loss]) as a function of the fed values."""
            x = tf.convert_to_tensor(x, tf.float32)
            y = tf.convert_to_tensor(y, tf.float32)
            lr.assign(lr_value)
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


        rate = 0.1
        for step in range(4):
            _, l = run_train_op_loss(x=X, y=Y, lr_value=rate)
            rate /= 2
            print(step, l)
        print(run_loss(x=X, y=Y))
        final_W = W.numpy()
    ''')
    assert not migrate_source(r.output, "f.py").changed
    changes = [c.description for c in r.changes if "non-trainable" in c.description]
    assert changes == ["placeholder `lr` read by an optimizer -> a non-trainable tf.Variable, "
                       "assigned the fed value by each step function that needs it (as "
                       "`lr_value`)"], changes


def test_an_inline_optimizer_and_a_dtype_and_name_kept():
    src = SCRIPT.replace("lr = tf.placeholder(tf.float32, shape=[])",
                         "lr = tf.placeholder(tf.float64, name='learning_rate')")
    r = migrated(src)
    assert r.mode == "tape", codes(r)
    assert "lr = tf.Variable(0.0, trainable=False, dtype=tf.float64, name='learning_rate')" \
        in r.output
    assert "optimizer = tf.compat.v1.train.MomentumOptimizer(lr, 0.9)" in r.output


NAMED = _src("""
    import numpy as np
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [None, 2])
    y = tf.placeholder(tf.float32, [None, 1])
    lr = tf.placeholder(tf.float32, shape=[])
    W = tf.Variable([[0.5], [-0.25]])
    loss = tf.reduce_mean(tf.square(tf.matmul(x, W) - y))
    optimizer = tf.train.AdamOptimizer(lr)
    train_op = optimizer.minimize(loss)

    X = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)
    Y = np.array([[1.0], [2.0]], np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(3):
            feed = {x: X * step, y: Y, lr: 0.1 / (step + 1)}
            _, l = sess.run([train_op, loss], feed_dict=feed)
            print(l)
        feed = {x: X, y: Y}
        print(sess.run(loss, feed_dict=feed))
""")


def test_each_run_of_a_named_feed_dict_reads_the_binding_before_it_in_its_block():
    # the second binding feeds no learning rate: the training run sees the first only
    r = migrated(NAMED)
    assert r.mode == "tape", codes(r)
    assert "def run_train_op_loss(x, y, lr_value):" in r.output
    assert '    feed = {"x": X * step, "y": Y, "lr_value": 0.1 / (step + 1)}\n' \
        '    _, l = run_train_op_loss(**feed)\n' in r.output
    assert '\nfeed = {"x": X, "y": Y}\nprint(run_loss(**feed))\n' in r.output


def test_a_named_feed_dict_bound_after_its_run_in_a_loop_is_not_read_as_one_binding():
    # in the loop the run may see the binding of the previous turn, or the first one
    before = (
        "    for step in range(3):\n"
        "        feed = {x: X * step, y: Y, lr: 0.1 / (step + 1)}\n"
        "        _, l = sess.run([train_op, loss], feed_dict=feed)\n")
    assert before in NAMED
    r = migrated(NAMED.replace(before, (
        "    feed = {x: X, y: Y}\n"
        "    for step in range(3):\n"
        "        _, l = sess.run([train_op, loss], feed_dict=feed)\n"
        "        feed = {x: X * step, y: Y, lr: 0.1 / (step + 1)}\n")))
    assert r.mode == "compat"
    assert any(f.code == "TS107" and "placeholder `lr` is needed by these fetches but not "
               "every value of `feed` feeds it" in f.message for f in r.findings), codes(r)


CLASS = _src("""
    import numpy as np
    import tensorflow as tf


    class Model:
        def __init__(self):
            self.x = tf.placeholder(tf.float32, [None, 2])
            self.y = tf.placeholder(tf.float32, [None, 1])
            self.learning_rate = tf.placeholder(tf.float32, name="lr")
            self.W = tf.Variable([[0.5], [-0.25]])
            self.cost = tf.reduce_mean(tf.square(tf.matmul(self.x, self.W) - self.y))
            self.update = tf.train.MomentumOptimizer(self.learning_rate, 0.9).minimize(self.cost)
            self.sess = tf.Session()
            self.sess.run(tf.global_variables_initializer())

        def train(self, x, y, lr):
            return self.sess.run([self.update, self.cost],
                                 feed_dict={self.x: x, self.y: y, self.learning_rate: lr})


    model = Model()
    rate = 0.1
    for i in range(4):
        print(model.train(np.full((4, 2), 0.5 * i, np.float32), np.ones((4, 1), np.float32), rate)[1])
        rate /= 2
""")


def test_a_class_keeps_its_learning_rate_as_an_attribute_variable():
    r = migrated(CLASS)
    assert r.mode == "tape", codes(r)
    assert '        self.learning_rate = tf.Variable(0.0, trainable=False, name="lr")\n' in r.output
    assert "    def _run_update_cost(self, x, y, learning_rate_value):\n" in r.output
    assert "        self.learning_rate.assign(learning_rate_value)\n" in r.output
    assert "return self._run_update_cost(x=x, y=y, learning_rate_value=lr)" in r.output
    assert not migrate_source(r.output, "f.py").changed


def test_an_objects_session_read_outside_its_class_is_not_converted():
    r = migrated(CLASS + "print(model.sess.run(model.W))\n")
    assert r.mode == "compat"
    assert any(f.code == "TS106" and "`model.sess`: the session of an object of `Model` used "
               "outside the class" in f.message for f in r.findings), codes(r)


@pytest.mark.parametrize("before, after, code, why", [
    # a default: the runs that do not feed it would read the default, a variable keeps the last
    ("lr = tf.placeholder(tf.float32, shape=[])",
     "lr = tf.placeholder_with_default(0.1, shape=[])", "TS108",
     "an optimizer built from a fed or computed tensor (`lr`, not a scalar tf.placeholder"),
    ("lr = tf.placeholder(tf.float32, shape=[])", "lr = tf.placeholder(tf.float32, shape=[1])",
     "TS108", "(`lr`, not a scalar tf.placeholder of a statement of its own)"),
    # a computed learning rate
    ("tf.train.MomentumOptimizer(lr, 0.9)", "tf.train.MomentumOptimizer(lr * 2.0, 0.9)",
     "TS108", "an optimizer built from an expression of the fed `lr` (computed once in eager "
     "code): pass the placeholder itself"),
    # a training run that does not feed it: TF1 raises
    ("feed_dict={x: X, y: Y, lr: rate}", "feed_dict={x: X, y: Y}", "TS107",
     "placeholder `lr` is not fed, and the statements computing these fetches read it"),
])
def test_what_is_not_a_fed_setting_stays_in_compat_form(before, after, code, why):
    assert before in SCRIPT
    r = migrated(SCRIPT.replace(before, after))
    assert r.mode == "compat"
    assert any(f.code == code and why in f.message for f in r.findings), codes(r)


@pytest.mark.tf
@pytest.mark.slow
@pytest.mark.parametrize("which", ["script", "named", "class"])
def test_a_fed_learning_rate_computes_the_legacy_numbers(which, tmp_path):
    from tapeshift.migrate.legacy.verify import verify_sources

    source = {"script": SCRIPT, "named": NAMED, "class": CLASS}[which]
    r = migrated(source)
    assert r.mode == "tape", codes(r)
    report = verify_sources(source, r.output, tmp_path / "f.py", timeout=TIMEOUT)
    assert report.status == "ok", report.to_text()
    printed = [row for row in report.rows if row.name.startswith("stdout:") and row.compared]
    assert len(printed) >= 3, report.to_text()  # each training step's loss
