"""Data-parallel training on two towers: AUTO_REUSE variables, gradients averaged across towers."""
import numpy as np
import tensorflow as tf

NUM_GPUS = 2
BATCH = 16

rng = np.random.RandomState(0)
data_x = rng.randn(64, 6).astype(np.float32)
data_y = rng.randn(64, 1).astype(np.float32)

x = tf.placeholder(tf.float32, [BATCH, 6], name="x")
y = tf.placeholder(tf.float32, [BATCH, 1], name="y")


def tower_loss(x, y):
    with tf.variable_scope("model", reuse=tf.AUTO_REUSE):
        w1 = tf.get_variable("w1", [6, 8], initializer=tf.random_normal_initializer(0.0, 0.3))
        b1 = tf.get_variable("b1", [8], initializer=tf.zeros_initializer())
        w2 = tf.get_variable("w2", [8, 1], initializer=tf.random_normal_initializer(0.0, 0.3))
        b2 = tf.get_variable("b2", [1], initializer=tf.zeros_initializer())
        h = tf.nn.tanh(tf.matmul(x, w1) + b1)
        pred = tf.matmul(h, w2) + b2
    return tf.reduce_mean(tf.square(pred - y))


def average_gradients(tower_grads):
    average_grads = []
    for grad_and_vars in zip(*tower_grads):
        grads = []
        for g, _ in grad_and_vars:
            grads.append(tf.expand_dims(g, 0))
        grad = tf.reduce_mean(tf.concat(grads, 0), 0)
        average_grads.append((grad, grad_and_vars[0][1]))
    return average_grads


global_step = tf.train.get_or_create_global_step()
opt = tf.train.GradientDescentOptimizer(0.1)
x_splits = tf.split(x, NUM_GPUS)
y_splits = tf.split(y, NUM_GPUS)
tower_grads = []
for i in range(NUM_GPUS):
    with tf.device("/gpu:%d" % i), tf.name_scope("tower_%d" % i):
        loss = tower_loss(x_splits[i], y_splits[i])
        grads = opt.compute_gradients(loss)
        tower_grads.append(grads)
grads = average_gradients(tower_grads)
train_op = opt.apply_gradients(grads, global_step=global_step)

config = tf.ConfigProto(allow_soft_placement=True)
with tf.Session(config=config) as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(8):
        start = (step * BATCH) % 64
        feed = {x: data_x[start:start + BATCH], y: data_y[start:start + BATCH]}
        _, loss_value = sess.run([train_op, loss], feed_dict=feed)
        print(step, loss_value)
    weights = sess.run(tf.trainable_variables())
