"""A tf.contrib.slim training script, TF1 style: a small CNN fed by feed_dict.

The model function builds conv -> max-pool -> flatten -> fully-connected layers
with slim (weights from fixed numpy arrays, so runs are comparable), and
plain gradient descent trains it on mini-batches. ``tapeshift migrate`` turns
it into TF2 tape form: slim from the ``tf_slim`` package, the model function
wrapped in ``tf.compat.v1.make_template`` so its variables are created once
and reused, each ``sess.run`` a function of the fed values. Run it on TF2 and
check the migration with:

    tapeshift run-legacy examples/slim_train_tf1.py
    tapeshift migrate --verify examples/slim_train_tf1.py
"""
import numpy as np
import tensorflow as tf

slim = tf.contrib.slim

rng = np.random.RandomState(5)
images = rng.randn(12, 8, 8, 1).astype(np.float32)
labels = np.eye(3)[rng.randint(0, 3, size=12)].astype(np.float32)
conv_init = (0.3 * rng.randn(3, 3, 1, 4)).astype(np.float32)
fc_init = (0.1 * rng.randn(64, 3)).astype(np.float32)


def model(inputs):
    with slim.arg_scope([slim.conv2d, slim.fully_connected], activation_fn=tf.nn.relu):
        net = slim.conv2d(inputs, 4, [3, 3], weights_initializer=tf.constant_initializer(conv_init),
                          scope="conv1")
        net = slim.max_pool2d(net, [2, 2], scope="pool1")
        net = slim.flatten(net)
        return slim.fully_connected(net, 3, activation_fn=None,
                                    weights_initializer=tf.constant_initializer(fc_init), scope="fc")


x = tf.placeholder(tf.float32, [None, 8, 8, 1])
y = tf.placeholder(tf.float32, [None, 3])
logits = model(x)
loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=logits))
train_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(6):
        batch = slice(4 * (step % 3), 4 * (step % 3) + 4)
        _, loss_value = sess.run([train_op, loss], feed_dict={x: images[batch], y: labels[batch]})
        print(step, loss_value)
    final_loss = sess.run(loss, feed_dict={x: images, y: labels})
    print(final_loss)
