"""Linear regression on synthetic data drawn with numpy, no seed (TF1 tutorial style)."""
import numpy as np
import tensorflow as tf

train_X = np.random.rand(20).astype(np.float32)
noise = 0.05 * np.random.randn(20).astype(np.float32)
train_Y = 2.0 * train_X + 0.5 + noise

X = tf.placeholder(tf.float32, [None])
Y = tf.placeholder(tf.float32, [None])
W = tf.Variable(np.random.random_sample(), dtype=tf.float32, name="weight")
b = tf.Variable(np.random.random_sample(), dtype=tf.float32, name="bias")

pred = W * X + b
cost = tf.reduce_mean(tf.square(pred - Y))
optimizer = tf.train.GradientDescentOptimizer(0.5).minimize(cost)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print("initial W =", sess.run(W), "b =", sess.run(b))
    for step in range(30):
        sess.run(optimizer, feed_dict={X: train_X, Y: train_Y})
        if step % 10 == 0:
            c = sess.run(cost, feed_dict={X: train_X, Y: train_Y})
            print("step", step, "cost", c)
    final_W, final_b = sess.run([W, b])
    print("W =", final_W, "b =", final_b)
