"""Each check rule on small before/after sources: hit, alias, no-op and fix."""

from textwrap import dedent

import pytest

from tapeshift.migrate.checks import check_source


def codes(src, fix=()):
    r = check_source(dedent(src), "t.py", fix=fix)
    return [(f.code, f.line) for f in r.findings], r


TF1_SPLIT = """\
    import tensorflow as tf
    h = tf.matmul(x, W)
    loss = tf.reduce_sum(tf.tanh(h))
    g_h = tf.gradients(loss, h)[0]
    d_h_W = tf.gradients(h, W)[0]
    g_W = g_h * d_h_W
"""


def test_chain_rule_tf1_and_fix():
    found, r = codes(TF1_SPLIT, fix=["TS201"])
    assert found == [("TS201", 6)]
    f = r.findings[0]
    assert f.severity.value == "error" and f.changes_numbers
    assert "dloss/dh and dh/dW is not the chain rule" in f.message
    assert r.output == dedent(TF1_SPLIT).replace(
        "g_W = g_h * d_h_W", "g_W = tf.gradients(h, W, grad_ys=g_h)[0]")
    # the fixed source has nothing left to report
    assert codes(r.output)[0] == []


@pytest.mark.parametrize("header,grad", [
    ("import tensorflow as T", "T.gradients"),
    ("import tensorflow.compat.v1 as tf", "tf.gradients"),
    ("from tensorflow import gradients", "gradients"),
    ("from tensorflow.compat import v1 as tf1", "tf1.gradients"),
])
def test_chain_rule_through_aliases(header, grad):
    src = f"""\
        {header}
        g = {grad}(loss, h)[0] * {grad}(h, W)[0]
    """
    found, r = codes(src, fix=["TS201"])
    assert found == [("TS201", 2)]
    assert f"{grad}(h, W, grad_ys={grad}(loss, h)[0])[0]" in r.output


def test_a_local_function_called_tf_is_not_tensorflow():
    found, _ = codes("""\
        class tf:
            @staticmethod
            def gradients(a, b):
                return [a]
        g = tf.gradients(loss, h)[0] * tf.gradients(h, W)[0]
    """)
    assert found == []


def test_chain_rule_multiply_unpacked_and_swapped_tf2():
    found, r = codes("""\
        import tensorflow as tf
        with tf.GradientTape(persistent=True) as tape:
            h = f(W)
            loss = g(h)
        d_h_W = tape.gradient(h, W)
        up = tape.gradient(loss, h)
        out = tf.multiply(d_h_W, up)
    """, fix=["TS201"])
    assert found == [("TS201", 7)]
    assert "out = tape.gradient(h, W, output_gradients=up)" in r.output

    found, _ = codes("""\
        import tensorflow as tf
        g_h, = tf.gradients(loss, h)
        [d] = [0]
        d, = tf.gradients(h, W)
        w = d * g_h
    """)
    assert found == [("TS201", 5)]


def test_correct_vjp_code_and_unrelated_products_are_quiet():
    found, _ = codes("""\
        import tensorflow as tf
        g_h = tf.gradients(loss, h)[0]
        g_W = tf.gradients(h, W, grad_ys=g_h)[0]
        scaled = g_h * 0.5
        both = tf.gradients(loss, W)[0] * tf.gradients(loss, b)[0]
    """)
    assert found == []


def test_split_that_bypasses_the_cut():
    found, _ = codes("""\
        import tensorflow as tf
        h = tf.matmul(x, W)
        out = tf.matmul(h, W)
        loss = tf.reduce_sum(out)
        g_W = tf.gradients(h, W, grad_ys=tf.gradients(loss, h)[0])[0]
    """)
    assert found == [("TS202", 5)]
    found, _ = codes("""\
        import tensorflow as tf
        h = tf.matmul(x, W)
        out = tf.matmul(h, V)
        loss = tf.reduce_sum(out)
        g_W = tf.gradients(h, W, grad_ys=tf.gradients(loss, h)[0])[0]
    """)
    assert found == []


def test_tf_gradients_in_eager_code():
    eager = """\
        import tensorflow as tf
        with tf.GradientTape() as tape:
            loss = f(W)
        g = tf.gradients(loss, W)
        print(g[0].numpy())

        @tf.function
        def step():
            return tf.gradients(f(W), W)

        with tf.Graph().as_default():
            g2 = tf.gradients(f(W), W)
    """
    assert codes(eager)[0] == [("TS203", 4)]
    graph = """\
        import tensorflow as tf
        g = tf.gradients(loss, W)
        with tf.Session() as sess:
            sess.run(g)
    """
    assert codes(graph)[0] == []


def test_tape_misuse():
    found, _ = codes("""\
        import tensorflow as tf
        y0 = f(x)
        with tf.GradientTape() as t:
            y = f(x)
            inside = t.gradient(y, x)
        a = t.gradient(y, x)
        b = t.gradient(y0, x)
    """)
    assert found == [("TS206", 5), ("TS204", 6), ("TS205", 7)]


def test_tape_use_that_is_fine():
    found, _ = codes("""\
        import tensorflow as tf
        with tf.GradientTape(persistent=True) as t:
            y = f(x)
        a = t.gradient(y, x)
        b = t.gradient(y, W)
        with tf.GradientTape() as outer:
            with tf.GradientTape() as inner:
                z = f(x)
            g = inner.gradient(z, x)
        hvp = outer.gradient(g, x)
    """)
    assert found == []


def test_override_map_in_eager_code_is_an_error():
    src = """\
        import tensorflow as tf
        g = tf.compat.v1.get_default_graph()
        with g.gradient_override_map({"Identity": "Reverse"}):
            y = tf.identity(x)
        with tf.GradientTape() as t:
            z = y * 2
    """
    found, r = codes(src)
    assert found == [("TS207", 3)]
    assert r.findings[0].severity.value == "error"
    graph = src.replace("with tf.GradientTape() as t:\n            z = y * 2",
                        "with tf.Session() as s:\n            s.run(y)")
    assert codes(graph)[0] == []


def test_unknown_fix_code():
    with pytest.raises(ValueError, match="no automatic fix for TS999"):
        check_source("import tensorflow", "t.py", fix=["TS999"])
