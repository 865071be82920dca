"""An MLP with tf.layers and batch normalization, trained with Adam and UPDATE_OPS."""
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(0)
data = rng.randn(32, 4).astype(np.float32)
labels = (data.sum(axis=1, keepdims=True) > 0).astype(np.float32)

x = tf.placeholder(tf.float32, [None, 4], name="x")
y = tf.placeholder(tf.float32, [None, 1], name="y")
training = tf.placeholder(tf.bool, [], name="training")

init = tf.constant_initializer(0.1)
with tf.variable_scope("mlp"):
    h = tf.layers.dense(x, 8, kernel_initializer=init, use_bias=False, name="fc1")
    h = tf.layers.batch_normalization(h, training=training, name="bn1")
    h = tf.nn.relu(h)
    h = tf.layers.dropout(h, rate=0.3, training=False)
    logits = tf.layers.dense(h, 1, kernel_initializer=tf.constant_initializer(-0.2), name="out")
mlp_vars = tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, scope="mlp")
loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))
update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
with tf.control_dependencies(update_ops):
    train_op = tf.train.AdamOptimizer(0.05).minimize(loss)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(5):
        _, value = sess.run([train_op, loss], feed_dict={x: data, y: labels, training: True})
        print(step, value)
    print("eval", sess.run(loss, feed_dict={x: data, y: labels, training: False}))
    print(sess.run(mlp_vars))
