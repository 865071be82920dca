"""tf.contrib.slim / layers / framework -> tf_slim; other tf.contrib reported."""

from textwrap import dedent

import numpy as np
import pytest
from libcst.codemod import CodemodTest

from tapeshift.migrate.rules.contrib_slim import ContribToTfSlim
from tapeshift.migrate.rules.contrib_slim_table import TF_SLIM, TF_SLIM_LAYERS
from tapeshift.migrate.engine.pipeline import migrate_source


class TestContribToTfSlim(CodemodTest):
    TRANSFORM = ContribToTfSlim

    def test_noop_without_contrib(self) -> None:
        code = "import tensorflow as tf\nslim = object()\nx = tf.nn.relu(1.0)\n"
        self.assertCodemod(code, code)

    def test_assignment_becomes_an_import(self) -> None:
        self.assertCodemod(
            "import tensorflow as tf\nslim = tf.contrib.slim\nnet = slim.fully_connected(x, 3)\n",
            "import tensorflow as tf\nimport tf_slim as slim\nnet = slim.fully_connected(x, 3)\n",
            expected_warnings=["TS118 1:1: uses tf-slim: install it (pip install tf-slim); "
                               "slim model code stays in graph mode for now"])

    def test_aliases_and_import_forms(self) -> None:
        before = """\
            import tensorflow as T
            import tensorflow.contrib.slim as slim2
            from tensorflow.contrib import slim
            from tensorflow.contrib.framework import arg_scope
            from tensorflow.contrib.layers import xavier_initializer
            a = T.contrib.layers.l2_regularizer(0.1)
            b = T.contrib.framework.arg_scope
        """
        after = """\
            import tensorflow as T
            import tf_slim as slim2
            import tf_slim as slim
            from tf_slim import arg_scope
            from tf_slim import xavier_initializer
            import tf_slim

            a = tf_slim.l2_regularizer(0.1)
            b = tf_slim.arg_scope
        """
        self.assertCodemod(dedent(before), dedent(after), expected_warnings=[
            "TS118 1:1: uses tf-slim: install it (pip install tf-slim); slim model code "
            "stays in graph mode for now"])

    def test_contrib_layers_bound_to_a_name_becomes_tf_slim(self) -> None:
        # tf_slim.layers has the layers only: `layers.xavier_initializer` and
        # `layers.l2_regularizer` are at tf_slim's top level, with the layers too
        self.assertCodemod(
            "import tensorflow as tf\nlayers = tf.contrib.layers\n"
            "w = layers.l2_regularizer(0.1)\ny = layers.fully_connected(x, 2)\n",
            "import tensorflow as tf\nimport tf_slim as layers\n"
            "w = layers.l2_regularizer(0.1)\ny = layers.fully_connected(x, 2)\n",
            expected_warnings=["TS118 1:1: uses tf-slim: install it (pip install tf-slim); "
                               "slim model code stays in graph mode for now"])

    def test_contrib_layers_module_imported_becomes_tf_slim(self) -> None:
        self.assertCodemod(
            "import tensorflow.contrib.layers as L\nfrom tensorflow.contrib import layers\n"
            "y = L.fully_connected(x, 2)\n",
            "import tf_slim as L\nimport tf_slim as layers\nimport tf_slim\n\n"
            "y = tf_slim.layers.fully_connected(x, 2)\n",
            expected_warnings=["TS118 1:1: uses tf-slim: install it (pip install tf-slim); "
                               "slim model code stays in graph mode for now"])

    def test_contrib_layers_name_reading_a_layers_only_constant(self) -> None:
        # DATA_FORMAT_NCHW is in tf_slim.layers only, l2_regularizer in tf_slim only:
        # the name keeps tf_slim.layers and the use that fails is reported
        code_in = ("import tensorflow as tf\nlayers = tf.contrib.layers\n"
                   "f = layers.DATA_FORMAT_NCHW\nw = layers.l2_regularizer(0.1)\n")
        self.assertCodemod(
            code_in, code_in.replace("layers = tf.contrib.layers", "import tf_slim.layers as layers"),
            expected_warnings=[
                "TS117 2:1: `layers.l2_regularizer` is not in tf_slim.layers: that use fails on TF2",
                "TS118 1:1: uses tf-slim: install it (pip install tf-slim); "
                "slim model code stays in graph mode for now"])

    def test_xavier_of_a_contrib_module_alias_is_tensorflows(self) -> None:
        self.assertCodemod(
            "import tensorflow as tf\nimport tensorflow.contrib.layers as L\n"
            "i = L.xavier_initializer()\n",
            "import tensorflow as tf\nimport tf_slim as L\ni = tf.glorot_uniform_initializer()\n")

    def test_one_hot_encoding_is_tf_one_hot(self) -> None:
        # the same op (slim casts int32 labels to int64 first: the same indices)
        self.assertCodemod(
            dedent("""\
                import tensorflow as tf
                import tensorflow.contrib.slim as slim
                a = slim.one_hot_encoding(x, 3)
                b = tf.contrib.layers.one_hot_encoding(labels=x, num_classes=4, on_value=2.0,
                                                       scope="oh")
                c = slim.one_hot_encoding(x, 3, 1.0, 0.0, None, "c")
                d = slim.one_hot_encoding(x, 3, outputs_collections="kept")
            """),
            dedent("""\
                import tensorflow as tf
                import tf_slim as slim
                import tf_slim

                a = tf.one_hot(x, 3)
                b = tf.one_hot(indices=x, depth=4, on_value=2.0,
                                                       name="oh")
                c = tf.one_hot(x, 3, 1.0, 0.0, name="c")
                d = tf_slim.one_hot_encoding(x, 3, outputs_collections="kept")
            """),
            expected_warnings=["TS118 1:1: uses tf-slim: install it (pip install tf-slim); "
                               "slim model code stays in graph mode for now"])

    def test_a_local_tf_is_not_tensorflow(self) -> None:
        code = "class tf:\n    contrib = None\nslim = tf.contrib.slim\n"
        self.assertCodemod(code, code)

    def test_xavier_initializer_is_glorot_uniform(self) -> None:
        self.assertCodemod(
            dedent("""\
                import tensorflow as tf
                a = tf.get_variable("a", [2, 3], initializer=tf.contrib.layers.xavier_initializer())
                b = tf.contrib.layers.xavier_initializer(True, 3, tf.float64)
                c = tf.contrib.slim.xavier_initializer_conv2d(seed=1)
            """),
            dedent("""\
                import tensorflow as tf
                a = tf.get_variable("a", [2, 3], initializer=tf.glorot_uniform_initializer())
                b = tf.glorot_uniform_initializer(seed=3, dtype=tf.float64)
                c = tf.glorot_uniform_initializer(seed=1)
            """))

    def test_xavier_normal_stays_tf_slim(self) -> None:
        # uniform=False draws a truncated normal of stddev sqrt(1.3 / n): no TF initializer
        # does; an initialiser is no model code, so no TS118 (TS135, info: the pipeline test)
        self.assertCodemod(
            "import tensorflow as tf\ni = tf.contrib.layers.xavier_initializer(uniform=False)\n",
            "import tensorflow as tf\nimport tf_slim\n\ni = tf_slim.xavier_initializer(uniform=False)\n",
            expected_warnings=[])

    def test_slim_model_code_beside_an_initializer_is_still_ts118(self) -> None:
        before = ("import tensorflow as tf\nw = tf.contrib.layers.l2_regularizer(0.1)\n"
                  "h = tf.contrib.layers.fully_connected(x, 3)\n")
        after = ("import tensorflow as tf\nimport tf_slim\n\nw = tf_slim.l2_regularizer(0.1)\n"
                 "h = tf_slim.layers.fully_connected(x, 3)\n")
        self.assertCodemod(before, after, expected_warnings=[
            "TS118 1:1: uses tf-slim: install it (pip install tf-slim); slim model code stays "
            "in graph mode for now"])

    def test_an_imported_contrib_rnn_is_spelled_tf_contrib_rnn(self) -> None:
        # the RNN rules read tf.contrib.rnn.X (test_model_code_rnn.py, test_rnn_cells.py)
        self.assertCodemod(
            "import tensorflow as tf\nfrom tensorflow.contrib import rnn\n"
            "cell = rnn.BasicLSTMCell(4)\nout = rnn.static_rnn(cell, xs, dtype=tf.float32)\n",
            "import tensorflow as tf\n"
            "cell = tf.contrib.rnn.BasicLSTMCell(4)\n"
            "out = tf.contrib.rnn.static_rnn(cell, xs, dtype=tf.float32)\n",
            expected_warnings=[])
        self.assertCodemod(
            "import tensorflow as T\nimport tensorflow.contrib.rnn as R\ncell = R.GRUCell(4)\n",
            "import tensorflow as T\ncell = T.contrib.rnn.GRUCell(4)\n", expected_warnings=[])

    def test_an_imported_contrib_rnn_used_otherwise_is_reported(self) -> None:
        gone = ("tf.contrib.rnn is gone in TensorFlow 2 (compat.v1 included); use "
                "tf.keras.layers.RNN with its LSTMCell/GRUCell, or LSTM/GRU (tapeshift moves "
                "tf.contrib.rnn's core cells and static_rnn to tf-keras' legacy rnn_cell and "
                "tf.nn in compat form)")
        for code, line in (
                # a cell the RNN rules do not convert
                ("import tensorflow as tf\nfrom tensorflow.contrib import rnn\n"
                 "cell = rnn.LayerNormBasicLSTMCell(4)\n", 2),
                # the module itself passed on
                ("import tensorflow as tf\nfrom tensorflow.contrib import rnn\ncells = rnn\n", 2),
                # no `import tensorflow as tf` to spell it with
                ("from tensorflow.contrib import rnn\ncell = rnn.GRUCell(4)\n", 1)):
            self.assertCodemod(code, code, expected_warnings=[f"TS117 {line}:1: {gone}"])

    def test_contrib_global_step_functions_are_tensorflow_s(self) -> None:
        self.assertCodemod(
            "import tensorflow as tf\nstep = tf.contrib.framework.get_or_create_global_step()\n"
            "g = tf.contrib.slim.get_global_step()\n",
            "import tensorflow as tf\nstep = tf.train.get_or_create_global_step()\n"
            "g = tf.train.get_global_step()\n",
            expected_warnings=[])

    def test_other_contrib_modules_are_reported_and_left(self) -> None:
        code = "import tensorflow as tf\ncell = tf.contrib.rnn.LayerNormBasicLSTMCell(4)\n"
        self.assertCodemod(code, code, expected_warnings=[
            "TS117 2:8: tf.contrib.rnn is gone in TensorFlow 2 (compat.v1 included); use "
            "tf.keras.layers.RNN with its LSTMCell/GRUCell, or LSTM/GRU (tapeshift moves "
            "tf.contrib.rnn's core cells and static_rnn to tf-keras' legacy rnn_cell and tf.nn "
            "in compat form)"])

    def test_contrib_rnn_core_cells_are_left_to_the_rnn_rules(self) -> None:
        # the model-code rule converts them in tape form (test_model_code_rnn.py), the
        # rnn-cells rule in compat form (test_rnn_cells.py): neither is gone
        code = ("import tensorflow as tf\ncell = tf.contrib.rnn.LSTMCell(4)\n"
                "out = tf.contrib.rnn.static_rnn(cell, xs)\n")
        self.assertCodemod(code, code, expected_warnings=[])


def test_slim_file_migrates_in_compat_mode_with_tf_slim():
    # (a fully_connected outside a model function would become a Dense layer:
    # test_model_code_slim.py)
    src = dedent("""\
        import tensorflow as tf
        slim = tf.contrib.slim
        net = slim.conv2d(tf.zeros([1, 4, 4, 1]), 2, [3, 3])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            print(sess.run(net))
    """)
    r = migrate_source(src, "s.py")
    assert r.mode == "compat"
    assert "import tf_slim as slim" in r.output and "contrib" not in r.output
    assert [f.code for f in r.findings][:1] == ["TS118"]
    assert not migrate_source(r.output, "s.py").changed  # idempotent


XAVIER_SCRIPT = """\
import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 3])
w = tf.get_variable("w", [3, 2], initializer=tf.contrib.layers.xavier_initializer(seed=7))
loss = tf.reduce_sum(tf.matmul(x, w))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run(w))
"""


def test_a_file_using_contrib_for_xavier_alone_reaches_tape_form():
    r = migrate_source(XAVIER_SCRIPT, "x.py")
    assert r.mode == "tape", [(f.code, f.message) for f in r.findings]
    assert "tf_slim" not in r.output and "contrib" not in r.output
    assert "glorot_uniform_initializer(seed=7)" in r.output


@pytest.mark.tf
def test_xavier_initializer_draws_what_glorot_uniform_draws():
    """tf-slim's xavier_initializer (contrib's, moved) and v1 glorot_uniform, same seed, in a graph."""
    import tensorflow as tf
    import tf_slim

    shapes = [[3, 2], [5, 5, 4, 8], [7]]
    with tf.Graph().as_default():
        pairs = [(tf_slim.xavier_initializer(seed=s)(shape),
                  tf.compat.v1.glorot_uniform_initializer(seed=s)(shape))
                 for s, shape in enumerate(shapes)]
        with tf.compat.v1.Session() as sess:
            for a, b in sess.run(pairs):
                np.testing.assert_array_equal(a, b)  # the same op, the same bound: bit for bit


@pytest.mark.tf
def test_table_matches_the_installed_tf_slim():
    tf_slim = pytest.importorskip("tf_slim")
    import tf_slim.layers as layers

    assert TF_SLIM == {n for n in dir(tf_slim) if not n.startswith("_")}
    assert TF_SLIM_LAYERS == {n for n in dir(layers) if not n.startswith("_")}


TAPE_FORM_SLIM = """\
import tensorflow as tf
import tf_slim as slim


def model(inputs):
    return slim.fully_connected(inputs, 3, scope="fc")


model = tf.compat.v1.make_template("model", model)
{extra}print(model(tf.zeros([2, 4])))
"""


@pytest.mark.parametrize("extra, kept", [
    ("", True),
    # arg_scope is a context manager: it runs in eager code as well
    ("with slim.arg_scope([slim.fully_connected], activation_fn=None):\n    pass\n", True),
    # a layer outside the template creates new variables at every call
    ("extra = slim.fully_connected(tf.zeros([2, 4]), 3)\n", False),
])
def test_tf_slim_file_in_tape_form_stays_so_unless_a_layer_is_outside_a_template(extra, kept):
    src = TAPE_FORM_SLIM.format(extra=extra)
    r = migrate_source(src, "t.py")
    codes = [f.code for f in r.findings]
    if kept:
        assert r.mode == "unchanged" and "TS118" not in codes
    else:
        assert r.mode == "compat" and "TS118" in codes
        assert "batch_norm" not in next(f.message for f in r.findings if f.code == "TS118")


def test_ts118_names_the_batch_norm_fix_only_when_the_file_spells_batch_norm():
    src = dedent("""\
        import tensorflow as tf
        slim = tf.contrib.slim
        net = slim.batch_norm(tf.zeros([2, 3]))
    """)
    message = next(f.message for f in migrate_source(src, "b.py").findings if f.code == "TS118")
    assert "install_tf_slim_fixes" in message


PURE_SLIM_PROGRAM = """\
import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 3])
y = tf.placeholder(tf.float32, [None, 1])
w_init = tf.contrib.layers.variance_scaling_initializer()
w0 = tf.get_variable("w0", [3, 4], initializer=w_init)
w1 = tf.get_variable("w1", [4, 1], initializer=tf.contrib.layers.xavier_initializer(uniform=False))
regularizer = tf.contrib.layers.l2_regularizer(0.01)
out = tf.matmul(tf.nn.relu(tf.matmul(x, w0)), w1)
loss = tf.reduce_mean(tf.square(out - y)) + regularizer(w0) + regularizer(w1)
step = tf.contrib.framework.get_or_create_global_step()
train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
X = np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3)
Y = X.sum(axis=1, keepdims=True)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(5):
        print(sess.run([train, loss, step], {x: X, y: Y})[1:])
"""


def test_slim_initializers_and_regularizers_alone_reach_tape_form():
    r = migrate_source(PURE_SLIM_PROGRAM, "he.py")
    assert r.mode == "tape", [(f.code, f.message) for f in r.findings]
    out = r.output
    assert "w0 = tf.Variable(w_init([3, 4]), name=\"w0\")" in out
    assert "w1 = tf.Variable(tf_slim.xavier_initializer(uniform=False)([4, 1]), name=\"w1\")" in out
    assert "regularizer = tf_slim.l2_regularizer(0.01)" in out
    assert "step = tf.compat.v1.train.get_or_create_global_step()" in out
    assert [(f.code, f.line, f.severity.value) for f in r.findings] == [("TS135", 1, "info")]
    assert "(l2_regularizer, variance_scaling_initializer, xavier_initializer)" in \
        r.findings[0].message
    again = migrate_source(out, "he.py")  # the output, migrated again: tape form, unchanged
    assert again.mode in ("tape", "unchanged") and not again.changed
    assert [f.code for f in again.findings] == ["TS135"]


@pytest.mark.tf
@pytest.mark.slow
def test_the_pure_slim_program_computes_the_legacy_numbers(tmp_path):
    from tapeshift.migrate.legacy.verify import verify_sources

    report = verify_sources(PURE_SLIM_PROGRAM, migrate_source(PURE_SLIM_PROGRAM, "he.py").output,
                            tmp_path / "he.py", timeout=300, seed=0, align_random=True)
    assert report.status == "ok", report.to_text()
    printed = [row for row in report.rows if row.name.startswith("stdout:") and row.compared]
    assert len(printed) == 5, report.to_text()
