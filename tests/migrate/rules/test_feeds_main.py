"""A session opened in ``main()`` or the ``__main__`` guard, the graph at module level.

The module is read as the fed graph's block, the function (or guard) where the
session opens: the step functions are written before it, at module level, and its
runs call them. Tests: the exact output for a function called from the guard and
for the guard itself, the programs it leaves in compat form and why (a function
run twice, one that builds graph code, a placeholder made elsewhere, graph code
after it), and the legacy numbers.
"""

import pytest

from rule_programs import codes, findings, migrated, src as _src, verified_prints  # tests/support

MAIN = _src("""
    import numpy as np
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [None, 2])
    y = tf.placeholder(tf.float32, [None, 1])
    W = tf.Variable(tf.ones([2, 1]))
    b = tf.Variable(tf.zeros([1]))
    pred = tf.matmul(x, W) + b
    loss = tf.reduce_mean(tf.square(pred - y))
    train_op = tf.train.AdamOptimizer(0.1).minimize(loss)


    def main(steps):
        data = np.arange(8, dtype=np.float32).reshape(4, 2) / 8.0
        target = data.sum(axis=1, keepdims=True)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for step in range(steps):
                _, l = sess.run([train_op, loss], feed_dict={x: data, y: target})
                print(step, l)
            print(sess.run(pred, {x: data}))
            print(sess.run(W))


    if __name__ == "__main__":
        main(5)
""")

GUARD = MAIN.replace("\n\ndef main(steps):\n", "\n\nif __name__ == \"__main__\":\n    steps = 5\n") \
    .replace("\n\nif __name__ == \"__main__\":\n    main(5)\n", "\n")


def test_main_gets_step_functions_written_before_it():
    r = migrated(MAIN)
    assert r.mode == "tape", codes(r)
    assert codes(r) == []
    assert r.output == _src('''
        import numpy as np
        import tensorflow as tf

        W = tf.Variable(tf.ones([2, 1]))
        b = tf.Variable(tf.zeros([1]))
        optimizer = tf.compat.v1.train.AdamOptimizer(0.1)


        def run_train_op_loss(x, y):
            """sess.run([train_op, loss]) as a function of the fed values."""
            x = tf.convert_to_tensor(x, tf.float32)
            y = tf.convert_to_tensor(y, tf.float32)
            with tf.GradientTape() as tape:
                pred = tf.matmul(x, W) + b
                loss = tf.reduce_mean(tf.square(pred - y))
            optimizer.apply_gradients(zip(tape.gradient(loss, [W, b]), [W, b]))
            return [None, loss.numpy()]


        def run_pred(x):
            """sess.run(pred) as a function of the fed values."""
            x = tf.convert_to_tensor(x, tf.float32)
            pred = tf.matmul(x, W) + b
            return pred.numpy()


        def main(steps):
            data = np.arange(8, dtype=np.float32).reshape(4, 2) / 8.0
            target = data.sum(axis=1, keepdims=True)
            for step in range(steps):
                _, l = run_train_op_loss(x=data, y=target)
                print(step, l)
            print(run_pred(x=data))
            print(W.numpy())


        if __name__ == "__main__":
            main(5)
    ''')
    assert any("the Session opened in `main()` runs the module's graph" in c.description
               for c in r.changes)
    assert not migrated(r.output).changed


def test_the_main_guard_gets_step_functions_written_before_it():
    r = migrated(GUARD)
    assert r.mode == "tape", codes(r)
    out = r.output
    assert "\n\ndef run_pred(x):\n" in out
    assert out.index("def run_pred(x):") < out.index('if __name__ == "__main__":\n    steps = 5\n')
    assert "\n    for step in range(steps):\n        _, l = run_train_op_loss(x=data, y=target)\n" in out
    assert "tf.Session" not in out and "placeholder" not in out
    assert any("the Session opened in the `__main__` guard" in c.description for c in r.changes)


@pytest.mark.parametrize("change, why", [
    # run twice: each TF1 session starts the variables again, eager ones go on
    (('    main(5)\n', '    main(5)\n    main(5)\n'), "`main()` is not called once"),
    (('    main(5)\n', '    for _ in range(2):\n        main(5)\n'), "`main()` is not called once"),
    (('    main(5)\n', '    import atexit\n    atexit.register(main, 5)\n'),
     "`main()` is not called once"),
    (("    data = np.arange", "    global W\n    data = np.arange"), "or declares globals"),
    # a decorator may run it twice: each TF1 session starts the variables again
    (('\n\ndef main(steps):\n', '\n\n@twice\ndef main(steps):\n'), "or it is decorated"),
    # graph code of its own (the module-level reading would not see it)
    (('    with tf.Session() as sess:\n', '    pred = tf.nn.relu(pred)\n    with tf.Session() as sess:\n'),
     "`main()` builds graph code too"),
    # ... or in a function it calls (TF1 adds to the graph when main runs)
    (('\n\ndef main(steps):\n', '\n\ndef add_noise():\n    return tf.random_normal([1])\n\n\n'
      'def main(steps):\n    add_noise()\n'),
     "`main()` builds graph code too (or a function it calls does)"),
    # a placeholder the function does not see made by module code before it
    (('pred = tf.matmul(x, W) + b\n', 'pred = tf.matmul(x, W) + b\n\n\ndef more():\n'
      '    return tf.placeholder(tf.float32)\n\n\n'), "a placeholder is made elsewhere"),
    # graph code after the function, made before the call runs it
    (('\n\nif __name__', '\n\nscaled = loss * tf.constant(2.0)\n\nif __name__'),
     "module code after it calls TensorFlow or reads its graph"),
    # ... or with operators only: TF1 adds `W * 3` to the graph before main() runs it
    (('\n\nif __name__', '\n\ntripled = W * 3\n\nif __name__'), "module code after it calls TensorFlow or reads its graph"),
    (('    main(5)\n', '    tripled = W * 3\n    main(5)\n'), "module code after it calls TensorFlow or reads its graph"),
    # not the guard
    (('if __name__ == "__main__":', 'if __name__ != "__main__":'), "is not called once"),
])
def test_a_session_in_main_it_cannot_read_keeps_compat_form(change, why):
    assert change[0] in MAIN
    r = migrated(MAIN.replace(*change))
    assert r.mode == "compat"
    assert any(code == "TS107" and why in message for code, _, message in findings(r)), findings(r)


@pytest.mark.tf
@pytest.mark.slow
@pytest.mark.parametrize("program", [MAIN, GUARD], ids=["main", "guard"])
def test_a_session_in_main_computes_the_legacy_numbers(tmp_path, program):
    assert len(verified_prints(program, tmp_path / "main.py")) == 7  # 5 losses, the predictions, W


def test_a_file_writer_in_main_is_not_graph_code():
    # (public XOR scripts open `tf.summary.FileWriter(logdir, sess.graph)` beside the runs)
    source = MAIN.replace("        sess.run(tf.global_variables_initializer())\n",
                          "        sess.run(tf.global_variables_initializer())\n"
                          "        writer = tf.summary.FileWriter('logs', sess.graph)\n")
    assert source != MAIN
    r = migrated(source)
    assert r.mode == "tape", codes(r)
    assert "\n    writer = tf.summary.create_file_writer('logs')\n    for step in range(steps):\n" in r.output
