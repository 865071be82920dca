"""An iterative FGSM attack on a small fixed classifier, TF2 form.

The TF2 counterpart of ``fgsm_tf1.py``, in the shape the codemod produces for
fed graphs: each distinct set of fetches is a function of the fed values, and
``tf.gradients(loss, x)`` with respect to the fed input becomes a tape that
watches the input. Compare the two with:

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

W1 = tf.Variable(W1_init, dtype=tf.float32)
b1 = tf.Variable(b1_init, dtype=tf.float32)
W2 = tf.Variable(W2_init, dtype=tf.float32)
b2 = tf.Variable(b2_init, dtype=tf.float32)


def run_loss_accuracy(x, labels):
    x = tf.convert_to_tensor(x, tf.float32)
    labels = tf.convert_to_tensor(labels, tf.int64)
    hidden = tf.nn.relu(tf.matmul(x, W1) + b1)
    logits = tf.matmul(hidden, W2) + b2
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))
    return [loss.numpy(), accuracy.numpy()]


def run_x_adv(x, labels, eps=None):
    x = tf.convert_to_tensor(x, tf.float32)
    labels = tf.convert_to_tensor(labels, tf.int64)
    if eps is None:
        eps = 0.05
    eps = tf.convert_to_tensor(eps, tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        hidden = tf.nn.relu(tf.matmul(x, W1) + b1)
        logits = tf.matmul(hidden, W2) + b2
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    grad_x = tape.gradient(loss, x)
    x_adv = tf.clip_by_value(x + eps * tf.sign(grad_x), 0.0, 1.0)
    return x_adv.numpy()


clean_loss, clean_accuracy = run_loss_accuracy(x=X_data, labels=L_data)
print(clean_loss, clean_accuracy)

X_adv = X_data
for step in range(4):
    X_adv = run_x_adv(x=X_adv, labels=L_data)
    adv_loss, adv_accuracy = run_loss_accuracy(x=X_adv, labels=L_data)
    print(step, adv_loss, adv_accuracy)

X_big = run_x_adv(x=X_data, labels=L_data, eps=0.3)
big_loss, big_accuracy = run_loss_accuracy(x=X_big, labels=L_data)
print(big_loss, big_accuracy)

print(np.abs(X_adv - X_data).max(), np.abs(X_big - X_data).max())
