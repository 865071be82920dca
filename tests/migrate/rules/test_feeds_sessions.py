"""Several sessions one after another in one block, as tutorials write their
sections: the session that feeds placeholders becomes step functions, the
others are the session rule's (``sess.run(t)`` -> ``t.numpy()``).

TF1 starts a session's variables again in each session, eager variables keep
their values: so another session may not read a variable, nor a graph value
computed from one (NumPy values fetched from the trained model are fine). A name
bound to a constant in an earlier section and to a placeholder in a later
one keeps its first binding for the earlier section.
"""


import pytest

from tapeshift.migrate.engine.pipeline import migrate_source
from rule_programs import codes, migrated, src as _src  # tests/support

TIMEOUT = 300  # seconds per TensorFlow run (the machine is shared and slow)


SECTIONS = _src("""
    import tensorflow as tf

    # constants
    a = tf.constant(2)
    b = tf.constant(3)

    with tf.Session() as sess:
        print("Addition with constants: %i" % sess.run(a + b))

    # the graph's input
    a = tf.placeholder(tf.int16)
    b = tf.placeholder(tf.int16)
    add = tf.add(a, b)
    mul = tf.multiply(a, b)

    with tf.Session() as sess:
        print("Addition with variables: %i" % sess.run(add, feed_dict={a: 2, b: 3}))
        print("Multiplication with variables: %i" % sess.run(mul, feed_dict={a: 2, b: 3}))

    product = tf.matmul(tf.constant([[3., 3.]]), tf.constant([[2.], [2.]]))
    with tf.Session() as sess:
        print(sess.run(product))
""")


def test_the_fed_section_becomes_step_functions_and_the_others_eager_code():
    r = migrated(SECTIONS)
    assert r.mode == "tape", codes(r)
    assert codes(r) == []
    assert r.output == _src('''
        import tensorflow as tf

        # constants
        a = tf.constant(2)
        b = tf.constant(3)

        print("Addition with constants: %i" % (a + b).numpy())


        # the graph's input
        def run_add(a, b):
            """sess.run(add) as a function of the fed values."""
            a = tf.convert_to_tensor(a, tf.int16)
            b = tf.convert_to_tensor(b, tf.int16)
            add = tf.add(a, b)
            return add.numpy()


        def run_mul(a, b):
            """sess.run(mul) as a function of the fed values."""
            a = tf.convert_to_tensor(a, tf.int16)
            b = tf.convert_to_tensor(b, tf.int16)
            mul = tf.multiply(a, b)
            return mul.numpy()


        print("Addition with variables: %i" % run_add(a=2, b=3))
        print("Multiplication with variables: %i" % run_mul(a=2, b=3))

        product = tf.matmul(tf.constant([[3., 3.]]), tf.constant([[2.], [2.]]))
        print(product.numpy())
    ''')
    assert not migrate_source(r.output, "f.py").changed


def test_sections_with_variables_are_not_converted():
    # each TF1 session initialises W again; an eager W would keep what the first trained
    src = SECTIONS.replace("# constants\n", "# constants\nW = tf.Variable(1)\n").replace(
        "sess.run(a + b)", "sess.run(a + b + W)").replace(
        "    print(\"Addition with constants", "    sess.run(tf.global_variables_initializer())\n"
        "    print(\"Addition with constants")
    r = migrated(src)
    assert r.mode == "compat"
    assert any(f.code == "TS107" and "more than one Session" in f.message for f in r.findings), \
        codes(r)


TRAINED_THEN_PLOTTED = _src("""
    import numpy as np
    import tensorflow as tf

    xs = np.array([-2.0, -1.0, 1.0, 2.0], np.float32)
    ys = np.array([0.0, 0.0, 1.0, 1.0], np.float32)
    X = tf.placeholder(tf.float32, shape=(None,))
    Y = tf.placeholder(tf.float32, shape=(None,))
    w = tf.Variable([0.0, 0.0])
    y_model = tf.sigmoid(w[1] * X + w[0])
    cost = tf.reduce_mean(tf.square(Y - y_model))
    train_op = tf.train.GradientDescentOptimizer(0.5).minimize(cost)

    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    for epoch in range(5):
        err, _ = sess.run([cost, train_op], {X: xs, Y: ys})
        print(epoch, err)
    w_val = sess.run(w)

    all_xs = np.linspace(-3, 3, 4)
    with tf.Session() as sess:
        print(sess.run(tf.sigmoid(all_xs * w_val[1] + w_val[0])))
""")


def test_a_section_of_numpy_values_after_a_trained_model_is_eager_code():
    # the second session reads the learned weights as NumPy (w_val), no variable
    r = migrated(TRAINED_THEN_PLOTTED)
    assert r.mode == "tape", codes(r)
    assert r.output.endswith(_src("""
        w_val = w.numpy()

        all_xs = np.linspace(-3, 3, 4)
        print(tf.sigmoid(all_xs * w_val[1] + w_val[0]).numpy())
    """))
    assert "    err, _ = run_cost_train_op(X=xs, Y=ys)\n" in r.output
    assert not migrate_source(r.output, "f.py").changed


@pytest.mark.parametrize("read", ["w[1]", "y_model[0]", "opened"])
def test_a_later_section_that_reads_a_variable_is_not_converted(read):
    # a new TF1 session starts w again from its initial value; an eager w is trained
    if read == "opened":  # (a session opened by a statement: what follows it is its)
        src = TRAINED_THEN_PLOTTED.replace(
            "with tf.Session() as sess:\n    print(sess.run(tf.sigmoid(all_xs * w_val[1] + w_val[0])))",
            "sess2 = tf.Session()\nprint(sess2.run(tf.sigmoid(all_xs * w[1] + w_val[0])))")
    else:
        src = TRAINED_THEN_PLOTTED.replace("w_val[1] + w_val[0]", f"{read} + w_val[0]")
    assert src != TRAINED_THEN_PLOTTED
    r = migrated(src)
    assert r.mode == "compat"
    assert any(f.code == "TS107" and "more than one Session" in f.message for f in r.findings), \
        codes(r)


OPENED_FIRST = _src("""
    import numpy as np
    import tensorflow as tf
    sess = tf.Session()
    x_vals = np.array([-1.0, 0.5, 2.0, 3.0])
    y_vals = np.array([0.0, 0.0, 1.0, 1.0])
    x_data = tf.placeholder(shape=[1], dtype=tf.float32)
    y_target = tf.placeholder(shape=[1], dtype=tf.float32)
    A = tf.Variable(tf.constant([1.0]))
    my_output = tf.add(x_data, A)
    init = tf.global_variables_initializer()
    sess.run(init)
    xentropy = tf.nn.sigmoid_cross_entropy_with_logits(logits=my_output, labels=y_target)
    my_opt = tf.train.GradientDescentOptimizer(0.05)
    train_step = my_opt.minimize(xentropy)
    for i in range(8):
        sess.run(train_step, feed_dict={x_data: [x_vals[i % 4]], y_target: [y_vals[i % 4]]})
        print(i, sess.run(A), sess.run(xentropy, feed_dict={x_data: [1.0], y_target: [1.0]}))
""")


def test_a_session_opened_before_the_graph_is_read_where_it_is_first_used():
    # TF1 runs what the graph holds at sess.run; the initializer ran before the
    # optimizer was made, which makes no variable (GradientDescent has no slots)
    r = migrated(OPENED_FIRST)
    assert r.mode == "tape", codes(r)
    out = r.output
    assert "Session" not in out and "initializer" not in out and "placeholder" not in out
    assert out.index("A = tf.Variable") < out.index("my_opt = ") < out.index("def run_train_step")
    assert "    run_train_step(x_data=[x_vals[i % 4]], y_target=[y_vals[i % 4]])\n" in out
    assert not migrate_source(out, "f.py").changed


def test_a_variable_made_after_the_initializer_ran_keeps_the_session_where_it_is():
    # TF1 leaves such a variable uninitialized: the program is not read as if it were
    src = OPENED_FIRST.replace("my_opt = tf.train.GradientDescentOptimizer(0.05)\n",
                               "B = tf.Variable(2.0)\nmy_opt = tf.train.GradientDescentOptimizer(0.05)\n")
    assert src != OPENED_FIRST
    r = migrated(src)
    assert r.mode == "compat"
    assert any(f.code == "TS107" for f in r.findings), codes(r)


def test_two_fed_sections_are_not_converted():
    src = SECTIONS.replace("print(sess.run(product))",
                           "print(sess.run(add, feed_dict={a: 4, b: 5}))")
    r = migrated(src)
    assert r.mode == "compat"
    assert any(f.code == "TS107" and "more than one Session" in f.message for f in r.findings), \
        codes(r)


def test_a_placeholder_s_comment_stays_before_the_step_function():
    r = migrated(_src("""
        import tensorflow as tf

        # the input
        x = tf.placeholder(tf.float32, [2])
        # the sum
        y = tf.reduce_sum(x)

        with tf.Session() as sess:
            print(sess.run(y, feed_dict={x: [1.0, 2.0]}))
    """))
    assert r.mode == "tape", codes(r)
    assert "# the input\ndef run_y(x):" in r.output
    assert "    # the sum\n    y = tf.reduce_sum(x)" in r.output


@pytest.mark.tf
@pytest.mark.slow
@pytest.mark.parametrize("source, prints", [(SECTIONS, 4), (TRAINED_THEN_PLOTTED, 6),
                                            (OPENED_FIRST, 8)],
                         ids=["sections", "trained-then-plotted", "opened-first"])
def test_sections_compute_the_legacy_numbers(tmp_path, source, prints):
    from tapeshift.migrate.legacy.verify import verify_sources

    report = verify_sources(source, migrated(source).output, tmp_path / "f.py",
                            timeout=TIMEOUT)
    assert report.status == "ok", report.to_text()
    printed = [row for row in report.rows if row.name.startswith("stdout:") and row.compared]
    assert len(printed) == prints, report.to_text()
