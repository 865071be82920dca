"""A session passed to a helper function: its runs call the step functions, the parameter goes.

``def evaluate(session, data): return session.run(pred, {x: data})`` called as
``evaluate(sess, test_x)``: eager code has no session to pass, so the helper loses
the parameter and each call the argument. Tests: the exact output (a helper called
by position and by keyword, before and after the session opens), the helpers it
leaves in compat form and why, and the legacy numbers (with the session in ``main()``).
"""

import pytest

from rule_programs import codes, findings, migrated, src as _src, verified_prints  # tests/support

SCRIPT = _src("""
    import numpy as np
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [None, 2])
    y = tf.placeholder(tf.float32, [None, 1])
    W = tf.Variable([[0.5], [-0.5]])
    pred = tf.matmul(x, W)
    loss = tf.reduce_mean(tf.square(pred - y))
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)


    def evaluate(session, data, target):
        return session.run(loss, {x: data, y: target})


    def fit(data, session, steps=3):
        for _ in range(steps):
            session.run(train_op, feed_dict={x: data, y: data[:, :1] - data[:, 1:]})


    def main():
        data = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]], np.float32)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            print(evaluate(sess, data, data[:, :1]))
            fit(data, session=sess)
            print(evaluate(sess, data, target=data[:, :1]))
            print(sess.run(W))


    if __name__ == "__main__":
        main()
""")


def test_the_helpers_lose_the_session_and_call_the_step_functions():
    r = migrated(SCRIPT)
    assert r.mode == "tape", codes(r)
    assert codes(r) == []
    out = r.output
    assert '''
def evaluate(data, target):
    return run_loss(x=data, y=target)


def fit(data, steps=3):
    for _ in range(steps):
        run_train_op(x=data, y=data[:, :1] - data[:, 1:])
''' in out
    assert '''
def main():
    data = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]], np.float32)
    print(evaluate(data, data[:, :1]))
    fit(data)
    print(evaluate(data, target=data[:, :1]))
    print(W.numpy())
''' in out
    assert "session" not in out and "sess" not in out.replace('"""sess.run(', "")
    assert [c.description for c in r.changes if "no longer takes the session" in c.description] == [
        "`evaluate` no longer takes the session `session`: its runs call the step functions",
        "`fit` no longer takes the session `session`: its runs call the step functions"]
    assert not migrated(out).changed


def test_a_helper_of_a_module_level_session():
    source = _src("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [None])
        w = tf.Variable(2.0)
        y = x * w


        def show(s, v):
            print(s.run(y, feed_dict={x: v}))


        sess = tf.Session()
        sess.run(tf.global_variables_initializer())
        show(sess, [1.0, 2.0])
    """)
    r = migrated(source)
    assert r.mode == "tape", codes(r)
    assert "def show(v):\n    print(run_y(x=v))\n" in r.output
    assert r.output.endswith("show([1.0, 2.0])\n")


@pytest.mark.parametrize("change, why", [
    # the helper runs something no step function computes: it would have no session
    (("    return session.run(loss, {x: data, y: target})\n",
      "    session.run(tf.global_variables_initializer())\n"
      "    return session.run(loss, {x: data, y: target})\n"),
     "`session`, the session passed to `evaluate`, runs what no step function computes"),
    # the parameter is used otherwise than to run it: its runs stay, of graph values
    (("    return session.run(loss, {x: data, y: target})\n",
      "    print(session)\n    return session.run(loss, {x: data, y: target})\n"),
     "`loss` is a graph value used outside the graph code other than by sess.run"),
    # called with something else than the session
    (("        fit(data, session=sess)\n",
      "        fit(data, session=tf.Session())\n"), ""),
    # passed as a value
    (("        fit(data, session=sess)\n",
      "        fit(data, session=sess)\n        hook = fit\n"),
     "`train_op` is a graph value used outside the graph code other than by sess.run"),
])
def test_a_helper_it_cannot_follow_keeps_compat_form(change, why):
    assert change[0] in SCRIPT
    r = migrated(SCRIPT.replace(*change))
    assert r.mode == "compat"
    assert any(why in message for code, _, message in findings(r) if code in ("TS106", "TS107")), \
        findings(r)


@pytest.mark.tf
@pytest.mark.slow
def test_the_helpers_compute_the_legacy_numbers(tmp_path):
    assert len(verified_prints(SCRIPT, tmp_path / "helpers.py")) == 3  # the loss before and after, W
