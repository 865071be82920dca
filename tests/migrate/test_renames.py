"""RenameTF1Names: TF1 op names that moved get their TF2 names."""

from libcst.codemod import CodemodTest

from migrate.codemods.renames import RenameTF1Names


class TestRenames(CodemodTest):
    TRANSFORM = RenameTF1Names

    def test_noop_on_tf2_names(self) -> None:
        before = """
            import tensorflow as tf
            y = tf.math.log(tf.cast(x, tf.float32)) + tf.random.normal([2])
        """
        self.assertCodemod(before, before)

    def test_local_name_tf_is_not_tensorflow(self) -> None:
        before = """
            import numpy as tf
            y = tf.log(x)
        """
        self.assertCodemod(before, before)

    def test_renames_and_casts(self) -> None:
        before = """
            import tensorflow as tf
            y = tf.log(tf.to_float(x))  # keep me
            z = tf.random_normal([2], seed=1) + tf.to_int32(n, name="n")
        """
        after = """
            import tensorflow as tf
            y = tf.math.log(tf.cast(x, tf.float32))  # keep me
            z = tf.random.normal([2], seed=1) + tf.cast(n, tf.int32, name="n")
        """
        self.assertCodemod(before, after)

    def test_alias_T_and_compat_spelling(self) -> None:
        before = """
            import tensorflow as T
            y = T.log(x) + T.compat.v1.squared_difference(a, b)
        """
        after = """
            import tensorflow as T
            y = T.math.log(x) + T.math.squared_difference(a, b)
        """
        self.assertCodemod(before, after)

    def test_alias_from_import(self) -> None:
        before = """
            import tensorflow as tf
            from tensorflow import log, to_float
            y = log(to_float(x))
        """
        after = """
            import tensorflow as tf
            y = tf.math.log(tf.cast(x, tf.float32))
        """
        self.assertCodemod(before, after)

    def test_alias_compat_v1_module(self) -> None:
        before = """
            import tensorflow.compat.v1 as tf
            y = tf.log(x)
        """
        after = """
            import tensorflow.compat.v1 as tf
            y = tf.math.log(x)
        """
        self.assertCodemod(before, after)

    def test_warns_and_skips_cast_used_as_value(self) -> None:
        before = """
            import tensorflow as tf
            ys = list(map(tf.to_float, xs))
        """
        self.assertCodemod(before, before, expected_warnings=[
            "TS109 2:15: tf.to_float used as a value cannot be rewritten to tf.cast; "
            "use `lambda x: tf.cast(x, tf.float32)`"])
