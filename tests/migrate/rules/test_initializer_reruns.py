"""An initializer run again puts the variables back to their initial values.

``sess.run(tf.global_variables_initializer())`` once, before anything runs, is what
eager variables do by themselves: the session rule removes it. Run in a loop (a
trial per pass), again after training, or in a method other than ``__init__``
(``reset()``) beside another, it resets what training changed, and draws random
initial values again; eager code has no counterpart, so the file stays in compat
mode (TS115). One run in a method (``start()``) is the initialisation.
A second run that resets nothing (no variable changed, no initial value drawn) is
still removed.
"""


from rule_programs import findings, migrated, src as _src  # tests/support


TRIALS = _src("""
    import numpy as np
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [None, 1])
    w = tf.Variable(tf.zeros([1, 1]))
    loss = tf.reduce_sum(tf.square(tf.matmul(x, w) - 1.0))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        for trial in range(2):
            sess.run(tf.global_variables_initializer())
            for i in range(3):
                sess.run(train, feed_dict={x: np.ones((1, 1))})
            print(trial, sess.run(w))
""")


def test_an_initializer_run_at_each_pass_of_a_loop_is_not_removed():
    r = migrated(TRIALS)
    assert r.mode == "compat"
    assert ("TS115", 10, "the initializer runs in a loop, resetting the variables at each "
            "pass: not converted") in findings(r), findings(r)


def test_an_initializer_run_again_after_training_is_not_removed():
    src = TRIALS.replace("""    for trial in range(2):
        sess.run(tf.global_variables_initializer())
        for i in range(3):
            sess.run(train, feed_dict={x: np.ones((1, 1))})
        print(trial, sess.run(w))
""", """    sess.run(tf.global_variables_initializer())
    sess.run(train, feed_dict={x: np.ones((1, 1))})
    sess.run(tf.global_variables_initializer())
    print(sess.run(w))
""")
    assert src != TRIALS
    r = migrated(src)
    assert r.mode == "compat"
    assert ("TS115", 11, "the initializer runs again, resetting the variables to their "
            "initial values (not at the start of a new Session): not converted") in findings(r), findings(r)


def test_an_initializer_run_again_that_resets_nothing_is_removed():
    # no variable changes and no initial value is drawn: the second run changes nothing
    r = migrated(_src("""
        import tensorflow as tf

        w = tf.Variable([1.0, 2.0])
        y = tf.reduce_sum(w * w)
        g = tf.gradients(y, w)[0]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            print(sess.run(y))
            sess.run(tf.global_variables_initializer())
            print(sess.run(g))
    """))
    assert r.mode == "tape", findings(r)
    assert "initializer" not in r.output


def test_an_initializer_run_in_a_method_other_than_init_is_not_removed():
    r = migrated(_src("""
        import numpy as np
        import tensorflow as tf


        class Net:
            def __init__(self):
                self.x = tf.placeholder(tf.float32, [None, 1])
                self.w = tf.Variable(tf.zeros([1, 1]))
                self.loss = tf.reduce_sum(tf.square(tf.matmul(self.x, self.w) - 1.0))
                self.train = tf.train.GradientDescentOptimizer(0.1).minimize(self.loss)
                self.sess = tf.Session()
                self.sess.run(tf.global_variables_initializer())

            def reset(self):
                self.sess.run(tf.global_variables_initializer())

            def learn(self, x):
                return self.sess.run([self.train, self.loss], feed_dict={self.x: x})[1]


        net = Net()
        for trial in range(2):
            net.reset()
            print(trial, net.learn(np.ones((1, 1))))
    """))
    assert r.mode == "compat"
    assert ("TS115", 15, "the initializer runs again in `reset`, resetting the variables: "
            "not converted") in findings(r), findings(r)
