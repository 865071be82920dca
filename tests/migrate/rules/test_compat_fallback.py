"""CompatFallback: run the file on tensorflow.compat.v1 with v2 behaviour disabled."""

from libcst.codemod import CodemodTest

from tapeshift.migrate.rules.compat_fallback import CompatFallback


class TestCompatFallback(CodemodTest):
    TRANSFORM = CompatFallback

    def test_noop_already_compat(self) -> None:
        before = """
            import numpy as np
            import tensorflow.compat.v1 as tf
            tf.disable_v2_behavior()
            x = tf.placeholder(tf.float32)
        """
        self.assertCodemod(before, before)

    def test_noop_without_tensorflow(self) -> None:
        before = """
            import numpy as tf
            x = tf.zeros(3)
        """
        self.assertCodemod(before, before)

    def test_import_tensorflow_as_tf(self) -> None:
        before = """
            \"\"\"Doc.\"\"\"
            import numpy as np
            import tensorflow as tf
            import os

            # build
            x = tf.placeholder(tf.float32)
        """
        after = """
            \"\"\"Doc.\"\"\"
            import numpy as np
            import tensorflow.compat.v1 as tf
            import os
            tf.disable_v2_behavior()

            # build
            x = tf.placeholder(tf.float32)
        """
        self.assertCodemod(before, after)

    def test_alias_T(self) -> None:
        before = """
            import tensorflow as T
            x = T.placeholder(T.float32)
        """
        after = """
            import tensorflow.compat.v1 as T
            T.disable_v2_behavior()
            x = T.placeholder(T.float32)
        """
        self.assertCodemod(before, after)

    def test_alias_from_import(self) -> None:
        before = """
            from tensorflow import placeholder, float32
            x = placeholder(float32)
        """
        after = """
            from tensorflow.compat.v1 import placeholder, float32, disable_v2_behavior
            disable_v2_behavior()
            x = placeholder(float32)
        """
        self.assertCodemod(before, after)

    def test_compat_v1_without_disable(self) -> None:
        before = """
            import tensorflow.compat.v1 as tf
            sess = tf.Session()
        """
        after = """
            import tensorflow.compat.v1 as tf
            tf.disable_v2_behavior()
            sess = tf.Session()
        """
        self.assertCodemod(before, after)

    def test_alias_from_compat_import_v1(self) -> None:
        before = """
            from tensorflow.compat import v1 as tf
            x = tf.placeholder(tf.float32)
        """
        after = """
            from tensorflow.compat import v1 as tf
            tf.disable_v2_behavior()
            x = tf.placeholder(tf.float32)
        """
        self.assertCodemod(before, after)

    def test_contrib_slim_becomes_tf_slim(self) -> None:
        before = """
            import tensorflow as tf
            from tensorflow.contrib import slim
        """
        after = """
            import tensorflow.compat.v1 as tf
            import tf_slim as slim
            tf.disable_v2_behavior()
        """
        self.assertCodemod(before, after)

    def test_warns_and_skips_other_contrib(self) -> None:
        before = """
            import tensorflow.compat.v1 as tf
            from tensorflow.contrib import rnn
            tf.disable_v2_behavior()
        """
        self.assertCodemod(before, before, expected_warnings=[
            "TS109 2:1: tf.contrib is not part of TensorFlow 2, not even under "
            "tensorflow.compat.v1"])
