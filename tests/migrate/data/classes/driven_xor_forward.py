"""An XOR network class whose weights come from a helper method and whose forward
pass is a method called twice.

Written for tapeshift's tests in the style of public TF1 tutorials: `__init__`
makes its weights with `self.init_weights(shape)`, which returns a new
tf.Variable, builds the loss on `self.forward(x)` and the prediction on
`self.forward(x, train=False)`; module code runs it in a session.
"""
import numpy as np
import tensorflow as tf


class Model:
    def __init__(self):
        self.W1 = self.init_weights([2, 5])
        self.b1 = self.init_weights([5])
        self.w2 = self.init_weights([5, 1])
        self.b2 = self.init_weights([1])

        self.input_ph = tf.placeholder(tf.float32, shape=(None, 2))
        self.label_ph = tf.placeholder(tf.float32, shape=(None, 1))
        self.logits = self.forward(self.input_ph)
        self.loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
            labels=self.label_ph, logits=self.logits))
        self.train = tf.train.AdamOptimizer(0.1).minimize(self.loss)
        self.prediction = self.forward(self.input_ph, train=False)

    def init_weights(self, shape):
        return tf.Variable(np.linspace(-1.0, 1.0, np.prod(shape)).reshape(shape).astype(np.float32))

    def forward(self, X, train=True):
        Z1 = tf.nn.sigmoid(tf.matmul(X, self.W1) + self.b1)
        Z2 = tf.matmul(Z1, self.w2) + self.b2
        if train:
            return Z2
        return tf.nn.sigmoid(Z2)


model = Model()
X = np.array([[0, 0], [1, 1], [1, 0], [0, 1]])
y = np.array([[0], [0], [1], [1]])
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for epoch in range(60):
        sess.run(model.train, feed_dict={model.input_ph: X, model.label_ph: y})
        if epoch % 10 == 0:
            print(epoch, sess.run(model.loss, feed_dict={model.input_ph: X, model.label_ph: y}))
    print(sess.run(model.prediction, feed_dict={model.input_ph: X}))
