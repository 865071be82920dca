"""Guided backpropagation on a tiny ReLU network, TF1 style.

Guided backprop (Springenberg et al., 2015) explains a class score by its
gradient with respect to the input, passing back through each ReLU only the
*positive* gradient at units that were active going forward. TF1 code spelled
the modified ReLU gradient with ``@ops.RegisterGradient("GuidedRelu")`` and
``gradient_override_map({"Relu": "GuidedRelu"})``, which TF2 silently ignores
under a tape (docs/tf1-vs-tf2.md, section 8); ``tapeshift migrate`` rewrites it into
``@tf.custom_gradient`` (``examples/guided_backprop_tf2.py``). Run it on TF2 with:

    tapeshift run-legacy examples/guided_backprop_tf1.py
    tapeshift verify examples/guided_backprop_tf1.py examples/guided_backprop_tf2.py
"""
import numpy as np
import tensorflow as tf
from tensorflow.python.framework import ops


@ops.RegisterGradient("GuidedRelu")
def _guided_relu(op, grad):
    """Pass back positive gradients, at units the forward ReLU let through."""
    return tf.where(0. < grad, grad * tf.cast(op.outputs[0] > 0., tf.float32), tf.zeros_like(grad))


W1 = tf.Variable(np.array([[0.5, -0.4, 0.3, 0.2, -0.1],
                           [-0.3, 0.8, -0.2, 0.4, 0.6],
                           [0.7, 0.1, -0.6, -0.3, 0.2],
                           [0.2, -0.5, 0.4, 0.9, -0.7]]), dtype=tf.float32)
b1 = tf.Variable(np.array([0.05, -0.1, 0.1, 0.0, 0.2]), dtype=tf.float32)
W2 = tf.Variable(np.array([[0.6, -0.2, 0.3],
                           [-0.5, 0.4, 0.7],
                           [0.3, 0.9, -0.4],
                           [-0.2, -0.6, 0.5],
                           [0.8, 0.1, -0.3]]), dtype=tf.float32)
b2 = tf.Variable(np.array([0.0, 0.1, -0.05]), dtype=tf.float32)
W3 = tf.Variable(np.array([[0.4, -0.7], [-0.6, 0.5], [0.9, 0.3]]), dtype=tf.float32)

# two input images of four pixels each
images = tf.constant(np.array([[0.9, -0.4, 0.6, 0.2],
                               [-0.3, 0.8, 0.1, 0.7]]), dtype=tf.float32)

# the network with guided ReLUs
g = tf.get_default_graph()
with g.gradient_override_map({"Relu": "GuidedRelu"}):
    h1 = tf.nn.relu(tf.matmul(images, W1) + b1)
    h2 = tf.nn.relu(tf.matmul(h1, W2) + b2)
guided_scores = tf.matmul(h2, W3)

# the same network with ordinary ReLUs, for comparison
plain_h1 = tf.nn.relu(tf.matmul(images, W1) + b1)
plain_h2 = tf.nn.relu(tf.matmul(plain_h1, W2) + b2)
plain_scores = tf.matmul(plain_h2, W3)

# saliency of class 1 with respect to the input pixels
guided_score = tf.reduce_sum(guided_scores[:, 1])
plain_score = tf.reduce_sum(plain_scores[:, 1])
guided_saliency = tf.gradients(guided_score, images)[0]
plain_saliency = tf.gradients(plain_score, images)[0]

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    scores = sess.run(guided_scores)
    guided = sess.run(guided_saliency)
    plain = sess.run(plain_saliency)

print("scores", scores)
print("guided saliency", guided)
print("plain saliency", plain)
print("guided differs from plain:", not np.allclose(guided, plain))
