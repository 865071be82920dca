"""v1 initialisers whose name TF2 gave to another class (other defaults, no dtype).

``tf.random_normal_initializer`` is stddev 1.0 in TF1 and 0.05 in TF2;
``tf.random_uniform_initializer`` draws from [0, 1) in TF1 and [-0.05, 0.05) in
TF2; ``tf.zeros_initializer(dtype=...)`` is a TypeError in TF2. A file written for
TF1 keeps the v1 class (``tf.compat.v1.<name>``); a TF2 file is left alone.
"""

import textwrap

import numpy as np
import pytest

from tapeshift.migrate.engine.pipeline import migrate_source


def migrate(code: str):
    return migrate_source(textwrap.dedent(code).lstrip(), "model.py")


TF1_PROGRAM = """
    import tensorflow as tf
    x = tf.placeholder(tf.float32, [None, 4000])
    normal = tf.Variable(tf.random_normal_initializer()([4000]))
    uniform = tf.Variable(tf.random_uniform_initializer()([4000]))
    zeros = tf.Variable(tf.zeros_initializer(dtype=tf.float32)([3]))
    ones = tf.Variable(tf.ones_initializer(tf.float32)([3]))
    const = tf.Variable(tf.constant_initializer(2.5, dtype=tf.float32)([3]))
    y = tf.reduce_sum(x * normal)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        print(sess.run(y, {x: np.ones([1, 4000])}))
"""


def test_tf1_file_keeps_the_v1_classes():
    result = migrate(TF1_PROGRAM)
    assert result.mode == "tape", result.findings
    for name in ("random_normal_initializer", "random_uniform_initializer",
                 "zeros_initializer", "ones_initializer", "constant_initializer"):
        assert f"tf.compat.v1.{name}(" in result.output
        assert f" tf.{name}(" not in result.output and f"(tf.{name}(" not in result.output
    described = {c.description for c in result.changes}
    assert "random_normal_initializer -> compat.v1.random_normal_initializer" in described


def test_tf2_file_is_left_alone():
    source = """
        import tensorflow as tf
        w = tf.Variable(tf.random_normal_initializer(stddev=0.1, seed=3)([2, 1]))
        b = tf.Variable(tf.zeros_initializer()([1]))
    """
    result = migrate(source)
    assert result.mode == "unchanged", (result.mode, result.findings)
    assert result.findings == ()  # no TS113/TS116 for TF2's own classes


def test_compat_v1_import_keeps_v1_meaning():
    source = """
        import tensorflow.compat.v1 as tf
        tf.disable_v2_behavior()
        w = tf.Variable(tf.random_uniform_initializer()([2]))
        v = tf.compat.v1.zeros_initializer(dtype=tf.float32)
    """
    result = migrate(source)
    assert result.mode == "tape", result.findings
    assert "import tensorflow as tf\n" in result.output
    assert "tf.compat.v1.random_uniform_initializer()([2])" in result.output
    # spelled compat.v1 already: the imports rule must not strip it
    assert "tf.compat.v1.zeros_initializer(dtype=tf.float32)" in result.output


def test_seeded_v1_namesake_is_kept_and_noted_in_tf1_file():
    source = """
        import tensorflow as tf
        x = tf.placeholder(tf.float32, [2])
        w = tf.Variable(tf.random_normal_initializer(seed=1)([2]))
        y = x * w
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            print(sess.run(y, {x: [1., 2.]}))
    """
    result = migrate(source)
    assert result.mode == "tape"
    assert "tf.compat.v1.random_normal_initializer(seed=1)([2])" in result.output
    assert [(f.code, f.changes_numbers) for f in result.findings] == [("TS113", True)]


@pytest.mark.tf
def test_migrated_values_have_tf1_defaults():
    """Run the migrated program eagerly: the initial values have TF1's spread."""
    import tensorflow as tf

    result = migrate(TF1_PROGRAM)
    namespace = {"np": np}
    exec(compile(result.output.replace("print(", "(lambda *a: None)("), "model.py", "exec"),
         namespace)
    normal = namespace["normal"].numpy()
    uniform = namespace["uniform"].numpy()
    # v1: N(0, 1) and U[0, 1); TF2's namesakes: N(0, 0.05) and U[-0.05, 0.05)
    assert 0.9 < normal.std() < 1.1
    assert uniform.min() >= 0.0 and 0.95 < uniform.max() < 1.0 and 0.45 < uniform.mean() < 0.55
    np.testing.assert_array_equal(namespace["zeros"].numpy(), np.zeros(3, np.float32))
    np.testing.assert_array_equal(namespace["ones"].numpy(), np.ones(3, np.float32))
    np.testing.assert_array_equal(namespace["const"].numpy(), np.full(3, 2.5, np.float32))
    assert isinstance(namespace["normal"], tf.Variable)
