"""A TF1 training script built from ``tf.layers``, trained a few steps with Adam.

One model function, called twice under ``tf.variable_scope("net",
reuse=tf.AUTO_REUSE)`` (a training tower and an inference tower sharing their
variables), uses conv1d/conv2d/conv3d, separable_conv2d, conv2d_transpose,
max and average pooling, batch_normalization (its moving statistics updated
through ``tf.GraphKeys.UPDATE_OPS`` in the train op), dropout, flatten and
dense. Weights come from TensorFlow's initialisers under a graph seed, so runs
are comparable.

On TensorFlow >= 2.16 ``tf.compat.v1.layers`` fails with Keras 3 ("`dense` is
not available with Keras 3"); tapeshift takes the same layers from the
``tf_keras`` package (``pip install tf-keras``):

    tapeshift run-legacy examples/layers_tf1.py
    tapeshift migrate --mode compat --out migrated examples/layers_tf1.py
    python migrated/layers_tf1.py
    tapeshift migrate --verify examples/layers_tf1.py
"""
import numpy as np
import tensorflow as tf

tf.set_random_seed(1)
rng = np.random.RandomState(3)
images = rng.rand(8, 8, 8, 1).astype(np.float32)
series = rng.rand(8, 12, 2).astype(np.float32)
volumes = rng.rand(8, 4, 4, 4, 1).astype(np.float32)
labels = rng.randint(0, 3, size=8).astype(np.int64)


def net(image, signal, volume, training):
    with tf.variable_scope("net", reuse=tf.AUTO_REUSE):
        h = tf.layers.conv2d(image, 4, 3, padding="same", activation=tf.nn.relu, name="conv")
        h = tf.layers.batch_normalization(h, training=training, name="bn")
        h = tf.layers.separable_conv2d(h, 6, 3, padding="same", activation=tf.nn.relu,
                                       name="sep")
        h = tf.layers.max_pooling2d(h, 2, 2, name="pool")
        h = tf.layers.conv2d_transpose(h, 3, 3, strides=2, padding="same", name="up")
        h = tf.layers.average_pooling2d(h, 4, 4, name="avg")
        t = tf.layers.conv1d(signal, 4, 3, activation=tf.nn.tanh, name="conv1d")
        t = tf.layers.max_pooling1d(t, 2, 2, name="pool1d")
        v = tf.layers.conv3d(volume, 2, 2, activation=tf.nn.relu, name="conv3d")
        z = tf.concat([tf.layers.flatten(h), tf.layers.flatten(t), tf.layers.flatten(v)], 1)
        z = tf.layers.dropout(z, rate=0.25, training=training, name="drop")
        z = tf.layers.dense(z, 16, activation=tf.nn.relu, name="fc")
        return tf.layers.dense(z, 3, name="logits")


x = tf.placeholder(tf.float32, [None, 8, 8, 1], name="x")
s = tf.placeholder(tf.float32, [None, 12, 2], name="s")
v3 = tf.placeholder(tf.float32, [None, 4, 4, 4, 1], name="v3")
y = tf.placeholder(tf.int64, [None], name="y")

train_logits = net(x, s, v3, training=True)
eval_logits = net(x, s, v3, training=False)
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=train_logits))
eval_loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                          logits=eval_logits))
update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
with tf.control_dependencies(update_ops):
    train_op = tf.train.AdamOptimizer(0.01).minimize(loss)
n_variables = len(tf.trainable_variables())
n_updates = len(update_ops)
print("trainable variables", n_variables, "batch-norm updates", n_updates)

feed = {x: images, s: series, v3: volumes, y: labels}
losses = []
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(5):
        _, loss_value = sess.run([train_op, loss], feed_dict=feed)
        losses.append(float(loss_value))
        print(step, loss_value)
    final_eval_loss = sess.run(eval_loss, feed_dict=feed)
    moving_mean = sess.run(tf.global_variables("net/bn/moving_mean")[0])
    print("eval", final_eval_loss)
    print("moving mean", moving_mean)
