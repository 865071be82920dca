"""Weights picked with Python's random module, no seed; a gradient step by hand (TF1 tutorial style)."""
import random

import tensorflow as tf

data = [(0.5, 1.2), (1.5, 3.1), (2.0, 4.2), (3.0, 6.1)]
random.shuffle(data)
xs = tf.constant([p[0] for p in data])
ys = tf.constant([p[1] for p in data])
w = tf.Variable(random.uniform(-1.0, 1.0), name="w")
loss = tf.reduce_mean(tf.square(w * xs - ys))
grad = tf.gradients(loss, w)[0]
step = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
init = tf.global_variables_initializer()
print(w)
print(grad)

with tf.Session() as sess:
    sess.run(init)
    for i in range(3):
        l, _ = sess.run([loss, step])
        print("iter", i, "loss", l)
    print("w", sess.run(w))
