"""RNNs in tape form: cells made once (at module level, or before a model
function's first call), run by the step functions.

A TF1 cell (``tf.nn.rnn_cell.*``, ``tf.contrib.rnn.*``) makes its variables at the
first RNN over it, under the RNN's scope; tf-keras' legacy cells are those
classes and do the same eagerly. The model-code rule keeps the cell where the
program made it (from tf-keras), counts its variables at the RNN's line (the
default var_list lists ``*cell.trainable_variables``), and gives the RNN the
TF1 scope of a scope block it dissolves. What it does not read (RNNs in a
class, cells not bound to a module name, bidirectional RNNs, the
names used other than called) keeps the file in compat form (TS125), where the
rnn-cells rule moves the cells to tf-keras (test_rnn_cells.py).
"""


import pytest

from tapeshift.migrate.engine.pipeline import migrate_source
from tapeshift.migrate.rules.rnn_cells_table import TF_KERAS_LEGACY_RNN_CELL
from rule_programs import findings, migrated, src as _src  # tests/support

TIMEOUT = 300  # seconds per TensorFlow run (the machine is shared and slow)


LSTM = _src("""
    import numpy as np
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [None, 5, 3])
    y = tf.placeholder(tf.float32, [None, 1])
    cell = tf.contrib.rnn.BasicLSTMCell(8)
    outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    pred = tf.layers.dense(state.h, 1)
    loss = tf.reduce_mean(tf.square(pred - y))
    train = tf.train.AdamOptimizer(0.01).minimize(loss)

    X = np.linspace(0, 1, 60, dtype=np.float32).reshape(4, 5, 3)
    Y = X.sum(axis=(1, 2))[:, None] / 10
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(6):
            _, l = sess.run([train, loss], feed_dict={x: X, y: Y})
            print(step, l)
""")

SCOPED = _src("""
    import numpy as np
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [None, 4, 2])
    y = tf.placeholder(tf.float32, [None, 3])
    with tf.variable_scope("enc"):
        stack = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.GRUCell(5),
                                             tf.nn.rnn_cell.GRUCell(3)])
        steps, last = tf.contrib.rnn.static_rnn(stack, tf.unstack(x, axis=1), dtype=tf.float32)
    loss = tf.reduce_mean(tf.square(steps[-1] - y))
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    X = np.linspace(-1, 1, 24, dtype=np.float32).reshape(3, 4, 2)
    Y = np.ones((3, 3), np.float32) * 0.3
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(4):
            print(sess.run([train, loss], {x: X, y: Y})[1])
""")


# the popular tutorial's shape: the cell made in a model function called once
FUNCTION = _src("""
    import numpy as np
    import tensorflow as tf
    from tensorflow.contrib import rnn

    X = tf.placeholder("float", [None, 4, 3])
    Y = tf.placeholder("float", [None, 2])
    weights = {'out': tf.Variable(tf.random_normal([8, 2]))}


    def RNN(x, weights):
        x = tf.unstack(x, 4, 1)

        # Define a lstm cell with tensorflow
        lstm_cell = rnn.BasicLSTMCell(8, forget_bias=1.0)  # 8 units
        outputs, states = rnn.static_rnn(lstm_cell, x, dtype=tf.float32)
        return tf.matmul(outputs[-1], weights['out'])

    logits = RNN(X, weights)
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(logits=logits, labels=Y))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

    bx = np.linspace(0, 1, 48, dtype=np.float32).reshape(4, 4, 3)
    by = np.eye(2, dtype=np.float32)[[0, 1, 1, 0]]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(5):
            print(sess.run([train, loss], feed_dict={X: bx, Y: by})[1])
""")


# the initial state on a line of its own, the name bound again by the RNN
ZERO_STATE = LSTM.replace(
    "outputs, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)\n",
    "state = cell.zero_state(4, tf.float32)\n"
    "outputs, state = tf.nn.dynamic_rnn(cell, x, initial_state=state)\n")
assert ZERO_STATE != LSTM


def test_a_module_level_lstm_reaches_tape_form():
    r = migrated(LSTM)
    assert r.mode == "tape", findings(r)
    out = r.output
    assert f"import {TF_KERAS_LEGACY_RNN_CELL} as tf_rnn_cell\n" in out
    assert "cell = tf_rnn_cell.BasicLSTMCell(8)\n" in out  # made once, where TF1 made it
    step = out.split("def run_train_loss(", 1)[1]
    assert "        outputs, state = tf.compat.v1.nn.dynamic_rnn(cell, x, dtype=tf.float32)\n" \
        in step
    # TF1's var_list: the cell's variables (made at the RNN), then the dense layer's
    assert "tape.gradient(loss, [*cell.trainable_variables, *pred_layer.trainable_variables])" \
        in step
    for gone in ("tf.contrib", "tf.nn.rnn_cell", "tf.Session", "placeholder"):
        assert gone not in out, gone
    ts126 = [f for f in r.findings if f.code == "TS126"]
    assert len(ts126) == 1 and "RNN cells -> tf-keras' legacy cells, 1 made once" in \
        ts126[0].message and "tf.layers -> 1 tf-keras layer object" in ts126[0].message
    changes = [c.description for c in r.changes if c.rule == "model-code"]
    assert "tf.nn.dynamic_rnn: `cell` makes its variables here (rnn/basic_lstm_cell/...), at " \
        "its first call" in changes
    assert not migrate_source(out, "f.py").changed  # idempotent
    compile(out, "f.py", "exec")


def test_a_dissolved_scope_is_given_to_the_rnn_and_nested_cells_are_converted():
    r = migrated(SCOPED)
    assert r.mode == "tape", findings(r)
    out = r.output
    assert "stack = tf_rnn_cell.MultiRNNCell([tf_rnn_cell.GRUCell(5),\n" \
           "                                     tf_rnn_cell.GRUCell(3)])\n" in out
    # the names TF1 gave: enc/rnn/multi_rnn_cell/cell_0/gru_cell/...
    assert "steps, last = tf.compat.v1.nn.static_rnn(stack, tf.unstack(x, axis=1), " \
           'dtype=tf.float32, scope="enc/rnn")' in out
    assert "tape.gradient(loss, [*stack.trainable_variables])" in out
    assert "variable_scope" not in out


def test_a_model_function_s_cell_is_made_once_before_its_first_call():
    r = migrated(FUNCTION)
    assert r.mode == "tape", findings(r)
    out = r.output
    # the function reads the cell, made (with its comment) where the function first ran
    assert "def RNN(x, weights):\n    x = tf.unstack(x, 4, 1)\n    outputs, states = " \
        "tf.compat.v1.nn.static_rnn(lstm_cell, x, dtype=tf.float32)\n" in out
    assert "\n\n# Define a lstm cell with tensorflow\n" \
        "lstm_cell = tf_rnn_cell.BasicLSTMCell(8, forget_bias=1.0)  # 8 units\n" in out
    assert out.index("lstm_cell = tf_rnn_cell") > out.index("def RNN(")
    assert "[*weights.values(), *lstm_cell.trainable_variables]" in out
    assert "contrib" not in out and "placeholder" not in out
    assert not migrate_source(out, "f.py").changed  # idempotent


def test_a_step_called_once_at_module_level_is_left_by_a_second_run():
    # the second run reads the step function where it is called (a model function to
    # it): its RNN over tf-keras' cell is tape form already
    once = LSTM.replace("    for step in range(6):\n        _, l = sess.run(",
                        "    _, l = sess.run(")
    once = once.replace("        print(step, l)\n", "    print(l)\n")
    assert once != LSTM
    first = migrated(once)
    assert first.mode == "tape", findings(first)
    assert "\n_, l = run_train_loss(x=X, y=Y)\n" in first.output
    again = migrate_source(first.output, "f.py")
    assert not again.changed and again.mode != "compat", findings(again)


def test_a_cell_s_zero_state_may_be_read_on_a_line_of_its_own():
    r = migrated(ZERO_STATE)
    assert r.mode == "tape", findings(r)
    step = r.output.split("def run_train_loss(", 1)[1]
    assert "        state = cell.zero_state(4, tf.float32)\n" \
        "        outputs, state = tf.compat.v1.nn.dynamic_rnn(cell, x, initial_state=state)\n" \
        in step


@pytest.mark.parametrize("source, expected", [
    # a module-level cell run in a model function: its variables are made there
    ("cell = tf.nn.rnn_cell.GRUCell(4)\n"
     "def model(x):\n    return tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)[0]\n",
     "def model(x):\n    return tf.compat.v1.nn.dynamic_rnn(cell, x, dtype=tf.float32)[0]\n"),
    # a function's cell whose name the module binds too gets a name of its own
    ("cell = 3\n"
     "def model(x):\n    cell = tf.nn.rnn_cell.GRUCell(4)\n"
     "    return tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)[0]\n",
     "cell = 3\ndef model(x):\n    return tf.compat.v1.nn.dynamic_rnn(cell_1, x, "
     "dtype=tf.float32)[0]\ncell_1 = tf_rnn_cell.GRUCell(4)\n"),
], ids=["module-cell", "name-taken"])
def test_model_functions_and_module_cells_mix(source, expected):
    program = ("import tensorflow as tf\nx = tf.placeholder(tf.float32, [None, 3, 2])\n"
               + source + "out = model(x)\nloss = tf.reduce_sum(out)\n"
               "train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)\n"
               "sess = tf.Session()\nsess.run(tf.global_variables_initializer())\n"
               "print(sess.run([train, loss], {x: [[[1., 2.]] * 3]}))\n")
    r = migrate_source(program, "f.py")
    assert r.mode == "tape", findings(r)
    assert expected in r.output


@pytest.mark.parametrize("source, message", [
    ("class M:\n"
     "    def __init__(self, x):\n"
     "        self.cell = tf.nn.rnn_cell.GRUCell(4)\n"
     "        self.out, _ = tf.nn.dynamic_rnn(self.cell, x, dtype=tf.float32)\n"
     "m = M(x)\n",
     "RNN code in a class is not converted yet"),
    ("def model(x, n):\n"
     "    cell = tf.nn.rnn_cell.GRUCell(n)\n"
     "    return tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)[0]\n"
     "out = model(x, 4)\n",
     "model function `model` makes a variable or layer from `n`, a value of the call"),
    ("def model(x):\n"
     "    cell = tf.nn.rnn_cell.GRUCell(4)\n"
     "    return tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)[0]\n"
     "out = model(x)\nagain = model(2 * x)\n",
     "`model` is called again: TF1 makes new variables at each call"),
    ("def model(x):\n"
     "    cell = tf.nn.rnn_cell.GRUCell(4)\n"
     "    return cell(x[:, 0], cell.zero_state(2, tf.float32))[0]\n"
     "out = model(x)\n",
     "the cell `cell` used other than as the cell of dynamic_rnn/static_rnn"),
    ("def model(x):\n"
     "    cell = tf.nn.rnn_cell.GRUCell(4)\n"
     "    cell = tf.nn.rnn_cell.MultiRNNCell([cell])\n"
     "    return tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)[0]\n"
     "out = model(x)\n",
     "`cell` is bound more than once"),
    ("out, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.GRUCell(4), x, dtype=tf.float32)\n",
     "a cell not bound to a name of its own is not converted"),
    ("fw = tf.nn.rnn_cell.GRUCell(4)\nbw = tf.nn.rnn_cell.GRUCell(4)\n"
     "out, _ = tf.nn.bidirectional_dynamic_rnn(fw, bw, x, dtype=tf.float32)\n",
     "is not converted (only dynamic_rnn and static_rnn over a cell made at module level are)"),
    ("rnn = tf.nn.rnn_cell\ncell = rnn.GRUCell(4)\n",
     "`tf.nn.rnn_cell` used other than called is not converted"),
    ("cell = tf.nn.rnn_cell.GRUCell(4)\nout, state = cell(x[:, 0], cell.zero_state(2, tf.float32))\n",
     "the cell `cell` used other than as the cell of dynamic_rnn/static_rnn"),
    ("cell = tf.nn.rnn_cell.GRUCell(4)\n"
     "run = lambda inp: tf.nn.dynamic_rnn(cell, inp, dtype=tf.float32)\nout, _ = run(x)\n",
     "the cell `cell` used other than as the cell of dynamic_rnn/static_rnn"),
    ("cell = tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.GRUCell(4), output_keep_prob=0.5)\n"
     "out, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)\n",
     "DropoutWrapper: tf-keras' wrapper cells list none of the variables of the cell they wrap"),
    ("first = tf.nn.rnn_cell.GRUCell(4)\nout, _ = tf.nn.dynamic_rnn(first, x, dtype=tf.float32)\n"
     "second = tf.nn.rnn_cell.GRUCell(4, reuse=True)\n"
     "again, _ = tf.nn.dynamic_rnn(second, x, dtype=tf.float32)\n",
     "a cell that shares another's variables is not converted"),
    ("with tf.variable_scope('a', initializer=tf.constant_initializer(0.05)):\n"
     "    cell = tf.nn.rnn_cell.GRUCell(4)\n"
     "    out, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)\n",
     "in a variable scope with initializer= or dtype="),
    ("cell = tf.nn.rnn_cell.GRUCell(4)\ncell = tf.nn.rnn_cell.MultiRNNCell([cell])\n"
     "out, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)\n",
     "`cell` is bound more than once"),
    ("cell = tf.nn.rnn_cell.GRUCell(4)\n"
     "out, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32, scope=name)\n",
     "a scope that is not a string is not converted"),
    ("first = tf.nn.rnn_cell.GRUCell(4)\nout, _ = tf.nn.dynamic_rnn(first, x, dtype=tf.float32)\n"
     "second = tf.nn.rnn_cell.GRUCell(4)\n"
     "again, _ = tf.nn.dynamic_rnn(second, x, dtype=tf.float32)\n",
     "Layer rnn/gru_cell already exists"),  # TF1's famous error: both cells are gru_cell
], ids=["in-a-class", "function-parameter", "function-called-twice", "function-cell-called",
        "function-cell-bound-twice", "unbound-cell", "bidirectional", "module-reference", "called-itself",
        "in-a-lambda", "wrapper", "reuse", "scope-initializer", "bound-twice", "computed-scope",
        "two-cells-one-scope"])
def test_what_is_not_read_keeps_compat_form_and_says_why(source, message):
    program = ("import tensorflow as tf\nx = tf.placeholder(tf.float32, [None, 3, 2])\n"
               + source)
    r = migrate_source(program, "f.py")
    assert r.mode == "compat"
    ts125 = [f.message for f in r.findings if f.code == "TS125"]
    assert ts125 and message in ts125[0], findings(r)
    # compat form: the cells come from tf-keras there (the rnn-cells rule)
    assert "tf.nn.rnn_cell" not in r.output and "tf_rnn_cell" in r.output


def test_an_imported_contrib_rnn_reaches_tape_form_too():
    source = SCOPED.replace("import tensorflow as tf\n",
                            "import tensorflow as tf\nfrom tensorflow.contrib import rnn\n")
    source = source.replace("tf.contrib.rnn.static_rnn", "rnn.static_rnn")
    r = migrate_source(source, "f.py")
    assert r.mode == "tape", findings(r)
    assert "contrib" not in r.output
    assert 'tf.compat.v1.nn.static_rnn(stack, tf.unstack(x, axis=1), dtype=tf.float32, ' \
           'scope="enc/rnn")' in r.output


def test_the_same_cell_run_again_keeps_its_variables_in_any_scope():
    # TF1's cell keeps the scope of its first call, and so does tf-keras' (eagerly)
    source = _src("""
        import tensorflow as tf
        x = tf.ones([2, 3, 2])
        cell = tf.nn.rnn_cell.GRUCell(4)
        out, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        again, _ = tf.nn.dynamic_rnn(cell, 2 * x, dtype=tf.float32)
        with tf.variable_scope("eval"):
            third, _ = tf.nn.dynamic_rnn(cell, 3 * x, initial_state=cell.zero_state(2, tf.float32))
        variables = tf.trainable_variables()
    """)
    r = migrate_source(source, "f.py")
    assert r.mode == "tape", findings(r)
    assert "variables = [*cell.trainable_variables]" in r.output
    assert 'tf.compat.v1.nn.dynamic_rnn(cell, 3 * x, ' \
           'initial_state=cell.zero_state(2, tf.float32), scope="eval/rnn")' in r.output


def test_a_named_cell_opens_its_name_s_scope():
    source = _src("""
        import tensorflow as tf
        x = tf.ones([2, 3, 2])
        first = tf.nn.rnn_cell.GRUCell(4, name="first")
        second = tf.nn.rnn_cell.GRUCell(4, name="second")
        a, _ = tf.nn.dynamic_rnn(first, x, dtype=tf.float32)
        b, _ = tf.nn.dynamic_rnn(second, x, dtype=tf.float32)
        second_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="rnn/second")
    """)
    r = migrate_source(source, "f.py")
    assert r.mode == "tape", findings(r)
    assert "second_vars = [*second.trainable_variables]" in r.output


@pytest.mark.tf
@pytest.mark.slow
@pytest.mark.parametrize("source, prints", [(LSTM, 6), (SCOPED, 4), (FUNCTION, 5),
                                            (ZERO_STATE, 6)],
                         ids=["lstm", "scoped", "function", "zero-state"])
def test_the_migrated_rnns_compute_the_legacy_numbers(tmp_path, source, prints):
    from tapeshift.migrate.legacy.verify import verify_sources

    report = verify_sources(source, migrated(source).output, tmp_path / "f.py",
                            timeout=TIMEOUT, seed=0, align_random=True)
    assert report.status == "ok", report.to_text()
    printed = [row for row in report.rows if row.name.startswith("stdout:") and row.compared]
    assert len(printed) >= prints, report.to_text()
