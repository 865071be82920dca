"""Linear regression trained by mini-batch gradient descent, TF2 form.

The TF2 counterpart of ``linear_regression_tf1.py``, in the shape the codemod
produces for fed graphs and train ops (docs/tf1-vs-tf2.md, section 1): the variables are
created once; each distinct set of fetches run by ``sess.run`` is a function of
the fed values that recomputes the slice of the graph those fetches need, and
the train op's update runs only where it was fetched. Compare the two with:

    tapeshift verify examples/linear_regression_tf1.py examples/linear_regression_tf2.py
"""
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(0)
X_data = rng.uniform(-1.0, 1.0, size=(64, 3)).astype(np.float32)
true_W = np.array([[2.0], [-3.0], [0.5]], dtype=np.float32)
Y_data = (X_data @ true_W + 0.7 + 0.1 * rng.randn(64, 1)).astype(np.float32)

W = tf.Variable(0.1 * rng.randn(3, 1), dtype=tf.float32)
b = tf.Variable(np.zeros(1), dtype=tf.float32)

opt = tf.compat.v1.train.GradientDescentOptimizer(learning_rate=0.1)

BATCH = 16


def run_train_op_loss(x, y, l2=None):
    x = tf.convert_to_tensor(x, tf.float32)
    y = tf.convert_to_tensor(y, tf.float32)
    if l2 is None:
        l2 = 0.0
    l2 = tf.convert_to_tensor(l2, tf.float32)
    with tf.GradientTape() as tape:
        pred = tf.matmul(x, W) + b
        loss = tf.reduce_mean(tf.square(pred - y)) + l2 * tf.reduce_sum(tf.square(W))
    train_op = opt.apply_gradients(zip(tape.gradient(loss, [W, b]), [W, b]))
    return [None, loss.numpy()]


def run_loss(x, y, l2=None):
    x = tf.convert_to_tensor(x, tf.float32)
    y = tf.convert_to_tensor(y, tf.float32)
    if l2 is None:
        l2 = 0.0
    l2 = tf.convert_to_tensor(l2, tf.float32)
    pred = tf.matmul(x, W) + b
    loss = tf.reduce_mean(tf.square(pred - y)) + l2 * tf.reduce_sum(tf.square(W))
    return loss.numpy()


for step in range(20):
    start = (step * BATCH) % len(X_data)
    x_batch = X_data[start:start + BATCH]
    y_batch = Y_data[start:start + BATCH]
    if step < 10:
        _, loss_value = run_train_op_loss(x=x_batch, y=y_batch, l2=0.05)
    else:
        _, loss_value = run_train_op_loss(x=x_batch, y=y_batch)
    print(step, loss_value)

final_loss = run_loss(x=X_data, y=Y_data)
final_W, final_b = [W.numpy(), b.numpy()]

print(final_loss)
print(final_W)
print(final_b)
