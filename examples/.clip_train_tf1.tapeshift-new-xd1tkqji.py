"""A compute / clip / apply training step with a decaying learning rate, TF1 style.

A one-hidden-layer regression net is trained with momentum. Each step takes
``opt.compute_gradients(loss)`` (all trainable variables), clips the first
layer's gradient by its norm and then all of them by their global norm, and
applies them with ``global_step``, which drives an exponentially decaying
learning rate. The loss and the global norm are fetched in the same
``sess.run`` as the train op. Run it on TF2, and compare it with its
hand-written TF2 form, with:

    tapeshift run-legacy examples/clip_train_tf1.py
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
opt = tf.keras.optimizers.SGD(learning_rate, momentum=0.9)

BATCH = 8


def run_train_op_loss_global_norm(x, y):
    """sess.run([train_op, loss, global_norm]) as a function of the fed values."""
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
    opt.apply_gradients(zip(clipped, tvars))
    global_step.assign_add(1)
    return [None, loss.numpy(), tf.nest.map_structure(lambda t: t.numpy(), global_norm)]


def run_loss(x, y):
    """sess.run(loss) as a function of the fed values."""
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
final_step = tf.nest.map_structure(lambda t: t.numpy(), global_step)

print(final_loss, final_step)
