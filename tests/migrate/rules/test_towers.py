"""Towers and TowersStrategy: TF1 multi-tower training -> one tower -> a MirroredStrategy step.

The `Towers` rule alone (before/after with LibCST's CodemodTest), what it refuses
and why (each refusal a TS130 that keeps the file in compat mode), the averaging
helpers it reads, and the whole pipeline on the programs of
tests/migrate/data/towers/ (their numbers: tests/migrate/legacy/test_towers_programs.py).
"""

import functools
from pathlib import Path
from textwrap import dedent

import libcst as cst
import pytest
from libcst.codemod import CodemodContext, CodemodTest

from tapeshift.migrate.engine.pipeline import migrate_source
from tapeshift.migrate.engine.rule import findings_of
from tapeshift.migrate.rules.towers import Towers
from tapeshift.migrate.rules.towers_average import average_reason

DATA = Path(__file__).resolve().parents[1] / "data" / "towers"

HEAD = """
import tensorflow as tf

x = tf.placeholder(tf.float32, [16, 4])
y = tf.placeholder(tf.float32, [16, 1])


def tower_loss(x, y):
    with tf.variable_scope("model", reuse=tf.AUTO_REUSE):
        w = tf.get_variable("w", [4, 1])
        return tf.reduce_mean(tf.square(tf.matmul(x, w) - y))


def average_gradients(tower_grads):
    average_grads = []
    for grad_and_vars in zip(*tower_grads):
        grads = []
        for g, _ in grad_and_vars:
            grads.append(tf.expand_dims(g, 0))
        grad = tf.reduce_mean(tf.concat(axis=0, values=grads), 0)
        average_grads.append((grad, grad_and_vars[0][1]))
    return average_grads


opt = tf.train.GradientDescentOptimizer(0.1)
x_splits = tf.split(x, 2)
y_splits = tf.split(y, 2)
tower_grads = []
"""

LOOP = """
for i in range(2):
    with tf.device("/gpu:%d" % i), tf.name_scope("tower_%d" % i):
        loss = tower_loss(x_splits[i], y_splits[i])
        grads = opt.compute_gradients(loss)
        tower_grads.append(grads)
grads = average_gradients(tower_grads)
train_op = opt.apply_gradients(grads)
"""

RUN = """
with tf.Session() as sess:
    print(sess.run([train_op, loss], {x: X, y: Y}))
"""


def program(head: str = HEAD, loop: str = LOOP, run: str = RUN) -> str:
    return dedent(head).lstrip() + dedent(loop) + dedent(run)


def towers_rule(source: str):
    """(output, findings) of the towers rule alone."""
    context = CodemodContext(filename="t.py")
    out = Towers(context).transform_module(cst.parse_module(source))
    return out.code, findings_of(context)


def refusal(source: str) -> str:
    """The TS130 message of the towers rule on ``source`` (which it must leave as it is)."""
    out, findings = towers_rule(source)
    assert out == source
    messages = [f.message for f in findings if f.code == "TS130"]
    assert len(messages) == 1, findings
    result = migrate_source(source, "t.py")
    assert result.mode == "compat"
    assert any(f.code == "TS130" for f in result.findings)
    return messages[0]


class TestTowers(CodemodTest):
    TRANSFORM = Towers

    def test_towers_become_one_tower_over_the_batch(self) -> None:
        before = program(loop="""
            # one tower per GPU
            for i in range(2):
                with tf.device("/gpu:%d" % i), tf.name_scope("tower_%d" % i):
                    loss = tower_loss(x_splits[i], y_splits[i])
                    grads = opt.compute_gradients(loss)
                    tower_grads.append(grads)
            # average them
            grads = average_gradients(tower_grads)
            train_op = opt.apply_gradients(grads)

            config = tf.ConfigProto(allow_soft_placement=True)
        """, run="""
            with tf.Session(config=config) as sess:
                print(sess.run([train_op, loss], {x: X, y: Y}))
        """)
        after = """
            import tensorflow as tf

            x = tf.placeholder(tf.float32, [16, 4])
            y = tf.placeholder(tf.float32, [16, 1])


            def tower_loss(x, y):
                with tf.variable_scope("model", reuse=tf.AUTO_REUSE):
                    w = tf.get_variable("w", [4, 1])
                    return tf.reduce_mean(tf.square(tf.matmul(x, w) - y))


            opt = tf.train.GradientDescentOptimizer(0.1)
            x_splits = tf.split(x, 2)
            y_splits = tf.split(y, 2)

            # one tower per GPU
            replica_loss = tower_loss(x, y)
            grads = opt.compute_gradients(replica_loss)
            loss = replica_loss
            # average them
            train_op = opt.apply_gradients(grads)

            with tf.Session() as sess:
                print(sess.run([train_op, loss], {x: X, y: Y}))
        """
        self.assertCodemod(before, after)

    def test_no_towers_no_change(self) -> None:
        code = """
            import tensorflow as tf
            opt = tf.train.GradientDescentOptimizer(0.1)
            grads = opt.compute_gradients(loss)
            for i in range(3):
                print(i)
            train_op = opt.apply_gradients(grads)
        """
        self.assertCodemod(code, code)

    def test_tensorflow_under_another_name(self) -> None:
        before = """
            import tensorflow.compat.v1 as T
            T.disable_v2_behavior()
            x = T.placeholder(T.float32, [8, 2])
            def f(x):
                with T.variable_scope("m", reuse=T.AUTO_REUSE):
                    return T.reduce_mean(T.matmul(x, T.get_variable("w", [2, 1])))
            def avg(tg):
                out = []
                for gv in zip(*tg):
                    out.append((T.add_n([g for g, _ in gv]) / len(gv), gv[0][1]))
                return out
            opt = T.train.AdamOptimizer()
            parts = T.split(x, N)
            tg = []
            for k in range(N):
                with T.device("/gpu:%d" % k):
                    tg.append(opt.compute_gradients(f(parts[k])))
            train = opt.apply_gradients(avg(tg))
        """
        # the tower's value must be named: compute_gradients of a call is not read
        self.assertCodemod(before, before, expected_warnings=[
            "TS130 17:9: `tg.append(opt.compute_gradients(f(parts[k])))` in the tower loop: only "
            "the tower's call (a function of this module), compute_gradients of its value, the "
            "list's append and reuse_variables() after the call are read"])
        named = before.replace("tg.append(opt.compute_gradients(f(parts[k])))",
                               "l = f(parts[k])\n                    "
                               "tg.append(opt.compute_gradients(l))")
        after = """
            import tensorflow.compat.v1 as T
            T.disable_v2_behavior()
            x = T.placeholder(T.float32, [8, 2])
            def f(x):
                with T.variable_scope("m", reuse=T.AUTO_REUSE):
                    return T.reduce_mean(T.matmul(x, T.get_variable("w", [2, 1])))
            opt = T.train.AdamOptimizer()
            parts = T.split(x, N)
            replica_loss = f(x)
            grads = opt.compute_gradients(replica_loss)
            train = opt.apply_gradients(grads)
        """
        self.assertCodemod(named, after)

    def test_reuse_variables_in_a_scope_around_the_loop(self) -> None:
        # CIFAR-10's form: the reuse ends with the scope, which dissolves
        before = program(head=HEAD.replace(', reuse=tf.AUTO_REUSE', ''), loop="""
            with tf.variable_scope(tf.get_variable_scope()):
                for i in range(2):
                    with tf.device("/gpu:%d" % i):
                        with tf.name_scope("tower_%d" % i) as scope:
                            loss = tower_loss(x_splits[i], y_splits[i])
                            tf.get_variable_scope().reuse_variables()
                            grads = opt.compute_gradients(loss, colocate_gradients_with_ops=True)
                            tower_grads.append(grads)
            grads = average_gradients(tower_grads)
            train_op = opt.apply_gradients(grads)
        """)
        out, findings = towers_rule(before)
        assert "replica_loss = tower_loss(x, y)\n" \
               "grads = opt.compute_gradients(replica_loss)\nloss = replica_loss\n" in out
        assert "variable_scope(tf.get_variable_scope())" not in out
        assert "reuse_variables" not in out and "colocate" not in out
        assert [f.code for f in findings] == ["TS131"]

    def test_reuse_variables_at_the_root_stays_after_the_first_tower(self) -> None:
        before = program(head=HEAD.replace(', reuse=tf.AUTO_REUSE', ''), loop="""
            for i in range(2):
                with tf.device("/gpu:%d" % i):
                    loss = tower_loss(x_splits[i], y_splits[i])
                    tf.get_variable_scope().reuse_variables()
                    tower_grads.append(opt.compute_gradients(loss))
            train_op = opt.apply_gradients(average_gradients(tower_grads))
        """)
        out, _ = towers_rule(before)
        assert "replica_loss = tower_loss(x, y)\ngrads = opt.compute_gradients(replica_loss)\n" \
               "tf.get_variable_scope().reuse_variables()\nloss = replica_loss\n" \
               "train_op = opt.apply_gradients(grads)\n" in out
        assert "def average_gradients" not in out

    def test_reuse_of_the_towers_after_the_first(self) -> None:
        for reuse in ("i > 0", "bool(i)", "(i > 0)", "True if i > 0 else None", "i != 0"):
            before = program(head=HEAD.replace(', reuse=tf.AUTO_REUSE', ''), loop=f"""
                for i in range(2):
                    with tf.variable_scope(tf.get_variable_scope(), reuse={reuse}):
                        loss = tower_loss(x_splits[i], y_splits[i])
                        grads = opt.compute_gradients(loss)
                        tower_grads.append(grads)
                grads = average_gradients(tower_grads)
                train_op = opt.apply_gradients(grads)
            """)
            out, findings = towers_rule(before)
            assert "replica_loss = tower_loss(x, y)" in out, (reuse, findings)

    def test_a_sum_over_the_rows_is_divided_by_the_towers(self) -> None:
        before = program(head=HEAD.replace("tf.reduce_mean(tf.square", "tf.reduce_sum(tf.square"))
        out, findings = towers_rule(before)
        assert "replica_loss = tower_loss(x, y) / 2\n" in out
        assert "a sum over its rows" in findings[0].message

    def test_a_statement_the_rule_does_not_read_keeps_the_towers(self) -> None:
        before = program(loop="""
            for i in range(2):
                with tf.device("/gpu:%d" % i):
                    loss = tower_loss(x_splits[i], y_splits[i])
                    tf.summary.scalar("loss", loss)
                    tower_grads.append(opt.compute_gradients(loss))
            train_op = opt.apply_gradients(average_gradients(tower_grads))
        """)
        self.assertCodemod(before, before, expected_warnings=[
            "TS130 32:9: `tf.summary.scalar(\"loss\", loss)` in the tower loop: only the tower's "
            "call (a function of this module), compute_gradients of its value, the list's append "
            "and reuse_variables() after the call are read"])


# -- what is refused, and why ----------------------------------------------------------

def _tower(body: str, head: str = HEAD) -> str:
    """The program with another tower function."""
    start = head.index("def tower_loss")
    end = head.index("def average_gradients")
    return program(head=head[:start] + dedent(body).lstrip() + "\n\n" + head[end:])


@pytest.mark.parametrize("source, reason", [
    (program().replace("x_splits = tf.split(x, 2)", "x_splits = tf.split(x, [6, 10])"),
     "does not split into `2` equal parts"),
    (program(head=HEAD.replace("tf.split(x, 2)", "tf.split(x, 2, axis=1)")),
     "along another axis"),
    (_tower("""
        def tower_loss(x, y):
            with tf.variable_scope("model", reuse=tf.AUTO_REUSE):
                w = tf.get_variable("w", [4, 1])
                h = tf.layers.batch_normalization(tf.matmul(x, w), training=True)
                return tf.reduce_mean(tf.square(h - y))
    """), "batch statistics"),
    (_tower("""
        def tower_loss(x, y):
            with tf.variable_scope("model", reuse=tf.AUTO_REUSE):
                w = tf.get_variable("w", [4, 1])
                h = tf.nn.dropout(tf.matmul(x, w), 0.5)
                return tf.reduce_mean(tf.square(h - y))
    """), "draw its own numbers"),
    (_tower("""
        def tower_loss(x, y):
            w = tf.Variable(tf.zeros([4, 1]))
            return tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    """), "makes a new variable in each tower"),
    (_tower("""
        def tower_loss(x, y):
            with tf.variable_scope("model", reuse=tf.AUTO_REUSE):
                h = tf.layers.dense(x, 1)
                return tf.reduce_mean(tf.square(h - y))
    """), "without a constant name"),
    (_tower("""
        def tower_loss(x, y):
            w = tf.get_variable("w", [4, 1])
            return tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
    """), "is not reused by the towers after the first"),
    (_tower("""
        def tower_loss(x, y):
            with tf.variable_scope("model", reuse=tf.AUTO_REUSE):
                w = tf.get_variable("w", [4, 1])
                return tf.reduce_mean(tf.square(tf.matmul(x, w) - tf.reshape(y, [16])))
    """), "does not start with -1"),
    (_tower("""
        def tower_loss(x, y):
            with tf.variable_scope("model", reuse=tf.AUTO_REUSE):
                w = tf.get_variable("w", [4, 1])
                return tf.reduce_mean(tf.square(tf.matmul(x, w) - tf.reduce_sum(y, axis=-1)))
    """), "broadcasting may pair every row with every other"),
    (_tower("""
        def tower_loss(x, y):
            with tf.variable_scope("model", reuse=tf.AUTO_REUSE):
                w = tf.get_variable("w", [4, 1])
                h = tf.matmul(x, w)
                return tf.reduce_mean(tf.square(h - tf.reduce_mean(h, axis=0)))
    """), "not linear in the batch"),
    (_tower("""
        def tower_loss(x, y):
            with tf.variable_scope("model", reuse=tf.AUTO_REUSE):
                w = tf.get_variable("w", [4, 1])
                return tf.reduce_max(tf.square(tf.matmul(x, w) - y))
    """), "not a mean or a sum"),
    (_tower("""
        def tower_loss(x, y):
            with tf.variable_scope("model", reuse=tf.AUTO_REUSE):
                w = tf.get_variable("w", [4, 1])
                return tf.square(tf.matmul(x, w) - y)
    """), "not a mean or a sum over its rows"),
    (_tower("""
        def tower_loss(x, y):
            with tf.variable_scope("model", reuse=tf.AUTO_REUSE):
                w = tf.get_variable("w", [4, 1])
                return tf.reduce_sum(tf.square(tf.matmul(x, w) - y)) + tf.nn.l2_loss(w)
    """), "not linear"),
    (_tower("""
        def tower_loss(x, y):
            with tf.variable_scope("model", reuse=tf.AUTO_REUSE):
                w = tf.get_variable("w", [4, 1])
                return tf.reduce_mean(tf.square(tf.matmul(x[:8], w) - y))
    """), "slices"),
    (_tower("""
        def tower_loss(x, y):
            with tf.variable_scope("model", reuse=tf.AUTO_REUSE):
                w = tf.get_variable("w", [4, 1])
                n = tf.cast(tf.shape(x)[0], tf.float32)
                return tf.reduce_sum(tf.square(tf.matmul(x, w) - y)) / n
    """), "slices"),
    (program(head=HEAD.replace("grads.append(tf.expand_dims(g, 0))",
                               "if g is not None:\n                grads.append(g)")),
     "is not read as the mean of each variable's gradients"),
    (program(head=HEAD.replace("tf.reduce_mean(tf.concat(axis=0, values=grads), 0)",
                               "tf.reduce_sum(tf.concat(axis=0, values=grads), 0)")),
     "is not read as the mean of each variable's gradients"),
    (program(loop=LOOP + "print(grads)\n"), "used other than by one apply_gradients"),
    (program(loop=LOOP.replace("tower_loss(x_splits[i], y_splits[i])",
                               "tower_loss(x_splits[i], y)")),
     "every tower is given the whole of it"),
    (program(loop=LOOP.replace('tf.name_scope("tower_%d" % i)',
                               'tf.variable_scope("tower_%d" % i)')),
     "only tf.device, tf.name_scope"),
    (program(loop=LOOP.replace('with tf.device("/gpu:%d" % i), tf.name_scope("tower_%d" % i):',
                               'with tf.variable_scope(tf.get_variable_scope(), reuse=True):')),
     "the first tower reuses its variables"),
    (program(loop=LOOP + LOOP.replace("tower_grads", "tower_grads_2")),
     "a second loop of towers"),
    (program(loop="def train():\n" + "\n".join("    " + line for line in dedent(LOOP).splitlines())
             + "\n"), "not at module level or in the `__main__` guard"),
])
def test_refused(source, reason):
    assert reason in refusal(source)


def test_a_train_op_no_session_runs_is_refused():
    result = migrate_source(program(run=""), "t.py")
    assert result.mode == "compat"
    (ts130,) = [f for f in result.findings if f.code == "TS130"]
    assert "no step function computes `replica_loss`" in ts130.message


# -- the averaging helper ------------------------------------------------------------------

def _average(body: str):
    module = cst.parse_module(dedent(body))
    fn = module.body[0]
    names = {"expand_dims", "concat", "stack", "reduce_mean", "add_n", "reduce_sum"}

    def api(node):  # tf.<name> as TensorFlow's API name (the rule resolves qualified names)
        code = module.code_for_node(node)
        return code[3:] if code.startswith("tf.") and code[3:] in names else None

    return average_reason(fn, api)


@pytest.mark.parametrize("body", [
    """
    def average_gradients(tower_grads):
        average_grads = []
        for grad_and_vars in zip(*tower_grads):
            grads = []
            for g, _ in grad_and_vars:
                expanded_g = tf.expand_dims(g, 0)
                grads.append(expanded_g)
            grad = tf.concat(axis=0, values=grads)
            grad = tf.reduce_mean(grad, 0)
            v = grad_and_vars[0][1]
            grad_and_var = (grad, v)
            average_grads.append(grad_and_var)
        return average_grads
    """,
    """
    def average(tower_grads):
        out = []
        for pairs in zip(*tower_grads):
            grad = tf.reduce_mean(tf.stack([g for g, _ in pairs]), axis=0)
            out.append((grad, pairs[0][1]))
        return out
    """,
    """
    def average(tower_grads):
        out = []
        for pairs in zip(*tower_grads):
            out.append((tf.add_n([g for g, v in pairs]) / float(len(pairs)), pairs[0][1]))
        return out
    """,
    """
    def average(tower_grads):
        out = []
        for pairs in zip(*tower_grads):
            grad = tf.reduce_mean(tf.concat([tf.expand_dims(g, 0) for g, _ in pairs], 0), 0)
            out.append((grad, pairs[0][1]))
        return out
    """,
])
def test_average_helpers_read_as_means(body):
    assert _average(body) is None


@pytest.mark.parametrize("body, why", [
    ("""
    def average(tower_grads):
        out = []
        for pairs in zip(*tower_grads):
            out.append((tf.add_n([g for g, _ in pairs]), pairs[0][1]))
        return out
    """, "is not (mean gradient, variable)"),
    ("""
    def average(tower_grads):
        out = []
        for pairs in zip(*tower_grads):
            grad = tf.reduce_mean(tf.stack([g for g, _ in pairs]), 1)
            out.append((grad, pairs[0][1]))
        return out
    """, "is not a form the rule reads"),
    ("""
    def average(tower_grads):
        out = []
        for pairs in zip(*tower_grads):
            grad = tf.reduce_mean(tf.stack([g for g, _ in pairs]), 0)
            out.append((grad, pairs[1][1]))
        return out
    """, "is not the first tower's variable"),
    ("""
    def average(tower_grads, weights):
        return tower_grads[0]
    """, "does not take one argument"),
])
def test_other_helpers_are_not_means(body, why):
    reason = _average(body)
    assert reason is not None and why in reason


# -- the whole pipeline ---------------------------------------------------------------------

PROGRAMS = sorted(p.name for p in DATA.glob("*.py"))


@functools.cache
def migrated(name):
    return migrate_source((DATA / name).read_text(encoding="utf-8"), name)


def test_the_programs():
    assert PROGRAMS == ["towers_auto_reuse.py", "towers_layers_reuse.py"]


@pytest.mark.parametrize("name", PROGRAMS)
def test_programs_become_a_strategy_step(name):
    r = migrated(name)
    assert r.mode == "tape", [(f.code, f.line, f.message) for f in r.findings]
    out = r.output
    for gone in ("tf.device(", "ConfigProto", "allow_soft_placement", "average_gradients(",
                 "tower_grads", "tf.Session(", "tf.placeholder(", "compute_gradients"):
        assert gone not in out, gone
    assert out.count("strategy = tf.distribute.MirroredStrategy()") == 1
    assert "\nwith strategy.scope():\n" in out
    assert "/ tf.distribute.get_replica_context().num_replicas_in_sync\n" in out
    assert "        strategy.run(replica_step, args=(replica_rows(" in out
    assert "    with tf.GradientTape() as tape:\n        replica_loss = " in out
    compile(out, name, "exec")
    (info,) = [f for f in r.findings if f.code == "TS131"]
    assert "tf.distribute.MirroredStrategy" in info.message
    assert any(c.rule == "towers-strategy" for c in r.changes)


@pytest.mark.parametrize("name", PROGRAMS)
def test_programs_migrate_once(name):
    out = migrated(name).output
    again = migrate_source(out, name)
    assert not again.changed, [(f.code, f.message) for f in again.findings]


def test_the_last_towers_loss_is_computed_on_its_split():
    out = migrated("towers_auto_reuse.py").output
    assert "        loss = tower_loss(tf.split(x, NUM_GPUS)[NUM_GPUS - 1], " \
           "tf.split(y, NUM_GPUS)[NUM_GPUS - 1])\n" \
           "        strategy.run(replica_step, args=(replica_rows(x), replica_rows(y)))\n" in out


def test_layers_are_made_in_the_scope_and_a_loss_only_step_too():
    out = migrated("towers_layers_reuse.py").output
    assert '    hidden_1 = tf_keras.layers.Dense(16, activation=tf.nn.relu, name="hidden")\n' in out
    loss_only = out[out.index("def run_loss("):]
    assert "    with strategy.scope():\n        loss = tower_loss(tf.split(images, NUM_GPUS)" \
        in loss_only
    assert "strategy.run" not in loss_only.split("\n\n")[0]


def test_findings_and_changes_name_the_loop():
    r = migrated("towers_auto_reuse.py")
    text = (DATA / "towers_auto_reuse.py").read_text(encoding="utf-8").splitlines()
    (info,) = [f for f in r.findings if f.code == "TS131"]
    assert text[info.line - 1].startswith("for i in range(NUM_GPUS):")
    devices = [c for c in r.changes if "tf.device" in c.description]
    assert devices and "removed" in devices[0].description
    config = [c for c in r.changes if "ConfigProto" in c.description]
    assert config and text[config[0].line - 1].startswith("config = tf.ConfigProto(")


# -- the tables against TensorFlow ----------------------------------------------------------

@pytest.mark.tf
def test_table_names_are_tensorflow_ops():
    import tensorflow as tf

    from tapeshift.migrate.rules import towers_rows_ops as table

    import tf_keras.api._v1.keras.__internal__.legacy.layers as tf_layers

    names = set(table.UNARY) | table.BINARY | table.PER_EXAMPLE_LOSSES | set(table.MEAN_LOSSES) \
        | table.ROW_OPS | table.MATMUL | set(table.REDUCTIONS) | table.ROW_REDUCTIONS | table.ADD_N
    missing = []
    for name in sorted(names):
        obj = tf.compat.v1
        for part in name.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                missing.append(name)
                break
    # tf.layers is tf-keras' on Keras 3 (docs/migrate.md, "tf.layers on Keras 3")
    missing += [name for name in sorted(table.ROW_LAYERS)
                if not callable(getattr(tf_layers, name.split(".", 1)[1], None))]
    assert not missing
