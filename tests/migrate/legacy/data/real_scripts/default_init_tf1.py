"""A dense layer made with tf.get_variable's default initializer, no seed (TF1 tutorial style)."""
import numpy as np
import tensorflow as tf

inputs = np.array([[0.2, -0.4, 0.9], [1.0, 0.3, -0.7]], dtype=np.float32)
targets = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)

x = tf.constant(inputs)
W = tf.get_variable("W", [3, 2])
b = tf.get_variable("b", [2], initializer=tf.zeros_initializer())
logits = tf.matmul(x, W) + b
loss = tf.reduce_mean(tf.square(tf.nn.sigmoid(logits) - targets))
grad_W, grad_b = tf.gradients(loss, [W, b])
print(grad_W)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print("W0", sess.run(W))
    gW, gb, l = sess.run([grad_W, grad_b, loss])
    print("loss", l)
    print("grad W", gW)
    print("grad b", gb)
