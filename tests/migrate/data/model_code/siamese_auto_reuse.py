"""A Siamese network with AUTO_REUSE: two inputs through one tower, a contrastive loss."""
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(0)
left_data = rng.randn(16, 6).astype(np.float32)
right_data = rng.randn(16, 6).astype(np.float32)
same = (rng.rand(16) > 0.5).astype(np.float32)

x1 = tf.placeholder(tf.float32, [None, 6], name="left")
x2 = tf.placeholder(tf.float32, [None, 6], name="right")
y = tf.placeholder(tf.float32, [None], name="same")


def tower(x, reuse=False):
    with tf.variable_scope("siamese", reuse=tf.AUTO_REUSE):
        w = tf.get_variable("w", [6, 8], initializer=tf.random_normal_initializer(0.0, 0.3))
        b = tf.get_variable("b", [8], initializer=tf.zeros_initializer())
        h = tf.nn.relu(tf.matmul(x, w) + b)
        out = tf.layers.dense(h, 4, name="embed")
    return out


left = tower(x1)
right = tower(x2, reuse=True)
distance = tf.sqrt(tf.reduce_sum(tf.square(left - right), axis=1) + 1e-6)
margin = 1.0
loss = tf.reduce_mean(y * tf.square(distance) + (1 - y) * tf.square(tf.maximum(margin - distance, 0)))
train_op = tf.train.AdamOptimizer(0.01).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(6):
        _, value = sess.run([train_op, loss], feed_dict={x1: left_data, x2: right_data, y: same})
        print(step, value)
