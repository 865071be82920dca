"""A fed linear regression built in a named graph and trained in a session on it
(the layout of many TF1 notebooks)."""
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(3)
xs = rng.uniform(-1.0, 1.0, size=(32, 3)).astype(np.float32)
ys = xs @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.25

graph = tf.Graph()
with graph.as_default():
    # the model
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.placeholder(tf.float32, [None, 1])
    w = tf.Variable(tf.zeros([3, 1]), name="w")
    b = tf.Variable(0.0, name="b")
    pred = tf.matmul(x, w) + b
    loss = tf.reduce_mean(tf.square(pred - y))
    train = tf.train.GradientDescentOptimizer(0.3).minimize(loss)

with tf.Session(graph=graph) as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(6):
        _, l = sess.run([train, loss], feed_dict={x: xs, y: ys})
        print(step, l)
    final_w = sess.run(w)
