"""migrate_source: tape form or compat per file, findings with positions, survey cases."""

import textwrap

import pytest

from tapeshift.migrate.engine.findings import Severity
from tapeshift.migrate.engine.pipeline import migrate_source


def _src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def codes(result):
    return [(f.code, f.line) for f in result.findings]


def test_file_without_tensorflow_is_unchanged():
    r = migrate_source("import numpy as np\nprint(np.zeros(2))\n")
    assert r.mode == "unchanged" and not r.changed and r.findings == ()


def test_a_file_without_tensorflow_needs_no_libcst_tree(monkeypatch):
    from tapeshift.migrate.engine import pipeline

    def refuse(source):
        raise AssertionError("parsed with LibCST")

    monkeypatch.setattr(pipeline, "parse_module", refuse)
    r = migrate_source("import numpy as np\n\ndef grad(f):\n    return np.gradient(f)\n")
    assert r.mode == "unchanged" and r.findings == ()
    # not Python 3: reported as before, whether or not the file uses TensorFlow
    monkeypatch.undo()
    for src in ("print 'x'\n", "try:\n    x = 1\nexcept Exception, e:\n    pass\n"):
        r = migrate_source(src, "old.py")
        assert r.mode == "error" and [f.code for f in r.findings] == ["TS100"]


def test_tape_form_for_a_convertible_file_and_idempotent():
    src = _src("""
        import tensorflow.compat.v1 as tf
        tf.disable_v2_behavior()

        W = tf.Variable([1.0, 2.0])
        x = tf.constant([3.0, 4.0])
        loss = tf.reduce_sum(tf.log(W) * x)  # comment kept
        gW, gx = tf.gradients(loss, [W, x])

        with tf.Session() as sess:
            sess.run(tf.initialize_all_variables())
            print(sess.run([gW, gx]))
    """)
    r = migrate_source(src, "t.py")
    assert r.mode == "tape"
    assert r.output == _src("""
        import tensorflow as tf

        W = tf.Variable([1.0, 2.0])
        x = tf.constant([3.0, 4.0])
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(tf.math.log(W) * x)  # comment kept
        gW, gx = tape.gradient(loss, [W, x])

        print([gW.numpy(), gx.numpy()])
    """)
    assert [c.rule for c in r.changes]  # every rewrite is listed
    again = migrate_source(r.output, "t.py")
    assert again.mode == "unchanged" and not again.changed


def test_unconvertible_feed_falls_back_to_compat_with_reasons():
    # feeding a computed tensor overrides it in TF1, and its gradient is computed through
    # it there: the feeds rule does not convert a step that differentiates through one
    src = _src("""
        import tensorflow as tf
        x = tf.placeholder(tf.float32, [2])
        W = tf.Variable([1.0, 2.0])
        y = tf.reduce_sum(W * x)
        g = tf.gradients(y, W, -tf.ones_like(y))[0]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            print(sess.run(g, feed_dict={x: [1.0, 2.0], y: 3.0}))
    """)
    r = migrate_source(src, "p.py")
    assert r.mode == "compat"
    assert r.output.splitlines()[:2] == ["import tensorflow.compat.v1 as tf",
                                         "tf.disable_v2_behavior()"]
    assert r.output.splitlines()[2:] == src.splitlines()[1:]
    assert codes(r) == [("TS107", 8), ("TS101", 1)]
    assert "this run feeds y and takes gradients for variables they are computed from" in r.findings[0].message
    assert all(f.path == "p.py" and f.column >= 1 for f in r.findings)
    again = migrate_source(r.output, "p.py")
    assert not again.changed


def test_compat_mode_only_does_the_fallback():
    src = "import tensorflow as tf\nW = tf.Variable(1.0)\nloss = W * W\ng = tf.gradients(loss, W)[0]\n"
    r = migrate_source(src, mode="compat")
    assert r.mode == "compat"
    assert "tf.gradients(loss, W)[0]" in r.output
    assert "import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()\n" in r.output


def test_bad_mode_is_rejected():
    with pytest.raises(ValueError):
        migrate_source("x = 1\n", mode="fast")


def test_python2_file_is_reported_and_untouched():
    src = "import tensorflow as tf\nprint \"loss\", 3\n"
    r = migrate_source(src, "old.py")
    assert r.mode == "error" and r.output == src
    (f,) = r.findings
    assert f.code == "TS100" and f.line == 2 and "Python 2" in f.message


def test_python2_that_libcst_accepts_is_bad_input_not_an_internal_error():
    # LibCST's grammar takes `except E, e:`; Python 3 does not compile it
    src = ("import tensorflow as tf\nsess = tf.Session()\ntry:\n    x = 1\n"
           "except Exception, e:\n    print(e)\n")
    r = migrate_source(src, "old.py")
    assert r.mode == "error" and r.output == src
    (f,) = r.findings
    assert f.code == "TS100" and (f.line, f.column) == (5, 8)
    assert "Python 2" in f.message and "internal" not in f.message


def test_an_internal_error_is_an_error_in_the_report(monkeypatch):
    from tapeshift.migrate.rules.session import SessionToEager

    def boom(self, node):
        raise RuntimeError("boom")

    monkeypatch.setattr(SessionToEager, "transform_module_impl", boom)
    r = migrate_source("import tensorflow as tf\nsess = tf.Session()\nprint(sess.run(tf.constant(1.0)))\n")
    internal = [f for f in r.findings if f.code == "TS114"]
    assert internal and internal[0].severity is Severity.ERROR and "boom" in internal[0].message
    assert r.mode == "compat"


def test_crlf_and_tabs_survive_the_whole_pipeline():
    src = ("import tensorflow as tf\r\n\r\ndef f():\r\n\tW = tf.Variable(1.0)\r\n"
           "\tloss = W * W\r\n\treturn tf.gradients(loss, W)[0]\r\n")
    r = migrate_source(src)
    assert r.mode == "tape"
    assert r.output == ("import tensorflow as tf\r\n\r\ndef f():\r\n\tW = tf.Variable(1.0)\r\n"
                        "\twith tf.GradientTape() as tape:\r\n\t\tloss = W * W\r\n"
                        "\treturn tape.gradient(loss, W)\r\n")


# --- survey cases -----------------------------------------------------------

def test_survey_stop_gradient_in_forward_code_converts():
    src = _src("""
        import tensorflow as tf
        W = tf.Variable([1.0, 2.0])
        target = tf.stop_gradient(W * 2.0)
        loss = tf.reduce_sum(tf.square(W - target))
        g = tf.gradients(loss, W)[0]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            print(sess.run(g))
    """)
    r = migrate_source(src)
    assert r.mode == "tape"
    assert "with tf.GradientTape() as tape:\n    target = tf.stop_gradient(W * 2.0)" in r.output


def test_survey_gradient_penalty_minimized_falls_back():
    src = _src("""
        import tensorflow as tf
        x = tf.constant([[1.0, 2.0]])
        W = tf.Variable([[1.0], [2.0]])
        out = tf.matmul(x, W)
        g = tf.gradients(out, x)[0]
        penalty = tf.reduce_mean(tf.square(tf.norm(g, axis=1) - 1.0))
        loss = tf.reduce_sum(out) + 10.0 * penalty
        train = tf.train.AdamOptimizer(1e-3).minimize(loss)
    """)
    r = migrate_source(src)
    assert r.mode == "compat"
    assert ("TS108", 8) in codes(r)


def test_survey_gradients_in_map_fn_falls_back():
    src = _src("""
        import tensorflow as tf
        xs = tf.constant([1.0, 2.0])
        per_example = tf.map_fn(lambda x: tf.gradients(x * x, x)[0], xs)
    """)
    r = migrate_source(src)
    assert r.mode == "compat"
    assert codes(r)[0] == ("TS103", 3)


def test_survey_none_in_gradient_list_is_kept():
    src = _src("""
        import tensorflow as tf
        W = tf.Variable(1.0)
        unused = tf.Variable(2.0)
        loss = W * W
        grads = tf.gradients(loss, [W, unused])
        kept = [g for g in grads if g is not None]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            print(sess.run(kept))
    """)
    r = migrate_source(src)
    assert r.mode == "tape"
    assert "grads = tape.gradient(loss, [W, unused])" in r.output
    assert "print(tf.nest.map_structure(lambda t: t.numpy(), kept))" in r.output


def test_survey_a_function_reading_the_variable_is_followed():
    # model() reads the module's W: the call depends on W, so the tape records it
    src = _src("""
        import tensorflow as tf

        def model(x):
            return x * W

        W = tf.Variable(2.0)
        loss = model(tf.constant(3.0))
        g = tf.gradients(loss, W)[0]
    """)
    r = migrate_source(src)
    assert r.mode == "tape", codes(r)
    assert r.output.endswith("W = tf.Variable(2.0)\nwith tf.GradientTape() as tape:\n"
                             "    loss = model(tf.constant(3.0))\ng = tape.gradient(loss, W)\n")


def test_survey_unconnected_by_names_falls_back():
    # the dependence goes through an object: no name-level path from W to loss
    src = _src("""
        import tensorflow as tf

        W = tf.Variable(2.0)
        holder = {"w": W}
        loss = holder["w"] * 3.0
        g = tf.gradients(loss, holder)[0]
    """)
    r = migrate_source(src)
    assert r.mode == "compat"
    assert codes(r)[0][0] in ("TS104", "TS111"), codes(r)


def test_v1_optimizers_and_schedules_are_kept_as_compat_v1_in_tape_form():
    # they run eagerly and keep TF1's update rules (docs/tf1-vs-tf2.md, section 6)
    src = _src("""
        import tensorflow as tf
        step = tf.train.get_or_create_global_step()
        lr = tf.train.exponential_decay(0.1, step, 10, 0.5)
        opt = tf.train.AdamOptimizer(lr)
    """)
    r = migrate_source(src)
    assert r.mode == "tape", r.findings
    assert r.output == src.replace("tf.train.", "tf.compat.v1.train.")
    assert not migrate_source(r.output).changed


def test_optimizers_without_an_eager_form_fall_back():
    src = _src("""
        import tensorflow as tf
        opt = tf.train.SyncReplicasOptimizer(tf.train.AdamOptimizer(0.1), 2)
    """)
    r = migrate_source(src)
    assert r.mode == "compat"
    assert codes(r) == [("TS109", 2), ("TS101", 1)]


def test_a_tf2_training_loop_is_left_alone():
    # apply_gradients in eager code runs where it is written: nothing to convert
    src = _src("""
        import tensorflow as tf
        W = tf.Variable([1.0, 2.0])
        opt = tf.compat.v1.train.GradientDescentOptimizer(0.1)
        for i in range(3):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(W * W)
            grads = tape.gradient(loss, [W])
            opt.apply_gradients(zip(grads, [W]))
    """)
    r = migrate_source(src)
    assert r.mode == "unchanged", r.findings
    assert r.output == src


def test_from_imports_only():
    src = _src("""
        from tensorflow import Session, Variable, gradients, reduce_sum, global_variables_initializer
        W = Variable([1.0, 2.0])
        loss = reduce_sum(W * W)
        g = gradients(loss, W)[0]
        with Session() as sess:
            sess.run(global_variables_initializer())
            print(sess.run(g))
    """)
    r = migrate_source(src)
    assert r.mode == "tape", r.findings
    assert r.output == _src("""
        from tensorflow import Variable, reduce_sum
        import tensorflow as tf

        W = Variable([1.0, 2.0])
        with tf.GradientTape() as tape:
            loss = reduce_sum(W * W)
        g = tape.gradient(loss, W)
        print(g.numpy())
    """)


def test_session_config_proto_is_dropped_with_the_session():
    src = _src("""
        import tensorflow as tf
        x = tf.constant(2.0)
        with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
            print(sess.run(x * x))
    """)
    r = migrate_source(src)
    assert r.mode == "tape", r.findings
    assert "print((x * x).numpy())" in r.output and "ConfigProto" not in r.output


def test_warnings_about_the_users_code_are_not_printed_by_the_output_check():
    import warnings

    source = "import tensorflow as tf\nx = tf.constant(1.0)\nif x is not '':\n    y = tf.add(x, x)\n"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = migrate_source(source, "w.py")
    assert result.mode in ("tape", "unchanged", "compat")
    assert not [w for w in caught if issubclass(w.category, SyntaxWarning)]
