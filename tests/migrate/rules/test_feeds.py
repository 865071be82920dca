"""FeedsToFunctions: placeholders, feed_dict and train ops -> functions of the fed values.

Three kinds of test:

* the text the whole pipeline writes (``migrate_source``: the feeds rule, then
  the session, gradients and renames rules): tape form, the exact output, which
  compiles and which a second migration leaves alone;
* the numbers: the legacy program under ``tensorflow.compat.v1`` with v2
  behaviour disabled against the migrated one under TF2 eager
  (``verify_sources``), and the migrated programs run under TF2 against the
  values TF1 prints (measured with ``tapeshift run-legacy``);
* what the rule does not convert: the file keeps its compat form, with a TS107
  or TS108 finding that names the reason, at the right line.

Each TensorFlow subprocess takes 5-10 s on this machine: they are started
together, in the background, as soon as a test that needs them is selected,
and their tests come last.
"""

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from libcst.codemod import CodemodTest

from tapeshift.migrate.rules.feeds import FeedsToFunctions
from tapeshift.migrate.engine.pipeline import migrate_source
from tapeshift.migrate.legacy.verify import verify_sources
from rule_programs import codes, findings, migrated, src as _src  # tests/support

TIMEOUT = 300  # seconds per TensorFlow subprocess (the machine is shared and slow)


def assert_tape(before: str, after: str) -> None:
    r = migrated(_src(before))
    assert r.mode == "tape", codes(r)
    assert codes(r) == []
    assert r.output == _src(after)
    compile(r.output, "f.py", "exec")
    again = migrate_source(r.output, "f.py")
    assert not again.changed, again.output
    assert again.mode == "unchanged"


# ---------------------------------------------------------------------------
# the programs (the numbers tests below run some of them again)
# ---------------------------------------------------------------------------

#: default var_list: b then W (creation order, not order of use); `shift` is not
#: trainable and `late` is created after the minimize line: neither is trained
LINEAR = _src("""
    import numpy as np
    import tensorflow as tf

    X = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]], np.float32)
    Y = np.array([1.0, 2.0, 0.0], np.float32)

    x = tf.placeholder(tf.float32, [None, 2])
    y = tf.placeholder(tf.float32, [None])
    b = tf.Variable(0.1)
    W = tf.Variable([[0.5], [-0.3]])
    shift = tf.Variable(0.2, trainable=False)
    pred = tf.reshape(tf.matmul(x, W), [-1]) + b + shift
    loss = tf.reduce_mean(tf.square(pred - y))
    opt = tf.train.GradientDescentOptimizer(0.05)
    train_op = opt.minimize(loss)
    late = tf.Variable(1.0)

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(3):
            _, loss_value = sess.run([train_op, loss], feed_dict={x: X, y: Y})
            print(step, loss_value)
        final_loss = sess.run(loss, feed_dict={x: X, y: Y})
        final_W, final_shift = sess.run([W, shift])
""")

CLIP = _src("""
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [None, 2])
    W = tf.Variable([[1.0], [2.0]])
    b = tf.Variable([0.5])
    gs = tf.train.get_or_create_global_step()
    loss = tf.reduce_sum(tf.square(tf.matmul(x, W) + b))
    opt = tf.train.AdamOptimizer(0.01)
    grads_and_vars = opt.compute_gradients(loss)
    clipped = [(tf.clip_by_value(g, -1.0, 1.0), v) for g, v in grads_and_vars]
    train_op = opt.apply_gradients(clipped, global_step=gs)

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(2):
            sess.run(train_op, feed_dict={x: [[1.0, 2.0]]})
        print(sess.run(gs))
        print(sess.run(W))
""")

# MorvanZhou's tutorials: a function defined before the session that runs it (called
# after it opens), and a sess.run of a tensor that function computed from values
EARLY_FUNCTION = _src("""
    import numpy as np
    import tensorflow as tf


    def compute_accuracy(v_xs, v_ys):
        global prediction
        y_pre = sess.run(prediction, feed_dict={xs: v_xs})
        correct_prediction = tf.equal(tf.argmax(y_pre, 1), tf.argmax(v_ys, 1))
        accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
        result = sess.run(accuracy, feed_dict={xs: v_xs, ys: v_ys})
        return result


    xs = tf.placeholder(tf.float32, [None, 4])
    ys = tf.placeholder(tf.float32, [None, 3])
    W = tf.Variable(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
    b = tf.Variable(tf.zeros([1, 3]) + 0.1)
    prediction = tf.nn.softmax(tf.matmul(xs, W) + b)
    cross_entropy = tf.reduce_mean(-tf.reduce_sum(ys * tf.log(prediction), reduction_indices=[1]))
    train_step = tf.train.GradientDescentOptimizer(0.5).minimize(cross_entropy)

    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    rng = np.random.RandomState(0)
    bx = rng.rand(20, 4).astype(np.float32)
    by = np.eye(3, dtype=np.float32)[rng.randint(0, 3, 20)]
    for i in range(20):
        sess.run(train_step, feed_dict={xs: bx, ys: by})
        if i % 5 == 0:
            print(compute_accuracy(bx, by))
""")

# the global step made in the train op's own call (kensak's char-RNN, and many more)
INLINE_STEP = _src("""
    import numpy as np
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [None, 3])
    w = tf.Variable(tf.ones([3, 1]))
    loss = tf.reduce_sum(tf.matmul(x, w) ** 2)
    optimizer = tf.train.AdamOptimizer(0.05)
    tvars = tf.trainable_variables()
    grads, _ = tf.clip_by_global_norm(tf.gradients(loss, tvars), 5.0)
    training_op = optimizer.apply_gradients(
      zip(grads, tvars),
      global_step=tf.train.get_or_create_global_step())
    saver = tf.train.Saver()

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(3):
            print(sess.run([training_op, loss], {x: np.ones((2, 3))})[1])
        print(sess.run(tf.train.get_global_step()))
""")

WATCH = _src("""
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [3])
    y = tf.reduce_sum(x * x)
    dx = tf.gradients(y, x)[0]

    with tf.Session() as sess:
        print(sess.run(dx, feed_dict={x: [1.0, 2.0, 3.0]}))
""")

GRAD_YS = _src("""
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [2])
    up = tf.placeholder(tf.float32, [2])
    W = tf.Variable([1.0, 2.0])
    y = W * x
    g = tf.gradients(y, W, grad_ys=up)[0]

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        print(sess.run(g, feed_dict={x: [3.0, 4.0], up: [1.0, -1.0]}))
""")

DEFAULT_LITERAL = _src("""
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [2])
    scale = tf.placeholder_with_default(2.0, [])
    y = tf.reduce_sum(x) * scale

    with tf.Session() as sess:
        print(sess.run(y, feed_dict={x: [1.0, 2.0]}))
        print(sess.run(y, feed_dict={x: [1.0, 2.0], scale: 3.0}))
""")

DEFAULT_EXPR = _src("""
    import numpy as np
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [2])
    bias = tf.placeholder_with_default(np.ones(2, np.float32), [2])
    y = tf.reduce_sum(x + bias)

    with tf.Session() as sess:
        print(sess.run(y, feed_dict={x: [1.0, 2.0]}))
        print(sess.run(y, feed_dict={x: [1.0, 2.0], bias: [0.0, 0.0]}))
""")

INLINE_ADAM = _src("""
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [2])
    W = tf.Variable([1.0, -1.0])
    loss = tf.reduce_sum(tf.square(W * x))
    train_op = tf.train.AdamOptimizer(0.1).minimize(loss)

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train_op, feed_dict={x: [1.0, 2.0]})
        print(sess.run(W))
""")

#: the loss is upstream of its gradient, so TF1 computes it before the update
#: (with `tf.reduce_sum(W * x)` TF1 may read W after the update: a race)
FETCH_STRUCTURES = _src("""
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [2])
    W = tf.Variable([1.0, 2.0])
    loss = tf.reduce_sum(tf.square(W * x))
    opt = tf.train.GradientDescentOptimizer(0.1)
    train_op = opt.minimize(loss)

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _, before = sess.run([train_op, loss], feed_dict={x: [1.0, 1.0]})
        out = sess.run({"loss": loss, "w": W}, feed_dict={x: [1.0, 1.0]})
        print(before, out["loss"], out["w"])
""")

SHARED = _src("""
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [])
    y = x * 2.0

    with tf.Session() as sess:
        a = sess.run(y, feed_dict={x: 1.0})
        b = sess.run(y, feed_dict={x: 2.0})
        print(a + b)
""")

EVAL_RUN = _src("""
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [2])
    W = tf.Variable([1.0, 2.0])
    loss = tf.reduce_sum(W * x)
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        train_op.run(feed_dict={x: [1.0, 1.0]})
        print(loss.eval(feed_dict={x: [1.0, 1.0]}))
""")

IN_MAIN = _src("""
    import tensorflow as tf


    def main():
        x = tf.placeholder(tf.float32, [2])
        W = tf.Variable([1.0, 2.0])
        loss = tf.reduce_sum(W * x)
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(2):
                sess.run(train_op, feed_dict={x: [1.0, 1.0]})
            return sess.run(loss, feed_dict={x: [1.0, 1.0]})


    print(main())
""")

IN_GUARD = _src("""
    import tensorflow as tf

    if __name__ == "__main__":
        x = tf.placeholder(tf.float32, [2])
        y = tf.reduce_sum(x * 3.0)
        with tf.Session() as sess:
            print(sess.run(y, feed_dict={x: [1.0, 2.0]}))
""")

UNUSED = _src("""
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [2])
    unused = tf.placeholder(tf.float32, [2])
    y = tf.reduce_sum(x)

    with tf.Session() as sess:
        print(sess.run(y, feed_dict={x: [1.0, 2.0], unused: [3.0, 4.0]}))
""")


# ---------------------------------------------------------------------------
# 1. rewrites: the exact text, compiled, idempotent
# ---------------------------------------------------------------------------

def test_fed_linear_model_with_minimize():
    assert_tape(LINEAR, """
        import numpy as np
        import tensorflow as tf

        X = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]], np.float32)
        Y = np.array([1.0, 2.0, 0.0], np.float32)

        b = tf.Variable(0.1)
        W = tf.Variable([[0.5], [-0.3]])
        shift = tf.Variable(0.2, trainable=False)
        opt = tf.compat.v1.train.GradientDescentOptimizer(0.05)
        late = tf.Variable(1.0)


        def run_train_op_loss(x, y):
            \"\"\"sess.run([train_op, loss]) as a function of the fed values.\"\"\"
            x = tf.convert_to_tensor(x, tf.float32)
            y = tf.convert_to_tensor(y, tf.float32)
            with tf.GradientTape() as tape:
                pred = tf.reshape(tf.matmul(x, W), [-1]) + b + shift
                loss = tf.reduce_mean(tf.square(pred - y))
            opt.apply_gradients(zip(tape.gradient(loss, [b, W]), [b, W]))
            return [None, loss.numpy()]


        def run_loss(x, y):
            \"\"\"sess.run(loss) as a function of the fed values.\"\"\"
            x = tf.convert_to_tensor(x, tf.float32)
            y = tf.convert_to_tensor(y, tf.float32)
            pred = tf.reshape(tf.matmul(x, W), [-1]) + b + shift
            loss = tf.reduce_mean(tf.square(pred - y))
            return loss.numpy()


        for step in range(3):
            _, loss_value = run_train_op_loss(x=X, y=Y)
            print(step, loss_value)
        final_loss = run_loss(x=X, y=Y)
        final_W, final_shift = [W.numpy(), shift.numpy()]
    """)


def test_every_rewrite_is_listed_as_a_change():
    r = migrated(LINEAR)
    described = [(c.rule, c.line, c.description) for c in r.changes if c.rule == "feeds"]
    assert ("feeds", 15, "var_list: the trainable variables created before this line, [b, W]") \
        in described
    assert ("feeds", 7, "placeholder `x` -> a parameter of the step functions") in described
    assert any(line == 21 and "run_train_op_loss(x=..., y=...)" in text
               for _, line, text in described), described


def test_compute_gradients_clip_apply_gradients_with_global_step():
    assert_tape(CLIP, """
        import tensorflow as tf

        W = tf.Variable([[1.0], [2.0]])
        b = tf.Variable([0.5])
        gs = tf.compat.v1.train.get_or_create_global_step()
        opt = tf.compat.v1.train.AdamOptimizer(0.01)


        def run_train_op(x):
            \"\"\"sess.run(train_op) as a function of the fed values.\"\"\"
            x = tf.convert_to_tensor(x, tf.float32)
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.square(tf.matmul(x, W) + b))
            grads_and_vars = list(zip(tape.gradient(loss, [W, b]), [W, b]))
            clipped = [(tf.clip_by_value(g, -1.0, 1.0), v) for g, v in grads_and_vars]
            opt.apply_gradients(clipped, global_step=gs)
            return None


        for _ in range(2):
            run_train_op(x=[[1.0, 2.0]])
        print(tf.nest.map_structure(lambda t: t.numpy(), gs))
        print(W.numpy())
    """)


def test_a_function_defined_before_the_session_and_called_after_runs_it():
    r = migrated(EARLY_FUNCTION)
    assert r.mode == "tape", findings(r)
    out = r.output
    # its runs are the session's; `global prediction` goes (no longer a module name); the
    # run of `accuracy`, computed from values in the function, is its value
    assert _src("""
        def compute_accuracy(v_xs, v_ys):
            y_pre = run_prediction(xs=v_xs)
            correct_prediction = tf.equal(tf.argmax(y_pre, 1), tf.argmax(v_ys, 1))
            accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
            result = accuracy.numpy()
            return result
    """) in out
    assert "def run_accuracy" not in out and "Session" not in out
    assert not migrate_source(out, "f.py").changed


@pytest.mark.parametrize("old, new", [
    # called before the session opens: the run would have no session
    ("sess = tf.Session()\n", "print(compute_accuracy(np.ones((1, 4)), np.ones((1, 3))))\n"
     "sess = tf.Session()\n"),
    # passed as a value: where it runs is not known
    ("rng = np.random", "callback = compute_accuracy\nrng = np.random"),
], ids=["called-before", "passed"])
def test_a_function_run_before_the_session_opens_keeps_compat_mode(old, new):
    source = EARLY_FUNCTION.replace(old, new)
    assert source != EARLY_FUNCTION
    r = migrate_source(source, "f.py")
    assert r.mode == "compat"
    assert any(f.code == "TS107" and "sess.run before the session is opened" in f.message
               for f in r.findings), findings(r)


@pytest.mark.parametrize("old, new", [
    # a fetch of a graph value beside a local: the step could not return the local
    ("        result = sess.run(accuracy, feed_dict={xs: v_xs, ys: v_ys})\n",
     "        result = sess.run([prediction, accuracy], feed_dict={xs: v_xs, ys: v_ys})[1]\n"),
    # a local list of tensors: no .numpy() of a list
    ("        result = sess.run(accuracy, feed_dict={xs: v_xs, ys: v_ys})\n",
     "        stats = [accuracy, tf.reduce_max(y_pre)]\n"
     "        result = sess.run(stats, feed_dict={xs: v_xs, ys: v_ys})[0]\n"),
    # a local of a variable, run after a training step: its eager value would be stale
    ("        result = sess.run(accuracy, feed_dict={xs: v_xs, ys: v_ys})\n",
     "        norm = tf.reduce_sum(tf.square(W))\n"
     "        sess.run(train_step, feed_dict={xs: v_xs, ys: v_ys})\n"
     "        result = sess.run(norm, feed_dict={xs: v_xs, ys: v_ys})\n"),
    # fed by a call: dropping the feed would drop the call
    ("        result = sess.run(accuracy, feed_dict={xs: v_xs, ys: v_ys})\n",
     "        result = sess.run(accuracy, feed_dict={xs: np.asarray(v_xs), ys: v_ys})\n"),
], ids=["mixed", "list", "variable", "fed-by-a-call"])
def test_a_run_of_a_function_s_own_value_is_converted_only_when_it_is_one(old, new):
    source = EARLY_FUNCTION.replace(old.replace("        ", "    "), new.replace("        ", "    "))
    assert source != EARLY_FUNCTION
    r = migrate_source(source, "f.py")
    assert r.mode == "compat"
    assert any(f.code == "TS107" and "a value of the function the run is in" in f.message
               for f in r.findings), findings(r)


def test_a_local_that_shadows_a_graph_value_is_the_local():
    # `accuracy` is a graph value of the module and a local of the function: the
    # function's run is of its local (TF1 ran the op the function had just built)
    source = EARLY_FUNCTION.replace(
        "sess = tf.Session()\n",
        "accuracy = tf.reduce_sum(prediction)\nsess = tf.Session()\n")
    r = migrate_source(source, "f.py")
    assert r.mode == "tape", findings(r)
    assert "    result = accuracy.numpy()\n" in r.output
    assert "def run_accuracy" not in r.output


def test_a_global_step_made_in_the_train_op_s_call_is_made_before_it():
    r = migrated(INLINE_STEP)
    assert r.mode == "tape", findings(r)
    out = r.output
    # made once, by a statement of its own, named as TF1 names it; the Saver lists it
    assert "global_step = tf.compat.v1.train.get_or_create_global_step()\n" \
        "saver = tf.compat.v1.train.Saver(var_list=[w, global_step])\n" in out
    assert "    optimizer.apply_gradients(\n      zip(grads, tvars),\n" \
        "      global_step=global_step)\n" in out
    assert out.count("get_or_create_global_step") == 1
    assert not migrate_source(out, "f.py").changed  # idempotent


def test_gradients_with_respect_to_a_placeholder_watch_it():
    assert_tape(WATCH, """
        import tensorflow as tf


        def run_dx(x):
            \"\"\"sess.run(dx) as a function of the fed values.\"\"\"
            x = tf.convert_to_tensor(x, tf.float32)
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = tf.reduce_sum(x * x)
            dx = tape.gradient(y, x)
            return dx.numpy()


        print(run_dx(x=[1.0, 2.0, 3.0]))
    """)


def test_grad_ys_fed_through_a_placeholder():
    assert_tape(GRAD_YS, """
        import tensorflow as tf

        W = tf.Variable([1.0, 2.0])


        def run_g(x, up):
            \"\"\"sess.run(g) as a function of the fed values.\"\"\"
            x = tf.convert_to_tensor(x, tf.float32)
            up = tf.convert_to_tensor(up, tf.float32)
            with tf.GradientTape() as tape:
                y = W * x
            g = tape.gradient(y, W, output_gradients=up)
            return g.numpy()


        print(run_g(x=[3.0, 4.0], up=[1.0, -1.0]))
    """)


def test_placeholder_with_literal_default():
    assert_tape(DEFAULT_LITERAL, """
        import tensorflow as tf


        def run_y(x, scale=None):
            \"\"\"sess.run(y) as a function of the fed values.\"\"\"
            x = tf.convert_to_tensor(x, tf.float32)
            scale = tf.convert_to_tensor(2.0 if scale is None else scale, tf.float32)
            y = tf.reduce_sum(x) * scale
            return y.numpy()


        print(run_y(x=[1.0, 2.0]))
        print(run_y(x=[1.0, 2.0], scale=3.0))
    """)


def test_alias_T_and_compat_v1_import():
    t_alias = DEFAULT_LITERAL.replace("import tensorflow as tf", "import tensorflow as T") \
        .replace("tf.", "T.")
    r = migrated(t_alias)
    assert r.mode == "tape"
    assert "def run_y(x, scale=None):" in r.output
    assert "    scale = T.convert_to_tensor(2.0 if scale is None else scale, T.float32)\n" \
        in r.output
    assert "print(run_y(x=[1.0, 2.0], scale=3.0))\n" in r.output
    v1 = DEFAULT_LITERAL.replace("import tensorflow as tf\n",
                                 "import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()\n")
    assert migrated(v1).mode == "tape"
    assert migrated(v1).output == migrated(DEFAULT_LITERAL).output


def test_placeholder_with_non_literal_default_two_lines():
    assert_tape(DEFAULT_EXPR, """
        import numpy as np
        import tensorflow as tf


        def run_y(x, bias=None):
            \"\"\"sess.run(y) as a function of the fed values.\"\"\"
            x = tf.convert_to_tensor(x, tf.float32)
            bias_default = tf.convert_to_tensor(np.ones(2, np.float32))
            bias = bias_default if bias is None else tf.convert_to_tensor(bias, bias_default.dtype)
            y = tf.reduce_sum(x + bias)
            return y.numpy()


        print(run_y(x=[1.0, 2.0]))
        print(run_y(x=[1.0, 2.0], bias=[0.0, 0.0]))
    """)


def test_inline_optimizer_is_hoisted_and_created_once():
    assert_tape(INLINE_ADAM, """
        import tensorflow as tf

        W = tf.Variable([1.0, -1.0])
        optimizer = tf.compat.v1.train.AdamOptimizer(0.1)


        def run_train_op(x):
            \"\"\"sess.run(train_op) as a function of the fed values.\"\"\"
            x = tf.convert_to_tensor(x, tf.float32)
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.square(W * x))
            optimizer.apply_gradients(zip(tape.gradient(loss, [W]), [W]))
            return None


        for _ in range(3):
            run_train_op(x=[1.0, 2.0])
        print(W.numpy())
    """)


def test_a_hoisted_optimizers_comment_heads_it_once():
    # the comment above the line heads the optimizer made once, not also the update
    # in the step function; the comment ending the line stays with the update
    src = INLINE_ADAM.replace(
        "train_op = tf.train.AdamOptimizer(0.1).minimize(loss)\n",
        "# the optimizer\ntrain_op = tf.train.AdamOptimizer(0.1).minimize(loss)  # one step\n")
    r = migrate_source(src, "f.py")
    assert r.mode == "tape"
    assert "# the optimizer\noptimizer = tf.compat.v1.train.AdamOptimizer(0.1)\n" in r.output
    assert r.output.count("# the optimizer") == 1
    assert "    optimizer.apply_gradients(zip(tape.gradient(loss, [W]), [W]))  # one step\n" \
        in r.output


def test_fetch_list_with_train_op_and_dict_fetch():
    assert_tape(FETCH_STRUCTURES, """
        import tensorflow as tf

        W = tf.Variable([1.0, 2.0])
        opt = tf.compat.v1.train.GradientDescentOptimizer(0.1)


        def run_train_op_loss(x):
            \"\"\"sess.run([train_op, loss]) as a function of the fed values.\"\"\"
            x = tf.convert_to_tensor(x, tf.float32)
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.square(W * x))
            opt.apply_gradients(zip(tape.gradient(loss, [W]), [W]))
            return [None, loss.numpy()]


        def run_loss_W(x):
            \"\"\"sess.run({"loss": loss, "w": W}) as a function of the fed values.\"\"\"
            x = tf.convert_to_tensor(x, tf.float32)
            loss = tf.reduce_sum(tf.square(W * x))
            return {"loss": loss.numpy(), "w": W.numpy()}


        _, before = run_train_op_loss(x=[1.0, 1.0])
        out = run_loss_W(x=[1.0, 1.0])
        print(before, out["loss"], out["w"])
    """)


def test_same_fetches_at_two_places_share_one_function():
    assert_tape(SHARED, """
        import tensorflow as tf


        def run_y(x):
            \"\"\"sess.run(y) as a function of the fed values.\"\"\"
            x = tf.convert_to_tensor(x, tf.float32)
            y = x * 2.0
            return y.numpy()


        a = run_y(x=1.0)
        b = run_y(x=2.0)
        print(a + b)
    """)


def test_eval_and_run_with_feed_dict():
    assert_tape(EVAL_RUN, """
        import tensorflow as tf

        W = tf.Variable([1.0, 2.0])
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)


        def run_train_op(x):
            \"\"\"sess.run(train_op) as a function of the fed values.\"\"\"
            x = tf.convert_to_tensor(x, tf.float32)
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(W * x)
            optimizer.apply_gradients(zip(tape.gradient(loss, [W]), [W]))
            return None


        def run_loss(x):
            \"\"\"sess.run(loss) as a function of the fed values.\"\"\"
            x = tf.convert_to_tensor(x, tf.float32)
            loss = tf.reduce_sum(W * x)
            return loss.numpy()


        run_train_op(x=[1.0, 1.0])
        print(run_loss(x=[1.0, 1.0]))
    """)


def test_graph_and_session_inside_a_function():
    assert_tape(IN_MAIN, """
        import tensorflow as tf


        def main():
            W = tf.Variable([1.0, 2.0])
            optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)

            def run_train_op(x):
                \"\"\"sess.run(train_op) as a function of the fed values.\"\"\"
                x = tf.convert_to_tensor(x, tf.float32)
                with tf.GradientTape() as tape:
                    loss = tf.reduce_sum(W * x)
                optimizer.apply_gradients(zip(tape.gradient(loss, [W]), [W]))
                return None

            def run_loss(x):
                \"\"\"sess.run(loss) as a function of the fed values.\"\"\"
                x = tf.convert_to_tensor(x, tf.float32)
                loss = tf.reduce_sum(W * x)
                return loss.numpy()

            for _ in range(2):
                run_train_op(x=[1.0, 1.0])
            return run_loss(x=[1.0, 1.0])


        print(main())
    """)


def test_graph_and_session_inside_the_main_guard():
    assert_tape(IN_GUARD, """
        import tensorflow as tf

        if __name__ == "__main__":

            def run_y(x):
                \"\"\"sess.run(y) as a function of the fed values.\"\"\"
                x = tf.convert_to_tensor(x, tf.float32)
                y = tf.reduce_sum(x * 3.0)
                return y.numpy()

            print(run_y(x=[1.0, 2.0]))
    """)


def test_fed_but_unused_placeholder_is_still_passed():
    # TF1 evaluates the fed expression even when nothing fetched reads it
    assert_tape(UNUSED, """
        import tensorflow as tf


        def run_y(x, unused=None):
            \"\"\"sess.run(y) as a function of the fed values.\"\"\"
            x = tf.convert_to_tensor(x, tf.float32)
            y = tf.reduce_sum(x)
            return y.numpy()


        print(run_y(x=[1.0, 2.0], unused=[3.0, 4.0]))
    """)


def test_a_named_feed_dict_becomes_a_keyword_dict():
    r = migrated(PRINTED["named_feed"][0])
    assert r.mode == "tape", codes(r)
    assert 'feed = {"x": [1.0, 0.5 * i]}' in r.output
    assert "_, value = run_train_op_loss(**feed)" in r.output
    assert 'feed = {"x": [1.0, 1.0], "scale": 2.0}' in r.output
    assert "print(run_loss(**feed))" in r.output
    assert "def run_loss(x, scale=None):" in r.output
    assert not migrate_source(r.output, "f.py").changed


def test_a_named_feed_dict_passed_by_position_becomes_a_keyword_dict():
    # sess.run(fetches, feed) and t.eval(feed): the feed_dict parameter by position
    r = migrated(PRINTED["named_feed"][0].replace("feed_dict=feed", "feed"))
    assert r.mode == "tape", codes(r)
    assert "_, value = run_train_op_loss(**feed)" in r.output
    assert "print(run_loss(**feed))" in r.output
    r = migrated(_src("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [2])
        y = tf.reduce_sum(x)

        with tf.Session() as sess:
            feed = {x: [1.0, 2.0]}
            print(y.eval(feed))
    """))
    assert r.mode == "tape", codes(r)
    assert "print(run_y(**feed))" in r.output


MERGED_FEED = _src("""
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [2])
    v = tf.placeholder(tf.float32, [2])
    y = tf.reduce_sum(x * v)

    with tf.Session() as sess:
        feed = {x: [1.0, 2.0]}
        print(sess.run(y, {**feed, v: [3.0, 4.0]}))
        print(sess.run(y, feed_dict={**feed, FED: [5.0, 6.0]}))
""")


def test_a_named_feed_dict_merged_with_more_feeds():
    r = migrated(MERGED_FEED.replace("FED", "v"))
    assert r.mode == "tape", codes(r)
    assert 'feed = {"x": [1.0, 2.0]}' in r.output
    assert "print(run_y(**feed, v=[3.0, 4.0]))" in r.output
    assert "print(run_y(**feed, v=[5.0, 6.0]))" in r.output
    # feeding again what the named dict feeds would pass it twice
    r = migrated(MERGED_FEED.replace("FED", "x"))
    assert r.mode == "compat"
    assert any(f.code == "TS107" and "fed again beside `**feed`" in f.message
               for f in r.findings), codes(r)


def test_a_named_feed_dict_used_otherwise_is_not_converted():
    r = migrated(_src("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [2])
        y = tf.reduce_sum(x)

        with tf.Session() as sess:
            feed = {x: [1.0, 2.0]}
            print(len(feed), sess.run(y, feed_dict=feed))
    """))
    assert r.mode == "compat"
    assert any(f.code == "TS107" and "not a dict literal" in f.message for f in r.findings)


def test_variables_in_a_with_block_or_a_list_are_in_the_default_var_list():
    # TF1's default var_list is every trainable variable created before the line,
    # whatever statement created it
    scoped = _src("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [2])
        with tf.name_scope("layer"):
            W = tf.Variable([1.0, 2.0])
        b = tf.Variable(0.5)
        loss = tf.reduce_sum(W * x) + b
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train_op, feed_dict={x: [1.0, 1.0]})
            print(sess.run(W))
    """)
    r = migrated(scoped)
    if r.mode == "tape":
        assert "tape.gradient(loss, [W, b]), [W, b])" in r.output, r.output
    else:  # not converting it is fine too, if it says why
        assert r.mode == "compat" and any(f.code == "TS108" for f in r.findings), codes(r)


def test_unseeded_random_op_in_fed_code_converts_with_a_warning():
    src = _src("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [2])
        noisy = x + tf.random_normal([2])

        with tf.Session() as sess:
            print(sess.run(noisy, feed_dict={x: [1.0, 2.0]}))
    """)
    r = migrated(src)
    assert r.mode == "tape"
    assert codes(r) == [("TS116", 4)]
    assert r.findings[0].changes_numbers
    assert "random op recomputed at each step" in r.findings[0].message
    assert "    noisy = x + tf.random.normal([2])\n" in r.output


# ---------------------------------------------------------------------------
# 3. not converted: compat mode, with the reason at the right line
# ---------------------------------------------------------------------------

FALLBACKS = [
    pytest.param("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [2])
        y = tf.argmax(x)
        z = tf.cast(y, tf.float32) * 2.0

        with tf.Session() as sess:
            print(sess.run(z, feed_dict={y: 3}))
    """, "TS107", 8, "feeding `y`, computed by `tf.argmax`, whose dtype the codemod cannot tell",
        id="feed-a-computed-tensor"),
    pytest.param("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [2])
        y = tf.reduce_sum(x)

        with tf.Session() as sess:
            feeds = {}
            feeds[x] = [1.0, 2.0]
            print(sess.run(y, feed_dict=feeds))
    """, "TS107", 9, "feed_dict `feeds` is not a dict literal", id="feed-dict-by-name"),
    pytest.param("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [2])
        k = tf.placeholder(tf.float32, [])
        y = tf.reduce_sum(x) * k

        with tf.Session() as sess:
            print(sess.run(y, feed_dict={x: [1.0, 2.0]}))
    """, "TS107", 8, "placeholder `k` is not fed, and the statements computing these fetches read it",
        id="placeholder-not-fed"),
    pytest.param("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [None, 2])
        h = x
        for units in (3, 2):
            h = tf.layers.dense(h, units)
        loss = tf.reduce_sum(h)

        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            print(sess.run(loss, feed_dict={x: [[1.0, 2.0]]}))
    """, "TS125", 5, "model code inside a `for` block", id="layers-made-in-a-loop"),
    pytest.param("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [2])
        W = tf.Variable([1.0, 2.0])
        update = tf.assign(W, W * x) + 1.0

        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            print(sess.run(update, feed_dict={x: [2.0, 3.0]}))
    """, "TS108", 5, "tf.assign in fed graph code", id="tf-assign-in-an-expression"),
    pytest.param("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [2])
        W = tf.Variable([1.0, 2.0])
        update = W.assign(W * x, validate_shape=False)

        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            print(sess.run(update, feed_dict={x: [2.0, 3.0]}))
    """, "TS108", 5, "`.assign(...)` in fed graph code", id="assign-without-shape-check"),
    pytest.param("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [2])
        W = tf.Variable([1.0, 2.0])
        loss = tf.reduce_sum(W * x)
        opt = tf.train.GradientDescentOptimizer(0.1)
        train_op = opt.minimize(loss, var_list=tf.get_collection("my_variables"))

        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train_op, feed_dict={x: [1.0, 1.0]})
    """, "TS125", 7, "only the variable collections are converted",
        id="var-list-from-a-collection"),
    pytest.param("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [2])
        lr = tf.placeholder_with_default(0.1, [])
        W = tf.Variable([1.0, 2.0])
        loss = tf.reduce_sum(W * x)
        opt = tf.train.GradientDescentOptimizer(lr)
        train_op = opt.minimize(loss)

        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train_op, feed_dict={x: [1.0, 1.0], lr: 0.1})
    """, "TS108", 7, "an optimizer built from a fed or computed tensor (`lr`, not a scalar "
        "tf.placeholder", id="defaulted-placeholder-learning-rate"),
    pytest.param("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [2])
        total = tf.constant(0.0)
        k = 0
        while k < 3:
            total = total + tf.reduce_sum(x) * k
            k += 1
        else:
            total = total * 2.0

        with tf.Session() as sess:
            print(sess.run(total, feed_dict={x: [1.0, 2.0]}))
    """, "TS107", 6, "graph code in a `while ... else`", id="graph-code-in-a-while-else"),
    pytest.param("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [2])
        y = tf.reduce_sum(x)
        if y is not None:
            y = y * 2.0

        with tf.Session() as sess:
            print(sess.run(y, feed_dict={x: [1.0, 2.0]}))
    """, "TS107", 5, "an `if` on a graph value", id="if-on-a-graph-value"),
    pytest.param("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [2])
        parts = [tf.constant(1.0)]
        for k in range(3):
            parts.append(tf.reduce_sum(x) * k)

        with tf.Session() as sess:
            print(sess.run(parts, feed_dict={x: [1.0, 2.0]}))
    """, "TS107", 5, "neither made empty before it", id="list-filled-not-made-empty"),
    pytest.param("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [2])
        loss = tf.reduce_sum(x)
        summ = tf.summary.scalar("loss", loss)

        with tf.Session() as sess:
            print(sess.run([loss, summ], feed_dict={x: [1.0, 2.0]}))
    """, "TS108", 5, "tf.summary.scalar in fed graph code", id="summary"),
    pytest.param("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [2])
        loss = tf.reduce_sum(x)

        with tf.Session() as sess:
            print(loss)
            print(sess.run(loss, feed_dict={x: [1.0, 2.0]}))
    """, "TS107", 7, "`loss` is a graph value used after the graph is run",
        id="graph-value-read-outside-sess-run"),
    pytest.param("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [2])
        loss = tf.reduce_sum(x)

        with tf.Session() as sess:
            print(sess.run(loss, feed_dict={x: [1.0, 2.0]}))
        with tf.Session() as sess2:
            print(sess2.run(loss, feed_dict={x: [3.0, 4.0]}))
    """, "TS107", 8, "more than one Session, not each in a function", id="two-sessions"),
    pytest.param("""
        import tensorflow as tf

        sp = tf.sparse_placeholder(tf.float32)
        total = tf.sparse_reduce_sum(sp)

        with tf.Session() as sess:
            print(sess.run(total, feed_dict={sp: tf.SparseTensorValue([[0, 0]], [1.0], [2, 2])}))
    """, "TS107", 3, "tf.sparse_placeholder", id="sparse-placeholder"),
]


@pytest.mark.parametrize("before,code,line,reason", FALLBACKS)
def test_not_converted_falls_back_to_compat_with_the_reason(before, code, line, reason):
    src = _src(before)
    r = migrated(src)
    assert r.mode == "compat", codes(r)
    lines = r.output.splitlines()
    if "tf.layers." in src:  # compat mode takes tf.layers from tf-keras (TS124)
        assert lines[1:3] == ["import tf_keras.api._v1.keras.__internal__.legacy.layers as tf_layers", ""]
        del lines[1:3]
        src = src.replace("tf.layers.", "tf_layers.")
    assert lines[:2] == ["import tensorflow.compat.v1 as tf", "tf.disable_v2_behavior()"]
    assert lines[2:] == src.splitlines()[1:]
    assert codes(r)[0] == (code, line), codes(r)
    assert reason in r.findings[0].message, r.findings[0].message
    assert ("TS101", 1) in codes(r)


# ---------------------------------------------------------------------------
# 4. files the rule leaves to others
# ---------------------------------------------------------------------------

class TestLeftToOthers(CodemodTest):
    TRANSFORM = FeedsToFunctions

    def test_library_code_without_a_session_is_not_touched(self) -> None:
        before = """
            import tensorflow as tf


            def build(n):
                x = tf.placeholder(tf.float32, [None, n])
                W = tf.Variable(tf.zeros([n, 1]))
                loss = tf.reduce_sum(tf.matmul(x, W))
                train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
                return x, loss, train_op
        """
        self.assertCodemod(before, before)

    def test_a_local_name_tf_is_not_tensorflow(self) -> None:
        before = """
            import mylib as tf
            x = tf.placeholder(tf.float32, [2])
            y = tf.reduce_sum(x)
            with tf.Session() as sess:
                print(sess.run(y, feed_dict={x: [1.0, 2.0]}))
        """
        self.assertCodemod(before, before)

    def test_get_variable_with_a_positional_shape_is_trainable(self) -> None:
        # tf.get_variable(name, shape, ...): the second positional argument is the
        # shape, not `trainable` (that is tf.Variable's); TF1 trains W2
        before = """
            import tensorflow as tf

            x = tf.placeholder(tf.float32, [2])
            W1 = tf.Variable([1.0, 2.0])
            W2 = tf.get_variable("w2", [2], initializer=tf.ones_initializer())
            loss = tf.reduce_sum(W1 * x + W2)
            opt = tf.train.GradientDescentOptimizer(0.1)
            train_op = opt.minimize(loss)

            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(train_op, feed_dict={x: [1.0, 1.0]})
        """
        after = """
            import tensorflow as tf

            W1 = tf.Variable([1.0, 2.0])
            W2 = tf.get_variable("w2", [2], initializer=tf.ones_initializer())
            opt = tf.train.GradientDescentOptimizer(0.1)


            def run_train_op(x):
                \"\"\"sess.run(train_op) as a function of the fed values.\"\"\"
                x = tf.convert_to_tensor(x, tf.float32)
                loss = tf.reduce_sum(W1 * x + W2)
                opt.apply_gradients(zip(tf.gradients(loss, [W1, W2]), [W1, W2]))
                return None


            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                run_train_op(x=[1.0, 1.0])
        """
        self.assertCodemod(before, after)


def test_tf2_training_loop_is_unchanged():
    src = _src("""
        import tensorflow as tf

        W = tf.Variable([1.0, 2.0])
        opt = tf.keras.optimizers.SGD(0.1)
        for _ in range(3):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(W * W)
            grads = tape.gradient(loss, [W])
            opt.apply_gradients(zip(grads, [W]))
        print(W.numpy())
    """)
    r = migrated(src)
    assert r.mode == "unchanged" and not r.changed
    assert r.findings == () and r.changes == ()


# ---------------------------------------------------------------------------
# 2. numbers (TensorFlow subprocesses, started together in the background)
# ---------------------------------------------------------------------------

#: legacy program -> values verify must have compared (besides printed lines)
VERIFIED = {
    "linear": (LINEAR, {"b", "W", "shift", "late", "loss_value", "final_loss", "final_W",
                        "final_shift", "stdout:1", "stdout:3"}),
    "clip": (CLIP, {"W", "b", "gs", "stdout:1", "stdout:2"}),
    "inline_adam": (INLINE_ADAM, {"W", "stdout:1"}),
    "inline_step": (INLINE_STEP, {"w", "stdout:1", "stdout:4"}),
    "early_function": (EARLY_FUNCTION, {"W", "b", "stdout:1", "stdout:4"}),
}

#: programs whose TF2 form is run, with the numbers TF1 prints for them
#: (measured with ``tapeshift run-legacy``)
PRINTED = {
    "watch": (WATCH, "[2. 4. 6.]"),
    "grad_ys": (GRAD_YS, "[ 3. -4.]"),
    "default_literal": (DEFAULT_LITERAL, "6.0\n9.0"),
    "default_expr": (DEFAULT_EXPR, "5.0\n3.0"),
    "fetch_structures": (FETCH_STRUCTURES, "5.0 3.2 [0.8 1.6]"),
    "shared": (SHARED, "6.0"),
    "eval_run": (EVAL_RUN, "2.8"),
    "in_main": (IN_MAIN, "2.6"),
    "in_guard": (IN_GUARD, "9.0"),
    "unused": (UNUSED, "3.0"),
    # a placeholder fed in one run of a fetch and not in another: TF1 does not mind
    "unused_sometimes": (_src("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [2])
        unused = tf.placeholder(tf.float32, [2])
        y = tf.reduce_sum(x)

        with tf.Session() as sess:
            print(sess.run(y, feed_dict={x: [1.0, 2.0], unused: [3.0, 4.0]}))
            print(sess.run(y, feed_dict={x: [5.0, 2.0]}))
    """), "3.0\n7.0"),
    # a schedule fetched with its train op: TF1 returns the rate the step used
    # (0.5 * 0.5 ** step before the increment), W is updated with those rates
    "schedule": (_src("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [2])
        W = tf.Variable([1.0, 2.0])
        gs = tf.train.get_or_create_global_step()
        lr = tf.train.exponential_decay(0.5, gs, 1, 0.5)
        loss = tf.reduce_sum(tf.square(W * x))
        train_op = tf.train.GradientDescentOptimizer(lr).minimize(loss, global_step=gs)

        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(3):
                _, step, rate = sess.run([train_op, gs, lr], feed_dict={x: [1.0, 0.5]})
                print(step, rate)
            print(sess.run(W))
    """), "1 0.5\n2 0.25\n3 0.125\n[0. 1.2304688]"),
    # an assign op fetched in a loop runs at each fetch, and its value is the
    # variable's new value (TF1 returns it)
    "assign_fetched": (_src("""
        import tensorflow as tf

        X = tf.placeholder(tf.float32)
        W = tf.Variable([1.0, 2.0])
        update = tf.assign_add(W, X * 2.0)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for i in range(3):
                new = sess.run(update, feed_dict={X: [0.5, 0.25]})
                print(i, new, sess.run(W))
    """), "0 [2. 2.5] [2. 2.5]\n1 [3. 3.] [3. 3.]\n2 [4. 3.5] [4. 3.5]"),
    # variables unpacked from a list are in TF1's default var_list, in order
    "unpacked_variables": (_src("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [2])
        a, b = [tf.Variable(p) for p in (1.0, 2.0)]
        loss = tf.reduce_sum(tf.square(a * x - b))
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(2):
                sess.run(train_op, feed_dict={x: [1.0, 0.5]})
            print(*sess.run([a, b]))
    """), "1.4625 1.3050001"),
    # variables created inside a `with` block and in a list are trained by TF1's
    # default var_list like any other
    "var_in_with_block": (_src("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [2])
        with tf.name_scope("layer"):
            W = tf.Variable([1.0, 2.0])
        b = tf.Variable(0.5)
        loss = tf.reduce_sum(W * x) + b
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train_op, feed_dict={x: [1.0, 1.0]})
            print(sess.run(W), sess.run(b))
    """), "[0.9 1.9] 0.4"),
    "vars_in_a_list": (_src("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [2])
        b = tf.Variable(0.5)
        Ws = [tf.Variable([1.0, 2.0]), tf.Variable([3.0, 4.0])]
        loss = tf.reduce_sum(Ws[0] * x + Ws[1]) + b
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train_op, feed_dict={x: [1.0, 1.0]})
            w0, w1 = sess.run(Ws)
            print(w0, w1, sess.run(b))
    """), "[0.9 1.9] [2.9 3.9] 0.4"),
}

# a feed dict bound to a name (built per step, two bindings, one feeding an extra
# with-default placeholder) -> keyword dicts passed with **
PRINTED["named_feed"] = (_src("""
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [2])
    scale = tf.placeholder_with_default(1.0, [])
    W = tf.Variable([1.0, 2.0])
    loss = scale * tf.reduce_sum(tf.square(W * x))
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(2):
            feed = {x: [1.0, 0.5 * i]}
            _, value = sess.run([train_op, loss], feed_dict=feed)
            print(value)
        feed = {x: [1.0, 1.0], scale: 2.0}
        print(sess.run(loss, feed_dict=feed))
"""), "1.0\n1.6400001\n8.0392")

# two train ops grouped with tf.group, and two fetched in one run
PRINTED["grouped"] = (_src("""
    import tensorflow as tf
    x = tf.placeholder(tf.float32, [2])
    W = tf.Variable([1.0, 2.0])
    V = tf.Variable([0.5, 0.5])
    loss_w = tf.reduce_sum(tf.square(W * x))
    loss_v = tf.reduce_sum(tf.square(V - x))
    train_w = tf.train.GradientDescentOptimizer(0.1).minimize(loss_w, var_list=[W])
    train_v = tf.train.AdamOptimizer(0.1).minimize(loss_v, var_list=[V])
    train = tf.group(train_w, train_v)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            print(sess.run([train, loss_w, loss_v], feed_dict={x: [1.0, 2.0]})[1:])
            sess.run([train_w, train_v], feed_dict={x: [0.5, 1.0]})
        print(sess.run(W), sess.run(V))
"""), "[np.float32(17.0), np.float32(2.5)]\n[np.float32(0.9872), np.float32(1.8537871)]\n"
      "[np.float32(0.3441075), np.float32(1.3717903)]\n[0.438976 0.008192] [0.81474936 1.0162481 ]")

#: programs the rule may also leave in compat form (with a reason)
MAY_FALL_BACK = {"var_in_with_block", "vars_in_a_list"}

#: runs each program's migrated text in one TF2 process; a fresh namespace each
_EAGER_DRIVER = """\
import contextlib, io, json, sys, traceback
with open(sys.argv[1], encoding="utf-8") as f:
    programs = json.load(f)
results = {}
for name, source in programs.items():
    out = io.StringIO()
    error = None
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(source, name + ".py", "exec"), {"__name__": "__main__"})
    except Exception:
        error = traceback.format_exc(limit=-4)
    results[name] = {"stdout": out.getvalue(), "error": error}
with open(sys.argv[2], "w", encoding="utf-8") as f:
    json.dump(results, f)
"""


def _run_eager(programs, directory):
    source = directory / "programs.json"
    source.write_text(json.dumps(programs), encoding="utf-8")
    driver = directory / "driver.py"
    driver.write_text(_EAGER_DRIVER, encoding="utf-8")
    result = directory / "results.json"
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run([sys.executable, str(driver), str(source), str(result)],
                          check=False, capture_output=True, text=True, timeout=TIMEOUT, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(result.read_text(encoding="utf-8"))


class _NumberRuns:
    """The TensorFlow subprocesses the selected numbers tests need, two at a
    time in background threads."""

    def __init__(self, directory, verified, printed):
        self._pool = ThreadPoolExecutor(max_workers=2)
        # a compat-mode text would disable v2 behaviour for the programs after it
        tape = {name: migrated(PRINTED[name][0]).output for name in sorted(printed)
                if migrated(PRINTED[name][0]).mode == "tape"}
        self.eager = self._pool.submit(_run_eager, tape, directory) if tape else None
        self.verified = {
            name: self._pool.submit(verify_sources, VERIFIED[name][0],
                                    migrated(VERIFIED[name][0]).output,
                                    directory / f"{name}.py", timeout=TIMEOUT)
            for name in sorted(verified)
        }

    def close(self):
        self._pool.shutdown(wait=True)


def _selected_numbers(request):
    """The program names of the numbers tests selected in this file, by test."""
    selected = {}
    for item in request.session.items:
        if getattr(item, "module", None) is request.module \
                and "number_runs" in getattr(item, "fixturenames", ()):
            selected.setdefault(item.originalname, set()).add(item.callspec.params["name"])
    return selected


@pytest.fixture(scope="module")
def number_runs(request, tmp_path_factory):
    selected = _selected_numbers(request)
    runs = _NumberRuns(tmp_path_factory.mktemp("feeds-numbers"),
                       selected.get("test_numbers_agree_with_the_legacy_run", set()),
                       selected.get("test_migrated_program_prints_what_tf1_printed", set()))
    yield runs
    runs.close()


@pytest.fixture(scope="module", autouse=True)
def _start_number_runs_early(request):
    """When a numbers test is selected, start its subprocesses before the first
    test of this file: they overlap with the text tests."""
    if _selected_numbers(request):
        request.getfixturevalue("number_runs")


@pytest.mark.slow
@pytest.mark.tf
@pytest.mark.parametrize("name", sorted(VERIFIED))
def test_numbers_agree_with_the_legacy_run(name, number_runs):
    source, names = VERIFIED[name]
    assert migrated(source).mode == "tape"
    report = number_runs.verified[name].result()
    assert report.status == "ok", report.to_text()
    compared = {row.name for row in report.rows if row.compared}
    assert names <= compared, report.to_text()


_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def _numbers(text):
    return [float(n) for n in _NUMBER.findall(re.sub(r"dtype=\w+", "", text))]


@pytest.mark.tf
@pytest.mark.parametrize("name", sorted(PRINTED))
def test_migrated_program_prints_what_tf1_printed(name, number_runs):
    source, expected = PRINTED[name]
    r = migrated(source)
    if name in MAY_FALL_BACK and r.mode == "compat":  # not converting is safe, if it says why
        assert codes(r)[0][0] in ("TS107", "TS108"), codes(r)
        return
    assert r.mode == "tape", codes(r)
    result = number_runs.eager.result()[name]
    assert result["error"] is None, f"{result['error']}\n--- migrated:\n{r.output}"
    got = _numbers(result["stdout"])
    want = _numbers(expected)
    assert len(got) == len(want) and all(
        abs(g - w) <= 1e-6 + 1e-5 * abs(w) for g, w in zip(got, want)), (
        f"printed {result['stdout']!r}, TF1 prints {expected!r}\n--- migrated:\n{r.output}")


CONTROL_FLOW = _src("""
    import numpy as np
    import tensorflow as tf

    CLIP = True
    x = tf.placeholder(tf.float32, [None, 3])
    w = tf.Variable(np.linspace(0.5, 1.5, 3).reshape(3, 1).astype(np.float32))
    losses = [tf.reduce_sum(tf.matmul(x, w) ** k) for k in (1, 2)]
    grads = []
    for l in losses:
        grads.append(tf.gradients(l, w)[0])
    total = tf.constant(0.0)
    for k in range(3):
        total = total + losses[0] * k
    g = tf.gradients(losses[1], w)[0]
    if CLIP:
        g = tf.clip_by_norm(g, 1.0)
    with tf.device("/cpu:0"):
        h = tf.gradients(losses[1], [w])

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run([grads, total, g, h], {x: np.ones((2, 3), np.float32)})
        print(out[1], out[2].ravel())
""")


def test_graph_code_under_python_control_flow_is_recomputed_with_it():
    r = migrated(CONTROL_FLOW)
    assert r.mode == "tape", codes(r)
    out = r.output
    # the list the loop fills and the accumulator start again in the step function
    body = out[out.index("def run_grads_total_g_h(x):"):]
    for line in ("    grads = []\n    for l in losses:\n        grads.append(tape.gradient(l, w))",
                 "    total = tf.constant(0.0)\n    for k in range(3):",
                 "    if CLIP:\n        g = tf.clip_by_norm(g, 1.0)",
                 '    with tf.device("/cpu:0"):\n        h = tape.gradient(losses[1], [w])'):
        assert line in body, line
    assert "with tf.GradientTape(persistent=True) as tape:" in body
    assert not migrate_source(out, "f.py").changed


@pytest.mark.tf
def test_graph_code_under_python_control_flow_verifies_equal(tmp_path):
    from tapeshift.migrate.legacy.verify import verify_sources

    report = verify_sources(CONTROL_FLOW, migrated(CONTROL_FLOW).output, tmp_path / "cf.py")
    assert report.status == "ok", report.to_text()
    printed = [row for row in report.rows if row.name == "stdout:1"]
    assert printed and printed[0].status == "ok", report.to_text()  # total and the clipped g


CLIPPED_PAIRS = _src("""
    import tensorflow as tf

    x = tf.Variable(3.0)
    w = tf.Variable(5.0)
    y = w * x - 1.0
    opt = tf.train.GradientDescentOptimizer(0.1)
    grads_vals = opt.compute_gradients(y, [w])
    for i, (g, v) in enumerate(grads_vals):
        if g is not None:
            grads_vals[i] = (tf.clip_by_norm(g, 5), v)  # clip gradients
    train_op = opt.apply_gradients(grads_vals)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train_op)
        print(sess.run(grads_vals))
""")


def test_pairs_edited_in_a_loop_are_edited_in_the_step():
    # the common clipping loop over compute_gradients' pairs, before apply_gradients
    r = migrated(CLIPPED_PAIRS)
    assert r.mode == "tape", codes(r)
    step = r.output[r.output.index("def run_train_op():"):r.output.index("def run_grads_vals")]
    assert "grads_vals = list(zip(tape.gradient(y, [w]), [w]))\n" \
           "    for i, (g, v) in enumerate(grads_vals):\n" \
           "        if g is not None:\n" \
           "            grads_vals[i] = (tf.clip_by_norm(g, 5), v)  # clip gradients\n" \
           "    opt.apply_gradients(grads_vals)" in step


COMPUTED_FETCH = _src("""
    import numpy as np
    import tensorflow as tf

    X = tf.placeholder(tf.float32, [None])
    Y = tf.placeholder(tf.float32, [None])
    W = tf.Variable(0.5)
    pred = X * W
    cost = tf.reduce_mean(tf.square(pred - Y))
    optimizer = tf.train.GradientDescentOptimizer(0.1).minimize(cost)

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(optimizer, feed_dict={X: [1.0, 2.0], Y: [2.0, 4.0]})
        test_X = np.array([3.0, 4.0, 5.0])
        testing_cost = sess.run(
            tf.reduce_sum(tf.pow(pred - Y, 2)) / (2 * test_X.shape[0]),
            feed_dict={X: test_X, Y: [6.0, 8.0, 10.0]})
        print(testing_cost, sess.run([cost, tf.argmax(pred)], {X: test_X, Y: [6.0, 8.0, 10.0]}))
""")


def test_a_fetch_built_in_the_call_is_computed_in_the_step():
    r = migrated(COMPUTED_FETCH)
    assert r.mode == "tape", codes(r)
    out = r.output
    # the optimizer of a train op named `optimizer` is named after its class
    assert "gradient_descent_optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)" in out
    assert "    return (tf.reduce_sum(tf.pow(pred - Y, 2)) / (2 * test_X.shape[0])).numpy()" in out
    assert "    return [cost.numpy(), tf.argmax(pred).numpy()]" in out
    assert not migrate_source(out, "f.py").changed


def test_a_fetch_that_draws_or_updates_is_not_converted():
    r = migrated(COMPUTED_FETCH.replace("tf.argmax(pred)", "pred + tf.random_normal([3])"))
    assert r.mode == "compat"
    assert any(f.code == "TS107" and "a random op" in f.message for f in r.findings), codes(r)


@pytest.mark.tf
def test_a_fetch_built_in_the_call_verifies_equal(tmp_path):
    from tapeshift.migrate.legacy.verify import verify_sources

    report = verify_sources(COMPUTED_FETCH, migrated(COMPUTED_FETCH).output, tmp_path / "cf.py")
    assert report.status == "ok", report.to_text()
    assert report.new.values["testing_cost"].shape == ()
    assert any(row.name == "stdout:1" and row.status == "ok" for row in report.rows)


def test_an_empty_fetch_list_is_an_empty_list():
    # (TF1 returns [] for it; the codemod used to fail with an internal error)
    r = migrated(_src("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [2])
        y = x * 2.0
        with tf.Session() as sess:
            print(sess.run([], feed_dict={x: [1.0, 1.0]}))
            print(sess.run(y, feed_dict={x: [1.0, 1.0]}))
    """))
    assert r.mode == "tape", codes(r)
    assert "\nprint([])\n" in r.output


def test_graph_code_in_a_statement_other_than_an_assignment_is_named_as_written():
    r = migrated(_src("""
        import tensorflow as tf

        x = tf.placeholder(tf.float32, [2])
        y = x * 2.0
        tf.add_to_collection("outputs", y + 1.0)
        with tf.Session() as sess:
            print(sess.run(y, feed_dict={x: [1.0, 1.0]}))
    """))
    assert r.mode == "compat"
    assert any('`tf.add_to_collection("outputs", y + 1.0)` computes with graph values but is '
               "not a plain assignment" in m for _, _, m in findings(r)), findings(r)
