"""An optimizer a class makes in a local of ``__init__`` is kept on the object.

``optimizer = tf.train.AdamOptimizer(lr)`` then ``self.train = optimizer.minimize(self.loss)``:
TF1's graph keeps the optimizer's slots and step count between runs. Made again in
the step method, eager code would start them anew at every step, so Adam's numbers
would differ from the second step on. The local becomes ``self.optimizer``, made
once where it was (class_variable_locals.py). Where it cannot move, the file
stays compat (TS107).
"""

import pytest

from rule_programs import (assert_left_compat, codes, migrated, src as _src,
                           verified_prints)  # tests/support

AGENT = _src("""
    import numpy as np
    import tensorflow as tf


    class Agent(object):
        def __init__(self, lr):
            self.sess = tf.Session()
            self.x = tf.placeholder(tf.float32, [None, 2])
            self.y = tf.placeholder(tf.float32, [None, 1])
            self.W = tf.Variable([[0.5], [-0.3]])
            self.loss = tf.reduce_mean(tf.square(tf.matmul(self.x, self.W) - self.y))
            optimizer = tf.train.AdamOptimizer(lr)
            self.train = optimizer.minimize(self.loss)
            self.sess.run(tf.global_variables_initializer())

        def learn(self, xs, ys):
            l, _ = self.sess.run([self.loss, self.train], {self.x: xs, self.y: ys})
            return l


    agent = Agent(0.1)
    xs = np.array([[1.0, 2.0], [0.5, -1.0]], np.float32)
    ys = np.array([[1.0], [0.0]], np.float32)
    for i in range(5):
        print(agent.learn(xs, ys))
""")


def test_an_optimizer_in_a_local_is_made_once_on_the_object():
    r = migrated(AGENT)
    assert r.mode == "tape", codes(r)
    assert "        self.optimizer = tf.compat.v1.train.AdamOptimizer(lr)\n" in r.output
    assert "        self.optimizer.apply_gradients(" in r.output
    # made nowhere else: not in the step method
    assert r.output.count("AdamOptimizer(") == 1
    assert any(c.rule == "class-variable-locals" and "the optimizer `optimizer`" in c.description
               for c in r.changes), r.changes


def test_an_optimizer_local_that_cannot_move_stays_compat():
    # bound twice: which binding the step reads is not one name on the object
    assert_left_compat(AGENT, ("        optimizer = tf.train.AdamOptimizer(lr)\n",
                               "        optimizer = tf.train.AdamOptimizer(lr)\n"
                               "        optimizer = tf.train.AdamOptimizer(lr / 2)\n"),
                       "TS107", "would be made again at each call of a step method")


@pytest.mark.tf
@pytest.mark.slow
def test_the_optimizer_kept_on_the_object_keeps_the_legacy_numbers(tmp_path):
    # (before, the step method made a new Adam at each call: steps 3 to 5 differed)
    assert len(verified_prints(AGENT, tmp_path / "agent.py")) == 5
