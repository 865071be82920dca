"""The legacy TF1 split-gradient script, as users bring it.

It splits dloss/dW at the intermediate tensor ``h`` and multiplies the two
halves elementwise, the widely copied recipe. That product is *not* the chain
rule (see ``tapeshift check``); this file keeps it because a migration must
reproduce what the old code computed. Run it on TF2 with:

    tapeshift run-legacy examples/reference_tf1.py
"""
import numpy as np
import tensorflow as tf

W = tf.Variable(np.array([[1.0, 2.0], [3.0, 4.0]]), dtype=tf.float32)
b = tf.Variable(np.array([0.5, 0.5]), dtype=tf.float32)
x = tf.constant(np.array([[0.1, 0.2], [0.3, 0.4]]), dtype=tf.float32)
y0 = tf.constant(np.array([[0.8, 0.9], [0.7, 0.6]]), dtype=tf.float32)

h = tf.matmul(x, W) + b
y = tf.tanh(h)
loss = tf.reduce_mean(tf.square(y - y0))

grad_W_direct = tf.gradients(loss, W)[0]

grad_loss_h = tf.gradients(loss, h)[0]
grad_h_W = tf.gradients(h, W)[0]
grad_W_step = grad_loss_h * grad_h_W

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    direct_grad = sess.run(grad_W_direct)
    step_grad = sess.run(grad_W_step)

    print(direct_grad)
    print(step_grad)
    print(np.allclose(direct_grad, step_grad))
