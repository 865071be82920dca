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

x = tf.placeholder(tf.float32, shape=[None, 4], name="x")
y = tf.placeholder(tf.float32, shape=[None, 1], name="y")

W1 = tf.Variable(rng.randn(4, 16), dtype=tf.float32)
b1 = tf.Variable(np.zeros(16), dtype=tf.float32)
W2 = tf.Variable(rng.randn(16, 1), dtype=tf.float32)
b2 = tf.Variable(np.zeros(1), dtype=tf.float32)
global_step = tf.train.get_or_create_global_step()

hidden = tf.tanh(tf.matmul(x, W1) + b1)
pred = tf.matmul(hidden, W2) + b2
loss = tf.reduce_mean(tf.square(pred - y))

learning_rate = tf.train.exponential_decay(0.1, global_step, decay_steps=4, decay_rate=0.5,
                                           staircase=True)
opt = tf.train.MomentumOptimizer(learning_rate, momentum=0.9)
grads_and_vars = opt.compute_gradients(loss)
grads = [g for g, v in grads_and_vars]
tvars = [v for g, v in grads_and_vars]
clipped_W1 = tf.clip_by_norm(grads[0], 0.5)
clipped, global_norm = tf.clip_by_global_norm([clipped_W1] + grads[1:], 1.0)
train_op = opt.apply_gradients(zip(clipped, tvars), global_step=global_step)

BATCH = 8

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(10):
        start = (step * BATCH) % len(X_data)
        x_batch = X_data[start:start + BATCH]
        y_batch = Y_data[start:start + BATCH]
        _, loss_value, norm_value = sess.run([train_op, loss, global_norm],
                                             feed_dict={x: x_batch, y: y_batch})
        print(step, loss_value, norm_value)

    final_loss = sess.run(loss, feed_dict={x: X_data, y: Y_data})
    final_step = sess.run(global_step)

print(final_loss, final_step)
