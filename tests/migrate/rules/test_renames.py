"""RenameTF1Names: TF1 op names that moved get their TF2 names."""

from textwrap import dedent

import pytest
from libcst.codemod import CodemodTest

from tapeshift.migrate.engine.pipeline import migrate_source
from tapeshift.migrate.rules.renames import RenameTF1Names


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

    def test_gfile_functions_and_their_keywords(self) -> None:
        before = """
            import tensorflow as tf
            if not tf.gfile.Exists(filename=log_dir):
                tf.gfile.MakeDirs(log_dir)
            for path in tf.gfile.Glob(filename=pattern):
                tf.gfile.Copy(path, backup, overwrite=True)
            with tf.gfile.FastGFile(path, "rb") as f:
                data = f.read()
            for top, dirs, files in tf.gfile.Walk(log_dir, in_order=False):
                pass
            exists = tf.gfile.Exists   # uncalled: renamed, no keywords to change
        """
        after = """
            import tensorflow as tf
            if not tf.io.gfile.exists(path=log_dir):
                tf.io.gfile.makedirs(log_dir)
            for path in tf.io.gfile.glob(pattern=pattern):
                tf.io.gfile.copy(path, backup, overwrite=True)
            with tf.io.gfile.GFile(path, "rb") as f:
                data = f.read()
            for top, dirs, files in tf.io.gfile.walk(log_dir, topdown=False):
                pass
            exists = tf.io.gfile.exists   # uncalled: renamed, no keywords to change
        """
        self.assertCodemod(before, after)

    def test_gfile_through_compat_v1_import(self) -> None:
        before = """
            import tensorflow.compat.v1 as tf
            tf.gfile.Rename(oldname=a, newname=b)
        """
        after = """
            import tensorflow.compat.v1 as tf
            tf.io.gfile.rename(src=a, dst=b)
        """
        self.assertCodemod(before, after)

    def test_tf1_keyword_aliases_of_kept_functions(self) -> None:
        # TF2 keeps reduce_sum, argmax, ... but not their TF1 keyword aliases
        before = """
            import tensorflow as tf
            from tensorflow import reduce_mean
            a = tf.reduce_sum(x, reduction_indices=1, keep_dims=True)
            b = tf.argmax(y, dimension=1) + tf.math.argmin(y, dimension=0)
            c = tf.expand_dims(tf.squeeze(z, squeeze_dims=[0]), dim=1)
            d = tf.nn.softmax(l, dim=-1) + reduce_mean(x, reduction_indices=[0])
            e = tf.reduce_sum(x, axis=1) + tf.nn.moments(x, [0], keep_dims=True)[0]
            f = np.sum(x, keep_dims=True)
        """
        after = """
            import tensorflow as tf
            from tensorflow import reduce_mean
            a = tf.reduce_sum(x, axis=1, keepdims=True)
            b = tf.argmax(y, axis=1) + tf.math.argmin(y, axis=0)
            c = tf.expand_dims(tf.squeeze(z, axis=[0]), axis=1)
            d = tf.nn.softmax(l, axis=-1) + reduce_mean(x, axis=[0])
            e = tf.reduce_sum(x, axis=1) + tf.nn.moments(x, [0], keepdims=True)[0]
            f = np.sum(x, keep_dims=True)
        """
        self.assertCodemod(before, after)

    def test_moved_parameters_are_passed_by_name(self) -> None:
        before = """
            import tensorflow as tf
            a = tf.random_poisson(3.0, [2], tf.float32, 7)
            b = tf.multinomial(logits, 4, 1, "draw")
            c = tf.depth_to_space(x, 2, "d2s", "NHWC")
            d = tf.count_nonzero(x, 1, keep_dims=True)
            e = tf.count_nonzero(input_tensor=x, reduction_indices=[0])
        """
        after = """
            import tensorflow as tf
            a = tf.random.poisson(lam=3.0, shape=[2], dtype=tf.float32, seed=7)
            b = tf.random.categorical(logits, 4, seed=1, name="draw")
            c = tf.nn.depth_to_space(x, 2, name="d2s", data_format="NHWC")
            d = tf.math.count_nonzero(x, 1, keepdims=True)
            e = tf.math.count_nonzero(input=x, axis=[0])
        """
        self.assertCodemod(before, after)

    def test_moved_parameters_with_star_args_are_reported(self) -> None:
        before = """
            import tensorflow as tf
            a = tf.random_poisson(*args)
        """
        after = """
            import tensorflow as tf
            a = tf.random.poisson(*args)
        """
        self.assertCodemod(before, after)
        result = migrate_source(dedent(before).lstrip(), "s.py")
        assert result.mode == "compat"
        assert [(f.code, f.line) for f in result.findings if f.code == "TS109"] == [("TS109", 2)]

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


class TestAuditedRenames(CodemodTest):
    """The TS109 audit (issue #17): same-object renames and tf.compat.v1 names kept."""

    TRANSFORM = RenameTF1Names

    def test_noop_on_tf2_spellings(self) -> None:
        before = """
            import tensorflow as tf
            n = tf.linalg.global_norm(gs) + tf.math.ceil(x)
            tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
            init = tf.compat.v1.truncated_normal_initializer(stddev=0.1)
            loss = tf.compat.v1.losses.mean_squared_error(y, p)
        """
        self.assertCodemod(before, before)

    def test_same_object_renames(self) -> None:
        before = """
            import tensorflow as tf
            n = tf.global_norm(gs)
            e, v = tf.self_adjoint_eig(m)
            s = tf.sparse_tensor_to_dense(sp) + tf.ceil(x)
        """
        after = """
            import tensorflow as tf
            n = tf.linalg.global_norm(gs)
            e, v = tf.linalg.eigh(m)
            s = tf.sparse.to_dense(sp) + tf.math.ceil(x)
        """
        self.assertCodemod(before, after)

    def test_eager_compat_logging_initializers_losses(self) -> None:
        before = """
            import tensorflow as tf
            tf.logging.set_verbosity(tf.logging.DEBUG)
            init = tf.truncated_normal_initializer(stddev=0.1)
            loss = tf.losses.softmax_cross_entropy(y, logits)
        """
        after = """
            import tensorflow as tf
            tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.DEBUG)
            init = tf.compat.v1.truncated_normal_initializer(stddev=0.1)
            loss = tf.compat.v1.losses.softmax_cross_entropy(y, logits)
        """
        self.assertCodemod(before, after)

    def test_alias_T_and_compat_v1_module(self) -> None:
        # under `import tensorflow.compat.v1 as T` the kept v1 name is spelled
        # T.compat.v1.logging.info, right once the imports rule makes T tensorflow
        before = """
            import tensorflow.compat.v1 as T
            n = T.global_norm(gs)
            T.logging.info("step")
            T.compat.v1.logging.info("kept")
        """
        after = """
            import tensorflow.compat.v1 as T
            n = T.linalg.global_norm(gs)
            T.compat.v1.logging.info("step")
            T.compat.v1.logging.info("kept")
        """
        self.assertCodemod(before, after)

    def test_alias_T(self) -> None:
        before = """
            import tensorflow as T
            T.logging.info("step")
            w = T.glorot_uniform_initializer()([2, 2])
        """
        after = """
            import tensorflow as T
            T.compat.v1.logging.info("step")
            w = T.compat.v1.glorot_uniform_initializer()([2, 2])
        """
        self.assertCodemod(before, after)

    def test_alias_from_import(self) -> None:
        before = """
            import tensorflow as tf
            from tensorflow import global_norm
            n = global_norm(gs)
        """
        after = """
            import tensorflow as tf
            n = tf.linalg.global_norm(gs)
        """
        self.assertCodemod(before, after)

    def test_skips_names_that_stay_tf1_only(self) -> None:
        # no TF2 name computes the same (state, collections): left for TS109
        before = """
            import tensorflow as tf
            up = tf.assign(v, v + 1)
            total = tf.losses.get_total_loss()
            vs = tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)
            tf.write_file("out.txt", s)
            q = tf.FIFOQueue(3, tf.float32)
        """
        self.assertCodemod(before, before)


MOVED = """
import tensorflow as tf
tf.random.set_seed(5)
x = tf.reshape(tf.range(32.0), [1, 2, 2, 8])
values = [
    tf.random_poisson(3.0, [4], tf.float32, 7),
    tf.multinomial(tf.math.log([[0.2, 0.3, 0.5]]), 6, 11, "draw"),
    tf.depth_to_space(x, 2, "d2s", "NHWC"),
    tf.space_to_depth(tf.depth_to_space(x, 2), 2, "s2d", "NHWC"),
    tf.count_nonzero(x > 9.0, 3, keep_dims=True),
    tf.count_nonzero(input_tensor=x > 3.0, reduction_indices=[0, 3]),
    tf.extract_image_patches(x, ksizes=[1, 2, 2, 1], strides=[1, 1, 1, 1],
                             rates=[1, 1, 1, 1], padding="VALID"),
]
"""


@pytest.mark.tf
def test_moved_parameters_compute_what_tf1_computed():
    """The TF1 calls (tf.compat.v1, eagerly) and their rewrites give the same values."""
    tf = pytest.importorskip("tensorflow")
    np = pytest.importorskip("numpy")
    result = migrate_source(MOVED, "moved.py")
    assert result.mode == "tape" and "tf.random.poisson(lam=3.0" in result.output
    legacy, new = {"tf": tf.compat.v1}, {}
    exec(compile(MOVED.replace("import tensorflow as tf\ntf.random.set_seed",
                               "tf.random.set_random_seed"), "legacy", "exec"), legacy)
    exec(compile(result.output, "new", "exec"), new)
    assert len(legacy["values"]) == len(new["values"]) == 7
    for old, migrated in zip(legacy["values"], new["values"]):
        assert old.dtype == migrated.dtype
        np.testing.assert_array_equal(old.numpy(), migrated.numpy())
