"""Actor and critic in eval/target variable scopes (get_variable), collections by scope, soft updates."""
import numpy as np
import tensorflow as tf

S_DIM, A_DIM, TAU, GAMMA = 3, 2, 0.05, 0.9
rng = np.random.RandomState(5)

S = tf.placeholder(tf.float32, [None, S_DIM], "s")
S_ = tf.placeholder(tf.float32, [None, S_DIM], "s_")
R = tf.placeholder(tf.float32, [None, 1], "r")

with tf.variable_scope("Actor"):
    with tf.variable_scope("eval"):
        a_w = tf.get_variable("w", [S_DIM, A_DIM], initializer=tf.random_normal_initializer(0.0, 0.3))
        a = tf.tanh(tf.matmul(S, a_w))
    with tf.variable_scope("target"):
        a_w_ = tf.get_variable("w", [S_DIM, A_DIM], initializer=tf.random_normal_initializer(0.0, 0.3),
                               trainable=False)
        a_ = tf.tanh(tf.matmul(S_, a_w_))

with tf.variable_scope("Critic"):
    with tf.variable_scope("eval"):
        h = tf.layers.dense(tf.concat([S, a], axis=1), 8, tf.nn.relu, name="l1")
        q = tf.layers.dense(h, 1, name="q")
    with tf.variable_scope("target"):
        h_ = tf.layers.dense(tf.concat([S_, a_], axis=1), 8, tf.nn.relu, name="l1", trainable=False)
        q_ = tf.layers.dense(h_, 1, name="q", trainable=False)

ae_params = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="Actor/eval")
at_params = tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, scope="Actor/target")
ce_params = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="Critic/eval")
ct_params = tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, scope="Critic/target")
soft_replace = [tf.assign(t, (1 - TAU) * t + TAU * e)
                for t, e in zip(at_params + ct_params, ae_params + ce_params)]

td_error = tf.reduce_mean(tf.squared_difference(R + GAMMA * q_, q))
critic_train = tf.train.AdamOptimizer(0.01).minimize(td_error, var_list=ce_params)
actor_loss = -tf.reduce_mean(q)
actor_train = tf.train.AdamOptimizer(0.01).minimize(actor_loss, var_list=ae_params)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(6):
        s = rng.randn(5, S_DIM).astype(np.float32)
        s_ = rng.randn(5, S_DIM).astype(np.float32)
        r = rng.randn(5, 1).astype(np.float32)
        sess.run(critic_train, {S: s, S_: s_, R: r})
        sess.run(actor_train, {S: s})
        sess.run(soft_replace)
        print(step, sess.run(td_error, {S: s, S_: s_, R: r}), sess.run(a, {S: s[:1]}))
