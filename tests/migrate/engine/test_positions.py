"""Reported positions name lines of the file the user wrote, after a pre-rule rewrote it."""

import textwrap

from tapeshift.migrate.engine.findings import Change
from tapeshift.migrate.engine.pipeline import migrate_source
from tapeshift.migrate.engine.positions import LineMap


def test_kept_moved_and_written_lines_map_back():
    original = "a = 1\nb = 2\nloss = f(x)\nc = 3\n"
    rewritten = "a = 1\nc = 3\n\ndef run(x):\n    loss = f(x)\n    return loss\n"
    lines = LineMap(original, rewritten)
    assert lines.line(1) == 1       # kept
    assert lines.line(2) == 4       # kept, moved up
    assert lines.line(5) == 3       # moved into a function
    assert lines.position(5, 5) == (3, 1)  # re-indented: the column follows the text
    assert lines.line(6) == 3       # written by the rule: resembles nothing, so the line above
    change = Change(rule="r", path="p", line=5, column=12, description="d")
    assert LineMap(original, rewritten).remap([change])[0].line == 3


def test_feeds_changes_are_reported_at_original_lines():
    src = textwrap.dedent("""\
        import numpy as np
        import tensorflow as tf
        x = tf.placeholder(tf.float32, [None, 1])
        W = tf.Variable(np.ones((1, 1)), dtype=tf.float32)
        loss = tf.reduce_sum(tf.matmul(x, W))
        grad = tf.gradients(loss, W)[0]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            print(sess.run(grad, feed_dict={x: [[1.0]]}))
    """)
    r = migrate_source(src, "f.py")
    assert r.mode == "tape", r.findings
    by_rule = {}
    for c in r.changes:
        by_rule.setdefault(c.rule, []).append(c)
    lines = src.splitlines()
    gradient = [c for c in by_rule["gradients"] if "tape.gradient" in c.description][0]
    assert "tf.gradients(loss, W)" in lines[gradient.line - 1]
    assert lines[gradient.line - 1].index("tf.gradients") + 1 == gradient.column
    dissolved = [c for c in by_rule["session"] if "dissolved" in c.description][0]
    assert lines[dissolved.line - 1].startswith("with tf.Session()")
