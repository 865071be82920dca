"""SummariesToWriter: TF1 summary ops, merge_all and FileWriter -> v1 ops written by a TF2 writer."""

import os
import subprocess
import sys
from textwrap import dedent

import pytest
from libcst.codemod import CodemodTest

from tapeshift.migrate.engine.pipeline import migrate_source
from tapeshift.migrate.rules.summaries import SummariesToWriter


class TestSummariesToWriter(CodemodTest):
    TRANSFORM = SummariesToWriter

    def test_noop_without_merge_or_writer(self) -> None:
        code = "import tensorflow as tf\ns = tf.summary.scalar('loss', 1.0)\n"
        self.assertCodemod(code, code)

    def test_ops_merge_all_and_writer(self) -> None:
        before = """\
            import tensorflow as tf
            loss = tf.reduce_mean(x)
            tf.summary.scalar("loss", loss)
            h = tf.summary.histogram("W", W)
            with tf.Session() as sess:
                merged = tf.summary.merge_all()
                writer = tf.summary.FileWriter("./log", sess.graph)
                writer.add_graph(sess.graph)
                for step in range(3):
                    s = sess.run(merged)
                    writer.add_summary(s, step)
                writer.add_summary(s)
        """
        after = """\
            import tensorflow as tf
            loss = tf.reduce_mean(x)
            loss_summary = tf.compat.v1.summary.scalar("loss", loss)
            h = tf.compat.v1.summary.histogram("W", W)
            merged = tf.raw_ops.MergeSummary(inputs=[loss_summary, h])
            with tf.Session() as sess:
                writer = tf.summary.create_file_writer("./log")
                for step in range(3):
                    s = sess.run(merged)
                    with writer.as_default():
                        tf.summary.experimental.write_raw_pb(s, step=step)
                with writer.as_default():
                    tf.summary.experimental.write_raw_pb(s, step=0)
        """
        self.assertCodemod(dedent(before), dedent(after))

    def test_an_explicit_merge(self) -> None:
        before = """\
            import tensorflow as T
            a = T.summary.scalar("a", x)
            b = T.summary.scalar("b", y)
            m = T.summary.merge([a, b])
        """
        after = """\
            import tensorflow as T
            a = T.compat.v1.summary.scalar("a", x)
            b = T.compat.v1.summary.scalar("b", y)
            m = T.raw_ops.MergeSummary(inputs=[a, b])
        """
        self.assertCodemod(dedent(before), dedent(after))

    def test_a_summary_made_at_every_step_is_not_converted(self) -> None:
        code = dedent("""\
            import tensorflow as tf
            with tf.Session() as sess:
                for step in range(3):
                    s = sess.run(tf.summary.scalar("step", step))
                merged = tf.summary.merge_all()
        """)
        self.assertCodemod(code, code, expected_warnings=[
            "TS108 4:22: `tf.summary.scalar(...)` here makes a summary op each time it runs (or "
            "in a block the rule does not follow): not converted"])


XOR = """\
import numpy as np
import tensorflow as tf

x_data = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=np.float32)
y_data = np.array([[0], [1], [1], [0]], dtype=np.float32)
X = tf.placeholder(tf.float32, [4, 2], name="x")
Y = tf.placeholder(tf.float32, [4, 1], name="y")

with tf.name_scope("Layer1"):
    # not trained: a histogram of a variable fetched with the train op that updates it
    # reads it before or after the update, as TF1's scheduler has it (ref variables)
    W1 = tf.Variable(tf.constant([[0.5, -0.3], [0.2, 0.8]]), name="weight_1", trainable=False)
    b1 = tf.Variable(tf.constant([0.1, -0.1]), name="bias_1")
    layer1 = tf.sigmoid(tf.matmul(X, W1) + b1)
    tf.summary.histogram("W1", W1)
    tf.summary.histogram("Layer1", layer1)
with tf.name_scope("Layer2"):
    W2 = tf.Variable(tf.constant([[0.7], [-0.4]]), name="weight_2")
    hypothesis = tf.sigmoid(tf.matmul(layer1, W2))
with tf.name_scope("Cost"):
    cost = -tf.reduce_mean(Y * tf.log(hypothesis) + (1 - Y) * tf.log(1 - hypothesis))
    tf.summary.scalar("Cost", cost)
with tf.name_scope("Train"):
    train = tf.train.AdamOptimizer(learning_rate=0.1).minimize(cost)

with tf.Session() as sess:
    merged_summary = tf.summary.merge_all()
    writer = tf.summary.FileWriter(LOGDIR)
    writer.add_graph(sess.graph)
    sess.run(tf.global_variables_initializer())
    for step in range(5):
        _, summary, cost_val = sess.run([train, merged_summary, cost],
                                        feed_dict={X: x_data, Y: y_data})
        writer.add_summary(summary, global_step=step)
        print(step, cost_val)
    writer.close()
"""


def test_statements_without_summaries_or_writers_are_kept_as_they_are():
    """Only the statements the rule changes are new nodes: the others are the
    input's own (a rebuilt copy would be printed again and walked again)."""
    import libcst as cst

    from tapeshift.migrate.engine import pipeline

    source = dedent("""\
        import tensorflow as tf
        loss = tf.reduce_mean(x)
        tf.summary.scalar("loss", loss)
        def helper(v):
            return v + 1
        with tf.Session() as sess:
            merged = tf.summary.merge_all()
            writer = tf.summary.FileWriter("./log")
            for step in range(3):
                s = sess.run(merged)
                writer.add_summary(s, step)
        print(helper(2))
    """)
    module = cst.parse_module(source)
    out, _, _ = pipeline._run(SummariesToWriter, module, "train.py")  # on the tree itself
    assert "create_file_writer" in out.code and "write_raw_pb" in out.code
    kept = [stmt for stmt in out.body if any(stmt is old for old in module.body)]
    assert [type(stmt).__name__ for stmt in kept] == [
        "SimpleStatementLine", "SimpleStatementLine", "FunctionDef", "SimpleStatementLine"]
    assert kept[-1] is module.body[-1] and kept[2] is module.body[3]


def test_a_summarised_training_script_reaches_tape_form():
    r = migrate_source(XOR, "xor.py")
    assert r.mode == "tape", [(f.code, f.line, f.message) for f in r.findings]
    out = r.output
    for gone in ("merge_all", "FileWriter", "add_graph", "add_summary", "placeholder", "Session"):
        assert gone not in out, gone
    # the tags TF1 gave them, the scopes written out
    assert 'W1_summary = tf.compat.v1.summary.histogram("Layer1/W1", W1)' in out
    assert 'Cost_summary = tf.compat.v1.summary.scalar("Cost/Cost", cost)' in out
    assert "merged_summary = tf.raw_ops.MergeSummary(inputs=[W1_summary, Layer1_summary, " \
           "Cost_summary])" in out
    assert "tf.summary.experimental.write_raw_pb(summary, step=step)" in out
    assert not migrate_source(out, "xor.py").changed


_EVENTS = """\
import json, sys
import tensorflow as tf
from tensorflow.core.util import event_pb2
rows = []
for path in sys.argv[1:]:
    for record in tf.data.TFRecordDataset(path):
        event = event_pb2.Event.FromString(record.numpy())
        for v in event.summary.value:
            kind = v.WhichOneof("value")
            value = v.simple_value if kind == "simple_value" else (
                [round(x, 6) for x in v.histo.bucket_limit] + [v.histo.sum, v.histo.num]
                if kind == "histo" else str(v))
            rows.append([event.step, v.tag, kind, value])
print(json.dumps(rows))
"""


@pytest.mark.tf
@pytest.mark.slow
def test_the_migrated_script_writes_the_summaries_tf1_wrote(tmp_path):
    """Same steps, tags, scalars and histograms (TF1's buckets) in the event files."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    rows = {}
    for side in ("legacy", "new"):
        logdir = tmp_path / side
        source = XOR.replace("LOGDIR", repr(str(logdir)))
        if side == "new":
            source = migrate_source(source, "xor.py").output
        script = tmp_path / f"{side}.py"
        script.write_text(source)
        cmd = [sys.executable, "-m", "tapeshift", "run-legacy", str(script)] if side == "legacy" \
            else [sys.executable, str(script)]
        run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        assert run.returncode == 0, run.stderr[-2000:]
        events = sorted(str(p) for p in logdir.iterdir())
        reader = tmp_path / "events.py"
        reader.write_text(_EVENTS)
        out = subprocess.run([sys.executable, str(reader), *events], capture_output=True,
                             text=True, env=env, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        import json

        rows[side] = json.loads(out.stdout)
    assert [r[:3] for r in rows["legacy"]] == [r[:3] for r in rows["new"]]
    assert len(rows["new"]) == 15  # 5 steps x (2 histograms + 1 scalar)
    for old, new in zip(rows["legacy"], rows["new"]):
        if old[2] == "simple_value":
            assert new[3] == pytest.approx(old[3], rel=1e-5, abs=1e-6)
        else:  # the same buckets; the sums within float32 tolerance
            assert new[3][:-2] == old[3][:-2] and new[3][-1] == old[3][-1]
            assert new[3][-2] == pytest.approx(old[3][-2], rel=1e-5, abs=1e-6)
