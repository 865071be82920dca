"""Restore the latest checkpoint of train_tf1.py (TF1) and predict.

Usage: python predict_tf1.py CKPT_DIR
No variable is initialised: every one is restored (by its TF1 name) from the
checkpoint `tf.train.latest_checkpoint` names.
"""

import sys

import numpy as np
import tensorflow as tf

CKPT_DIR = sys.argv[1]
W0 = np.zeros((4, 8), np.float32)  # overwritten by the restore
X_TEST = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 4)


def build_model(x):
    with tf.variable_scope("model"):
        w = tf.get_variable("w", [4, 8], initializer=tf.constant_initializer(W0))
        h = tf.nn.relu(tf.matmul(x, w))
        h = tf.layers.dense(h, 8, tf.nn.tanh, name="hidden")
        with tf.variable_scope("head"):
            b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
            out = tf.layers.dense(h, 1, name="out") + b
    return out


x = tf.placeholder(tf.float32, [None, 4])
pred = build_model(x)
saver = tf.train.Saver()

with tf.Session() as sess:
    latest = tf.train.latest_checkpoint(CKPT_DIR)
    saver.restore(sess, latest)
    predictions = sess.run(pred, feed_dict={x: X_TEST})
    print(latest.rsplit("-", 1)[1], predictions)
