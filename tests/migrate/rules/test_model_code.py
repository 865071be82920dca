"""ModelCode: variable scopes, get_variable and tf.layers -> TF2 variables and layers made once."""

from textwrap import dedent

import pytest
from libcst.codemod import CodemodTest

from tapeshift.migrate.engine.pipeline import migrate_source
from tapeshift.migrate.rules.model_code import ModelCode
from tapeshift.migrate.rules.model_code_layers import LAYERS


class TestModelCode(CodemodTest):
    TRANSFORM = ModelCode

    def test_noop_without_model_code(self) -> None:
        code = "import tensorflow as tf\nW = tf.Variable([1.0])\ny = tf.nn.relu(W)\n"
        self.assertCodemod(code, code)

    def test_a_local_tf_is_not_tensorflow(self) -> None:
        code = dedent("""\
            class tf:
                def variable_scope(name): ...
            with tf.variable_scope("net"):
                w = tf.get_variable("w", [2])
        """)
        self.assertCodemod(code, code)

    def test_scope_dissolves_and_get_variable_keeps_its_tf1_name(self) -> None:
        before = """\
            import tensorflow as tf

            # the network
            with tf.variable_scope("net"):  # one layer
                W = tf.get_variable("W", [4, 2], initializer=tf.random_normal_initializer(0., 0.3))
                b = tf.get_variable("b", [2], initializer=tf.constant_initializer(0.1))
                h = tf.matmul(x, W) + b
        """
        after = """\
            import tensorflow as tf

            # the network
            # one layer
            W = tf.Variable(tf.random_normal_initializer(0., 0.3)([4, 2]), name="net/W")
            b = tf.Variable(tf.constant_initializer(0.1)([2]), name="net/b")
            h = tf.matmul(x, W) + b
        """
        self.assertCodemod(dedent(before), dedent(after))

    def test_default_initializers_are_tf1s(self) -> None:
        before = """\
            import tensorflow as tf
            w = tf.get_variable("w", [3, 2])
            steps = tf.get_variable("steps", [], dtype=tf.int32, trainable=False)
            c = tf.get_variable("c", initializer=tf.constant([1.0, 2.0]))
            d = tf.get_variable("d", [2], tf.float64)
        """
        after = """\
            import tensorflow as tf
            w = tf.Variable(tf.compat.v1.glorot_uniform_initializer()([3, 2]), name="w")
            steps = tf.Variable(tf.zeros([], tf.int32), name="steps", trainable=False)
            c = tf.Variable(tf.constant([1.0, 2.0]), name="c")
            d = tf.Variable(tf.compat.v1.glorot_uniform_initializer()([2], tf.float64), name="d")
        """
        self.assertCodemod(dedent(before), dedent(after))

    def test_scope_initializer_is_the_default(self) -> None:
        before = """\
            import tensorflow as tf
            with tf.variable_scope("s", initializer=tf.zeros_initializer()):
                w = tf.get_variable("w", [2])
        """
        after = """\
            import tensorflow as tf
            w = tf.Variable(tf.zeros_initializer()([2]), name="s/w")
        """
        self.assertCodemod(dedent(before), dedent(after))

    def test_reuse_forms_hand_back_the_variable_made_first(self) -> None:
        before = """\
            import tensorflow as tf
            with tf.variable_scope("a") as scope:
                w = tf.get_variable("w", [2])
                scope.reuse_variables()
                w2 = tf.get_variable("w")
            with tf.variable_scope("a", reuse=True):
                w3 = tf.get_variable("w", [2])
            with tf.variable_scope("a", reuse=tf.AUTO_REUSE):
                w4 = tf.get_variable("w", [2])
                v = tf.get_variable("v", [2])
            with tf.variable_scope(scope, reuse=True):
                w5 = tf.get_variable("w")
        """
        after = """\
            import tensorflow as tf
            w = tf.Variable(tf.compat.v1.glorot_uniform_initializer()([2]), name="a/w")
            w2 = w
            w3 = w
            w4 = w
            v = tf.Variable(tf.compat.v1.glorot_uniform_initializer()([2]), name="a/v")
            w5 = w
        """
        self.assertCodemod(dedent(before), dedent(after))

    def test_get_variable_inside_an_expression_is_made_before_the_statement(self) -> None:
        before = """\
            import tensorflow as tf
            with tf.variable_scope("fc"):
                y = tf.matmul(x, tf.get_variable("kernel", [3, 2])) + 1.0
        """
        after = """\
            import tensorflow as tf
            kernel = tf.Variable(tf.compat.v1.glorot_uniform_initializer()([3, 2]), name="fc/kernel")
            y = tf.matmul(x, kernel) + 1.0
        """
        self.assertCodemod(dedent(before), dedent(after))

    def test_variables_in_scopes_get_tf1_names(self) -> None:
        before = """\
            import tensorflow as tf
            with tf.name_scope("layer1"):
                W1 = tf.Variable(tf.zeros([2, 2]), name="weight1")
                b1 = tf.Variable(tf.zeros([2]))
            with tf.variable_scope("G"):
                v = tf.Variable(1.0, name="v")
            with tf.variable_scope("G"):
                v2 = tf.Variable(1.0, name="v")
            top = tf.Variable(2.0, name="top")
        """
        after = """\
            import tensorflow as tf
            W1 = tf.Variable(tf.zeros([2, 2]), name="layer1/weight1")
            b1 = tf.Variable(tf.zeros([2]), name="layer1/Variable")
            v = tf.Variable(1.0, name="G/v")
            v2 = tf.Variable(1.0, name="G_1/v")
            top = tf.Variable(2.0, name="top")
        """
        self.assertCodemod(dedent(before), dedent(after))

    def test_layers_become_objects_made_once_under_their_tf1_names(self) -> None:
        before = """\
            import tensorflow as tf
            with tf.variable_scope("Generator"):
                G_l1 = tf.layers.dense(G_in, 128, tf.nn.relu)
                G_out = tf.layers.dense(G_l1, 15)
            with tf.variable_scope("Discriminator"):
                D_l0 = tf.layers.dense(real_art, 128, tf.nn.relu, name="l")
                D_l1 = tf.layers.dense(G_out, 128, tf.nn.relu, name="l", reuse=True)
        """
        after = """\
            import tensorflow as tf
            import tf_keras

            G_l1_layer = tf_keras.layers.Dense(128, tf.nn.relu, name="Generator/dense")
            G_l1 = G_l1_layer(G_in)
            G_out_layer = tf_keras.layers.Dense(15, name="Generator/dense_1")
            G_out = G_out_layer(G_l1)
            Discriminator_l = tf_keras.layers.Dense(128, tf.nn.relu, name="Discriminator/l")
            D_l0 = Discriminator_l(real_art)
            D_l1 = Discriminator_l(G_out)
        """
        self.assertCodemod(dedent(before), dedent(after))

    def test_layer_arguments_go_where_the_class_takes_them(self) -> None:
        before = """\
            import tensorflow as tf
            c = tf.layers.conv2d(x, 8, 3, 1, "same", "channels_last", 1, tf.nn.relu)
            t = tf.layers.conv2d_transpose(c, 4, 3, 2, "same", "channels_last", None)
            h = tf.layers.batch_normalization(t, training=is_training, momentum=0.9)
            d = tf.layers.dropout(h, 0.5, training=is_training)
            f = tf.layers.flatten(d)
        """
        after = """\
            import tensorflow as tf
            import tf_keras

            c_layer = tf_keras.layers.Conv2D(8, 3, 1, "same", "channels_last", 1, activation=tf.nn.relu, name="conv2d")
            c = c_layer(x)
            t_layer = tf_keras.layers.Conv2DTranspose(4, 3, 2, "same", data_format="channels_last", activation=None, name="conv2d_transpose")
            t = t_layer(c)
            h_layer = tf_keras.layers.BatchNormalization(momentum=0.9, name="batch_normalization")
            h = h_layer(t, training=is_training)
            d_layer = tf_keras.layers.Dropout(0.5)
            d = d_layer(h, training=is_training)
            f_layer = tf_keras.layers.Flatten()
            f = f_layer(d)
        """
        self.assertCodemod(dedent(before), dedent(after))

    def test_collections_list_what_tf1_held_at_that_line(self) -> None:
        before = """\
            import tensorflow as tf
            with tf.variable_scope("D"):
                w = tf.get_variable("w", [2])
                n = tf.get_variable("n", [2], trainable=False)
                h = tf.layers.dense(x, 3)
            with tf.variable_scope("G"):
                g = tf.get_variable("g", [2])
            d_vars = tf.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES, scope="D")
            d_all = tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, "D")
            every = tf.trainable_variables()
            scoped = tf.global_variables(scope="G")
        """
        after = """\
            import tensorflow as tf
            import tf_keras

            w = tf.Variable(tf.compat.v1.glorot_uniform_initializer()([2]), name="D/w")
            n = tf.Variable(tf.compat.v1.glorot_uniform_initializer()([2]), name="D/n", trainable=False)
            h_layer = tf_keras.layers.Dense(3, name="D/dense")
            h = h_layer(x)
            g = tf.Variable(tf.compat.v1.glorot_uniform_initializer()([2]), name="G/g")
            d_vars = [w, *h_layer.trainable_variables]
            d_all = [w, n, *h_layer.variables]
            every = [w, *h_layer.trainable_variables, g]
            scoped = [g]
        """
        self.assertCodemod(dedent(before), dedent(after))

    def test_update_ops_guard_dissolves(self) -> None:
        before = """\
            import tensorflow as tf
            h = tf.layers.batch_normalization(x, training=True)
            loss = tf.reduce_mean(h)
            update_ops = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
            with tf.control_dependencies(update_ops):
                train_op = tf.train.AdamOptimizer(0.1).minimize(loss)
        """
        after = """\
            import tensorflow as tf
            import tf_keras

            h_layer = tf_keras.layers.BatchNormalization(name="batch_normalization")
            h = h_layer(x, training=True)
            loss = tf.reduce_mean(h)
            train_op = tf.train.AdamOptimizer(0.1).minimize(loss)
        """
        self.assertCodemod(dedent(before), dedent(after))

    def test_aliases(self) -> None:
        before = """\
            import tensorflow.compat.v1 as T
            from tensorflow.compat.v1 import layers
            with T.variable_scope("net"):
                w = T.get_variable("w", [2], initializer=T.ones_initializer())
                h = layers.dense(w, 2, name="fc")
        """
        after = """\
            import tensorflow.compat.v1 as T
            from tensorflow.compat.v1 import layers
            import tf_keras

            w = T.Variable(T.ones_initializer()([2]), name="net/w")
            fc = tf_keras.layers.Dense(2, name="net/fc")
            h = fc(w)
        """
        self.assertCodemod(dedent(before), dedent(after))

    def test_main_guard_is_read_like_module_level(self) -> None:
        before = """\
            import tensorflow as tf
            if __name__ == "__main__":
                with tf.variable_scope("m"):
                    w = tf.get_variable("w", [1], initializer=tf.zeros_initializer())
        """
        after = """\
            import tensorflow as tf
            if __name__ == "__main__":
                w = tf.Variable(tf.zeros_initializer()([1]), name="m/w")
        """
        self.assertCodemod(dedent(before), dedent(after))

    def test_class_build_methods_keep_their_variables_on_the_object(self) -> None:
        # an eval and a target network built by the same lines: one attribute per variable
        before = """\
            import tensorflow as tf

            class Agent:
                def __init__(self, n):
                    self.n = n
                    self._build_net()
                    t_params = tf.get_collection("target_params")
                    e_params = tf.get_collection("eval_params")
                    self.replace = [tf.assign(t, e) for t, e in zip(t_params, e_params)]

                def _build_net(self):
                    init = tf.constant_initializer(0.1)
                    c_names = ["eval_params", tf.GraphKeys.GLOBAL_VARIABLES]
                    with tf.variable_scope("eval_net"):
                        w = tf.get_variable("w", [self.n, 2], initializer=init, collections=c_names)
                        self.q = tf.matmul(self.s, w)
                    c_names = ["target_params", tf.GraphKeys.GLOBAL_VARIABLES]
                    with tf.variable_scope("target_net"):
                        w = tf.get_variable("w", [self.n, 2], initializer=init, collections=c_names)
                        self.fc = tf.layers.dense(self.s, 2, name="fc")
                        self.q_next = tf.matmul(self.s, w)

                def act(self, s):
                    return self.q
        """
        after = """\
            import tensorflow as tf
            import tf_keras

            class Agent:
                def __init__(self, n):
                    self.n = n
                    self._build_net()
                    t_params = [self.target_net_w]
                    e_params = [self.eval_net_w]
                    self.replace = [tf.assign(t, e) for t, e in zip(t_params, e_params)]

                def _build_net(self):
                    init = tf.constant_initializer(0.1)
                    self.eval_net_w = tf.Variable(init([self.n, 2]), name="eval_net/w")
                    self.q = tf.matmul(self.s, self.eval_net_w)
                    self.target_net_w = tf.Variable(init([self.n, 2]), name="target_net/w")
                    self.fc_layer = tf_keras.layers.Dense(2, name="target_net/fc")
                    self.fc = self.fc_layer(self.s)
                    self.q_next = tf.matmul(self.s, self.target_net_w)

                def act(self, s):
                    return self.q
        """
        self.assertCodemod(dedent(before), dedent(after))

    def test_model_functions_are_left_to_the_feeds_rule(self) -> None:
        code = dedent("""\
            import tensorflow as tf
            def net(x):
                with tf.variable_scope("net", reuse=tf.AUTO_REUSE):
                    return tf.layers.dense(x, 2)
        """)
        self.assertCodemod(code, code)


NOT_STATIC = [
    pytest.param("""\
        import tensorflow as tf
        class Net:
            def __init__(self):
                self.x = 1
            def build(self, x):
                return tf.layers.dense(x, 2)
    """, "2:1: model code in `Net.build`, which may run more than once", id="method-run-again"),
    pytest.param("""\
        import tensorflow as tf
        for units in (3, 2):
            h = tf.layers.dense(h, units)
    """, "2:1: model code inside a `for` block", id="layers-in-a-loop"),
    pytest.param("""\
        import tensorflow as tf
        with tf.variable_scope("layer%d" % i):
            w = tf.get_variable("w", [2])
    """, "2:6: `tf.variable_scope(\"layer%d\" % i)`: a variable scope named by a computed value",
        id="computed-scope-name"),
    pytest.param("""\
        import tensorflow as tf
        w = tf.get_variable("w", [2], regularizer=tf.nn.l2_loss)
    """, "2:5: tf.get_variable(regularizer=...) is not converted", id="regularizer"),
    pytest.param("""\
        import tensorflow as tf
        w = tf.get_variable("w", [2])
        w2 = tf.get_variable("w", [2])
    """, "3:6: Variable w already exists and the scope does not reuse variables (TF1 raises here)",
        id="created-twice"),
    pytest.param("""\
        import tensorflow as tf
        with tf.variable_scope("a", reuse=True):
            w = tf.get_variable("w", [2])
    """, "3:9: Variable a/w does not exist and the scope reuses variables (TF1 raises here)",
        id="reused-before-made"),
    pytest.param("""\
        import tensorflow as tf
        with tf.variable_scope("a", reuse=reuse):
            w = tf.get_variable("w", [2])
    """, "2:6: reuse=reuse: whether variables are reused is known only when the program runs",
        id="reuse-flag-not-known"),
    pytest.param("""\
        import tensorflow as tf
        w = tf.get_variable("w", [2])
        ws = tf.get_collection("weights")
    """, "3:6: `tf.get_collection(\"weights\")`: only the variable collections are converted",
        id="other-collection"),
    pytest.param("""\
        import tensorflow as tf
        h = tf.layers.dense(x, 3, name="fc")
        with tf.variable_scope("", reuse=True):
            h2 = tf.layers.dense(x, 4, name="fc")
    """, "4:10: layer fc is reused with other arguments", id="reused-layer-other-arguments"),
    pytest.param("""\
        import tensorflow as tf
        w = tf.Variable([1.0])
        step = tf.train.AdamOptimizer(0.1).minimize(tf.reduce_sum(w))
        ws = tf.global_variables()
    """, "4:6: `tf.global_variables()` also holds the slot variables of the optimizer step on "
        "line 3", id="global-variables-after-adam"),
]


def test_global_variables_after_a_plain_gradient_descent_step_hold_no_slots():
    # (GradientDescentOptimizer makes no slot variable: the collection is the variables)
    r = migrate_source(dedent("""\
        import tensorflow as tf
        w = tf.Variable([1.0])
        step = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(w))
        ws = tf.global_variables()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step)
            print(sess.run(ws))
    """), "sgd.py")
    assert r.mode == "tape", [(f.code, f.message) for f in r.findings]
    assert "ws = [w]\n" in r.output


@pytest.mark.parametrize("before, warning", NOT_STATIC)
def test_warns_and_skips_what_it_cannot_replay(before, warning):
    class Case(CodemodTest):
        TRANSFORM = ModelCode

        def runTest(self) -> None:
            code = dedent(before)
            with pytest.raises(AssertionError) as caught:  # expected_warnings checks whole lines
                self.assertCodemod(code, code, expected_warnings=[])
            assert f"TS125 {warning}" in str(caught.value)

    Case().runTest()


@pytest.mark.tf
@pytest.mark.parametrize("fn", sorted(LAYERS))
def test_layer_table_matches_tf_keras(fn):
    """Each tf.layers function's arguments, and where the tf-keras class takes them."""
    import inspect

    import tf_keras
    from tf_keras.api._v1.keras.__internal__.legacy import layers as legacy

    spec = LAYERS[fn]
    functional = list(inspect.signature(getattr(legacy, fn)).parameters)
    assert functional[0] == "inputs" and tuple(functional[1:]) == spec.params
    cls = getattr(tf_keras.layers, spec.cls)
    init = [p for p in inspect.signature(cls.__init__).parameters.values()
            if p.name != "self" and p.kind is p.POSITIONAL_OR_KEYWORD]
    assert [p.name for p in init[:spec.positional]] == list(spec.params[:spec.positional])
    # keywords a class passes on to its bases (BatchNormalization: renorm, fused ...)
    taken = {name for klass in cls.__mro__ if "__init__" in vars(klass)
             for name in inspect.signature(klass.__init__).parameters}
    for param in spec.params:
        if param in ("reuse", *spec.call):
            continue
        assert param in taken, f"{spec.cls} does not take {param}"
    for param in spec.call:
        assert param in inspect.signature(cls.call).parameters


REBOUND = dedent("""\
    import numpy as np
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [None, 4])
    training = tf.placeholder_with_default(False, [])
    with tf.variable_scope("net"):
        h = tf.layers.dense(x, 8, tf.nn.relu)
        h = tf.layers.dropout(h, 0.5, training=training)
        h = tf.layers.dense(h, 8, tf.nn.relu)
        logits = tf.layers.dense(h, 1)
    loss = tf.reduce_mean(tf.square(logits))
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        print(sess.run([loss, train_op], {x: np.ones((2, 4), np.float32), training: True}))
""")


def test_rebound_layers_are_named_by_their_tf1_names_and_dropout_trains_nothing():
    from tapeshift.migrate.engine.pipeline import migrate_source

    r = migrate_source(REBOUND, "rebound.py")
    assert r.mode == "tape", [(f.code, f.message) for f in r.findings]
    # `h` is bound three times: TF1's names tell the layers apart; `logits` once: its own
    assert 'net_dense = tf_keras.layers.Dense(8, tf.nn.relu, name="net/dense")' in r.output
    assert 'net_dropout = tf_keras.layers.Dropout(0.5, name="net/dropout")' in r.output
    assert 'net_dense_1 = tf_keras.layers.Dense(8, tf.nn.relu, name="net/dense_1")' in r.output
    assert 'logits_layer = tf_keras.layers.Dense(1, name="net/dense_2")' in r.output
    assert "h_layer" not in r.output
    # the default var_list: TF1's trainable variables, none from the dropout layer
    assert "[*net_dense.trainable_variables, *net_dense_1.trainable_variables, " \
           "*logits_layer.trainable_variables]" in r.output
    assert "net_dropout.trainable_variables" not in r.output


def test_classes_constructed_once_run_in_the_order_of_their_first_construction():
    import libcst as cst

    from tapeshift.migrate.rules.model_code_order import calls_at_top_only, first_top_level_calls

    module = cst.parse_module(dedent("""\
        class A: pass
        class B: pass
        class C: pass
        def f(): return C()
        with tf.Session() as sess:
            a = A(sess)
            b = B(sess)
        if __name__ == "__main__":
            f()
    """))
    # a class's name in its own def is no use; C is also called inside f
    assert {"A", "B", "f"} <= calls_at_top_only(module) and "C" not in calls_at_top_only(module)
    first = first_top_level_calls(module)
    assert first["A"] < first["B"] < first["f"]


def test_a_main_function_called_once_runs_its_statements_once():
    from textwrap import dedent

    import libcst as cst

    from tapeshift.migrate.rules.model_code_order import calls_at_top_only, first_top_level_calls

    module = cst.parse_module(dedent("""\
        def loss(logits):
            loss = tf.reduce_mean(logits)  # a local of the function's name: no use of it
            return loss
        def build(): return tf.get_variable("w", [2])
        def helper(): return 1
        def main():
            w = build()
            total = loss(w)
            for _ in range(2):
                helper()
        if __name__ == "__main__":
            main()
    """))
    top = calls_at_top_only(module)
    # main's statements run once, where main() is called; not those of its loop
    assert {"main", "build", "loss"} <= top and "helper" not in top
    first = first_top_level_calls(module)
    assert first["main"] < first["build"] < first["loss"]
    # a function whose local shadows a module name does not read that name
    module = cst.parse_module(dedent("""\
        def loss(x):
            return x
        def other():
            loss = 2
            return loss
        print(loss(1))
        other()
    """))
    assert {"loss", "other"} <= calls_at_top_only(module)
    assert "loss" not in calls_at_top_only(cst.parse_module("def loss(x): return x\nf = loss\n"))


def _assignment_counts_by_isinstance(module):
    """assignment_counts as first written: one isinstance chain per node."""
    import libcst as cst

    from tapeshift.migrate.engine.toolkit.walk import nodes
    from tapeshift.migrate.rules.model_code_order import _target_names

    counts = {}
    for n in nodes(module):
        if isinstance(n, cst.AssignTarget):
            for name in _target_names(n.target):
                counts[name] = counts.get(name, 0) + 1
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign)):
            for name in _target_names(n.target):
                counts[name] = counts.get(name, 0) + 2
        elif isinstance(n, (cst.For, cst.CompFor)):
            for name in _target_names(n.target):
                counts[name] = counts.get(name, 0) + 2
        elif isinstance(n, (cst.FunctionDef, cst.ClassDef)):
            counts[n.name.value] = counts.get(n.name.value, 0) + 1
        elif isinstance(n, cst.AsName) and isinstance(n.name, cst.Name):
            counts[n.name.value] = counts.get(n.name.value, 0) + 1
        elif isinstance(n, cst.Param):
            counts[n.name.value] = counts.get(n.name.value, 0) + 2
    return counts


def test_assignment_counts_answer_per_type_as_the_isinstance_chain():
    """The counts, dispatched once per node type, are the isinstance chain's on the
    examples and the test data (every kind of binding: targets, loops, comprehensions,
    augmented and annotated assignments, definitions, imports as, parameters)."""
    from pathlib import Path

    import libcst as cst

    from tapeshift.migrate.rules.model_code_order import assignment_counts

    root = Path(__file__).resolve().parents[3]
    files = sorted((root / "examples").glob("*.py")) + sorted((root / "tests/migrate/data").rglob("*.py"))
    extra = "x: int = 1\nx += 1\nimport a.b as c\nwith f() as (d, e):\n    pass\n" \
            "def g(p, *q, r=1, **s):\n    return [t for t in q]\nclass K:\n    pass\n"
    sources = [f.read_text() for f in files] + [extra]
    assert len(sources) > 20
    for source in sources:
        module = cst.parse_module(source)
        assert assignment_counts(module) == _assignment_counts_by_isinstance(module)
