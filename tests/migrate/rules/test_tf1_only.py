"""TF1OnlyNames: TF1-only names no rule converts block tape form."""

from textwrap import dedent

from libcst.codemod import CodemodTest

from tapeshift.migrate.engine.pipeline import migrate_source
from tapeshift.migrate.rules.tf1_only import TF1OnlyNames, TF1OnlyNamesLeft, tf1_only


def test_prefix_lookup():
    assert tf1_only("train.Supervisor") == "train.Supervisor"
    assert tf1_only("train.Saver") is None  # the savers rule converts it (or reports TS128)
    assert tf1_only("train.AdamOptimizer") is None  # renamed to compat.v1, runs eagerly
    assert tf1_only("train.AdamOptimizer", strict=True) == "train.AdamOptimizer"
    assert tf1_only("layers.dense") == "layers"
    assert tf1_only("contrib.layers.fully_connected") == "contrib"
    assert tf1_only("math.log") is None
    assert tf1_only("log") is None  # renamed by the renames rule
    assert tf1_only("Session") is None  # converted by the session rule


class TestTF1OnlyNames(CodemodTest):
    TRANSFORM = TF1OnlyNames

    def test_noop_on_tf2_names(self) -> None:
        before = """
            import tensorflow as tf
            opt = tf.keras.optimizers.SGD(0.1)
        """
        self.assertCodemod(before, before)

    def test_alias_T_reports(self) -> None:
        before = """
            import tensorflow as T
            sv = T.train.Supervisor()
        """
        self.assertCodemod(before, before, expected_warnings=[
            "TS109 2:6: T.train.Supervisor: tf.train.Supervisor has no TF2 "
            "counterpart in the rename tables"])

    def test_from_import_reports(self) -> None:
        before = """
            from tensorflow.compat.v1 import layers
            y = layers.dense(x, 3)
        """
        self.assertCodemod(before, before, expected_warnings=[
            "TS109 2:5: layers.dense: tf.layers has no TF2 counterpart in the rename tables"])


class TestTF1OnlyNamesLeft(CodemodTest):
    TRANSFORM = TF1OnlyNamesLeft

    def test_noop_on_tf2_code(self) -> None:
        before = """
            import tensorflow as tf
            with tf.GradientTape() as tape:
                y = tf.constant(1.0)
        """
        self.assertCodemod(before, before)

    def test_strict_reports_handled_names_and_gradients(self) -> None:
        before = """
            import tensorflow as tf
            from tensorflow import Session
            g = tf.gradients(y, x)
        """
        self.assertCodemod(before, before, expected_warnings=[
            "TS109 2:24: `from tensorflow import Session` is left and would fail under TF2",
            "TS109 3:5: tf.gradients raises under eager execution and was not converted",
        ])


class TestTF1OnlyAudit(CodemodTest):
    """The TS109 audit (issue #17): what no longer blocks tape form, and what does."""

    TRANSFORM = TF1OnlyNames

    def test_noop_on_audited_names(self) -> None:
        before = """
            import tensorflow as tf
            tf.logging.set_verbosity(tf.logging.DEBUG)
            n = tf.global_norm(gs)
            loss = tf.losses.mean_squared_error(y, p)
        """
        self.assertCodemod(before, before)

    def test_alias_compat_v1_spelling_is_kept(self) -> None:
        before = """
            import tensorflow as T
            T.compat.v1.logging.info("x")
            init = T.compat.v1.glorot_uniform_initializer()
        """
        self.assertCodemod(before, before)

    def test_notes_seeded_initializer_keyword_and_positional(self) -> None:
        # TS113 is informational: the file converts, the note says the stream differs
        before = """
            import tensorflow as tf
            a = tf.truncated_normal_initializer(stddev=0.1, seed=3)
            b = tf.orthogonal_initializer(1.0, 7)
            c = tf.glorot_uniform_initializer(seed=None)
        """
        self.assertCodemod(before, before, expected_warnings=[])
        notes = [(f.code, f.line, f.changes_numbers, f.message)
                 for f in migrate_source(dedent(before).lstrip(), "s.py").findings
                 if f.code == "TS113"]
        assert notes == [
            ("TS113", 2, True, "tf.truncated_normal_initializer(seed=3): TF2 draws other numbers "
             "from this seed than the TF1 graph did"),
            ("TS113", 3, True, "tf.orthogonal_initializer(seed=7): TF2 draws other numbers from "
             "this seed than the TF1 graph did"),
        ]

    def test_warns_names_that_stay_tf1_only(self) -> None:
        before = """
            import tensorflow as tf
            total = tf.losses.get_total_loss()
            up = tf.assign(v, 1.0)
            log = tf.logging
        """
        self.assertCodemod(before, before, expected_warnings=[
            "TS109 2:9: tf.losses.get_total_loss: tf.losses.get_total_loss has no TF2 "
            "counterpart in the rename tables",
            "TS109 3:6: tf.assign: tf.assign has no TF2 counterpart in the rename tables",
            "TS109 4:7: tf.logging: tf.logging has no TF2 counterpart in the rename tables",
        ])


class TestTF1OnlyLeftAudit(CodemodTest):
    TRANSFORM = TF1OnlyNamesLeft

    def test_kept_compat_v1_names_are_not_left_tf1_only(self) -> None:
        before = """
            import tensorflow as tf
            tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.DEBUG)
            w = tf.compat.v1.truncated_normal_initializer(stddev=0.1)([2, 3])
        """
        self.assertCodemod(before, before)
