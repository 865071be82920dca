"""DDPG-style actor and critic classes sharing one session passed in (pemami4911's shape):
each builds its own graph; the critic's action gradient is fetched and fed to the actor."""
import numpy as np
import tensorflow as tf

S_DIM, A_DIM, TAU = 3, 2, 0.1


class Actor(object):
    def __init__(self, sess, lr):
        self.sess = sess
        self.s = tf.placeholder(tf.float32, [None, S_DIM], 's')
        with tf.variable_scope('Actor'):
            self.a = self._build_net(self.s, scope='eval_net', trainable=True)
            self.a_ = self._build_net(self.s, scope='target_net', trainable=False)
        self.e_params = tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, scope='Actor/eval_net')
        self.t_params = tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, scope='Actor/target_net')
        self.soft_replace = [tf.assign(t, (1 - TAU) * t + TAU * e)
                             for t, e in zip(self.t_params, self.e_params)]
        self.action_gradient = tf.placeholder(tf.float32, [None, A_DIM])
        self.policy_grads = tf.gradients(self.a, self.e_params, -self.action_gradient)
        self.train_op = tf.train.GradientDescentOptimizer(lr).apply_gradients(
            zip(self.policy_grads, self.e_params))

    def _build_net(self, s, scope, trainable):
        with tf.variable_scope(scope):
            init_w = tf.constant_initializer(0.2)
            net = tf.layers.dense(s, 8, activation=tf.nn.relu, kernel_initializer=init_w,
                                  name='l1', trainable=trainable)
            return tf.layers.dense(net, A_DIM, activation=tf.nn.tanh, kernel_initializer=init_w,
                                   name='a', trainable=trainable)

    def learn(self, s, a_grads):
        self.sess.run(self.train_op, feed_dict={self.s: s, self.action_gradient: a_grads})
        self.sess.run(self.soft_replace)

    def choose_action(self, s):
        return self.sess.run(self.a, feed_dict={self.s: s})


class Critic(object):
    def __init__(self, sess, lr):
        self.sess = sess
        self.s = tf.placeholder(tf.float32, [None, S_DIM], 's')
        self.a = tf.placeholder(tf.float32, [None, A_DIM], 'a')
        self.r = tf.placeholder(tf.float32, [None, 1], 'r')
        with tf.variable_scope('Critic'):
            w = tf.get_variable('w', [S_DIM + A_DIM, 1], initializer=tf.constant_initializer(0.1))
            self.q = tf.matmul(tf.concat([self.s, self.a], axis=1), w)
        self.loss = tf.reduce_mean(tf.square(self.r - self.q))
        self.train_op = tf.train.GradientDescentOptimizer(lr).minimize(self.loss)
        self.a_grads = tf.gradients(self.q, self.a)[0]

    def learn(self, s, a, r):
        self.sess.run(self.train_op, feed_dict={self.s: s, self.a: a, self.r: r})

    def action_gradients(self, s, a):
        return self.sess.run(self.a_grads, feed_dict={self.s: s, self.a: a})


rng = np.random.RandomState(3)
with tf.Session() as sess:
    actor = Actor(sess, 0.1)
    critic = Critic(sess, 0.05)
    sess.run(tf.global_variables_initializer())
    for step in range(5):
        s = rng.randn(4, S_DIM).astype(np.float32)
        r = rng.randn(4, 1).astype(np.float32)
        a = actor.choose_action(s)
        critic.learn(s, a, r)
        actor.learn(s, critic.action_gradients(s, a))
        print(step, a.sum(), critic.action_gradients(s, a).sum())
