"""DDPG-style actor and critic classes sharing one session passed in; soft target updates."""
import numpy as np
import tensorflow as tf

S_DIM, A_DIM, TAU = 3, 2, 0.1


class Actor:
    def __init__(self, lr):
        self.lr = lr
        self.s = tf.placeholder(tf.float32, [None, S_DIM], 's')
        with tf.variable_scope('Actor'):
            self.a = self._build_net(self.s, scope='eval_net', trainable=True)
            self.a_ = self._build_net(self.s, scope='target_net', trainable=False)
        self.e_params = tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, scope='Actor/eval_net')
        self.t_params = tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, scope='Actor/target_net')
        self.soft_replace = [tf.assign(t, (1 - TAU) * t + TAU * e)
                             for t, e in zip(self.t_params, self.e_params)]
        self.loss = tf.reduce_mean(tf.square(self.a - 0.5))
        self.train_op = tf.train.GradientDescentOptimizer(self.lr).minimize(self.loss, var_list=self.e_params)
        self.sess = tf.Session()
        self.sess.run(tf.global_variables_initializer())

    def _build_net(self, s, scope, trainable):
        with tf.variable_scope(scope):
            init_w = tf.constant_initializer(0.2)
            net = tf.layers.dense(s, 8, activation=tf.nn.relu, kernel_initializer=init_w,
                                  name='l1', trainable=trainable)
            return tf.layers.dense(net, A_DIM, activation=tf.nn.tanh, kernel_initializer=init_w,
                                   name='a', trainable=trainable)

    def learn(self, s):
        self.sess.run(self.train_op, feed_dict={self.s: s})
        self.sess.run(self.soft_replace)

    def choose_action(self, s):
        return self.sess.run(self.a, feed_dict={self.s: s[np.newaxis, :]})[0]

    def target_action(self, s):
        return self.sess.run(self.a_, feed_dict={self.s: s})


rng = np.random.RandomState(3)
actor = Actor(0.1)
for step in range(5):
    batch = rng.randn(4, S_DIM).astype(np.float32)
    actor.learn(batch)
    print(step, actor.choose_action(batch[0]), actor.target_action(batch).sum())
