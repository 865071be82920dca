"""A model class whose variable scope is its constructor's name (hunkim's MNIST CNN class)."""
import numpy as np
import tensorflow as tf

tf.set_random_seed(777)


class Model:

    def __init__(self, sess, name):
        self.sess = sess
        self.name = name
        self._build_net()

    def _build_net(self):
        with tf.variable_scope(self.name):
            self.X = tf.placeholder(tf.float32, [None, 4])
            self.Y = tf.placeholder(tf.float32, [None, 3])
            W1 = tf.get_variable("W1", shape=[4, 8],
                                 initializer=tf.contrib.layers.xavier_initializer(seed=1))
            L1 = tf.nn.relu(tf.matmul(self.X, W1))
            W2 = tf.get_variable("W2", shape=[8, 3],
                                 initializer=tf.contrib.layers.xavier_initializer(seed=2))
            self.logits = tf.matmul(L1, W2)
        self.cost = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(
            logits=self.logits, labels=self.Y))
        self.optimizer = tf.train.AdamOptimizer(learning_rate=0.01).minimize(self.cost)
        correct = tf.equal(tf.argmax(self.logits, 1), tf.argmax(self.Y, 1))
        self.accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))

    def predict(self, x_test):
        return self.sess.run(self.logits, feed_dict={self.X: x_test})

    def get_accuracy(self, x_test, y_test):
        return self.sess.run(self.accuracy, feed_dict={self.X: x_test, self.Y: y_test})

    def train(self, x_data, y_data):
        return self.sess.run([self.cost, self.optimizer], feed_dict={
            self.X: x_data, self.Y: y_data})


sess = tf.Session()
m1 = Model(sess, "m1")
sess.run(tf.global_variables_initializer())
rng = np.random.RandomState(0)
x = rng.randn(16, 4).astype(np.float32)
y = np.eye(3, dtype=np.float32)[rng.randint(0, 3, 16)]
for step in range(5):
    c, _ = m1.train(x, y)
    print(step, c)
print("Accuracy:", m1.get_accuracy(x, y))
