"""tf.layers / tf.compat.v1.layers -> tf-keras' legacy layers (compat mode, Keras 3)."""

import importlib
import os
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest
from libcst.codemod import CodemodTest

from tapeshift.migrate.engine import screen
from tapeshift.migrate.rules.layers_compat import LayersToTfKeras
from tapeshift.migrate.rules.layers_compat_table import LEGACY_LAYERS, TF_KERAS_LEGACY_LAYERS
from tapeshift.migrate.engine.findings import REGISTRY, Severity
from tapeshift.migrate.engine.pipeline import migrate_source

ROOT = Path(__file__).resolve().parents[3]
IMPORT = f"import {TF_KERAS_LEGACY_LAYERS} as tf_layers"


class TestLayersToTfKeras(CodemodTest):
    TRANSFORM = LayersToTfKeras

    def test_noop_without_tf_layers(self) -> None:
        code = dedent("""\
            import tensorflow as tf
            from tensorflow.keras import layers
            layers_ = tf.keras.layers.Dense(3)
            h = layers.Dense(2)(x)
        """)
        self.assertCodemod(code, code)

    def test_a_local_tf_is_not_tensorflow(self) -> None:
        code = "class tf:\n    layers = None\nh = tf.layers.dense(x, 3)\n"
        self.assertCodemod(code, code)

    def test_references_become_the_tf_keras_module(self) -> None:
        before = """\
            import tensorflow as tf
            h = tf.layers.dense(x, 3, name="fc")
            bn = tf.layers.BatchNormalization()
            L = tf.layers
            y = (tf.layers).flatten(h)
        """
        after = f"""\
            import tensorflow as tf
            {IMPORT}

            h = tf_layers.dense(x, 3, name="fc")
            bn = tf_layers.BatchNormalization()
            L = tf_layers
            y = (tf_layers).flatten(h)
        """
        self.assertCodemod(dedent(before), dedent(after))

    def test_aliases_and_compat_v1_spellings(self) -> None:
        before = """\
            import tensorflow as T
            import tensorflow.compat.v1 as tf1
            a = T.compat.v1.layers.conv2d(x, 4, 3)
            b = tf1.layers.max_pooling2d(a, 2, 2)
            c = T.layers.Dense(3)
            d = tf1.compat.v1.layers.flatten(c)
        """
        after = f"""\
            import tensorflow as T
            import tensorflow.compat.v1 as tf1
            {IMPORT}

            a = tf_layers.conv2d(x, 4, 3)
            b = tf_layers.max_pooling2d(a, 2, 2)
            c = tf_layers.Dense(3)
            d = tf_layers.flatten(c)
        """
        self.assertCodemod(dedent(before), dedent(after))

    def test_import_forms(self) -> None:
        before = """\
            from tensorflow.layers import dense, conv2d as c2
            from tensorflow.compat.v1.layers import BatchNormalization
            from tensorflow import layers
            from tensorflow.compat.v1 import layers as L
            import tensorflow.layers as tl
            from tensorflow.layers import *
        """
        after = f"""\
            from {TF_KERAS_LEGACY_LAYERS} import dense, conv2d as c2
            from {TF_KERAS_LEGACY_LAYERS} import BatchNormalization
            from tf_keras.api._v1.keras.__internal__.legacy import layers
            from tf_keras.api._v1.keras.__internal__.legacy import layers as L
            import {TF_KERAS_LEGACY_LAYERS} as tl
            from {TF_KERAS_LEGACY_LAYERS} import *
        """
        self.assertCodemod(dedent(before), dedent(after))

    def test_a_plain_import_of_the_layers_module(self) -> None:
        before = """\
            import tensorflow.layers
            import tensorflow.compat.v1.layers
            a = tensorflow.layers.dense(x, 3)
            b = tensorflow.compat.v1.layers.dense(a, 2)
            c = tensorflow.compat.v1.nn.relu(b)
        """
        after = f"""\
            import tensorflow
            import tensorflow.compat.v1
            {IMPORT}

            a = tf_layers.dense(x, 3)
            b = tf_layers.dense(a, 2)
            c = tensorflow.compat.v1.nn.relu(b)
        """
        self.assertCodemod(dedent(before), dedent(after))

    def test_layers_imported_with_other_names_moves_out(self) -> None:
        before = """\
            from tensorflow import nn, layers as L, train
            h = L.dense(nn.relu(x), 3)
        """
        after = """\
            from tensorflow import nn, train
            from tf_keras.api._v1.keras.__internal__.legacy import layers as L

            h = L.dense(nn.relu(x), 3)
        """
        self.assertCodemod(dedent(before), dedent(after))

    def test_the_alias_does_not_take_a_name_in_use(self) -> None:
        before = """\
            import tensorflow as tf
            tf_layers = ["mine"]
            h = tf.layers.dense(x, 3)
        """
        after = f"""\
            import tensorflow as tf
            import {TF_KERAS_LEGACY_LAYERS} as tf_layers_1

            tf_layers = ["mine"]
            h = tf_layers_1.dense(x, 3)
        """
        self.assertCodemod(dedent(before), dedent(after))

    def test_a_name_tf_keras_does_not_provide_is_reported_and_left(self) -> None:
        before = """\
            import tensorflow as tf
            h = tf.layers.dense(x, 3)
            g = tf.layers.gone_layer(h)
        """
        after = f"""\
            import tensorflow as tf
            {IMPORT}

            h = tf_layers.dense(x, 3)
            g = tf.layers.gone_layer(h)
        """
        self.assertCodemod(dedent(before), dedent(after), expected_warnings=[
            "TS109 3:5: tf.layers.gone_layer: tf.layers.gone_layer is not in tf-keras' legacy "
            "layers; left as it was (it fails on TensorFlow >= 2.16 with Keras 3)"])

    def test_an_import_of_a_missing_name_is_reported_and_left(self) -> None:
        code = "from tensorflow.layers import dense, gone_layer\n"
        self.assertCodemod(code, code, expected_warnings=[
            "TS109 1:1: from tensorflow.layers import: tf.layers.gone_layer not in tf-keras' "
            "legacy layers; the import was left as it was (it fails on Keras 3)"])


# -- in the pipeline ------------------------------------------------------------

LEGACY = """\
    import numpy as np
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [None, 4])
    with tf.variable_scope("net"):
        h = tf.layers.dense(x, 3, activation=tf.nn.relu)
        h = tf.compat.v1.layers.batch_normalization(h, training=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        print(sess.run(h, {x: np.ones((2, 4), np.float32)}))
"""


def test_pipeline_rewrites_layers_and_reports_ts124():
    # (in tape mode the model-code rule makes these layers objects: test_model_code.py)
    mode = "compat"
    result = migrate_source(dedent(LEGACY), "train.py", mode=mode)
    assert result.mode == "compat"
    out = result.output
    assert "import tensorflow.compat.v1 as tf\n" in out
    assert f"{IMPORT}\n" in out
    assert "tf.layers" not in out
    assert "h = tf_layers.dense(x, 3, activation=tf.nn.relu)" in out
    # tf-keras is imported before v2 behaviour is disabled, as TensorFlow's own
    # lazy loader would import it later: the numbers are the same (tests/migrate/legacy)
    assert out.index(IMPORT) < out.index("tf.disable_v2_behavior()")
    ts124 = [f for f in result.findings if f.code == "TS124"]
    assert [(f.line, f.column, f.severity) for f in ts124] == [(6, 9, Severity.INFO)]
    assert "pip install tf-keras" in ts124[0].message
    layer_changes = [c for c in result.changes if c.rule == "layers"]
    assert [(c.line, c.column) for c in layer_changes] == [(6, 9), (7, 9)]
    assert "h = tf_layers.batch_normalization(h, training=True)" in out
    compile(out, "train.py", "exec")
    again = migrate_source(out, "train.py", mode=mode)
    assert again.output == out  # migrating the output again changes nothing
    assert not [f for f in again.findings if f.code == "TS124"]



def test_a_file_whose_only_tensorflow_import_is_layers_still_disables_v2_behaviour():
    source = dedent("""\
        from tensorflow import layers

        def head(x):
            return layers.dense(x, 3, name="head")
    """)
    result = migrate_source(source, "heads.py", mode="compat")
    assert result.output == dedent("""\
        from tensorflow.compat.v1 import disable_v2_behavior
        from tf_keras.api._v1.keras.__internal__.legacy import layers

        disable_v2_behavior()

        def head(x):
            return layers.dense(x, 3, name="head")
    """)
    assert [(f.code, f.line, f.column) for f in result.findings] == [("TS124", 1, 1)]
    compile(result.output, "heads.py", "exec")

@pytest.mark.slow  # every program, both ways: the full run has it
def test_the_pipeline_shortcuts_change_nothing():
    # reference mode: every rule as LibCST runs a codemod on its own (LibCST's own
    # visit, every node rebuilt; qualified names from LibCST's scope analysis)
    from tapeshift.migrate.engine.settings import reference_mode

    sources = [(ROOT / "examples" / "layers_tf1.py").read_text(), dedent(LEGACY),
               "from tensorflow import nn, layers as L\nh = L.dense(nn.relu(x), 3)\n",
               "import tensorflow as tf\nwith tf.variable_scope('s'):\n"
               "    h = tf.layers.dense(tf.ones([2, 3]), 4)\n"]
    def outcomes():
        return [(r.output, r.mode, r.findings, r.changes) for r in
                (migrate_source(s, "m.py", mode) for s in sources for mode in ("compat", "tape"))]
    fast = outcomes()
    # compat mode: tf-keras' legacy layers; tape mode: tf-keras layer objects (model-code rule)
    assert all("import tf_keras.api._v1.keras.__internal__.legacy" in out or
               "from tf_keras.api._v1.keras.__internal__.legacy import" in out
               for out, mode, *_ in fast if mode == "compat")
    assert any(mode == "tape" and "tf_keras.layers.Dense(" in out for out, mode, *_ in fast)
    with reference_mode():
        assert outcomes() == fast

def test_ts124_is_registered_as_info_and_does_not_block_tape():
    info = REGISTRY["TS124"]
    assert info.severity is Severity.INFO and not info.blocks_tape
    assert TF_KERAS_LEGACY_LAYERS in info.what
    assert "TS124" in (ROOT / "docs" / "codes.md").read_text()


def test_the_rule_is_screened_by_the_word_layers():
    assert screen.triggers(LayersToTfKeras) == frozenset({"layers"})
    code = "import tensorflow as tf\ny = tf.nn.relu(x)\n"
    result = migrate_source(code, "m.py", mode="compat")
    assert not [c for c in result.changes if c.rule == "layers"]


#: (code, whether the rule may have work there); the code is a fallback's output
CODE_SCREEN = [
    ("from tensor2tensor.layers import common_layers\nx = common_layers.f()\n", False),
    ("import tensor2tensor.layers.common_layers as cl\nfrom .layers import a\n", False),
    ("import tensorflow_addons.layers\nlayers = 1\n", False),
    ("x = tf.layers.dense(y)\n", True),
    ("x = (tf.  # a comment\n     layers)\n", True),
    ("x = tf.\\\n    layers\n", True),
    ("import tensorflow.layers as L\n", True),
    ("import tensorflow.compat.v1.layers\n", True),
    ("from tensorflow import layers\n", True),
    ("from tensorflow.compat.v1 import (a,\n    layers)\n", True),
    ("from tensorflow . compat . v1 import layers\n", True),
    ("from  tensorflow.layers import dense\n", True),
    ("from tensorflow.compat.v1.layers import *\n", True),
    ("import a.layers; tf.layers.dense(x)\n", True),
    ("from tensor2tensor . layers import x\n", True),
    ("raise E() \\\n    from tf.layers\n", True),
    ('s = """\nimport foo.layers""" + tf.layers.y\n', True),
    ("x = self.layers\n", True),
]


@pytest.mark.parametrize("code, acts", CODE_SCREEN)
def test_the_code_screen_lets_the_rule_run_where_it_may_act(code, acts):
    assert screen.code_test(LayersToTfKeras)(code) is acts


@pytest.mark.slow  # every program, both ways: the full run has it
def test_the_code_screen_never_skips_a_file_the_rule_acts_on():
    """The fallback's output of the examples, the test data and these cases:
    wherever the rule changes or reports something, the screen lets it run."""
    from libcst.codemod import CodemodContext
    import libcst as cst

    from tapeshift.migrate.engine.pipeline import _Runner, _Tree, findings_of, changes_of
    from tapeshift.migrate.rules.compat_fallback import CompatFallback

    sources = [(f.name, f.read_text(encoding="utf-8")) for f in sorted(
        [*ROOT.glob("examples/*.py"), *ROOT.glob("tests/migrate/data/**/*.py")])]
    sources += [(f"case {i}", "import tensorflow as tf\n" + code) for i, (code, _) in enumerate(CODE_SCREEN)]
    acted = skipped = 0
    for name, source in sources:
        try:
            tree = _Tree(cst.parse_module(source), source, parsed=True)
        except cst.ParserSyntaxError:
            continue
        output, _, _ = _Runner(name).run(CompatFallback, tree)
        context = CodemodContext(filename=name)
        new = LayersToTfKeras(context).transform_module(output.raw)
        if new.code != output.code or findings_of(context) or changes_of(context):
            acted += 1
            assert screen.may_act_on_code(LayersToTfKeras, output.code), name
        elif not screen.may_act_on_code(LayersToTfKeras, output.code):
            skipped += 1
    assert acted > 5 and skipped > 5


def test_the_codemod_imports_without_tensorflow(tmp_path, block_imports):
    # tensorflow and tf_keras refused, then the codemod on a file
    probe = block_imports("tensorflow", "tf_keras", "keras") + dedent(f"""\
        sys.path.insert(0, {str(ROOT)!r})
        from tapeshift.migrate.engine.pipeline import migrate_source
        r = migrate_source("import tensorflow as tf\\nh = tf.layers.dense(x, 3)\\n", mode="compat")
        print(r.output)
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "tf_keras")))
    """)
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "h = tf_layers.dense(x, 3)" in proc.stdout
    assert proc.stdout.rstrip().endswith("[]")


# -- the table against the installed packages -------------------------------------

@pytest.mark.tf
def test_table_matches_installed_tf_keras():
    module = importlib.import_module(TF_KERAS_LEGACY_LAYERS)
    current = {n for n in dir(module) if not n.startswith("_")}
    assert sorted(LEGACY_LAYERS - current) == []  # every listed name is there
    assert sorted(current - LEGACY_LAYERS) == []  # and none is missing
    for name in ("dense", "conv1d", "conv2d", "conv3d", "conv2d_transpose", "separable_conv2d",
                 "max_pooling2d", "batch_normalization", "dropout", "flatten", "Dense", "Layer"):
        assert callable(getattr(module, name)), name


@pytest.mark.tf
def test_the_module_is_what_tensorflow_routes_tf_compat_v1_layers_to(tmp_path):
    import tensorflow as tf

    # TensorFlow's generated compat.v1 package names the module its lazy loader loads
    init = Path(tf.compat.v1.__file__).read_text(encoding="utf-8")
    assert f'"{TF_KERAS_LEGACY_LAYERS}"' in init
    # and with legacy Keras switched on, tf.compat.v1.layers is that module's names
    probe = ("import tensorflow as tf\n"
             "print(sorted(n for n in dir(tf.compat.v1.layers) if not n.startswith('_')))\n"
             "print(tf.compat.v1.layers.dense.__module__)\n")
    env = {**os.environ, "TF_USE_LEGACY_KERAS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    names, module = proc.stdout.strip().splitlines()[-2:]
    assert eval(names) == sorted(LEGACY_LAYERS)  # noqa: S307 - our own subprocess' list
    assert module == importlib.import_module(TF_KERAS_LEGACY_LAYERS).dense.__module__


def test_compat_output_with_graph_mode_layers_migrates_to_itself():
    """tf.layers in a class method the model-code rule cannot replay: compat mode, with
    tf-keras' legacy layers. Migrated again, those layers keep the file in compat mode
    (they make their variables at every call: eager code would lose them)."""
    from tapeshift.migrate.engine.pipeline import migrate_source

    source = (
        "import tensorflow.compat.v1 as tf\n\n\n"
        "class Model(Base):\n"
        "    def body(self, x):\n"
        "        for i in range(self.n):\n"
        "            x = tf.layers.dense(x, 8, name='layer_%d' % i)\n"
        "        return x\n")
    first = migrate_source(source, "model.py")
    assert first.mode == "compat"
    assert "import tf_keras.api._v1.keras.__internal__.legacy.layers as tf_layers" in first.output
    again = migrate_source(first.output, "model.py")
    assert not again.changed, again.output
    assert any(f.code == "TS109" and "graph-mode layers" in f.message for f in again.findings)
