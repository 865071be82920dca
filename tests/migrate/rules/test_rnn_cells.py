"""tf.nn.rnn_cell / tf.contrib.rnn -> tf-keras' legacy RNN cells (compat mode, Keras 3)."""

import importlib
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest
from libcst.codemod import CodemodTest

from tapeshift.migrate.engine.findings import REGISTRY, Severity
from tapeshift.migrate.engine.pipeline import migrate_source
from tapeshift.migrate.rules.rnn_cells import RnnCellsToTfKeras
from tapeshift.migrate.rules.rnn_cells_table import (
    CONTRIB_RNN_FUNCTIONS, RNN_CELLS, TF_KERAS_LEGACY_RNN_CELL)

ROOT = Path(__file__).resolve().parents[3]
IMPORT = f"import {TF_KERAS_LEGACY_RNN_CELL} as tf_rnn_cell"


class TestRnnCellsToTfKeras(CodemodTest):
    TRANSFORM = RnnCellsToTfKeras

    def test_noop_without_rnn_cells(self) -> None:
        code = dedent("""\
            import tensorflow as tf
            rnn_cell = tf.keras.layers.LSTMCell(4)
            out = tf.nn.relu(x)
        """)
        self.assertCodemod(code, code)

    def test_a_local_tf_is_not_tensorflow(self) -> None:
        code = "class tf:\n    nn = None\ncell = tf.nn.rnn_cell.LSTMCell(3)\n"
        self.assertCodemod(code, code)

    def test_core_and_contrib_cells_become_the_tf_keras_module(self) -> None:
        before = """\
            import tensorflow.compat.v1 as tf
            cell = tf.nn.rnn_cell.BasicLSTMCell(8, forget_bias=0.0)
            cells = tf.contrib.rnn.MultiRNNCell([tf.contrib.rnn.GRUCell(4) for _ in range(2)])
            state = tf.contrib.rnn.LSTMStateTuple(c, h)
            rnn = tf.nn.rnn_cell
            outputs, last = tf.contrib.rnn.static_rnn(cell, xs, dtype=tf.float32)
            both = tf.contrib.rnn.static_bidirectional_rnn(fw, bw, xs, dtype=tf.float32)
            outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        """
        after = f"""\
            import tensorflow.compat.v1 as tf
            {IMPORT}

            cell = tf_rnn_cell.BasicLSTMCell(8, forget_bias=0.0)
            cells = tf_rnn_cell.MultiRNNCell([tf_rnn_cell.GRUCell(4) for _ in range(2)])
            state = tf_rnn_cell.LSTMStateTuple(c, h)
            rnn = tf_rnn_cell
            outputs, last = tf.nn.static_rnn(cell, xs, dtype=tf.float32)
            both = tf.nn.static_bidirectional_rnn(fw, bw, xs, dtype=tf.float32)
            outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        """
        self.assertCodemod(dedent(before), dedent(after))

    def test_the_alias_does_not_take_a_name_in_use(self) -> None:
        # public RNN code often names its cell `rnn_cell`, and some `tf_rnn_cell`
        before = """\
            import tensorflow.compat.v1 as tf
            tf_rnn_cell = tf.contrib.rnn.BasicRNNCell(num_units=32)
        """
        after = f"""\
            import tensorflow.compat.v1 as tf
            import {TF_KERAS_LEGACY_RNN_CELL} as tf_rnn_cell_1

            tf_rnn_cell = tf_rnn_cell_1.BasicRNNCell(num_units=32)
        """
        self.assertCodemod(dedent(before), dedent(after))

    def test_names_outside_the_table_are_left(self) -> None:
        code = dedent("""\
            import tensorflow.compat.v1 as tf
            cell = tf.contrib.rnn.LayerNormBasicLSTMCell(8)
            fused = tf.contrib.rnn.LSTMBlockFusedCell(8)
        """)
        self.assertCodemod(code, code)

    def test_a_core_name_tf_keras_lacks_is_reported_and_left(self) -> None:
        code = "import tensorflow.compat.v1 as tf\ncell = tf.nn.rnn_cell.NASCell(8)\n"
        self.assertCodemod(code, code)


PROGRAM = """\
    import numpy as np
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [None, 5, 3])
    cell = tf.contrib.rnn.BasicLSTMCell(8)
    outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    stack = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.GRUCell(4)])
    steps, _ = tf.contrib.rnn.static_rnn(stack, tf.unstack(x, axis=1), dtype=tf.float32)
    lstm = tf.contrib.rnn.LayerNormBasicLSTMCell(4)
"""


def test_pipeline_falls_back_and_converts_in_compat_form():
    r = migrate_source(dedent(PROGRAM), "rnn.py")
    assert r.mode == "compat"
    out = r.output
    assert f"{IMPORT}\n" in out and "tf.disable_v2_behavior()" in out
    assert "cell = tf_rnn_cell.BasicLSTMCell(8)\n" in out
    assert "stack = tf_rnn_cell.MultiRNNCell([tf_rnn_cell.GRUCell(4)])\n" in out
    assert "steps, _ = tf.nn.static_rnn(stack, tf.unstack(x, axis=1), dtype=tf.float32)" in out
    assert "lstm = tf.contrib.rnn.LayerNormBasicLSTMCell(4)\n" in out  # gone, reported
    found = [(f.code, f.line, f.severity) for f in r.findings]
    # why tape form was not reached: the gone cell (the model-code rule read the rest)
    assert ("TS117", 9, Severity.WARNING) in found
    assert not [f for f in r.findings if f.code in ("TS109", "TS125")]
    assert ("TS134", 5, Severity.INFO) in found  # the line of the file, not of the output
    assert not [f for f in r.findings if f.code == "TS117" and f.line != 9]
    moved = [(c.line, c.rule) for c in r.changes if c.rule == "rnn-cells"]
    assert moved == [(5, "rnn-cells"), (7, "rnn-cells"), (7, "rnn-cells"), (8, "rnn-cells")]
    compile(out, "rnn.py", "exec")
    again = migrate_source(out, "rnn.py", mode="compat")
    assert again.output == out  # migrating the output again changes nothing


def test_compat_post_findings_keep_the_file_s_lines_after_an_earlier_rule_s_import():
    # the layers rule (compat-post, first) adds an import line; the next rule's
    # findings are still at the lines of the file as written
    source = dedent("""\
        import tensorflow as tf

        h = tf.layers.dense(x, 3)
        cell = tf.nn.rnn_cell.GRUCell(4)
    """)
    r = migrate_source(source, "m.py", mode="compat")
    lines = {f.code: f.line for f in r.findings}
    assert lines["TS124"] == 3 and lines["TS134"] == 4
    assert [c.line for c in r.changes if c.rule == "rnn-cells"] == [4]


def test_ts134_is_registered_as_info_and_does_not_block_tape():
    info = REGISTRY["TS134"]
    assert info.severity is Severity.INFO and not info.blocks_tape
    assert TF_KERAS_LEGACY_RNN_CELL in info.what or "tf_keras" in info.use_instead
    assert "TS134" in (ROOT / "docs" / "codes.md").read_text()


@pytest.mark.tf
def test_the_table_is_what_tf_keras_and_tensorflow_provide():
    import tensorflow as tf

    module = importlib.import_module(TF_KERAS_LEGACY_RNN_CELL)
    assert RNN_CELLS == {n for n in dir(module) if not n.startswith("_")}
    for name in CONTRIB_RNN_FUNCTIONS:
        assert callable(getattr(tf.compat.v1.nn, name))


@pytest.mark.tf
@pytest.mark.slow
def test_compat_output_runs_and_prints_what_run_legacy_prints(tmp_path):
    # run-legacy (unmodified TF1 script) and the migrated compat file print the same numbers
    program = dedent("""\
        import numpy as np
        import tensorflow as tf

        tf.set_random_seed(3)
        x = tf.placeholder(tf.float32, [None, 4, 2])
        cell = tf.contrib.rnn.BasicLSTMCell(5)
        outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        gru = tf.nn.rnn_cell.GRUCell(3)
        steps, _ = tf.contrib.rnn.static_rnn(gru, tf.unstack(x, axis=1), dtype=tf.float32,
                                             scope="static")
        loss = tf.reduce_sum(outputs[:, -1]) + tf.reduce_sum(steps[-1])
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        X = np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 4, 2)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(3):
                print(sess.run([train, loss], {x: X})[1])
    """)
    legacy = tmp_path / "legacy.py"
    legacy.write_text(program)
    migrated = tmp_path / "migrated.py"
    r = migrate_source(program, "legacy.py", mode="compat")  # (tape form: test_model_code_rnn)
    assert r.mode == "compat" and "tf.contrib" not in r.output
    migrated.write_text(r.output)
    run = [sys.executable, "-m", "tapeshift.migrate", "run-legacy", str(legacy)]
    before = subprocess.run(run, capture_output=True, text=True, timeout=300)
    after = subprocess.run([sys.executable, str(migrated)], capture_output=True, text=True,
                           timeout=300)
    assert before.returncode == 0, before.stderr[-2000:]
    assert after.returncode == 0, after.stderr[-2000:]
    values = [float(v) for v in before.stdout.split()]
    assert len(values) == 3 and values[0] != values[2]  # it trained
    assert after.stdout == before.stdout
