"""CompatV1ToTF2Imports: a converted compat.v1 file imports TF2 again."""

from libcst.codemod import CodemodTest

from tapeshift.migrate.rules.compat_v1_imports import CompatV1ToTF2Imports


class TestCompatV1ToTF2Imports(CodemodTest):
    TRANSFORM = CompatV1ToTF2Imports

    def test_noop_on_tf2_file(self) -> None:
        before = """
            import tensorflow as tf
            x = tf.constant(1.0)
        """
        self.assertCodemod(before, before)

    def test_compat_v1_import_and_disable(self) -> None:
        before = """
            import tensorflow.compat.v1 as tf
            tf.disable_v2_behavior()
            x = tf.constant(1.0)
        """
        after = """
            import tensorflow as tf
            x = tf.constant(1.0)
        """
        self.assertCodemod(before, after)

    def test_alias_from_compat_import_v1(self) -> None:
        before = """
            from tensorflow.compat import v1 as T
            T.disable_eager_execution()
            x = T.constant(1.0)
        """
        after = """
            import tensorflow as T
            x = T.constant(1.0)
        """
        self.assertCodemod(before, after)

    def test_explicit_compat_v1_reference(self) -> None:
        before = """
            import tensorflow as tf
            W = tf.compat.v1.Variable(1.0)
            s = tf.compat.v1.Session
        """
        after = """
            import tensorflow as tf
            W = tf.Variable(1.0)
            s = tf.compat.v1.Session
        """
        self.assertCodemod(before, after)

    def test_local_compat_object_untouched(self) -> None:
        before = """
            import tensorflow as tf
            import mylib as lib
            W = lib.compat.v1.Variable(1.0)
        """
        self.assertCodemod(before, before)
