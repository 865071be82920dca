"""A compute / clip / apply training step with a decaying learning rate, TF2 form.

The TF2 counterpart of ``clip_train_tf1.py``, in the shape the codemod produces
for fed graphs and train ops: ``opt.compute_gradients(loss)`` becomes a tape's
gradients zipped with every trainable variable of the file, in creation order;
the ``tf.compat.v1`` optimizer and learning-rate schedule stay at module level
(eagerly, ``exponential_decay`` returns a callable that reads ``global_step``
each time the optimizer applies). Compare the two with:

    tapeshift verify examples/clip_train_tf1.py examples/clip_train_tf2.py
"""
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(3)
X_data = rng.randn(32, 4).astype(np.float32)
Y_data = np.sin(X_data @ rng.randn(4, 1)).astype(np.float32)

W1 = tf.Variable(rng.randn(4, 16), dtype=tf.float32)
b1 = tf.Variable(np.zeros(16), dtype=tf.float32)
W2 = tf.Variable(rng.randn(16, 1), dtype=tf.float32)
b2 = tf.Variable(np.zeros(1), dtype=tf.float32)
global_step = tf.compat.v1.train.get_or_create_global_step()

learning_rate = tf.compat.v1.train.exponential_decay(0.1, global_step, decay_steps=4, decay_rate=0.5,
                                                     staircase=True)
opt = tf.compat.v1.train.MomentumOptimizer(learning_rate, momentum=0.9)

BATCH = 8


def run_train_op_loss_global_norm(x, y):
    x = tf.convert_to_tensor(x, tf.float32)
    y = tf.convert_to_tensor(y, tf.float32)
    with tf.GradientTape() as tape:
        hidden = tf.tanh(tf.matmul(x, W1) + b1)
        pred = tf.matmul(hidden, W2) + b2
        loss = tf.reduce_mean(tf.square(pred - y))
    grads_and_vars = list(zip(tape.gradient(loss, [W1, b1, W2, b2]), [W1, b1, W2, b2]))
    grads = [g for g, v in grads_and_vars]
    tvars = [v for g, v in grads_and_vars]
    clipped_W1 = tf.clip_by_norm(grads[0], 0.5)
    clipped, global_norm = tf.clip_by_global_norm([clipped_W1] + grads[1:], 1.0)
    train_op = opt.apply_gradients(zip(clipped, tvars), global_step=global_step)
    return [None, loss.numpy(), global_norm.numpy()]


def run_loss(x, y):
    x = tf.convert_to_tensor(x, tf.float32)
    y = tf.convert_to_tensor(y, tf.float32)
    hidden = tf.tanh(tf.matmul(x, W1) + b1)
    pred = tf.matmul(hidden, W2) + b2
    loss = tf.reduce_mean(tf.square(pred - y))
    return loss.numpy()


for step in range(10):
    start = (step * BATCH) % len(X_data)
    x_batch = X_data[start:start + BATCH]
    y_batch = Y_data[start:start + BATCH]
    _, loss_value, norm_value = run_train_op_loss_global_norm(x=x_batch, y=y_batch)
    print(step, loss_value, norm_value)

final_loss = run_loss(x=X_data, y=Y_data)
final_step = global_step.numpy()

print(final_loss, final_step)
