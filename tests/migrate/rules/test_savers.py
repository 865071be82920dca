"""SaversToEager: tf.train.Saver -> the v1 Saver run eagerly on its variables; sess -> None.

With the model-code rule (TF1's default var_list written out), the feeds rule (layers
built before a Saver lists them; one fed graph per function) and the session rule, in
the pipeline. The TensorFlow runs are in tests/migrate/legacy/test_checkpoint_programs.py.
"""

from textwrap import dedent

from libcst.codemod import CodemodTest

from tapeshift.migrate.engine.pipeline import migrate_source
from tapeshift.migrate.rules.savers import SaversToEager


def codes(r):
    return [(f.code, f.line) for f in r.findings]


class TestSaversToEager(CodemodTest):
    TRANSFORM = SaversToEager

    def test_noop_without_a_saver(self) -> None:
        code = "import tensorflow as tf\nckpt = tf.train.latest_checkpoint('ck')\n"
        self.assertCodemod(code, code)

    def test_saver_save_and_restore_lose_the_session(self) -> None:
        before = """\
            import tensorflow as tf
            w = tf.Variable(1.0, name="w")
            saver = tf.train.Saver([w], max_to_keep=3)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                saver.restore(sess, tf.train.latest_checkpoint("ck"))
                path = saver.save(sess, "ck/model", global_step=1, write_meta_graph=False)
                print(saver.last_checkpoints)
        """
        after = """\
            import tensorflow as tf
            w = tf.Variable(1.0, name="w")
            saver = tf.compat.v1.train.Saver([w], max_to_keep=3)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                saver.restore(None, tf.train.latest_checkpoint("ck"))
                path = saver.save(None, "ck/model", global_step=1, write_meta_graph=False)
                print(saver.last_checkpoints)
        """
        self.assertCodemod(dedent(before), dedent(after))

    def test_alias_and_a_session_bound_by_assignment(self) -> None:
        before = """\
            import tensorflow as T
            w = T.Variable(1.0, name="w")
            keeper = T.train.Saver(var_list={"w": w})
            s = T.Session()
            keeper.save(sess=s, save_path="ck/model")
        """
        after = """\
            import tensorflow as T
            w = T.Variable(1.0, name="w")
            keeper = T.compat.v1.train.Saver(var_list={"w": w})
            s = T.Session()
            keeper.save(sess=None, save_path="ck/model")
        """
        self.assertCodemod(dedent(before), dedent(after))

    def test_migrated_code_is_left_as_it_is(self) -> None:
        code = """\
            import tensorflow as tf
            w = tf.Variable(1.0, name="w")
            saver = tf.compat.v1.train.Saver(var_list=[w])
            saver.save(None, "ck/model")
        """
        self.assertCodemod(dedent(code), dedent(code))

    def test_warns_and_skips(self) -> None:
        cases = [
            ("""\
                import tensorflow as tf
                class Net:
                    def __init__(self):
                        self.saver = tf.train.Saver([w])
            """, "TS128 4:22: a tf.train.Saver in a class is not converted"),
            ("""\
                import tensorflow as tf
                saver = tf.train.Saver([w])
                keep(saver)
            """, "TS128 3:6: the Saver `saver` is used in a way the codemod cannot follow "
                 "(passed, stored or returned)"),
            ("""\
                import tensorflow as tf
                saver = tf.train.Saver([w])
                def save(sess):
                    saver.save(sess, "ck/model")
            """, "TS128 4:5: `saver.save(sess, ...)`: the session is not one this file opens "
                 "where the Saver is used"),
            ("""\
                import tensorflow as tf
                saver = tf.train.Saver([w])
                saver.export_meta_graph("m.meta")
            """, "TS128 3:1: `saver.export_meta_graph` has no eager counterpart the codemod "
                 "writes (save and restore are converted)"),
            ("""\
                import tensorflow as tf
                saver = tf.train.Saver([w], defer_build=True)
            """, "TS128 2:9: tf.train.Saver(defer_build=...): build() raises under eager "
                 "execution"),
            ("""\
                import tensorflow as tf
                saver = tf.train.Saver()
            """, "TS128 2:9: tf.train.Saver() without var_list: the codemod could not list "
                 "TF1's global variables at this line"),
            ("""\
                import tensorflow as tf
                tf.train.Saver([w]).save(sess, "m")
            """, "TS128 2:1: `tf.train.Saver([w])`: a Saver is converted when it is bound to a "
                 "name (`saver = tf.train.Saver(...)`)"),
        ]
        for before, warning in cases:
            with self.subTest(warning=warning):
                self.assertCodemod(dedent(before), dedent(before), expected_warnings=[warning])


# ---------------------------------------------------------------------------
# the pipeline: model code, feeds and session rules around it
# ---------------------------------------------------------------------------

TRAIN = """\
import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 3])
y = tf.placeholder(tf.float32, [None, 1])
with tf.variable_scope("model"):
    w = tf.get_variable("w", [3, 4], initializer=tf.constant_initializer(0.1))
    h = tf.layers.dense(tf.matmul(x, w), 5, tf.nn.tanh, name="fc")
    out = tf.layers.dense(h, 1)
loss = tf.reduce_mean(tf.square(out - y))
step = tf.train.get_or_create_global_step()
train = tf.train.AdamOptimizer(0.01).minimize(loss, global_step=step)
saver = tf.train.Saver()
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(3):
        sess.run(train, feed_dict={x: np.ones((2, 3)), y: np.ones((2, 1))})
    saver.save(sess, "ck/model.ckpt", global_step=step)
"""


def test_a_training_script_saves_the_model_variables_and_notes_the_slots():
    r = migrate_source(TRAIN, "train.py")
    assert r.mode == "tape", codes(r)
    assert r.output == dedent("""\
        import numpy as np
        import tensorflow as tf
        import tf_keras

        w = tf.Variable(tf.compat.v1.constant_initializer(0.1)([3, 4]), name="model/w")
        fc = tf_keras.layers.Dense(5, tf.nn.tanh, name="model/fc")
        fc(tf_keras.Input([4]))  # built now: its variables are read before its first call
        out_layer = tf_keras.layers.Dense(1, name="model/dense")
        out_layer(tf_keras.Input([5]))
        step = tf.compat.v1.train.get_or_create_global_step()
        train_optimizer = tf.compat.v1.train.AdamOptimizer(0.01)
        saver = tf.compat.v1.train.Saver(var_list=[w, *fc.variables, *out_layer.variables, step])


        def run_train(x, y):
            \"\"\"sess.run(train) as a function of the fed values.\"\"\"
            x = tf.convert_to_tensor(x, tf.float32)
            y = tf.convert_to_tensor(y, tf.float32)
            with tf.GradientTape() as tape:
                h = fc(tf.matmul(x, w))
                out = out_layer(h)
                loss = tf.reduce_mean(tf.square(out - y))
            train_optimizer.apply_gradients(zip(tape.gradient(loss, [w, *fc.trainable_variables, *out_layer.trainable_variables]), [w, *fc.trainable_variables, *out_layer.trainable_variables]), global_step=step)
            return None


        for i in range(3):
            run_train(x=np.ones((2, 3)), y=np.ones((2, 1)))
        saver.save(None, "ck/model.ckpt", global_step=step)
    """)
    (note,) = [f for f in r.findings if f.code == "TS127"]
    assert note.line == 13 and "tf.train.AdamOptimizer" in note.message
    assert not migrate_source(r.output, "train.py").changed


def test_a_saver_made_before_the_optimizer_lists_no_slots():
    src = TRAIN.replace("train = tf.train.AdamOptimizer(0.01).minimize(loss, global_step=step)\n"
                        "saver = tf.train.Saver()\n",
                        "saver = tf.train.Saver()\n"
                        "train = tf.train.AdamOptimizer(0.01).minimize(loss, global_step=step)\n")
    r = migrate_source(src, "train.py")
    assert r.mode == "tape", codes(r)
    assert "TS127" not in [c for c, _ in codes(r)]
    assert "saver = tf.compat.v1.train.Saver(var_list=[w, *fc.variables, *out_layer.variables, " \
           "step])" in r.output


def test_gradient_descent_makes_no_slots():
    r = migrate_source(TRAIN.replace("AdamOptimizer", "GradientDescentOptimizer"), "train.py")
    assert r.mode == "tape", codes(r)
    assert "TS127" not in [c for c, _ in codes(r)]


PREDICT = """\
import sys
import numpy as np
import tensorflow as tf

x = tf.placeholder(tf.float32, [None, 3])
with tf.variable_scope("model"):
    w = tf.get_variable("w", [3, 4], initializer=tf.constant_initializer(0.1))
    h = tf.layers.dense(tf.matmul(x, w), 5, tf.nn.tanh, name="fc")
    out = tf.layers.dense(h, 1)
saver = tf.train.Saver()
with tf.Session() as sess:
    saver.restore(sess, tf.train.latest_checkpoint(sys.argv[1]))
    print(sess.run(out, feed_dict={x: np.ones((2, 3))}))
"""


def test_a_prediction_script_builds_its_layers_before_the_saver_lists_them():
    r = migrate_source(PREDICT, "predict.py")
    assert r.mode == "tape", codes(r)
    out = r.output
    assert 'fc = tf_keras.layers.Dense(5, tf.nn.tanh, name="model/fc")\n' \
           'fc(tf_keras.Input([4]))' in out
    assert "saver = tf.compat.v1.train.Saver(var_list=[w, *fc.variables, *out_layer.variables])" \
        in out
    assert out.endswith("saver.restore(None, tf.train.latest_checkpoint(sys.argv[1]))\n"
                        "print(run_out(x=np.ones((2, 3))))\n")
    assert "Session" not in out and "placeholder" not in out


def test_restoring_optimizer_slots_keeps_the_compat_form():
    src = TRAIN.replace("    sess.run(tf.global_variables_initializer())\n",
                        "    saver.restore(sess, tf.train.latest_checkpoint('ck'))\n")
    r = migrate_source(src, "resume.py")
    assert r.mode == "compat"
    assert ("TS128", 15) in codes(r)
    assert "restores the slots of tf.train.AdamOptimizer" in r.findings[0].message


def test_two_functions_each_with_its_graph_and_session():
    # the layout of a save / reload tutorial: a graph per function, the default graph
    # reset between them: the layers of each are named afresh (dense, dense_1)
    src = dedent("""\
        import numpy as np
        import tensorflow as tf

        data = np.linspace(-1, 1, 8)[:, np.newaxis]


        def save():
            tf_x = tf.placeholder(tf.float32, data.shape)
            o = tf.layers.dense(tf.layers.dense(tf_x, 4, tf.nn.relu), 1)
            loss = tf.reduce_mean(tf.square(o - tf_x))
            train_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
            sess = tf.Session()
            sess.run(tf.global_variables_initializer())
            saver = tf.train.Saver()
            for step in range(10):
                sess.run(train_op, {tf_x: data})
            saver.save(sess, './params', write_meta_graph=False)
            print(sess.run(loss, {tf_x: data}))


        def reload():
            tf_x = tf.placeholder(tf.float32, data.shape)
            o_ = tf.layers.dense(tf.layers.dense(tf_x, 4, tf.nn.relu), 1)
            loss_ = tf.reduce_mean(tf.square(o_ - tf_x))
            sess = tf.Session()
            saver = tf.train.Saver()
            saver.restore(sess, './params')
            print(sess.run(loss_, {tf_x: data}))


        save()
        tf.reset_default_graph()
        reload()
    """)
    r = migrate_source(src, "save_reload.py")
    assert r.mode == "tape", codes(r)
    out = r.output
    # each function's layers made before its first call, under the names of its own graph
    assert out.count('name="dense")') == 2 and out.count('name="dense_1")') == 2
    assert "reset_default_graph" not in out and "Session" not in out
    # built where each function starts: its Saver lists their variables
    assert "def save():\n    dense(tf_keras.Input([data.shape[-1]]))" in out
    assert "def reload():\n    dense_2(tf_keras.Input([data.shape[-1]]))" in out
    assert "saver.restore(None, './params')" in out
    assert not migrate_source(out, "save_reload.py").changed


def test_two_sessions_in_one_block_stay_reported():
    src = PREDICT + "with tf.Session() as again:\n    print(again.run(out, {x: np.ones((1, 3))}))\n"
    r = migrate_source(src, "predict.py")
    assert r.mode == "compat"
    assert ("TS107", 14) in codes(r)


def test_a_model_function_imported_from_another_module_is_not_read():
    src = dedent("""\
        import tensorflow as tf
        from model import build_model

        x = tf.placeholder(tf.float32, [None, 3])
        out = build_model(x)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            saver.restore(sess, "ck/model")
            print(sess.run(out, feed_dict={x: [[1.0, 2.0, 3.0]]}))
    """)
    r = migrate_source(src, "predict.py")
    assert r.mode == "compat"
    assert ("TS128", 5) in codes(r)
    assert "imported from `model`" in r.findings[0].message


def test_a_plot_of_tensorflow_values_before_the_saver_makes_no_variable():
    # matplotlib (like numpy, pandas, scipy) does not use TensorFlow
    src = dedent("""\
        import matplotlib.pyplot as plt
        import tensorflow as tf

        w = tf.Variable([1.0, 2.0])
        plt.plot(w)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            saver.save(sess, "ck/model")
    """)
    r = migrate_source(src, "plot.py")
    assert r.mode == "tape", codes(r)
    assert "tf.compat.v1.train.Saver(var_list=[w])" in r.output
    r = migrate_source(src.replace("import matplotlib.pyplot as plt", "import plotting as plt"),
                       "plot.py")
    assert ("TS128", 5) in codes(r)


def test_variables_keep_their_tf1_names_when_a_saver_keeps_them_by_name():
    src = dedent("""\
        import tensorflow as tf

        a = tf.Variable(1.0)
        b = tf.Variable(2.0)
        c = tf.Variable(3.0, name="c")
        d = tf.Variable(4.0, name="c")
        step = tf.train.get_or_create_global_step()
        saver = tf.train.Saver(max_to_keep=2)
        everything = tf.global_variables()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            print(saver.save(sess, "ck/m", global_step=step))
    """)
    r = migrate_source(src, "names.py")
    assert r.mode == "tape", codes(r)
    assert r.output == dedent("""\
        import tensorflow as tf

        a = tf.Variable(1.0)
        b = tf.Variable(2.0, name="Variable_1")
        c = tf.Variable(3.0, name="c")
        d = tf.Variable(4.0, name="c_1")
        step = tf.compat.v1.train.get_or_create_global_step()
        saver = tf.compat.v1.train.Saver(var_list=[a, b, c, d, step], max_to_keep=2)
        everything = [a, b, c, d, step]
        print(saver.save(None, "ck/m", global_step=step))
    """)


def test_a_saver_of_global_variables_is_a_default_saver():
    src = TRAIN.replace("saver = tf.train.Saver()", "saver = tf.train.Saver(tf.global_variables())")
    r = migrate_source(src, "train.py")
    assert r.mode == "tape", codes(r)
    assert "saver = tf.compat.v1.train.Saver(tf.compat.v1.train.Saver" not in r.output
    assert "saver = tf.compat.v1.train.Saver([w, *fc.variables, *out_layer.variables, step])" \
        in r.output
    assert "TS127" in [c for c, _ in codes(r)]


def test_a_global_step_after_a_graph_reset_is_not_converted():
    src = dedent("""\
        import tensorflow as tf

        with tf.variable_scope("a"):
            w = tf.get_variable("w", [1])
        step = tf.train.get_or_create_global_step()
        tf.reset_default_graph()
        with tf.variable_scope("a"):
            v = tf.get_variable("w", [1])
    """)
    r = migrate_source(src, "reset.py")
    assert r.mode == "compat"
    assert ("TS125", 6) in codes(r)


def test_a_model_function_with_its_session_called_twice_is_not_converted():
    # TF1 makes a second set of variables (dense_1) at the second call; the code read at
    # the first call would share one layer between the calls
    src = dedent("""\
        import numpy as np
        import tensorflow as tf


        def run():
            x = tf.placeholder(tf.float32, [None, 2])
            o = tf.layers.dense(x, 1)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                print(sess.run(o, {x: np.ones((1, 2))}))


        run()
        run()
    """)
    r = migrate_source(src, "twice.py")
    assert r.mode == "compat"
    assert ("TS125", 14) in codes(r)
    assert "`run` is called again" in r.findings[0].message
