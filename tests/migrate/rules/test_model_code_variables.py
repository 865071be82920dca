"""Model functions that make plain tf.Variables, called by graph code.

Public TF1 scripts often build a network in a function of the placeholder
(``y_pred = build_DQN(x)``) whose weights are ``W1 = tf.Variable(...)``. The
feeds rule runs that call at each step; the variables must be made once, where
TF1 made them: before the call, at module level, the function computing with them.
"""
from textwrap import dedent

import pytest

from tapeshift.migrate.engine.pipeline import migrate_source

DQN = dedent('''\
    import numpy as np
    import tensorflow as tf

    state_size = 4
    hidden_size = 8


    def build_net(x):
        # the network: two layers
        W1 = tf.Variable(tf.truncated_normal(shape=[state_size, hidden_size], stddev=0.5))
        b1 = tf.Variable(tf.zeros([hidden_size]), name="b1")
        h = tf.nn.relu(tf.matmul(x, W1) + b1)
        W2 = tf.Variable(tf.truncated_normal([hidden_size, 1], stddev=0.5))
        return tf.matmul(h, W2)


    x = tf.placeholder(tf.float32, [None, state_size])
    y = tf.placeholder(tf.float32, [None, 1])
    y_pred = build_net(x)
    loss = tf.reduce_mean(tf.square(y - y_pred))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

    rng = np.random.RandomState(0)
    xs = rng.randn(16, state_size).astype(np.float32)
    ys = xs.sum(axis=1, keepdims=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(50):
            _, l = sess.run([train, loss], feed_dict={x: xs, y: ys})
            if step % 10 == 0:
                print(step, l)
''')


def codes(r):
    return [(f.code, f.message) for f in r.findings if f.code not in ("TS116",)]


def test_the_variables_of_a_function_graph_code_calls_are_made_once_before_the_call():
    r = migrate_source(DQN, "dqn.py")
    assert r.mode == "tape", codes(r)
    out = r.output
    # the function computes with module names; its heading comment stays
    assert dedent('''\
        def build_net(x):
            # the network: two layers
            h = tf.nn.relu(tf.matmul(x, W1) + b1)
            return tf.matmul(h, W2)


        W1 = tf.Variable(tf.random.truncated_normal(shape=[state_size, hidden_size], stddev=0.5))
        b1 = tf.Variable(tf.zeros([hidden_size]), name="b1")
        W2 = tf.Variable(tf.random.truncated_normal([hidden_size, 1], stddev=0.5))
    ''') in out
    assert "y_pred = build_net(x)\n" in out  # (in the step function)
    assert "zip(tape.gradient(loss, [W1, b1, W2]), [W1, b1, W2])" in out
    assert not migrate_source(out, "dqn.py").changed


def test_a_local_named_like_a_module_name_gets_a_fresh_one():
    source = DQN.replace("hidden_size = 8\n", "hidden_size = 8\nW2 = None\n")
    r = migrate_source(source, "dqn.py")
    assert r.mode == "tape", codes(r)
    assert "W2_1 = tf.Variable(" in r.output and "return tf.matmul(h, W2_1)" in r.output


def test_a_second_call_makes_a_second_set():
    source = DQN.replace("y_pred = build_net(x)\n", "y_pred = build_net(x)\ny_other = build_net(x)\n") \
        .replace("tf.square(y - y_pred)", "tf.square(y - y_pred - y_other)")
    r = migrate_source(source, "dqn.py")
    assert r.mode == "tape", codes(r)
    assert "def build_net(x, W1, b1, W2):\n" in r.output
    for made in ("y_pred_W1", "y_pred_b1", "y_pred_W2", "y_other_W1", "y_other_b1", "y_other_W2"):
        assert f"\n{made} = tf.Variable(" in r.output, made
    assert "y_other = build_net(x, y_other_W1, y_other_b1, y_other_W2)\n" in r.output
    assert not migrate_source(r.output, "dqn.py").changed


def test_an_initial_value_read_off_a_fed_value_keeps_compat_form():
    r = migrate_source(DQN.replace("[hidden_size, 1]", "[hidden_size, x.shape[0]]"), "dqn.py")
    assert r.mode == "compat"
    assert any("`build_net` makes its variables from `x`, which the codemod cannot evaluate "
               "again before the call" in m for _, m in codes(r)), codes(r)


def test_a_variable_factory_and_a_function_called_on_values_stay_as_written():
    # `return tf.Variable(...)` makes one where each call is; a function called on
    # NumPy values runs once, eagerly, where it is called
    source = dedent('''\
        import numpy as np
        import tensorflow as tf


        def weight(shape):
            return tf.Variable(tf.ones(shape))


        def grads(value):
            w = tf.Variable(2.0)
            v = tf.constant(value)
            return tf.gradients(w * v, [w])


        x = tf.placeholder(tf.float32, [None, 2])
        w = weight([2, 1])
        y = tf.matmul(x, w)
        g = grads(np.float32(3.0))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            print(sess.run(y, feed_dict={x: np.ones((1, 2))}), sess.run(g))
    ''')
    r = migrate_source(source, "factory.py")
    assert r.mode == "tape", codes(r)
    assert "def weight(shape):\n    return tf.Variable(tf.ones(shape))\n" in r.output
    assert "    w = tf.Variable(2.0)\n" in r.output


def test_a_removed_placeholder_after_a_def_leaves_its_two_blank_lines():
    source = dedent('''\
        import numpy as np
        import tensorflow as tf


        def helper(v):
            return v * 2.0


        x = tf.placeholder(tf.float32, [None, 2])
        w = tf.Variable(tf.ones([2, 1]))
        y = helper(tf.matmul(x, w))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            print(sess.run(y, feed_dict={x: np.ones((1, 2))}))
    ''')
    r = migrate_source(source, "blank.py")
    assert r.mode == "tape", codes(r)
    assert "    return v * 2.0\n\n\nw = tf.Variable(tf.ones([2, 1]))\n" in r.output


@pytest.mark.tf
@pytest.mark.slow
def test_the_migrated_network_computes_the_legacy_numbers(tmp_path):
    from tapeshift.migrate.legacy.verify import verify_sources

    r = migrate_source(DQN, "dqn.py")
    assert r.mode == "tape", codes(r)
    report = verify_sources(DQN, r.output, tmp_path / "dqn.py", timeout=300, seed=0, align_random=True)
    assert report.status == "ok", report.to_text()
    printed = [row for row in report.rows if row.name.startswith("stdout:") and row.compared]
    assert len(printed) == 5, report.to_text()


def test_layers_called_through_an_alias_keep_compat_form():
    # the layer's variables would be missed by the collection after it (it listed none)
    source = dedent('''\
        import tensorflow as tf

        dense = tf.layers.dense


        class Policy:
            def __init__(self):
                self.state = tf.placeholder(tf.float32, [None, 4])
                self.head = dense(self.state, 2)
                variables = tf.trainable_variables()
                self.grads = tf.gradients(tf.reduce_sum(self.head), variables)
    ''')
    r = migrate_source(source, "alias.py")
    assert r.mode == "compat"
    assert any(c == "TS125" and "`dense = tf.layers.dense`: model code called through `dense`"
               in m for c, m in codes(r)), codes(r)


# -- a function making new variables at each call (model_code_per_call.py) --------

ADD_LAYER = dedent('''\
    import numpy as np
    import tensorflow as tf


    def add_layer(inputs, in_size, out_size, activation_function=None):
        # add one more layer
        Weights = tf.Variable(tf.random_normal([in_size, out_size]))
        biases = tf.Variable(tf.zeros([1, out_size]) + 0.1)
        Wx_plus_b = tf.matmul(inputs, Weights) + biases
        if activation_function is None:
            return Wx_plus_b
        return activation_function(Wx_plus_b)


    hidden = 10
    xs = tf.placeholder(tf.float32, [None, 1])
    ys = tf.placeholder(tf.float32, [None, 1])
    # the hidden layer
    l1 = add_layer(xs, 1, hidden, activation_function=tf.nn.relu)
    prediction = add_layer(l1, hidden, 1, activation_function=None)
    loss = tf.reduce_mean(tf.square(ys - prediction))
    train_step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(3):
            sess.run(train_step, feed_dict={xs: np.ones((4, 1)), ys: np.ones((4, 1))})
''')


def test_a_function_making_variables_at_each_call_is_passed_each_calls_set():
    r = migrate_source(ADD_LAYER, "layers.py")
    assert r.mode == "tape", codes(r)
    out = r.output
    # the sizes only the variables read go; the variables take their place
    assert dedent('''\
        def add_layer(inputs, Weights, biases, activation_function=None):
            # add one more layer
            Wx_plus_b = tf.matmul(inputs, Weights) + biases
    ''') in out
    # made before each call, once, after the call's target, from its arguments
    assert dedent('''\
        hidden = 10
        # the hidden layer
        l1_Weights = tf.Variable(tf.random.normal([1, hidden]))
        l1_biases = tf.Variable(tf.zeros([1, hidden]) + 0.1)
        prediction_Weights = tf.Variable(tf.random.normal([hidden, 1]))
        prediction_biases = tf.Variable(tf.zeros([1, 1]) + 0.1)
    ''') in out
    assert "        l1 = add_layer(xs, l1_Weights, l1_biases, activation_function=tf.nn.relu)\n" in out
    assert "        prediction = add_layer(l1, prediction_Weights, prediction_biases, " \
        "activation_function=None)\n" in out
    assert "[l1_Weights, l1_biases, prediction_Weights, prediction_biases]" in out
    assert not migrate_source(out, "layers.py").changed


@pytest.mark.parametrize("call, expected", [
    # all by position: the variables by position
    ("add_layer(l1, hidden, 1, None)", "add_layer(l1, prediction_Weights, prediction_biases, None)"),
    # sizes by keyword: the variables by keyword
    ("add_layer(l1, in_size=hidden, out_size=1)",
     "add_layer(l1, Weights=prediction_Weights, biases=prediction_biases)"),
    # an expression: in parentheses where it is read
    ("add_layer(l1, hidden, 2 + 1)", "add_layer(l1, prediction_Weights, prediction_biases)"),
])
def test_each_call_passes_the_variables_as_it_passed_the_sizes(call, expected):
    source = ADD_LAYER.replace("add_layer(l1, hidden, 1, activation_function=None)", call)
    r = migrate_source(source, "layers.py")
    assert r.mode == "tape", codes(r)
    assert f"prediction = {expected}\n" in r.output
    if "2 + 1" in call:
        assert "prediction_biases = tf.Variable(tf.zeros([1, (2 + 1)]) + 0.1)\n" in r.output


def test_a_keyword_named_like_a_parameter_is_not_substituted():
    # `stddev=stddev`: the value is the call's, the keyword stays (it was a SyntaxError, TS114)
    source = ADD_LAYER.replace("def add_layer(inputs, in_size, out_size, activation_function=None):",
                               "def add_layer(inputs, in_size, out_size, activation_function=None, "
                               "stddev=0.3):").replace(
        "tf.random_normal([in_size, out_size])", "tf.random_normal([in_size, out_size], stddev=stddev)")
    r = migrate_source(source, "layers.py")
    assert r.mode == "tape", codes(r)
    assert "l1_Weights = tf.Variable(tf.random.normal([1, hidden], stddev=0.3))\n" in r.output


def test_a_default_of_a_module_name_bound_again_keeps_compat_form():
    # the default is the value of when the def ran (10); before the call it is 20
    source = ADD_LAYER.replace("def add_layer(inputs, in_size, out_size, activation_function=None):",
                               "width = 10\n\n\ndef add_layer(inputs, in_size, out_size=width, "
                               "activation_function=None):").replace(
        "hidden = 10\n", "hidden = 10\nwidth = 20\n").replace(
        "add_layer(xs, 1, hidden, activation_function=tf.nn.relu)", "add_layer(xs, 1)").replace(
        "add_layer(l1, hidden, 1, activation_function=None)", "add_layer(l1, width, 1)")
    r = migrate_source(source, "layers.py")
    assert r.mode == "compat"
    assert any("`add_layer` makes its variables from `width`" in m for _, m in codes(r)), codes(r)


def test_nested_calls_make_their_variables_inner_call_first():
    source = ADD_LAYER.replace(
        "l1 = add_layer(xs, 1, hidden, activation_function=tf.nn.relu)\n"
        "prediction = add_layer(l1, hidden, 1, activation_function=None)\n",
        "prediction = add_layer(add_layer(xs, 1, hidden, tf.nn.relu), hidden, 1)\n")
    r = migrate_source(source, "nested.py")
    assert r.mode == "tape", codes(r)
    assert dedent('''\
        add_layer_Weights = tf.Variable(tf.random.normal([1, hidden]))
        add_layer_biases = tf.Variable(tf.zeros([1, hidden]) + 0.1)
        prediction_Weights = tf.Variable(tf.random.normal([hidden, 1]))
        prediction_biases = tf.Variable(tf.zeros([1, 1]) + 0.1)
    ''') in r.output
    assert "prediction = add_layer(add_layer(xs, add_layer_Weights, add_layer_biases, tf.nn.relu), " \
        "prediction_Weights, prediction_biases)\n" in r.output


def test_variables_in_name_scopes_of_the_function():
    """MorvanZhou's TensorBoard version: each variable in a name scope of its own,
    the placeholders in one at module level."""
    source = ADD_LAYER.replace(
        """        Weights = tf.Variable(tf.random_normal([in_size, out_size]))
        biases = tf.Variable(tf.zeros([1, out_size]) + 0.1)
        Wx_plus_b = tf.matmul(inputs, Weights) + biases
""".replace("        ", "    "),
        """    with tf.name_scope('layer'):
        with tf.name_scope('weights'):
            Weights = tf.Variable(tf.random_normal([in_size, out_size]), name='W')
        with tf.name_scope('biases'):
            biases = tf.Variable(tf.zeros([1, out_size]) + 0.1, name='b')
        Wx_plus_b = tf.matmul(inputs, Weights) + biases
""").replace("xs = tf.placeholder(tf.float32, [None, 1])\nys = tf.placeholder(tf.float32, [None, 1])\n",
             "with tf.name_scope('inputs'):\n    xs = tf.placeholder(tf.float32, [None, 1])\n"
             "    ys = tf.placeholder(tf.float32, [None, 1])\n")
    assert "with tf.name_scope('weights')" in source and "with tf.name_scope('inputs')" in source
    r = migrate_source(source, "scopes.py")
    assert r.mode == "tape", codes(r)
    assert dedent('''\
        def add_layer(inputs, Weights, biases, activation_function=None):
            # add one more layer
            with tf.name_scope('layer'):
                Wx_plus_b = tf.matmul(inputs, Weights) + biases
    ''') in r.output
    assert "l1_Weights = tf.Variable(tf.random.normal([1, hidden]), name='W')\n" in r.output
    # (with a Saver, their TF1 names carry the scopes: not read so)
    r = migrate_source(source + "saver = tf.train.Saver()\n", "scopes.py")
    assert "def add_layer(inputs, Weights, biases" not in r.output


def test_a_parameter_the_computation_reads_too_is_kept():
    source = ADD_LAYER.replace("Wx_plus_b = tf.matmul(inputs, Weights) + biases",
                               "Wx_plus_b = tf.matmul(inputs, Weights) + biases * out_size")
    r = migrate_source(source, "layers.py")
    assert r.mode == "tape", codes(r)
    # the variables where the size that goes was
    assert "def add_layer(inputs, Weights, biases, out_size, activation_function=None):\n" \
        in r.output
    assert "l1 = add_layer(xs, l1_Weights, l1_biases, hidden, activation_function=tf.nn.relu)\n" \
        in r.output
    assert not migrate_source(r.output, "layers.py").changed


@pytest.mark.parametrize("change, why", [
    # a size read off a fed value: not known before the call
    (("[in_size, out_size]", "[inputs.shape[1], out_size]"),
     "`add_layer` makes its variables from `xs`, which the codemod cannot evaluate again"),
    # an argument computed by a call: evaluated twice it might differ
    (("add_layer(xs, 1, hidden,", "add_layer(xs, int(np.sqrt(1)), hidden,"),
     "which the codemod cannot evaluate again before the call"),
    # called in a loop: how many sets TF1 made is known only when it runs
    (("prediction = add_layer(l1, hidden, 1, activation_function=None)\n",
      "for _ in range(2):\n    l1 = add_layer(l1, hidden, hidden)\n"
      "prediction = add_layer(l1, hidden, 1, activation_function=None)\n"), "a value of the call"),
])
def test_a_set_per_call_the_codemod_cannot_make_keeps_compat_form(change, why):
    r = migrate_source(ADD_LAYER.replace(*change), "layers.py")
    assert r.mode == "compat"
    assert any(why in m for _, m in codes(r)), codes(r)


# -- variable factories (the TensorFlow MNIST tutorials' weight_variable) -------------

DEEPNN = dedent('''\
    import numpy as np
    import tensorflow as tf


    def weight_variable(shape):
        initial = tf.truncated_normal(shape, stddev=0.1)
        return tf.Variable(initial)


    def bias_variable(shape):
        initial = tf.constant(0.1, shape=shape)
        return tf.Variable(initial)


    def deepnn(x):
        W1 = weight_variable([4, 8])
        b1 = bias_variable([8])
        h = tf.nn.relu(tf.matmul(x, W1) + b1)
        W2 = weight_variable([8, 2])
        b2 = bias_variable([2])
        return tf.matmul(h, W2) + b2


    x = tf.placeholder(tf.float32, [None, 4])
    y_ = tf.placeholder(tf.float32, [None, 2])
    y = deepnn(x)
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y_, logits=y))
    train_step = tf.train.AdamOptimizer(1e-2).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(3):
            print(sess.run([train_step, loss], feed_dict={x: np.ones((2, 4)), y_: np.eye(2)})[1])
''')


def test_a_model_function_making_its_variables_with_a_factory():
    """mnist_deep.py's shape: deepnn(x) calls weight_variable(shape), which returns a
    new tf.Variable of an initial value it computes first."""
    r = migrate_source(DEEPNN, "deep.py")
    assert r.mode == "tape", codes(r)
    assert dedent('''\
        def deepnn(x):
            h = tf.nn.relu(tf.matmul(x, W1) + b1)
            return tf.matmul(h, W2) + b2


        W1 = weight_variable([4, 8])
        b1 = bias_variable([8])
        W2 = weight_variable([8, 2])
        b2 = bias_variable([2])
    ''') in r.output
    assert "zip(tape.gradient(loss, [W1, b1, W2, b2]), [W1, b1, W2, b2])" in r.output
    assert not migrate_source(r.output, "deep.py").changed


def test_module_code_making_variables_with_a_factory_of_two_statements():
    source = DEEPNN.replace("y = deepnn(x)\n", "W = weight_variable([4, 2])\ny = tf.matmul(x, W)\n")
    r = migrate_source(source, "deep.py")
    assert r.mode == "tape", codes(r)
    assert "\nW = weight_variable([4, 2])\n" in r.output
    assert "zip(tape.gradient(loss, [W]), [W])" in r.output


def test_a_factory_method_drawing_its_initial_value_first():
    # the draw is the variable's initial value: not a random op run at each step
    source = dedent('''\
        import numpy as np
        import tensorflow as tf


        class Net:
            def __init__(self):
                self.x = tf.placeholder(tf.float32, [None, 4])
                self.W = self.init_weights((4, 2))
                self.loss = tf.reduce_sum(tf.matmul(self.x, self.W))
                self.train = tf.train.GradientDescentOptimizer(0.1).minimize(self.loss)

            def init_weights(self, shape):
                weights = tf.random_normal(shape, stddev=0.1)
                return tf.Variable(weights)


        net = Net()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            print(sess.run([net.train, net.loss], feed_dict={net.x: np.ones((2, 4))})[1])
    ''')
    r = migrate_source(source, "net.py")
    assert r.mode == "tape", codes(r)
    assert "        self.W = self.init_weights((4, 2))\n" in r.output
    assert "zip(tape.gradient(loss, [self.W]), [self.W])" in r.output


def test_a_model_function_called_by_main():
    """mnist_deep.py's main(): the graph, the session and deepnn(x) in a function run
    once; deepnn's variables are made before main's call."""
    head, tail = DEEPNN.split("x = tf.placeholder")
    body = "\n".join("    " + line if line.strip() else line
                     for line in ("x = tf.placeholder" + tail).rstrip("\n").splitlines())
    source = head + "def main():\n" + body + "\n\n\nif __name__ == '__main__':\n    main()\n"
    r = migrate_source(source, "deep_main.py")
    assert r.mode == "tape", codes(r)
    assert r.output.endswith(dedent('''\
        if __name__ == '__main__':
            W1 = weight_variable([4, 8])
            b1 = bias_variable([8])
            W2 = weight_variable([8, 2])
            b2 = bias_variable([2])
            main()
    '''))
    assert "            y = deepnn(x)\n" in r.output
    assert not migrate_source(r.output, "deep_main.py").changed
