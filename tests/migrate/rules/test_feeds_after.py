"""Graph code the feeds rule reads in two more places real tutorials put it:

* after the session is opened (an evaluation built after the training loop):
  TF1 adds the ops there and computes them when a later ``sess.run`` fetches
  them, so they move into the step functions of those runs;
* in a ``with tf.device(...)`` / ``tf.name_scope(...)`` block that also makes the
  placeholders: the placeholders become parameters, the rest of the block is
  graph code.
"""


import pytest

from tapeshift.migrate.engine.pipeline import migrate_source
from rule_programs import findings, migrated, src as _src  # tests/support

TIMEOUT = 300  # seconds per TensorFlow run (the machine is shared and slow)


EVALUATED_AFTER = _src("""
    import numpy as np
    import tensorflow as tf

    x_data = np.array([[0., 0.], [1., 0.], [0., 1.], [1., 1.]], dtype=np.float32)
    y_data = np.array([[1., 0.], [0., 1.], [0., 1.], [1., 0.]], dtype=np.float32)
    X = tf.placeholder(tf.float32)
    Y = tf.placeholder(tf.float32)
    W = tf.Variable([[0.5, -0.2], [0.1, 0.3]])
    model = tf.matmul(X, W)
    cost = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=Y, logits=model))
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(cost)

    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    for step in range(20):
        sess.run(train_op, feed_dict={X: x_data, Y: y_data})


    # results
    prediction = tf.argmax(model, 1)
    print('predicted:', sess.run(prediction, feed_dict={X: x_data}))

    is_correct = tf.equal(prediction, tf.argmax(Y, 1))
    accuracy = tf.reduce_mean(tf.cast(is_correct, tf.float32))
    print('accuracy: {:.2f}'.format(sess.run(accuracy * 100, feed_dict={X: x_data, Y: y_data})))
""")


def test_graph_code_after_the_session_moves_into_the_runs_that_fetch_it():
    r = migrated(EVALUATED_AFTER)
    assert r.mode == "tape", findings(r)
    assert [f.code for f in r.findings] == []
    head, _, program = r.output.partition("\nfor step in range(20):\n")
    assert program == _src('''
            run_train_op(X=x_data, Y=y_data)


        # results
        print('predicted:', run_prediction(X=x_data))

        print('accuracy: {:.2f}'.format(run_accuracy(X=x_data, Y=y_data)))
    ''')
    # each function computes what its run fetches, the evaluation code after the model
    assert _src('''
        def run_accuracy(X, Y):
            """sess.run(accuracy * 100) as a function of the fed values."""
            X = tf.convert_to_tensor(X, tf.float32)
            Y = tf.convert_to_tensor(Y, tf.float32)
            model = tf.matmul(X, W)

            prediction = tf.argmax(model, 1)

            is_correct = tf.equal(prediction, tf.argmax(Y, 1))
            accuracy = tf.reduce_mean(tf.cast(is_correct, tf.float32))
            return (accuracy * 100).numpy()
    ''') in head
    assert "def run_prediction(X):" in head and "# results" not in head
    assert not migrate_source(r.output, "f.py").changed


@pytest.mark.parametrize("change, why", [
    # reads a name the loop rebinds: TF1 read it once, where the line ran
    ("prediction = tf.argmax(model, 1)", "prediction = tf.argmax(model, 1) + step"),
    # a random op: drawn once in TF1's graph, but at each call in a step function
    ("prediction = tf.argmax(model, 1)",
     "prediction = tf.argmax(model + tf.random_normal([2]), 1)"),
    # bound twice: which binding a run reads depends on where it is
    ("    sess.run(train_op", "    prediction = model\n    sess.run(train_op"),
    # not TensorFlow: the codemod cannot tell what it does
    ("prediction = tf.argmax(model, 1)", "prediction = helper(model)"),
])
def test_graph_code_after_the_session_that_would_not_compute_the_same_stays_compat(change, why):
    src = EVALUATED_AFTER.replace(change, why)
    assert src != EVALUATED_AFTER
    r = migrated(src)
    assert r.mode == "compat"
    assert any(f.code == "TS107" for f in r.findings), findings(r)


def test_graph_code_after_a_with_session_block_is_not_read_as_graph_code():
    # the session is closed there: a sess.run after it fails in TF1
    src = _src("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32)
        with tf.Session() as sess:
            print(sess.run(x * 2, feed_dict={x: 1.0}))
        y = x + 1
        print(y)
    """)
    r = migrated(src)
    assert r.mode == "compat"
    assert any(f.code == "TS107" and "`y` is a graph value used after the graph is run"
               in f.message for f in r.findings), findings(r)


EVALUATED_IN_THE_BLOCK = _src("""
    import numpy as np
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [None, 2])
    y = tf.placeholder(tf.float32, [None, 2])
    W = tf.Variable([[0.2, -0.1], [0.0, 0.3]])
    b = tf.Variable(tf.zeros([2]))
    pred = tf.nn.softmax(tf.matmul(x, W) + b)
    cost = tf.reduce_mean(-tf.reduce_sum(y * tf.log(pred), reduction_indices=1))
    optimizer = tf.train.GradientDescentOptimizer(0.5).minimize(cost)
    init = tf.global_variables_initializer()

    xs = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], np.float32)
    ys = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]], np.float32)
    with tf.Session() as sess:
        sess.run(init)
        for epoch in range(5):
            _, c = sess.run([optimizer, cost], feed_dict={x: xs, y: ys})
            print("Epoch:", epoch, "cost=", c)

        # Test model
        correct_prediction = tf.equal(tf.argmax(pred, 1), tf.argmax(y, 1))
        accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
        print("Accuracy:", accuracy.eval({x: xs, y: ys}))
    print("done")
""")


def test_graph_code_after_training_in_a_with_session_block_moves_too():
    r = migrated(EVALUATED_IN_THE_BLOCK)
    assert r.mode == "tape", findings(r)
    assert r.output.endswith(_src("""
        for epoch in range(5):
            _, c = run_optimizer_cost(x=xs, y=ys)
            print("Epoch:", epoch, "cost=", c)

        # Test model
        print("Accuracy:", run_accuracy(x=xs, y=ys))
        print("done")
    """))
    assert "    correct_prediction = tf.equal(tf.argmax(pred, 1), tf.argmax(y, 1))\n" \
        "    accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))\n" \
        "    return accuracy.numpy()\n" in r.output
    # the session rule still dissolves the block, and says so where it was
    changes = [(c.rule, c.line) for c in r.changes if "dissolved" in c.description]
    assert changes == [("session", 15)], r.changes
    assert not migrate_source(r.output, "f.py").changed


DEVICE_BLOCK = _src("""
    import numpy as np
    import tensorflow as tf

    with tf.device('/cpu:0'):
        x = tf.placeholder(tf.float32)
        y = tf.placeholder(tf.float32)

        # the graph
        a = x * y
        c = tf.reduce_sum(a + y)

    grad_x, grad_y = tf.gradients(c, [x, y])

    with tf.Session() as sess:
        values = {x: np.arange(4.0).reshape(2, 2), y: np.ones((2, 2))}
        print(sess.run([c, grad_x, grad_y], feed_dict=values))
""")


def test_placeholders_in_a_device_block_become_parameters_and_the_block_graph_code():
    r = migrated(DEVICE_BLOCK)
    assert r.mode == "tape", findings(r)
    assert r.output == _src('''
        import numpy as np
        import tensorflow as tf


        def run_c_grad_x_grad_y(x, y):
            """sess.run([c, grad_x, grad_y]) as a function of the fed values."""
            x = tf.convert_to_tensor(x, tf.float32)
            y = tf.convert_to_tensor(y, tf.float32)
            with tf.GradientTape() as tape:
                tape.watch(x)
                tape.watch(y)
                with tf.device('/cpu:0'):
                    # the graph
                    a = x * y
                    c = tf.reduce_sum(a + y)

            grad_x, grad_y = tape.gradient(c, [x, y])
            return [c.numpy(), grad_x.numpy(), grad_y.numpy()]


        values = {"x": np.arange(4.0).reshape(2, 2), "y": np.ones((2, 2))}
        print(run_c_grad_x_grad_y(**values))
    ''')
    assert not migrate_source(r.output, "f.py").changed


def test_a_name_scope_of_placeholders_only_is_removed_with_them():
    r = migrated(_src("""
        import tensorflow as tf

        with tf.name_scope('S'):
            S = tf.placeholder(tf.float32, shape=[None, 2], name='s')
        W = tf.Variable(tf.ones([2, 1]))
        q = tf.matmul(S, W)
        sess = tf.Session()
        sess.run(tf.global_variables_initializer())
        print(sess.run(q, {S: [[1.0, 2.0]]}))
    """))
    assert r.mode == "tape", findings(r)
    assert "name_scope" not in r.output and "placeholder" not in r.output
    assert "def run_q(S):\n" in r.output and "print(run_q(S=[[1.0, 2.0]]))" in r.output


def test_a_with_block_that_accumulates_a_name_still_needs_its_binding():
    # `total` is read before the block binds it again: an accumulation, as in a loop
    src = DEVICE_BLOCK.replace("    a = x * y\n", "    total = total + x * y\n    a = total\n")\
        .replace("with tf.device('/cpu:0'):\n", "total = tf.constant(1.0)\nwith tf.device('/cpu:0'):\n")
    r = migrated(src)
    assert r.mode == "tape", findings(r)
    assert "\n    total = tf.constant(1.0)\n" in r.output  # made again with the block
    assert "\ntotal = " not in r.output
    r = migrated(src.replace("total = tf.constant(1.0)\n", "total = tf.Variable(1.0)\n"))
    assert r.mode == "compat"
    assert any("`total` is accumulated" in f.message for f in r.findings), findings(r)

# sess.run of an expression of NumPy values the session returned: no graph value in it
VALUES_FETCHED = EVALUATED_IN_THE_BLOCK.replace('print("done")\n', """\
    p = sess.run(pred, feed_dict={x: xs})
    print(p, sess.run(tf.argmax(p, 1)), sess.run(tf.reduce_sum(p) * 2))
print("done")
""")


def test_a_fetch_of_numpy_values_only_is_computed_where_the_run_was():
    r = migrated(VALUES_FETCHED)
    assert r.mode == "tape", findings(r)
    assert r.output.endswith(_src("""
        p = run_pred(x=xs)
        print(p, tf.argmax(p, 1).numpy(), (tf.reduce_sum(p) * 2).numpy())
        print("done")
    """))
    assert "def run_argmax" not in r.output and "def run_reduce_sum" not in r.output
    # one that reads a graph value is still a step function's
    r = migrated(VALUES_FETCHED.replace("sess.run(tf.argmax(p, 1))",
                                        "sess.run(tf.argmax(pred, 1), feed_dict={x: xs})"))
    assert r.mode == "tape", findings(r)
    assert "print(p, run_pred_1(x=xs), (tf.reduce_sum(p) * 2).numpy())" in r.output
    assert not migrate_source(r.output, "f.py").changed


@pytest.mark.tf
@pytest.mark.slow
@pytest.mark.parametrize("source, prints", [(EVALUATED_AFTER, 2), (EVALUATED_IN_THE_BLOCK, 6),
                                            (DEVICE_BLOCK, 1), (VALUES_FETCHED, 7)],
                         ids=["after", "in-the-block", "device", "values-fetched"])
def test_the_migrations_compute_the_legacy_numbers(tmp_path, source, prints):
    from tapeshift.migrate.legacy.verify import verify_sources

    report = verify_sources(source, migrated(source).output, tmp_path / "f.py", timeout=TIMEOUT)
    assert report.status == "ok", report.to_text()
    printed = [row for row in report.rows if row.name.startswith("stdout:") and row.compared]
    assert len(printed) == prints, report.to_text()
