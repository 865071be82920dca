"""``ema.apply(var_list)`` of a ``tf.train.ExponentialMovingAverage``: TF1 updates the
averages at each sess.run that fetches the op; eager code would update them once,
where the line runs. Not converted yet: the file keeps its compat form with TS108
(before, a file without other state changes reached tape form and ran the update
once, silently)."""

import textwrap

import pytest

from tapeshift.migrate.engine.pipeline import migrate_source

PLAIN = """
import tensorflow as tf

W1 = tf.Variable(0, dtype=tf.float32)
ema = tf.train.ExponentialMovingAverage(0.9)
ema_op = ema.apply([W1])

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(3):
        sess.run(ema_op)
        print(sess.run([W1, ema.average(W1)]))
"""

FED = """
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
"""


@pytest.mark.parametrize("source, line", [(PLAIN, 5), (FED, 8)], ids=["session", "fed"])
def test_a_moving_average_update_keeps_the_file_in_compat_mode(source, line):
    r = migrate_source(textwrap.dedent(source).lstrip("\n"), "f.py")
    assert r.mode == "compat"
    assert any(f.code == "TS108" and "ExponentialMovingAverage.apply" in f.message
               and f.line == line for f in r.findings), [(f.code, f.line) for f in r.findings]
