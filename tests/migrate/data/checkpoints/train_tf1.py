"""Train a small regression model (TF1) and save it with its global step.

Usage: python train_tf1.py CKPT_DIR
Writes CKPT_DIR/model.ckpt-10 and -20 (a Saver keeping 2) and the `checkpoint` file.
The model is built by `build_model` (variable scopes, tf.get_variable, tf.layers),
the same function as in predict_tf1.py: tapeshift migrates one file at a time, so
the model lives in each script (model.py holds it as a module of its own; see
docs/checkpoints.md for what the codemod does with that layout).
"""

import os
import sys

import numpy as np
import tensorflow as tf

CKPT_DIR = sys.argv[1]
STEPS = 20

rng = np.random.RandomState(0)
X = rng.randn(64, 4).astype(np.float32)
Y = (X @ np.array([[1.0], [-2.0], [0.5], [3.0]]) + 0.1 * rng.randn(64, 1)).astype(np.float32)
W0 = (0.3 * rng.randn(4, 8)).astype(np.float32)
HIDDEN0 = (0.3 * rng.randn(8, 8)).astype(np.float32)
OUT0 = (0.3 * rng.randn(8, 1)).astype(np.float32)
X_TEST = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 4)


def build_model(x):
    with tf.variable_scope("model"):
        w = tf.get_variable("w", [4, 8], initializer=tf.constant_initializer(W0))
        h = tf.nn.relu(tf.matmul(x, w))
        h = tf.layers.dense(h, 8, tf.nn.tanh, name="hidden",
                            kernel_initializer=tf.constant_initializer(HIDDEN0))
        with tf.variable_scope("head"):
            b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
            out = tf.layers.dense(h, 1, name="out",
                                  kernel_initializer=tf.constant_initializer(OUT0)) + b
    return out


x = tf.placeholder(tf.float32, [None, 4])
y = tf.placeholder(tf.float32, [None, 1])
pred = build_model(x)
loss = tf.reduce_mean(tf.square(pred - y))
global_step = tf.train.get_or_create_global_step()
train_op = tf.train.AdamOptimizer(0.05).minimize(loss, global_step=global_step)
saver = tf.train.Saver(max_to_keep=2)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(STEPS):
        _, step_loss = sess.run([train_op, loss], feed_dict={x: X, y: Y})
        if (i + 1) % 10 == 0:
            path = saver.save(sess, os.path.join(CKPT_DIR, "model.ckpt"), global_step=global_step)
            print("step", i + 1, "loss", step_loss)
    final_predictions = sess.run(pred, feed_dict={x: X_TEST})
    print(final_predictions)
