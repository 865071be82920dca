"""An iterative FGSM attack on a small fixed classifier, TF1 style.

The fast gradient sign method perturbs an input along the sign of the gradient
of the loss with respect to the *input*: ``x_adv = x + eps * sign(dloss/dx)``.
The classifier (one ReLU hidden layer) has fixed weights from numpy and the
labels are its own clean predictions, so it starts at accuracy 1. Four steps
feed each adversarial batch back in as ``x``; ``eps`` is a
``tf.placeholder_with_default``, fed only for a final single large step. Run it
on TF2, and compare it with its hand-written TF2 form, with:

    tapeshift run-legacy examples/fgsm_tf1.py
    tapeshift verify examples/fgsm_tf1.py examples/fgsm_tf2.py
"""
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(1)
X_data = rng.uniform(0.0, 1.0, size=(12, 4)).astype(np.float32)
W1_init = rng.randn(4, 8).astype(np.float32)
b1_init = (0.1 * rng.randn(8)).astype(np.float32)
W2_init = rng.randn(8, 3).astype(np.float32)
b2_init = np.zeros(3, dtype=np.float32)
hidden_data = np.maximum(X_data @ W1_init + b1_init, 0.0)
L_data = np.argmax(hidden_data @ W2_init + b2_init, axis=1)

x = tf.placeholder(tf.float32, shape=[None, 4], name="x")
labels = tf.placeholder(tf.int64, shape=[None], name="labels")
eps = tf.placeholder_with_default(0.05, shape=[], name="eps")

W1 = tf.Variable(W1_init, dtype=tf.float32)
b1 = tf.Variable(b1_init, dtype=tf.float32)
W2 = tf.Variable(W2_init, dtype=tf.float32)
b2 = tf.Variable(b2_init, dtype=tf.float32)

hidden = tf.nn.relu(tf.matmul(x, W1) + b1)
logits = tf.matmul(hidden, W2) + b2
loss = tf.reduce_mean(
    tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))

grad_x = tf.gradients(loss, x)[0]
x_adv = tf.clip_by_value(x + eps * tf.sign(grad_x), 0.0, 1.0)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    clean_loss, clean_accuracy = sess.run([loss, accuracy], feed_dict={x: X_data, labels: L_data})
    print(clean_loss, clean_accuracy)

    X_adv = X_data
    for step in range(4):
        X_adv = sess.run(x_adv, feed_dict={x: X_adv, labels: L_data})
        adv_loss, adv_accuracy = sess.run([loss, accuracy], feed_dict={x: X_adv, labels: L_data})
        print(step, adv_loss, adv_accuracy)

    X_big = sess.run(x_adv, feed_dict={x: X_data, labels: L_data, eps: 0.3})
    big_loss, big_accuracy = sess.run([loss, accuracy], feed_dict={x: X_big, labels: L_data})
    print(big_loss, big_accuracy)

print(np.abs(X_adv - X_data).max(), np.abs(X_big - X_data).max())
