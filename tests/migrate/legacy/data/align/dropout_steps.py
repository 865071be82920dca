"""A TF1 regression net with per-step dropout (tf.layers.dropout on a training placeholder).

Trained for 6 steps with dropout on, then evaluated with it off. Used by
tests/migrate/legacy/test_align_layer_draws.py: its migration must verify equal
with ``--align-random`` (draws in a layer's call keyed by layer and execution).
"""
import numpy as np
import tensorflow as tf

X = np.linspace(-1.0, 1.0, 16, dtype=np.float32)[:, None]
Y = np.sin(3.0 * X)

x = tf.placeholder(tf.float32, [None, 1])
y = tf.placeholder(tf.float32, [None, 1])
is_training = tf.placeholder(tf.bool, None)

with tf.variable_scope("net"):
    h1 = tf.layers.dense(x, 12, tf.nn.relu, name="l1")
    d1 = tf.layers.dropout(h1, rate=0.5, training=is_training, name="drop")   # net/drop
h2 = tf.layers.dense(d1, 12, tf.nn.relu, name="l2")
d2 = tf.layers.dropout(h2, rate=0.3, training=is_training)                     # dropout
h3 = tf.layers.dense(d2, 12, tf.nn.relu, name="l3")
d3 = tf.layers.dropout(h3, rate=0.2, training=is_training)                     # dropout_1
out = tf.layers.dense(d3, 1, name="out")
loss = tf.losses.mean_squared_error(y, out)
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

sess = tf.Session()
sess.run(tf.global_variables_initializer())
train_losses, kept = [], []
for step in range(6):
    _, loss_, d1_ = sess.run([train, loss, d1], {x: X, y: Y, is_training: True})
    train_losses.append(loss_)
    kept.append(d1_ != 0)
train_losses = np.array(train_losses)
kept = np.array(kept)
eval_loss, eval_out = sess.run([loss, out], {x: X, y: Y, is_training: False})
print("eval loss %.6f" % eval_loss)
