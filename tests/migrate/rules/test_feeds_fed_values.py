"""A graph value fed in place of its computation -> a parameter of its own step function.

``sess.run(train_critic, {s: states, a: actions})`` where ``a`` is the actor's
output, not a placeholder: TF1 uses the fed actions wherever the graph reads ``a``
and does not compute it. Tests: the exact output of a module-level program (a
run of the same fetches without the feed keeps a function of its own), the
tensors it does not convert and why (a run that trains what the fed value is
computed from: TF1 differentiates through it), and the legacy numbers.
"""

import pytest

from rule_programs import codes, findings, migrated, src as _src, verified_prints  # tests/support

SCRIPT = _src("""
    import numpy as np
    import tensorflow as tf

    s = tf.placeholder(tf.float32, [None, 2])
    W_actor = tf.Variable([[0.5], [-0.25]])
    W_critic = tf.Variable([[0.1], [0.2], [0.3]])
    a = tf.tanh(tf.matmul(s, W_actor))
    q = tf.matmul(tf.concat([s, a], 1), W_critic)
    loss = tf.reduce_mean(tf.square(q - 1.0))
    train_critic = tf.train.GradientDescentOptimizer(0.1).minimize(loss, var_list=[W_critic])

    S = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)
    A = np.array([[0.5], [-0.5]])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(3):
            sess.run(train_critic, {s: S, a: A})
            print(step, sess.run(q, {s: S}), sess.run(q, {s: S, a: A}))
        final = sess.run(W_critic)
""")


def test_a_fed_graph_value_is_a_parameter_and_is_not_computed():
    r = migrated(SCRIPT)
    assert r.mode == "tape", codes(r)
    assert codes(r) == []
    out = r.output
    assert '''def run_train_critic_given_a(s, a):
    """sess.run(train_critic) with a fed (not computed) as a function of the fed values."""
    s = tf.convert_to_tensor(s, tf.float32)
    a = tf.convert_to_tensor(a, tf.float32)
    with tf.GradientTape() as tape:
        q = tf.matmul(tf.concat([s, a], 1), W_critic)
''' in out
    # the same fetches, fed otherwise: a function each, the actor computed in one only
    assert '''def run_q(s):
    """sess.run(q) as a function of the fed values."""
    s = tf.convert_to_tensor(s, tf.float32)
    a = tf.tanh(tf.matmul(s, W_actor))
    q = tf.matmul(tf.concat([s, a], 1), W_critic)
    return q.numpy()
''' in out
    assert "def run_q_given_a(s, a):\n" in out
    assert "run_train_critic_given_a(s=S, a=A)" in out
    assert "print(step, run_q(s=S), run_q_given_a(s=S, a=A))" in out
    assert not migrated(out).changed


@pytest.mark.parametrize("change, why", [
    # an integer tensor: converting the feed to float32 would be wrong
    (("a = tf.tanh(tf.matmul(s, W_actor))", "a = tf.argmax(tf.matmul(s, W_actor), 1)"),
     "computed by `tf.argmax`, whose dtype the codemod cannot tell"),
    # a float64 graph
    (("s = tf.placeholder(tf.float32, [None, 2])", "s = tf.placeholder(tf.float64, [None, 2])"),
     "computed from the placeholder `s` of dtype tf.float64"),
    # fed and fetched by one run
    (("sess.run(train_critic, {s: S, a: A})", "sess.run([train_critic, a], {s: S, a: A})"),
     "`a` is fed and fetched by one run"),
    # trained through the fed value: TF1 differentiates through it, eager code cannot
    (("var_list=[W_critic]", "var_list=[W_critic, W_actor]"),
     "this run feeds a and takes gradients for variables they are computed from"),
    (("var_list=[W_critic]", "var_list=[W_actor]"),
     "this run feeds a and takes gradients for variables they are computed from"),
    ((", var_list=[W_critic]", ""),  # TF1's default: every trainable variable
     "this run feeds a and takes gradients for variables they are computed from"),
    # a variable is no graph value to feed
    (("sess.run(train_critic, {s: S, a: A})", "sess.run(train_critic, {s: S, W_actor: A})"),
     "feeding `W_actor`, which is not a placeholder or a tensor of this graph"),
])
def test_a_fed_tensor_it_cannot_convert_keeps_compat_form(change, why):
    r = migrated(SCRIPT.replace(*change))
    assert r.mode == "compat"
    assert any(code == "TS107" and why in message for code, _, message in findings(r)), findings(r)


@pytest.mark.tf
@pytest.mark.slow
def test_the_fed_value_program_computes_the_legacy_numbers(tmp_path):
    assert len(verified_prints(SCRIPT, tmp_path / "fed.py")) == 3
