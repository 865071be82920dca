"""Linear regression trained by mini-batch gradient descent, TF1 style.

Placeholders ``x`` and ``y`` are fed one mini-batch at a time through
``feed_dict``; ``train_op = opt.minimize(loss)`` is run together with the loss
for 20 steps, and the fitted ``W`` and ``b`` and the loss on all the data are
read at the end. An L2 penalty weight is a ``tf.placeholder_with_default``: fed
during the first ten steps, left at its default (no penalty) afterwards and for
the final evaluation. Run it on TF2, and compare it with its hand-written TF2
form, with:

    tapeshift run-legacy examples/linear_regression_tf1.py
    tapeshift verify examples/linear_regression_tf1.py examples/linear_regression_tf2.py
"""
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(0)
X_data = rng.uniform(-1.0, 1.0, size=(64, 3)).astype(np.float32)
true_W = np.array([[2.0], [-3.0], [0.5]], dtype=np.float32)
Y_data = (X_data @ true_W + 0.7 + 0.1 * rng.randn(64, 1)).astype(np.float32)

x = tf.placeholder(tf.float32, shape=[None, 3], name="x")
y = tf.placeholder(tf.float32, shape=[None, 1], name="y")
l2 = tf.placeholder_with_default(0.0, shape=[], name="l2")

W = tf.Variable(0.1 * rng.randn(3, 1), dtype=tf.float32)
b = tf.Variable(np.zeros(1), dtype=tf.float32)

pred = tf.matmul(x, W) + b
loss = tf.reduce_mean(tf.square(pred - y)) + l2 * tf.reduce_sum(tf.square(W))

opt = tf.train.GradientDescentOptimizer(learning_rate=0.1)
train_op = opt.minimize(loss)

BATCH = 16

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(20):
        start = (step * BATCH) % len(X_data)
        x_batch = X_data[start:start + BATCH]
        y_batch = Y_data[start:start + BATCH]
        if step < 10:
            _, loss_value = sess.run([train_op, loss],
                                     feed_dict={x: x_batch, y: y_batch, l2: 0.05})
        else:
            _, loss_value = sess.run([train_op, loss], feed_dict={x: x_batch, y: y_batch})
        print(step, loss_value)

    final_loss = sess.run(loss, feed_dict={x: X_data, y: Y_data})
    final_W, final_b = sess.run([W, b])

print(final_loss)
print(final_W)
print(final_b)
