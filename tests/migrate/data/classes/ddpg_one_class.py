"""A DDPG agent in one class, as public Pendulum agents write it: the session opened
before the graph, a variable kept in a local of __init__, the actor's and the critic's
target networks updated by one list of rows of soft updates, the critic trained on
stored actions fed in place of the actor's."""
import numpy as np
import tensorflow as tf

S_DIM, A_DIM, TAU, GAMMA = 3, 1, 0.1, 0.9


class DDPG(object):
    def __init__(self, a_bound):
        self.sess = tf.Session()

        self.a_bound = a_bound
        self.S = tf.placeholder(tf.float32, [None, S_DIM], 's')
        self.S_ = tf.placeholder(tf.float32, [None, S_DIM], 's_')
        self.R = tf.placeholder(tf.float32, [None, 1], 'r')
        # how far the critic looks ahead
        discount = tf.Variable(GAMMA, trainable=False)

        with tf.variable_scope('Actor'):
            self.a = self._build_actor(self.S, scope='eval', trainable=True)
            a_ = self._build_actor(self.S_, scope='target', trainable=False)
        with tf.variable_scope('Critic'):
            self.q = self._build_critic(self.S, self.a, scope='eval', trainable=True)
            q_ = self._build_critic(self.S_, a_, scope='target', trainable=False)

        self.ae_params = tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, scope='Actor/eval')
        self.at_params = tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, scope='Actor/target')
        self.ce_params = tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, scope='Critic/eval')
        self.ct_params = tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, scope='Critic/target')

        self.soft_replace = [[tf.assign(ta, (1 - TAU) * ta + TAU * ea),
                              tf.assign(tc, (1 - TAU) * tc + TAU * ec)]
                             for ta, ea, tc, ec in zip(self.at_params, self.ae_params,
                                                       self.ct_params, self.ce_params)]

        q_target = self.R + discount * q_
        td_error = tf.reduce_mean(tf.square(q_target - self.q))
        self.ctrain = tf.train.GradientDescentOptimizer(0.05).minimize(td_error, var_list=self.ce_params)
        a_loss = - tf.reduce_mean(self.q)
        self.atrain = tf.train.GradientDescentOptimizer(0.02).minimize(a_loss, var_list=self.ae_params)

        self.sess.run(tf.global_variables_initializer())

    def choose_action(self, s):
        return self.sess.run(self.a, {self.S: s[np.newaxis, :]})[0]

    def value(self, s, a=None):
        if a is None:  # of the actor's action
            return self.sess.run(self.q, {self.S: s})
        return self.sess.run(self.q, {self.S: s, self.a: a})

    def learn(self, bs, ba, br, bs_):
        replaced = self.sess.run(self.soft_replace)
        self.sess.run(self.atrain, {self.S: bs})
        self.sess.run(self.ctrain, {self.S: bs, self.a: ba, self.R: br, self.S_: bs_})
        return replaced

    def _build_actor(self, s, scope, trainable):
        with tf.variable_scope(scope):
            init = tf.constant_initializer(0.1)
            net = tf.layers.dense(s, 6, activation=tf.nn.relu, kernel_initializer=init,
                                  name='l1', trainable=trainable)
            a = tf.layers.dense(net, A_DIM, activation=tf.nn.tanh, kernel_initializer=init,
                                name='a', trainable=trainable)
            return tf.multiply(a, self.a_bound, name='scaled_a')

    def _build_critic(self, s, a, scope, trainable):
        with tf.variable_scope(scope):
            init = tf.constant_initializer(0.05)
            n_l1 = 6
            w1_s = tf.get_variable('w1_s', [S_DIM, n_l1], initializer=init, trainable=trainable)
            w1_a = tf.get_variable('w1_a', [A_DIM, n_l1], initializer=init, trainable=trainable)
            b1 = tf.get_variable('b1', [1, n_l1], initializer=init, trainable=trainable)
            net = tf.nn.relu(tf.matmul(s, w1_s) + tf.matmul(a, w1_a) + b1)
            return tf.layers.dense(net, 1, kernel_initializer=init, trainable=trainable)


rng = np.random.RandomState(0)
ddpg = DDPG(a_bound=2.0)
for step in range(4):
    bs = rng.randn(8, S_DIM).astype(np.float32)
    ba = rng.randn(8, A_DIM)  # float64, converted as TF1 converts a feed
    br = rng.randn(8, 1).astype(np.float32)
    bs_ = rng.randn(8, S_DIM).astype(np.float32)
    replaced = ddpg.learn(bs, ba, br, bs_)
    print(step, ddpg.choose_action(bs[0]), len(replaced), replaced[0][1].sum())
    print(ddpg.value(bs).sum(), ddpg.value(bs, ba).sum())
