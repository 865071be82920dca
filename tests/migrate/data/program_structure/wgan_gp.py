"""WGAN-GP: a critic's gradient penalty on interpolates (the gradient of a gradient)."""
import numpy as np
import tensorflow as tf

Z_DIM, X_DIM, BATCH, LAMBDA = 4, 3, 8, 10.0

z = tf.placeholder(tf.float32, [None, Z_DIM])
real = tf.placeholder(tf.float32, [None, X_DIM])
eps = tf.placeholder(tf.float32, [None, 1])


def generator(z):
    with tf.variable_scope("generator", reuse=tf.AUTO_REUSE):
        h = tf.layers.dense(z, 16, tf.nn.relu, name="h")
        return tf.layers.dense(h, X_DIM, name="out")


def critic(x):
    with tf.variable_scope("critic", reuse=tf.AUTO_REUSE):
        h = tf.layers.dense(x, 16, tf.nn.leaky_relu, name="h")
        return tf.layers.dense(h, 1, name="out")


fake = generator(z)
d_real = critic(real)
d_fake = critic(fake)
interp = eps * real + (1.0 - eps) * fake
grad = tf.gradients(critic(interp), [interp])[0]
slopes = tf.sqrt(tf.reduce_sum(tf.square(grad), axis=1))
penalty = tf.reduce_mean((slopes - 1.0) ** 2)
d_loss = tf.reduce_mean(d_fake) - tf.reduce_mean(d_real) + LAMBDA * penalty
g_loss = -tf.reduce_mean(d_fake)
d_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="critic")
g_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="generator")
d_train = tf.train.AdamOptimizer(1e-3, beta1=0.5, beta2=0.9).minimize(d_loss, var_list=d_vars)
g_train = tf.train.AdamOptimizer(1e-3, beta1=0.5, beta2=0.9).minimize(g_loss, var_list=g_vars)

rng = np.random.RandomState(0)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(4):
        feed = {z: rng.randn(BATCH, Z_DIM), real: rng.randn(BATCH, X_DIM) + 2.0,
                eps: rng.rand(BATCH, 1)}
        dl, gp, _ = sess.run([d_loss, penalty, d_train], feed)
        gl, _ = sess.run([g_loss, g_train], {z: rng.randn(BATCH, Z_DIM)})
        print(step, dl, gp, gl)
