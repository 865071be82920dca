"""The model of train_tf1.py and predict_tf1.py as a module of its own.

`tapeshift migrate` reads one file at a time: this module's `build_model` is never
called here (the model-code rule reads a model function at its first call), so the
module stays in compat form, and a script that imports it and saves or restores
with `tf.train.Saver()` is reported (TS128: the Saver's list would hold what
`build_model` makes). See predict_module_tf1.py and docs/checkpoints.md.
"""

import tensorflow as tf


def build_model(x):
    with tf.variable_scope("model"):
        w = tf.get_variable("w", [4, 8])
        h = tf.nn.relu(tf.matmul(x, w))
        h = tf.layers.dense(h, 8, tf.nn.tanh, name="hidden")
        with tf.variable_scope("head"):
            b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
            out = tf.layers.dense(h, 1, name="out") + b
    return out
