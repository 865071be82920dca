"""A regression network built by a layer helper called once per layer.

Written for tapeshift's tests in the style of public TF1 tutorials: `add_layer`
makes a new weight matrix and bias with tf.Variable at each call, sized by its
arguments; module code calls it for the hidden and the output layer on a
placeholder, and trains the network with plain gradient descent.
"""
import numpy as np
import tensorflow as tf


def add_layer(inputs, in_size, out_size, activation_function=None):
    # add one more layer and return the output of this layer
    Weights = tf.Variable(tf.random_normal([in_size, out_size]), name='W')
    biases = tf.Variable(tf.zeros([1, out_size]) + 0.1, name='b')
    Wx_plus_b = tf.matmul(inputs, Weights) + biases
    if activation_function is None:
        outputs = Wx_plus_b
    else:
        outputs = activation_function(Wx_plus_b)
    return outputs


rng = np.random.RandomState(0)
x_data = np.linspace(-1, 1, 50)[:, np.newaxis].astype(np.float32)
y_data = (np.square(x_data) - 0.5 + rng.normal(0, 0.05, x_data.shape)).astype(np.float32)
hidden = 10

xs = tf.placeholder(tf.float32, [None, 1])
ys = tf.placeholder(tf.float32, [None, 1])

# add hidden layer
l1 = add_layer(xs, 1, hidden, activation_function=tf.nn.relu)
# add output layer
prediction = add_layer(l1, hidden, 1, activation_function=None)

loss = tf.reduce_mean(tf.reduce_sum(tf.square(ys - prediction), reduction_indices=[1]))
train_step = tf.train.GradientDescentOptimizer(0.1).minimize(loss, var_list=tf.trainable_variables())

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(200):
        sess.run(train_step, feed_dict={xs: x_data, ys: y_data})
        if i % 40 == 0:
            print(i, sess.run(loss, feed_dict={xs: x_data, ys: y_data}))
    print(sess.run(prediction, feed_dict={xs: x_data[:3]}))
