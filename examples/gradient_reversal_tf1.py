"""A small domain-adaptation model (DANN) with a TF1 gradient reversal layer.

A feature extractor feeds a label head (trained on labelled source data) and,
through a gradient reversal layer, a domain head (source or target?). The
reversal layer is the identity going forward; going backward it multiplies the
gradient by ``-LAMBDA``, so the features learn to *confuse* the domain head.
TF1 spelled it with ``@tf.RegisterGradient`` and ``gradient_override_map``,
which TF2 silently ignores under a tape (docs/tf1-vs-tf2.md, section 8); ``tapeshift
migrate`` rewrites it into ``@tf.custom_gradient``
(``examples/gradient_reversal_tf2.py``). Run the legacy script on TF2 with:

    tapeshift run-legacy examples/gradient_reversal_tf1.py
    tapeshift verify examples/gradient_reversal_tf1.py examples/gradient_reversal_tf2.py
"""
import numpy as np
import tensorflow as tf

LAMBDA = 0.5


@tf.RegisterGradient("FlipGradient")
def _flip_gradient(op, grad):
    """Gradient reversal: identity forward, -LAMBDA * grad backward."""
    return [tf.negative(grad) * LAMBDA]


def dann_losses(W_f, b_f, W_y, b_y, W_d, b_d, x_source, y_source, x_target):
    """(label loss, domain loss) of one source batch and one target batch."""
    x = tf.concat([x_source, x_target], 0)
    features = tf.nn.relu(tf.matmul(x, W_f) + b_f)

    # label head: source samples only
    logits_y = tf.matmul(features[:4], W_y) + b_y
    label_loss = tf.reduce_mean(
        tf.nn.softmax_cross_entropy_with_logits(labels=y_source, logits=logits_y))

    # domain head, behind the gradient reversal layer
    g = tf.get_default_graph()
    with g.gradient_override_map({"Identity": "FlipGradient"}):
        reversed_features = tf.identity(features)
    logits_d = tf.matmul(reversed_features, W_d) + b_d
    domains = tf.constant([[1.0]] * 4 + [[0.0]] * 4)
    domain_loss = tf.reduce_mean(
        tf.nn.sigmoid_cross_entropy_with_logits(labels=domains, logits=logits_d))
    return label_loss, domain_loss


W_f = tf.Variable(np.array([[0.2, -0.3, 0.5, 0.1],
                            [-0.4, 0.6, 0.2, -0.1],
                            [0.3, 0.1, -0.5, 0.4]]), dtype=tf.float32)
b_f = tf.Variable(np.array([0.1, 0.0, 0.05, -0.05]), dtype=tf.float32)
W_y = tf.Variable(np.array([[0.5, -0.2], [0.1, 0.3], [-0.3, 0.4], [0.2, 0.1]]), dtype=tf.float32)
b_y = tf.Variable(np.array([0.0, 0.1]), dtype=tf.float32)
W_d = tf.Variable(np.array([[0.3], [-0.2], [0.4], [0.1]]), dtype=tf.float32)
b_d = tf.Variable(np.array([0.05]), dtype=tf.float32)

# two steps, each a labelled source batch and an unlabelled target batch
x_source_1 = tf.constant(np.array([[1.0, 0.5, -0.2], [0.3, -0.7, 0.8],
                                   [-0.5, 0.2, 0.9], [0.7, 0.1, 0.4]]), dtype=tf.float32)
y_source_1 = tf.constant(np.array([[1, 0], [0, 1], [0, 1], [1, 0]]), dtype=tf.float32)
x_target_1 = tf.constant(np.array([[0.9, 0.8, 0.1], [0.2, -0.1, 1.2],
                                   [-0.3, 0.6, 0.7], [1.1, 0.3, 0.2]]), dtype=tf.float32)
x_source_2 = tf.constant(np.array([[0.4, -0.6, 0.3], [0.8, 0.9, -0.1],
                                   [-0.2, 0.5, 0.6], [0.1, -0.3, 1.0]]), dtype=tf.float32)
y_source_2 = tf.constant(np.array([[0, 1], [1, 0], [1, 0], [0, 1]]), dtype=tf.float32)
x_target_2 = tf.constant(np.array([[1.2, 0.4, 0.3], [0.5, 0.2, 0.9],
                                   [0.0, 0.8, 0.5], [0.6, -0.2, 0.8]]), dtype=tf.float32)

label_loss_1, domain_loss_1 = dann_losses(W_f, b_f, W_y, b_y, W_d, b_d,
                                          x_source_1, y_source_1, x_target_1)
loss_1 = label_loss_1 + domain_loss_1
grads_1 = tf.gradients(loss_1, [W_f, b_f, W_y, b_y, W_d, b_d])

label_loss_2, domain_loss_2 = dann_losses(W_f, b_f, W_y, b_y, W_d, b_d,
                                          x_source_2, y_source_2, x_target_2)
loss_2 = label_loss_2 + domain_loss_2
grads_2 = tf.gradients(loss_2, [W_f, b_f, W_y, b_y, W_d, b_d])

# the domain loss alone reaches the feature extractor reversed and scaled by LAMBDA
domain_grad_W_f = tf.gradients(domain_loss_1, W_f)[0]

NAMES = ["W_f", "b_f", "W_y", "b_y", "W_d", "b_d"]

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    loss_value_1, grad_values_1 = sess.run([loss_1, grads_1])
    loss_value_2, grad_values_2 = sess.run([loss_2, grads_2])
    domain_grad = sess.run(domain_grad_W_f)

print("step 1 loss", loss_value_1)
for name, value in zip(NAMES, grad_values_1):
    print(name, value)
print("step 2 loss", loss_value_2)
for name, value in zip(NAMES, grad_values_2):
    print(name, value)
print("domain loss -> W_f", domain_grad)
