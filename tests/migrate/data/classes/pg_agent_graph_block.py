"""A policy-gradient agent sharing a session opened with a fresh graph in main().

Written for tapeshift's tests in the style of public TF1 agents: tf.contrib.layers
in the constructor, the session passed in and kept, ``with tf.Graph().as_default(),
tf.Session() as sess:`` around the driver.
"""
import numpy as np
import tensorflow as tf


class PolicyAgent(object):

    def __init__(self, hparams, sess):

        # initialization
        self._s = sess

        # build the graph
        self._input = tf.placeholder(tf.float32,
                shape=[None, hparams['input_size']])

        hidden = tf.contrib.layers.fully_connected(
                inputs=self._input,
                num_outputs=hparams['hidden_size'],
                activation_fn=tf.nn.tanh,
                weights_initializer=tf.constant_initializer(0.1))

        logits = tf.contrib.layers.fully_connected(
                inputs=hidden,
                num_outputs=hparams['num_actions'],
                activation_fn=None,
                weights_initializer=tf.constant_initializer(-0.2))

        # op to pick the best action
        self._best = tf.argmax(logits, axis=1)

        # get log probabilities
        log_prob = tf.log(tf.nn.softmax(logits))

        # training part of graph
        self._acts = tf.placeholder(tf.int32)
        self._advantages = tf.placeholder(tf.float32)

        # log probs of the actions taken
        indices = tf.range(0, tf.shape(log_prob)[0]) * tf.shape(log_prob)[1] + self._acts
        act_prob = tf.gather(tf.reshape(log_prob, [-1]), indices)

        # surrogate loss
        self.loss = -tf.reduce_sum(tf.multiply(act_prob, self._advantages))

        # update
        optimizer = tf.train.RMSPropOptimizer(hparams['learning_rate'])
        self._train = optimizer.minimize(self.loss)

    def act(self, observation):
        return self._s.run(self._best, feed_dict={self._input: [observation]})

    def train_step(self, obs, acts, advantages):
        batch_feed = {self._input: obs,
                      self._acts: acts,
                      self._advantages: advantages}
        loss, _ = self._s.run([self.loss, self._train], feed_dict=batch_feed)
        return loss


def main():
    hparams = {'input_size': 4, 'hidden_size': 6, 'num_actions': 3, 'learning_rate': 0.05}
    rng = np.random.RandomState(0)
    obs = rng.uniform(-1, 1, size=(12, 4)).astype(np.float32)
    acts = rng.randint(0, 3, size=12)
    advantages = rng.normal(size=12).astype(np.float32)

    with tf.Graph().as_default(), tf.Session() as sess:

        agent = PolicyAgent(hparams, sess)

        sess.run(tf.global_variables_initializer())

        for step in range(4):
            print('step', step, 'action', agent.act(obs[step]))
            print('loss', agent.train_step(obs, acts, advantages))


if __name__ == "__main__":
    main()
