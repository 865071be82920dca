"""predict_tf1.py with the model imported from model.py (the layout the codemod does not follow)."""

import sys

import numpy as np
import tensorflow as tf

from model import build_model

X_TEST = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 4)

x = tf.placeholder(tf.float32, [None, 4])
pred = build_model(x)
saver = tf.train.Saver()

with tf.Session() as sess:
    saver.restore(sess, tf.train.latest_checkpoint(sys.argv[1]))
    print(sess.run(pred, feed_dict={x: X_TEST}))
