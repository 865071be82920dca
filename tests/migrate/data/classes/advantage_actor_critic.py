"""Advantage actor-critic classes sharing a session passed in, written the way
public TF1 agents are: the actor maximises by minimising a negated objective,
`minimize(-self.exp_v)`, and its `learn` builds the feed dict in a name first."""
import numpy as np
import tensorflow as tf

N_F, N_A, GAMMA = 4, 2, 0.9


class Actor(object):
    def __init__(self, sess, n_features, n_actions, lr=0.01):
        self.sess = sess
        self.s = tf.placeholder(tf.float32, [1, n_features], "state")
        self.a = tf.placeholder(tf.int32, None, "act")
        self.td_error = tf.placeholder(tf.float32, None, "td_error")  # TD_error

        with tf.variable_scope('Actor'):
            l1 = tf.layers.dense(self.s, 8, activation=tf.nn.relu,
                                 kernel_initializer=tf.constant_initializer(0.1), name='l1')
            self.acts_prob = tf.layers.dense(l1, n_actions, activation=tf.nn.softmax,
                                             kernel_initializer=tf.constant_initializer(0.2),
                                             name='acts_prob')

        with tf.variable_scope('exp_v'):
            log_prob = tf.log(self.acts_prob[0, self.a])
            self.exp_v = tf.reduce_mean(log_prob * self.td_error)  # advantage guided loss

        with tf.variable_scope('train'):
            self.train_op = tf.train.AdamOptimizer(lr).minimize(-self.exp_v)  # maximize(exp_v)

    def learn(self, s, a, td):
        s = s[np.newaxis, :]
        feed_dict = {self.s: s, self.a: a, self.td_error: td}
        _, exp_v = self.sess.run([self.train_op, self.exp_v], feed_dict)
        return exp_v

    def action_probabilities(self, s):
        return self.sess.run(self.acts_prob, {self.s: s[np.newaxis, :]})


class Critic(object):
    def __init__(self, sess, n_features, lr=0.05):
        self.sess = sess
        self.s = tf.placeholder(tf.float32, [1, n_features], "state")
        self.v_ = tf.placeholder(tf.float32, [1, 1], "v_next")
        self.r = tf.placeholder(tf.float32, None, 'r')
        with tf.variable_scope('Critic'):
            self.v = tf.layers.dense(self.s, 1, kernel_initializer=tf.constant_initializer(0.3),
                                     name='V')
        self.td_error = self.r + GAMMA * self.v_ - self.v
        self.loss = tf.square(self.td_error)
        self.train_op = tf.train.AdamOptimizer(lr).minimize(self.loss)

    def learn(self, s, r, s_):
        s, s_ = s[np.newaxis, :], s_[np.newaxis, :]
        v_ = self.sess.run(self.v, {self.s: s_})
        td_error, _ = self.sess.run([self.td_error, self.train_op],
                                    {self.s: s, self.v_: v_, self.r: r})
        return td_error


sess = tf.Session()
actor = Actor(sess, n_features=N_F, n_actions=N_A)
critic = Critic(sess, n_features=N_F)
sess.run(tf.global_variables_initializer())

rng = np.random.RandomState(0)
s = rng.randn(N_F).astype(np.float32)
for step in range(4):
    s_ = rng.randn(N_F).astype(np.float32)
    a = step % N_A
    td = critic.learn(s, float(step), s_)
    exp_v = actor.learn(s, a, td)
    print(step, float(np.squeeze(td)), float(exp_v), actor.action_probabilities(s_))
    s = s_
