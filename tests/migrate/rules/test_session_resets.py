"""An initializer run again in a new session -> each variable assigned its initial value.

Tutorials (the deeplearning.ai TensorFlow exercise among them) train a graph twice
from scratch, each time in a new ``with tf.Session()`` that runs the initializer
first. Eager variables get their value once: the second run of the initializer
becomes ``w.assign(<initial value>)`` per variable. Tests: the exact output, the
programs it leaves in compat form and why (random or changing initial values,
optimizers with slots, layers), and the legacy numbers.
"""

import pytest

from rule_programs import codes, findings, migrated, src as _src, verified_prints  # tests/support

SCRIPT = _src("""
    import numpy as np
    import tensorflow as tf

    coefficients = np.array([[1.], [-10.], [25.]])
    start = np.array([0.5, -0.5], np.float32)
    w = tf.Variable(0, dtype=tf.float32)
    v = tf.Variable(start)
    x = tf.placeholder(tf.float32, [3, 1])
    cost = x[0][0] * w**2 + x[1][0] * w + x[2][0] + tf.reduce_sum(v * v)
    train = tf.train.GradientDescentOptimizer(0.01).minimize(cost)
    init = tf.global_variables_initializer()

    with tf.Session() as session:
        session.run(init)
        session.run(train, feed_dict={x: coefficients})
        print(session.run(w), session.run(v))

    with tf.Session() as session:
        session.run(init)
        for i in range(100):
            session.run(train, feed_dict={x: coefficients})
        print(session.run(w), session.run(v))
""")


def test_the_second_initializer_run_assigns_the_values_the_first_gave():
    r = migrated(SCRIPT)
    assert r.mode == "tape", codes(r)
    assert codes(r) == []
    assert _src("""
        # the variables' initial values, which TF1's initializer gives them again
        w_initial = w.numpy()
        v_initial = v.numpy()
        run_train(x=coefficients)
        print(w.numpy(), v.numpy())

        # a new Session: TF1's initializer started the variables again
        w.assign(w_initial)
        v.assign(v_initial)
        for i in range(100):
            run_train(x=coefficients)
        print(w.numpy(), v.numpy())
    """) in r.output
    assert r.output.count("def run_train(x):") == 1
    assert any("each variable assigned the initial value its first run gave" in c.description
               for c in r.changes)
    assert not migrated(r.output).changed


#: what TF1's initializer gives again that computing the initial value again would
#: not: Python's part of it, kept as a constant when the graph was built
KEPT = [
    # an array changed in place between the sessions
    ("    print(session.run(w), session.run(v))\n\nwith",
     "    print(session.run(w), session.run(v))\n\nstart.fill(3.0)\n\nwith"),
    # NumPy's draws
    ("v = tf.Variable(start)\n", "np.random.seed(3)\nv = tf.Variable(np.random.rand(2).astype(np.float32))\n"),
    # a callable initial value
    ("v = tf.Variable(start)\n", "v = tf.Variable(lambda: tf.constant([0.5, -0.5]))\n"),
]


@pytest.mark.parametrize("change", KEPT, ids=["changed-in-place", "numpy-random", "callable"])
def test_python_values_are_kept_not_computed_again(change):
    assert change[0] in SCRIPT
    r = migrated(SCRIPT.replace(*change))
    assert r.mode == "tape", codes(r)
    assert "\nv.assign(v_initial)\n" in r.output


@pytest.mark.parametrize("change, why", [
    (("tf.Variable(0, dtype=tf.float32)", "tf.Variable(tf.random_normal([]))"),
     "the initial value of `w` is random: TF1 draws it again"),
    # noise in the training graph: seeded, each new TF1 session draws the same again
    (("cost = x[0][0]", "cost = tf.reduce_sum(tf.random_normal([2], seed=1) * v) + x[0][0]"),
     "tf.random_normal: a new TF1 session draws its numbers again from the start"),
    (("tf.train.GradientDescentOptimizer(0.01)", "tf.train.AdamOptimizer(0.01)"),
     "keeps slots, which TF1's initializer starts again too"),
    (("v = tf.Variable(start)\n", "v = tf.Variable(start)\nextra = [tf.Variable(1.0, trainable=False)]\n"),
     "a variable other than `name = tf.Variable(value)` at module level"),
    (("cost = x[0][0]", "cost = tf.reduce_sum(tf.layers.dense(x, 1)) + x[0][0]"),
     "may make variables the codemod does not see"),
    # a model an imported function builds: its variables are not in this file
    (("cost = x[0][0]", "cost = tf.reduce_sum(head(x)) + x[0][0]"),
     "`head(...)` may make variables the codemod does not see"),
    # run again in the same session, or only some variables': no new session starts
    (("        session.run(train, feed_dict={x: coefficients})\n    print(",
      "        session.run(train, feed_dict={x: coefficients})\n    session.run(init)\n    print("),
     "not at the start of a new Session"),
    (("with tf.Session() as session:\n    session.run(init)\n    for",
      "with tf.Session() as session:\n    session.run(tf.variables_initializer([v]))\n    for"),
     "is not the initializer of every variable"),
    (("with tf.Session() as session:\n    session.run(init)\n    for",
      "with tf.Session() as session:\n    session.run(tf.local_variables_initializer())\n    for"),
     "is not the initializer of every variable"),
])
def test_variables_it_cannot_put_back_keep_compat_form(change, why):
    assert change[0] in SCRIPT
    r = migrated(SCRIPT.replace(*change))
    assert r.mode == "compat"
    assert any(code == "TS115" and "the initializer runs again" in message and why in message
               for code, _, message in findings(r)), findings(r)


@pytest.mark.tf
@pytest.mark.slow
@pytest.mark.parametrize("change", [("", ""), *KEPT], ids=["as-written", "changed-in-place",
                                                          "numpy-random", "callable"])
def test_the_reset_program_computes_the_legacy_numbers(tmp_path, change):
    program = SCRIPT.replace(*change) if change[0] else SCRIPT
    assert len(verified_prints(program, tmp_path / "again.py")) == 2
