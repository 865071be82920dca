"""The reference computation written by hand for TF2 with ``tf.GradientTape``.

The TF2 counterpart of ``reference_tf1.py``: same values, same (mistaken)
elementwise product, so ``tapeshift verify`` can prove the two agree.
"""
import numpy as np
import tensorflow as tf

W = tf.Variable(np.array([[1.0, 2.0], [3.0, 4.0]]), dtype=tf.float32)
b = tf.Variable(np.array([0.5, 0.5]), dtype=tf.float32)
x = tf.constant(np.array([[0.1, 0.2], [0.3, 0.4]]), dtype=tf.float32)
y0 = tf.constant(np.array([[0.8, 0.9], [0.7, 0.6]]), dtype=tf.float32)

with tf.GradientTape(persistent=True) as tape:
    h = tf.matmul(x, W) + b
    y = tf.tanh(h)
    loss = tf.reduce_mean(tf.square(y - y0))

grad_W_direct = tape.gradient(loss, W)

grad_loss_h = tape.gradient(loss, h)
grad_h_W = tape.gradient(h, W)
grad_W_step = grad_loss_h * grad_h_W
del tape

direct_grad = grad_W_direct.numpy()
step_grad = grad_W_step.numpy()

print(direct_grad)
print(step_grad)
print(np.allclose(direct_grad, step_grad))
