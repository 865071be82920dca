"""A two-layer net whose weights start from tf.random_normal, no seed (TF1 tutorial style)."""
import numpy as np
import tensorflow as tf

features = np.array([[0.1, 0.7], [0.5, -0.3], [-0.8, 0.2]], dtype=np.float32)
labels = np.array([[1.0], [0.0], [1.0]], dtype=np.float32)

W1 = tf.Variable(tf.random_normal([2, 4], stddev=0.5), name="W1")
W2 = tf.Variable(tf.truncated_normal([4, 1], stddev=0.5), name="W2")
hidden = tf.nn.relu(tf.matmul(features, W1))
out = tf.matmul(hidden, W2)
loss = tf.reduce_mean(tf.square(out - labels))
grads = tf.gradients(loss, [W1, W2])

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    l, (g1, g2) = sess.run([loss, grads])
    print("loss", l)
    print("dW2", g2)
