"""A graph value some values of a named feed dict feed and others do not: an RNN's state.

MorvanZhou's RNN regression starts from the cell's zero state and then feeds back the
final state of the last run: ``feed_dict = {x: a}`` the first time, ``{x: a,
init_s: final_s_}`` after, and one ``sess.run(fetches, feed_dict)``. The step
function takes ``init_s=None`` and computes the zero state only when it is not
given. Tests: the exact output, what stays compat and why, the legacy numbers.
"""

import pytest

from rule_programs import assert_left_compat, codes, migrated, src as _src, verified_prints  # tests/support

STATE_FED_BACK = _src("""
    import numpy as np
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [None, 4, 1])
    y = tf.placeholder(tf.float32, [None, 4, 1])
    cell = tf.nn.rnn_cell.BasicRNNCell(num_units=3)
    init_s = cell.zero_state(batch_size=1, dtype=tf.float32)  # the first state
    outputs, final_s = tf.nn.dynamic_rnn(cell, x, initial_state=init_s)
    loss = tf.reduce_mean(tf.square(tf.reduce_sum(outputs, 2, keepdims=True) - y))
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    for step in range(3):
        t = np.linspace(step, step + 1, 4)
        if step == 0:
            feed_dict = {x: np.sin(t)[None, :, None], y: np.cos(t)[None, :, None]}
        else:
            feed_dict = {x: np.sin(t)[None, :, None], y: np.cos(t)[None, :, None], init_s: state}
        _, l, state = sess.run([train_op, loss, final_s], feed_dict)
        print(step, l, state)
""")


def test_a_state_fed_back_is_computed_only_when_not_given():
    r = migrated(STATE_FED_BACK)
    assert r.mode == "tape", codes(r)
    out = r.output
    assert '''
def run_train_op_loss_final_s(x, y, init_s=None):
    """sess.run([train_op, loss, final_s]) as a function of the fed values."""
    x = tf.convert_to_tensor(x, tf.float32)
    y = tf.convert_to_tensor(y, tf.float32)
    with tf.GradientTape() as tape:
        if init_s is None:
            init_s = cell.zero_state(batch_size=1, dtype=tf.float32)  # the first state
        else:
            init_s = tf.convert_to_tensor(init_s, tf.float32)
        outputs, final_s = tf.compat.v1.nn.dynamic_rnn(cell, x, initial_state=init_s)
''' in out
    assert '''
    if step == 0:
        feed_dict = {"x": np.sin(t)[None, :, None], "y": np.cos(t)[None, :, None]}
    else:
        feed_dict = {"x": np.sin(t)[None, :, None], "y": np.cos(t)[None, :, None], "init_s": state}
    _, l, state = run_train_op_loss_final_s(**feed_dict)
''' in out
    assert "tf.Session" not in out and "placeholder" not in out
    assert not migrated(out).changed


@pytest.mark.parametrize("change, why", [
    # an LSTM's state is a tuple (c, h): one conversion would stack it
    (("tf.nn.rnn_cell.BasicRNNCell(num_units=3)", "tf.nn.rnn_cell.BasicLSTMCell(num_units=3)"),
     "feeding `init_s`, computed by `cell.zero_state`, whose dtype the codemod cannot tell"),
    # a state of another dtype than the float32 the step function converts to
    (("dtype=tf.float32)  # the first state", "dtype=tf.float64)  # the first state"),
     "feeding `init_s`, computed by `cell.zero_state`, whose dtype the codemod cannot tell"),
    # a learned first state: TF1 differentiates through the fed value, eager code not
    (("init_s = cell.zero_state(batch_size=1, dtype=tf.float32)  # the first state",
      "h0 = tf.Variable(tf.zeros([1, 3]))\ninit_s = tf.tanh(h0 + tf.reduce_mean(x))"),
     "this run feeds init_s and takes gradients for variables they are computed from"),
])
def test_a_state_it_cannot_feed_keeps_compat_form(change, why):
    assert_left_compat(STATE_FED_BACK, change, "TS107", why)


@pytest.mark.tf
@pytest.mark.slow
def test_the_state_fed_back_keeps_the_legacy_numbers(tmp_path):
    # (plain gradient descent over 3 steps: an RNN's gradient sums over the time steps
    # in another order in a TF1 graph than on a tape, 1 ulp, which Adam and long
    # training would magnify: docs/tape-rate.md; the cell's random initial kernel drawn
    # alike in both runs)
    prints = verified_prints(STATE_FED_BACK, tmp_path / "state.py", seed=0, align_random=True)
    assert len(prints) == 3
