"""A ``tf.data`` one-shot iterator: made once as ``iter(dataset)``, its ``get_next()``
taken at each run that needs an element.

TF1's ``batch = dataset.make_one_shot_iterator().get_next()`` gives each sess.run a
new element and raises ``OutOfRangeError`` after the last. Tests: the exact output
of the chained form and of a named iterator whose end a ``try`` catches, what stays
TF1 and why, and the legacy numbers.
"""

import pytest

from rule_programs import assert_left_compat, codes, migrated, src as _src, verified_prints  # tests/support

CHAINED = _src("""
    import numpy as np
    import tensorflow as tf

    data = np.arange(12, dtype=np.float32).reshape(6, 2) / 10.0
    dataset = tf.data.Dataset.from_tensor_slices(data).batch(2).repeat(2)
    batch = dataset.make_one_shot_iterator().get_next()
    W = tf.Variable(tf.ones([2, 1]))
    loss = tf.reduce_mean(tf.square(tf.matmul(batch, W) - 1.0))
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(6):
            _, l = sess.run([train_op, loss])
            print(step, l)
        print(sess.run(W))
""")

UNTIL_THE_END = _src("""
    import numpy as np
    import tensorflow as tf

    data = np.arange(12, dtype=np.float32).reshape(6, 2) / 10.0
    dataset = tf.data.Dataset.from_tensor_slices((data, data[:, :1]))
    it = tf.data.make_one_shot_iterator(dataset.batch(4))
    x, y = it.get_next()
    W = tf.Variable(tf.ones([2, 1]))
    loss = tf.reduce_mean(tf.square(tf.matmul(x, W) - y))
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    step = 0
    while True:
        try:
            _, l = sess.run([train_op, loss])
        except tf.errors.OutOfRangeError:
            print("done after", step)
            break
        print(step, l)
        step += 1
    print(sess.run(W))
""")


def test_the_chained_iterator_is_made_once_and_each_run_takes_an_element():
    r = migrated(CHAINED)
    assert r.mode == "tape", codes(r)
    assert codes(r) == []
    assert r.output == _src('''
        import numpy as np
        import tensorflow as tf

        data = np.arange(12, dtype=np.float32).reshape(6, 2) / 10.0
        dataset = tf.data.Dataset.from_tensor_slices(data).batch(2).repeat(2)
        iterator = iter(dataset)
        W = tf.Variable(tf.ones([2, 1]))
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)


        def run_train_op_loss():
            """sess.run([train_op, loss]) as a function of the fed values."""
            batch = iterator.get_next()
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.matmul(batch, W) - 1.0))
            optimizer.apply_gradients(zip(tape.gradient(loss, [W]), [W]))
            return [None, loss.numpy()]


        for step in range(6):
            _, l = run_train_op_loss()
            print(step, l)
        print(W.numpy())
    ''')
    assert any("the dataset's iterator `iter(dataset)` created once, as `iterator`" in c.description
               for c in r.changes)
    assert not migrated(r.output).changed


def test_a_named_iterator_becomes_iter_and_its_end_is_still_out_of_range():
    r = migrated(UNTIL_THE_END)
    assert r.mode == "tape", codes(r)
    out = r.output
    assert "\nit = iter(dataset.batch(4))\n" in out
    assert '    """sess.run([train_op, loss]) as a function of the fed values."""\n' \
        "    x, y = it.get_next()\n" in out
    # (TF2's iterator raises tf.errors.OutOfRangeError at the end, as TF1's run did)
    assert "    except tf.errors.OutOfRangeError:\n" in out
    assert any("`tf.data.make_one_shot_iterator(dataset.batch(4))` -> `iter(dataset.batch(4))`"
               in c.description for c in r.changes)


@pytest.mark.parametrize("change, code, why", [
    # the iterator's elements fed through placeholders at its initializer's run
    (("it = tf.data.make_one_shot_iterator(dataset.batch(4))",
      "it = dataset.batch(4).make_initializable_iterator()"),
     "TS108", "`.make_initializable_iterator(...)` builds an update op"),
    # a dataset of fed values (TF1 raises at the run: it cannot capture a placeholder)
    (("dataset = tf.data.Dataset.from_tensor_slices((data, data[:, :1]))",
      "fed = tf.placeholder(tf.float32, [6, 2])\n"
      "dataset = tf.data.Dataset.from_tensor_slices((fed, fed[:, :1]))"),
     "TS108", "a one-shot iterator of `dataset.batch(4)` reads `dataset`, computed from fed or "
     "drawn values"),
    # the iterator's name bound again: get_next() is read by name, whichever binding it is
    (("    _, l = sess.run([train_op, loss])",
      "    _, l = sess.run([train_op, loss])\n        it = None"),
     "TS108", "`it` is bound to an iterator and bound again: not converted"),
    # get_next() of an iterator the codemod did not see made
    (("it = tf.data.make_one_shot_iterator(dataset.batch(4))", "it = make_iterator(dataset)"),
     "TS108", "`.get_next(...)` builds an update op"),
])
def test_iterators_it_leaves_to_tf1(change, code, why):
    assert_left_compat(UNTIL_THE_END, change, code, why)


@pytest.mark.tf
@pytest.mark.slow
@pytest.mark.parametrize("program, prints", [(CHAINED, 7), (UNTIL_THE_END, 4)],
                         ids=["chained", "until-the-end"])
def test_the_iterators_keep_the_legacy_numbers(program, prints, tmp_path):
    assert len(verified_prints(program, tmp_path / "data.py")) == prints
