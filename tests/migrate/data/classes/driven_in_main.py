"""An agent made and run by `main()`, which opens the session and passes it in.

Written for tapeshift's tests in the style of public TF1 tutorials: the class
holds no session; `main()` resets the graph, makes the agent, lists its
variables and opens the session; `predict(self, sess, x)` and
`train(self, sess, ...)` run it, `act` passes it on, and `main()` runs the
agent's loss itself.
"""
import numpy as np
import tensorflow as tf


class Agent:

    def __init__(self, learning_rate=0.05, contexts=3, actions=4):
        self.num_actions = actions

        self.reward_in = tf.placeholder(tf.float32, [1], name='reward_in')
        self.context_in = tf.placeholder(tf.int32, [1], name='context_in')
        self.action_in = tf.placeholder(tf.int32, [1], name='action_in')

        context_one_hot = tf.one_hot(self.context_in, contexts)
        W = tf.Variable(tf.fill([contexts, actions], 0.5), name='W')
        self.output = tf.nn.sigmoid(tf.matmul(context_one_hot, W))
        self.best_action = tf.argmax(self.output, axis=1)

        a_ = tf.reduce_sum(self.output * tf.one_hot(self.action_in, actions))
        self.loss = -(tf.log(a_) * self.reward_in)
        self.optimizer = tf.train.AdamOptimizer(
            learning_rate=learning_rate).minimize(self.loss)

    def predict(self, sess, context):
        return sess.run(self.best_action, {self.context_in: [context]})[0]

    def act(self, sess, epsilon, context, rng):
        if rng.rand() < epsilon:
            return rng.randint(self.num_actions)
        return self.predict(sess, context)

    def train(self, sess, context, action, reward):
        sess.run(self.optimizer, {
            self.action_in: [action],
            self.reward_in: [reward],
            self.context_in: [context]
        })


def main():
    bandits = np.array([[0.2, 0, -0.0, -5], [0.1, -5, 1, 0.25], [-5, 5, 5, 5]])
    rng = np.random.RandomState(1)
    tf.reset_default_graph()
    agent = Agent()
    n_variables = len(tf.trainable_variables())

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for ep in range(60):
            context = rng.randint(0, 3)
            action = agent.act(sess, 0.2, context, rng)
            reward = 1 if rng.randn() > bandits[context, action] else -1
            agent.train(sess, context, action, reward)
            if ep % 10 == 0:
                loss = sess.run(agent.loss, {
                    agent.action_in: [action],
                    agent.reward_in: [reward],
                    agent.context_in: [context]
                })
                print('Step {}, Loss={}'.format(ep, loss))
        print(n_variables, agent.predict(sess, 0), agent.predict(sess, 1), agent.predict(sess, 2))


if __name__ == '__main__':
    main()
