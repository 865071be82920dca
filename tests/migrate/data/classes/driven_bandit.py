"""A contextual-bandit agent class run by module code's session.

Written for tapeshift's tests in the style of public TF1 tutorials: the class
builds placeholders, a tf-slim layer and the train op and holds no session;
module code makes one agent, lists its weights with tf.trainable_variables()
and runs it in `with tf.Session() as sess:`.
"""
import numpy as np
import tensorflow as tf
import tensorflow.contrib.slim as slim


class Agent():
    def __init__(self, lr, s_size, a_size):
        # the state, one-hot encoded, through one layer
        self.state_in = tf.placeholder(shape=[1], dtype=tf.int32)
        state_in_OH = slim.one_hot_encoding(self.state_in, s_size)
        output = slim.fully_connected(state_in_OH, a_size,
                                      biases_initializer=None, activation_fn=tf.nn.sigmoid,
                                      weights_initializer=tf.ones_initializer())
        self.output = tf.reshape(output, [-1])
        self.chosen_action = tf.argmax(self.output, 0)

        # the policy-gradient step
        self.reward_holder = tf.placeholder(shape=[1], dtype=tf.float32)
        self.action_holder = tf.placeholder(shape=[1], dtype=tf.int32)
        self.responsible_weight = tf.slice(self.output, self.action_holder, [1])
        self.loss = -(tf.log(self.responsible_weight) * self.reward_holder)
        optimizer = tf.train.GradientDescentOptimizer(learning_rate=lr)
        self.update = optimizer.minimize(self.loss)


bandits = np.array([[0.2, 0, -0.0, -5], [0.1, -5, 1, 0.25], [-5, 5, 5, 5]])
rng = np.random.RandomState(0)

tf.reset_default_graph()
myAgent = Agent(lr=0.1, s_size=3, a_size=4)
weights = tf.trainable_variables()[0]
init = tf.global_variables_initializer()

with tf.Session() as sess:
    sess.run(init)
    for i in range(40):
        s = rng.randint(0, 3)
        if rng.rand() < 0.2:
            action = rng.randint(4)
        else:
            action = sess.run(myAgent.chosen_action, feed_dict={myAgent.state_in: [s]})
        reward = 1 if rng.randn() > bandits[s, action] else -1
        feed_dict = {myAgent.reward_holder: [reward], myAgent.action_holder: [action],
                     myAgent.state_in: [s]}
        _, ww = sess.run([myAgent.update, weights], feed_dict=feed_dict)
        if i % 10 == 0:
            print(i, action, reward)
print(ww)
