"""ClassFeedsToMethods: a class that builds a fed graph and runs it with self.sess -> step methods."""

import functools
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tapeshift.migrate.engine.pipeline import migrate_source

DATA = Path(__file__).resolve().parents[1] / "data" / "classes"
TIMEOUT = 300  # seconds per TensorFlow subprocess (the machine is shared)


@functools.cache
def migrated(name: str):
    return migrate_source((DATA / name).read_text(encoding="utf-8"), name)


def codes(result):
    return [(f.code, f.line) for f in result.findings]


def test_dqn_agent_becomes_step_methods():
    r = migrated("dqn_agent.py")
    assert r.mode == "tape", codes(r)
    out = r.output
    # placeholders, the session, the initializer and the collections are gone
    for gone in ("placeholder", "self.sess", "tf.Session", "global_variables_initializer",
                 "get_collection", "GraphKeys", "c_names", "tf.gradients", ".minimize("):
        assert gone not in out, gone
    # variables made once, on the object, under their TF1 names
    assert 'self.eval_net_l1_w1 = tf.Variable(w_initializer([self.n_features, n_l1]), ' \
           'name="eval_net/l1/w1")' in out
    assert 'self.target_net_l2_b2 = tf.Variable(b_initializer([1, self.n_actions]), ' \
           'name="target_net/l2/b2")' in out
    # the optimizer made inline is kept on the object
    assert "self.optimizer = tf.compat.v1.train.RMSPropOptimizer(self.lr)" in out
    # each sess.run is a method of the fed values, called where it was
    assert "    def _run_q_eval(self, s):\n" in out
    assert "actions_value = self._run_q_eval(s=observation[np.newaxis, :])" in out
    assert "q_next, q_eval = self._run_q_next_q_eval(s_=batch[:, -self.n_features:], " \
           "s=batch[:, :self.n_features])" in out
    # the target update runs when fetched, from the lists it reads
    assert textwrap.indent(textwrap.dedent("""\
        def _run_replace_target_op(self):
            \"\"\"sess.run(self.replace_target_op) as a function of the fed values.\"\"\"
            t_params = [self.target_net_l1_w1, self.target_net_l1_b1, self.target_net_l2_w2, self.target_net_l2_b2]
            e_params = [self.eval_net_l1_w1, self.eval_net_l1_b1, self.eval_net_l2_w2, self.eval_net_l2_b2]
            replace_target_op = [t.assign(e) for t, e in zip(t_params, e_params)]
            return [v.numpy() for v in replace_target_op]
    """), "    ") in out
    # the train step: a tape around the forward statements, TF1's default var_list
    assert "with tf.GradientTape() as tape:" in out
    assert ("self.optimizer.apply_gradients(zip(tape.gradient(loss, [self.eval_net_l1_w1, "
            "self.eval_net_l1_b1, self.eval_net_l2_w2, self.eval_net_l2_b2]),") in out
    compile(out, "dqn_agent.py", "exec")
    assert not migrate_source(out, "dqn_agent.py").changed


def test_policy_gradient_agent_keeps_layer_layout_and_comments():
    r = migrated("pg_agent.py")
    assert r.mode == "tape", codes(r)
    out = r.output
    assert textwrap.indent(textwrap.dedent("""\
        self.fc1 = tf_keras.layers.Dense(
            units=10,
            activation=tf.nn.tanh,  # tanh activation
            kernel_initializer=tf.compat.v1.constant_initializer(0.3),
            bias_initializer=tf.compat.v1.constant_initializer(0.1),
            name="fc1"
        )
    """), "        ") in out
    assert "    def _run_train_op(self, tf_obs, tf_acts, tf_vt):\n" in out
    assert "[*self.fc1.trainable_variables, *self.fc2.trainable_variables]" in out
    assert "self._run_train_op(tf_obs=np.vstack(self.ep_obs), tf_acts=np.array(self.ep_as), " \
           "tf_vt=discounted)" in out.replace("\n            ", " ").replace("(\n            ", "(")
    compile(out, "pg_agent.py", "exec")


def test_a_build_method_called_per_network_is_read_at_each_call():
    # self._build_net(s, scope=..., trainable=...) makes an eval and a target network
    r = migrated("actor_critic.py")
    assert r.mode == "tape", codes(r)
    out = r.output
    assert "def _build_net" not in out  # read at both calls, called from nowhere else
    assert 'self.eval_net_l1 = tf_keras.layers.Dense(8, activation=tf.nn.relu, ' \
           'kernel_initializer=init_w,\n                              name="Actor/eval_net/l1", ' \
           'trainable=True)' in out
    assert 'name="Actor/target_net/a", trainable=False)' in out
    # the soft update reads the target layers before they ever run: they are built
    assert "self.eval_net_l1(tf_keras.Input([S_DIM]))  # built now: its variables are read " \
           "before its first call\n" in out
    assert "self.target_net_l1(tf_keras.Input([S_DIM]))\n" in out
    assert "self.target_net_a(tf_keras.Input([8]))\n" in out
    assert "soft_replace = [t.assign((1 - TAU) * t + TAU * e)" in out
    assert "self.optimizer.apply_gradients(zip(tape.gradient(loss, e_params), e_params))" in out
    assert "    def _run_a_(self, s):\n" in out
    compile(out, "actor_critic.py", "exec")
    assert not migrate_source(out, "actor_critic.py").changed


AGENT = """\
import tensorflow as tf


class Agent:
    def __init__(self):
        self.x = tf.placeholder(tf.float32, [None, 2])
        self.w = tf.Variable([[1.0], [2.0]])
        self.y = tf.matmul(self.x, self.w)
        self.sess = tf.Session()
        self.sess.run(tf.global_variables_initializer())

    def predict(self, x):
        return self.sess.run(self.y, feed_dict={self.x: x})
{extra}"""


@pytest.mark.parametrize("extra, code", [
    ("\n    def save(self, path):\n        tf.train.Saver().save(self.sess, path)\n", "TS106"),
    ("\n    def shape(self):\n        return self.y.shape\n", "TS107"),
])
def test_what_it_cannot_follow_keeps_compat_form_with_the_reason(extra, code):
    r = migrate_source(AGENT.replace("{extra}", extra), "agent.py")
    assert r.mode == "compat"
    assert code in [c for c, _ in codes(r)], codes(r)


def test_an_initializer_kept_as_an_attribute_goes_with_its_runs():
    src = AGENT.replace("{extra}", "").replace(
        "        self.sess = tf.Session()\n        self.sess.run(tf.global_variables_initializer())\n",
        "        self.init = tf.global_variables_initializer()\n        self.sess = tf.Session()\n"
        "\n    def start(self):\n        self.sess.run(self.init)\n")
    r = migrate_source(src, "agent.py")
    assert r.mode == "tape", codes(r)
    assert "init" not in r.output.replace("__init__", "")
    assert "    def start(self):\n        pass\n" in r.output


def test_a_local_variable_a_step_method_reads_moves_onto_the_object():
    # `w` is a local of __init__: copied into the step method, it would be a new
    # variable at each call. It becomes `self.w`, made where it was
    src = AGENT.replace("{extra}", "").replace(
        "    def __init__(self):\n", "    def __init__(self, n=2):\n").replace(
        "        self.w = tf.Variable([[1.0], [2.0]])\n        self.y = tf.matmul(self.x, self.w)\n",
        "        w = tf.Variable(tf.ones([n, 1]))  # the weights\n        self.y = tf.matmul(self.x, w)\n")
    r = migrate_source(src, "agent.py")
    assert r.mode == "tape", codes(r)
    assert "    def __init__(self, n=2):\n        self.w = tf.Variable(tf.ones([n, 1]))  # the weights\n" \
        in r.output
    assert "        y = tf.matmul(x, self.w)\n" in r.output
    assert any(c.rule == "class-variable-locals" and c.line == 7 and "`self.w`" in c.description
               for c in r.changes), r.changes
    assert not migrate_source(r.output, "agent.py").changed
    # a local that only computes, from what the step method has, is made again there
    ok = AGENT.replace("{extra}", "").replace(
        "        self.y = tf.matmul(self.x, self.w)\n",
        "        scale = tf.constant(2.0)\n        self.y = tf.matmul(self.x, self.w) * scale\n")
    r = migrate_source(ok, "agent.py")
    assert r.mode == "tape", codes(r)
    assert "        scale = tf.constant(2.0)\n        y = tf.matmul(x, self.w) * scale\n" in r.output


@pytest.mark.parametrize("local", [
    # bound with another name in one statement
    "        w, b = tf.Variable(tf.ones([n, 1])), 0.0\n",
    # bound twice
    "        w = tf.Variable(tf.ones([n, 1]))\n        w = tf.Variable(tf.zeros([n, 1]))\n",
    # a loop in the method reuses the name
    "        w = tf.Variable(tf.ones([n, 1]))\n        ws = [w for w in [w]]\n",
])
def test_a_local_variable_that_cannot_move_keeps_compat_form(local):
    src = AGENT.replace("{extra}", "").replace(
        "    def __init__(self):\n", "    def __init__(self, n=2):\n").replace(
        "        self.w = tf.Variable([[1.0], [2.0]])\n        self.y = tf.matmul(self.x, self.w)\n",
        local + "        self.y = tf.matmul(self.x, w)\n")
    r = migrate_source(src, "agent.py")
    assert r.mode == "compat"
    assert any(f.code == "TS107" and "`w`, a local of the method that builds the graph, makes a "
               "variable" in f.message for f in r.findings), codes(r)


def test_a_local_variable_whose_name_the_object_has_keeps_compat_form():
    src = AGENT.replace("{extra}", "\n    def weights(self):\n        return self.w\n").replace(
        "        self.w = tf.Variable([[1.0], [2.0]])\n        self.y = tf.matmul(self.x, self.w)\n",
        "        w = tf.Variable([[1.0], [2.0]])\n        self.y = tf.matmul(self.x, w)\n"
        "        self.w = w\n")
    r = migrate_source(src, "agent.py")
    assert not any(c.rule == "class-variable-locals" for c in r.changes), r.changes


@pytest.mark.slow
def test_of_two_such_locals_the_same_one_is_reported_whatever_the_hash_seed(tmp_path):
    # the reads of a statement are a set of strings: which local came first used to
    # change with the process's string-hash salt
    src = AGENT.replace("{extra}", "").replace(
        "        self.w = tf.Variable([[1.0], [2.0]])\n        self.y = tf.matmul(self.x, self.w)\n",
        "        w_b, b_w = tf.Variable([[1.0], [2.0]]), tf.Variable(0.5)\n"
        "        self.y = tf.matmul(self.x, w_b) + b_w\n")
    path = tmp_path / "agent.py"
    path.write_text(src)
    code = ("import sys; from tapeshift.migrate.engine.pipeline import migrate_source; "
            "r = migrate_source(open(sys.argv[1]).read(), 'agent.py'); "
            "print([f.message for f in r.findings if f.code == 'TS107'][0])")
    reported = set()
    for seed in ("1", "2", "3", "4", "5", "6"):
        out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                             text=True, check=True, env={**os.environ, "PYTHONHASHSEED": seed})
        reported.add(out.stdout.strip())
    assert len(reported) == 1, reported
    assert reported.pop().startswith("`b_w`, a local of the method that builds the graph")


def test_the_plain_agent_converts():
    r = migrate_source(AGENT.replace("{extra}", ""), "agent.py")
    assert r.mode == "tape", codes(r)
    assert r.output == textwrap.dedent("""\
        import tensorflow as tf


        class Agent:
            def __init__(self):
                self.w = tf.Variable([[1.0], [2.0]])

            def _run_y(self, x):
                \"\"\"sess.run(self.y) as a function of the fed values.\"\"\"
                x = tf.convert_to_tensor(x, tf.float32)
                y = tf.matmul(x, self.w)
                return y.numpy()

            def predict(self, x):
                return self._run_y(x=x)
    """)


@pytest.mark.tf
@pytest.mark.slow
@pytest.mark.parametrize("name", ["dqn_agent.py", "pg_agent.py", "actor_critic.py",
                                  "advantage_actor_critic.py", "ddpg_one_class.py",
                                  "pg_agent_graph_block.py", "driven_bandit.py",
                                  "driven_passed_session.py", "driven_in_main.py",
                                  "driven_xor_forward.py"])
def test_the_migrated_agent_computes_the_legacy_numbers(name, tmp_path):
    from tapeshift.migrate.legacy.verify import verify_sources

    source = (DATA / name).read_text(encoding="utf-8")
    r = migrated(name)
    assert r.mode == "tape", codes(r)
    report = verify_sources(source, r.output, tmp_path / name, timeout=TIMEOUT)
    assert report.status == "ok", report.to_text()
    printed = [row for row in report.rows if row.name.startswith("stdout:") and row.compared]
    assert len(printed) >= 4, report.to_text()  # every training step's print


def test_a_negated_objective_and_a_named_feed_dict_in_a_method():
    """``minimize(-self.exp_v)`` and ``feed_dict = {...}`` in ``learn``, as public
    actor-critic agents write them."""
    r = migrated("advantage_actor_critic.py")
    assert r.mode == "tape", codes(r)
    out = r.output
    # the negated objective is computed under the tape, by a statement of its own
    assert textwrap.indent(textwrap.dedent("""\
            exp_v = tf.reduce_mean(log_prob * td_error)  # advantage guided loss

            neg_exp_v = -exp_v
        self.optimizer.apply_gradients(zip(tape.gradient(neg_exp_v, """), "        ") in out
    # the feed dict keeps its name, keyed by the step method's parameters
    assert textwrap.indent(textwrap.dedent("""\
        feed_dict = {"s": s, "a": a, "td_error": td}
        _, exp_v = self._run_train_op_exp_v(**feed_dict)
    """), "        ") in out
    assert not migrate_source(out, "advantage_actor_critic.py").changed


def test_a_session_passed_in_goes_with_its_parameter():
    """An actor and a critic class sharing one session passed to their constructors."""
    r = migrated("actor_critic_shared_session.py")
    assert r.mode == "tape", codes(r)
    out = r.output
    for gone in ("tf.Session", "self.sess", "(sess", "placeholder", "tf.gradients"):
        assert gone not in out, gone
    # each class: step methods of its own fed values; the constructors lose `sess`
    assert "    def __init__(self, lr):" in out
    assert "def _run_train_op(self, s, action_gradient):" in out
    assert "def _run_soft_replace(self):" in out
    assert "def _run_a_grads(self, s, a):" in out
    assert "actor = Actor(0.1)\ncritic = Critic(0.05)\n" in out
    # the actor's policy gradient: the critic's action gradient as output_gradients
    assert "policy_grads = tape.gradient(a, e_params, output_gradients=-action_gradient)" in out
    assert not migrate_source(out, "actor_critic_shared_session.py").changed


def test_a_session_passed_in_from_a_graph_block_of_main():
    """``with tf.Graph().as_default(), tf.Session() as sess:`` in main(), the session
    kept by the agent, its layers made by tf.contrib.layers (jiexunsee's agent)."""
    r = migrated("pg_agent_graph_block.py")
    assert r.mode == "tape", codes(r)
    out = r.output
    code = out.split('"""', 2)[2]  # (after the module's docstring, which names them)
    for gone in ("tf.Session", "as_default", "sess)", "sess:", "_s.run", "placeholder",
                 "contrib", "tf_slim"):
        assert gone not in code, gone
    assert "    agent = PolicyAgent(hparams)\n\n    for step in range(4):\n" in out
    # the layer keeps the call's lines
    assert textwrap.indent(textwrap.dedent("""\
        # build the graph
        self.hidden_layer = tf_keras.layers.Dense(
                units=hparams['hidden_size'],
                activation=tf.nn.tanh,
                kernel_initializer=tf.compat.v1.constant_initializer(0.1),
                name="fully_connected")
    """), "        ") in out
    # a graph statement's comment goes with it into the step methods, not also
    # into __init__; a placeholder's heads the graph code after it
    assert out.count("# get log probabilities") == 1
    assert out.count("# op to pick the best action") == 1
    assert textwrap.indent(textwrap.dedent("""\
        # training part of graph
        # log probs of the actions taken
        indices = tf.range(0, tf.shape(log_prob)[0]) * tf.shape(log_prob)[1] + _acts
    """), "            ") in out
    assert "        # update\n        self.optimizer = tf.compat.v1.train.RMSPropOptimizer(" in out
    assert not migrate_source(out, "pg_agent_graph_block.py").changed


@pytest.mark.parametrize("use", [
    "print(sess)\n",                                     # the session used otherwise
    "make = Actor\n",                                    # the class used as a value
])
def test_a_passed_session_that_cannot_go_keeps_compat_form(use):
    source = (DATA / "actor_critic_shared_session.py").read_text(encoding="utf-8")
    if use.startswith("print"):
        source = source.replace("        self.sess = sess\n", "        self.sess = sess\n"
                                "        print(sess)\n", 1)
    else:
        source += use
    r = migrate_source(source, "shared.py")
    assert r.mode == "compat"
    assert "TS106" in [c for c, _ in codes(r)], codes(r)


@pytest.mark.tf
@pytest.mark.slow
def test_the_shared_session_agents_compute_the_legacy_numbers_on_resource_variables(tmp_path):
    """TF1's actor update applies gradients to ref variables: an update of the last
    layer may land before the backward pass reads it. Run with resource variables
    (read once per run), the legacy program computes what the migrated one does."""
    from tapeshift.migrate.legacy.verify import verify_sources

    name = "actor_critic_shared_session.py"
    source = (DATA / name).read_text(encoding="utf-8")
    report = verify_sources(source, migrated(name).output, tmp_path / name, timeout=TIMEOUT,
                            legacy_resource_variables=True)
    assert report.status == "ok", report.to_text()
    assert report.legacy.resource_variables and not report.new.resource_variables
    printed = [row for row in report.rows if row.name.startswith("stdout:") and row.compared]
    assert len(printed) == 5, report.to_text()
    assert "legacy variables: resource variables" in report.to_text()


def test_a_scope_named_by_the_constructor_names_each_objects_variables():
    """`with tf.variable_scope(self.name):`, `m1 = Model(sess, "m1")`: TF1 named the
    variables m1/W1; the migrated class names them f"{self.name}/W1"."""
    r = migrated("named_scope_model.py")
    assert r.mode == "tape", codes(r)
    out = r.output
    assert 'self.W1 = tf.Variable(tf.compat.v1.glorot_uniform_initializer(seed=1)([4, 8]), ' \
           'name=f"{self.name}/W1")' in out
    assert "variable_scope" not in out and "tf.contrib" not in out
    assert 'm1 = Model("m1")' in out
    assert not migrate_source(out, "named_scope_model.py").changed


def test_a_scope_named_by_an_attribute_bound_again_stays_unconverted():
    source = (DATA / "named_scope_model.py").read_text(encoding="utf-8").replace(
        "    def predict(self, x_test):",
        "    def rename(self, name):\n        self.name = name\n\n    def predict(self, x_test):")
    r = migrate_source(source, "renamed.py")
    assert r.mode == "compat"
    assert any(f.code == "TS125" and "computed value" in f.message for f in r.findings), codes(r)


@pytest.mark.tf
@pytest.mark.slow
def test_the_named_scope_model_computes_the_legacy_numbers(tmp_path):
    from tapeshift.migrate.legacy.verify import verify_sources

    name = "named_scope_model.py"
    source = (DATA / name).read_text(encoding="utf-8")
    report = verify_sources(source, migrated(name).output, tmp_path / name, timeout=TIMEOUT,
                            align_random=True)
    assert report.status == "ok", report.to_text()
    assert sum(1 for row in report.rows if row.name.startswith("stdout:")) == 6


def test_a_ddpg_agent_opening_its_session_first_with_rows_of_soft_updates():
    r = migrated("ddpg_one_class.py")
    assert r.mode == "tape", codes(r)
    out = r.output
    for gone in ("tf.Session", "self.sess", "placeholder", "tf.assign", "get_collection"):
        assert gone not in out, gone
    # the session opened before the graph goes; the graph's variables stay in __init__
    assert "    def __init__(self, a_bound):\n\n        self.a_bound = a_bound\n" in out
    # the variable kept in a local of __init__ is the object's, read by the critic's step
    assert "        self.discount = tf.Variable(GAMMA, trainable=False)\n" in out
    assert "q_target = R + self.discount * q_" in out
    # each row of soft updates: an assign per target network, each row's new values
    assert "soft_replace = [[ta.assign((1 - TAU) * ta + TAU * ea)," in out
    assert "return [[v.numpy() for v in row] for row in soft_replace]" in out
    # the eval action `self.a` and the target actor's own local `a` stay apart
    assert "        self_a = tf.multiply(a, self.a_bound, name='scaled_a')\n" in out
    assert "tf.matmul(self_a, self.w1_a)" in out
    assert "tape.gradient(td_error, ce_params)" in out
    # the critic trained on the stored actions, fed in place of the actor's: a step of
    # its own that does not compute the actor (and `value` without the feed does)
    assert "def _run_ctrain_given_a(self, S, S_, R, self_a):" in out
    assert "self._run_ctrain_given_a(S=bs, self_a=ba, R=br, S_=bs_)" in out
    ctrain = out[out.index("def _run_ctrain_given_a"):out.index("return None", out.index(
        "def _run_ctrain_given_a"))]
    assert "self.eval_a(" not in ctrain and "self_a = tf.convert_to_tensor(self_a, tf.float32)" \
        in ctrain
    assert "return self._run_q(S=s)\n" in out
    assert "return self._run_q_given_a(S=s, self_a=a)\n" in out
    # the critic's last layer is built where it is made, on the width `n_l1` had there
    # (the target critic binds `n_l1` again later)
    assert "        self.eval_dense(tf_keras.Input([6]))\n" in out
    assert not migrate_source(out, "ddpg_one_class.py").changed


BUILT_BY_A_METHOD = '''\
import numpy as np
import tensorflow as tf


class Net:
    def __init__(self):
        self.x = tf.placeholder(tf.float32, [None, 2])
        {build}
        self.sess = tf.Session()
        self.sess.run(tf.global_variables_initializer())

    def _build(self, x, scale):
        w = tf.Variable(tf.ones([2, 1]) * scale)
        return tf.matmul(x, w)

    def run(self, x):
        return self.sess.run({fetch}, {{self.x: x}})
'''


def test_a_method_making_variables_called_by_the_graph_keeps_compat_form():
    # run again in the step method, `self._build` would make new variables at each call
    src = BUILT_BY_A_METHOD.format(
        build="self.eval = self._build(self.x, 1.0)\n        self.target = self._build(self.x, 2.0)",
        fetch="[self.eval, self.target]")
    r = migrate_source(src, "net.py")
    assert r.mode == "compat"
    assert any(f.code == "TS107" and f.line == 8 and "`self._build` creates a tf.Variable at "
               "every call" in f.message for f in r.findings), codes(r)


def test_a_method_called_once_keeps_its_variable_on_the_object():
    src = BUILT_BY_A_METHOD.format(build="self._make()", fetch="self.y").replace(
        "    def _build(self, x, scale):\n        w = tf.Variable(tf.ones([2, 1]) * scale)\n"
        "        return tf.matmul(x, w)\n",
        "    def _make(self):\n        w = tf.Variable(tf.ones([2, 1]))\n"
        "        self.y = tf.matmul(self.x, w)\n")
    r = migrate_source(src, "net.py")
    assert r.mode == "tape", codes(r)
    assert "    def _make(self):\n        self.w = tf.Variable(tf.ones([2, 1]))\n" in r.output
    assert "        y = tf.matmul(x, self.w)\n" in r.output


def test_a_local_variable_of_a_method_called_twice_stays_a_local():
    # as an attribute, it would hold the second call's variable only
    src = BUILT_BY_A_METHOD.format(build="self._make()\n        self._make()", fetch="self.y").replace(
        "    def _build(self, x, scale):\n        w = tf.Variable(tf.ones([2, 1]) * scale)\n"
        "        return tf.matmul(x, w)\n",
        "    def _make(self):\n        w = tf.Variable(tf.ones([2, 1]))\n"
        "        self.y = tf.matmul(self.x, w)\n")
    r = migrate_source(src, "net.py")
    assert not any(c.rule == "class-variable-locals" for c in r.changes), r.changes
    assert r.mode == "compat"


def test_a_hoisted_optimizers_comment_heads_it_once():
    source = textwrap.dedent("""\
        import tensorflow as tf


        class Net:
            def __init__(self):
                self.x = tf.placeholder(tf.float32, [None, 2])
                self.w = tf.Variable([[1.0], [2.0]])
                self.loss = tf.reduce_sum(tf.matmul(self.x, self.w))
                # the optimizer
                self.train = tf.train.GradientDescentOptimizer(0.1).minimize(self.loss)  # a step
                self.sess = tf.Session()
                self.sess.run(tf.global_variables_initializer())

            def learn(self, x):
                self.sess.run(self.train, {self.x: x})
    """)
    r = migrate_source(source, "net.py")
    assert r.mode == "tape", codes(r)
    assert "        # the optimizer\n        self.train_optimizer = " in r.output
    assert r.output.count("# the optimizer") == 1
    assert "self.train_optimizer.apply_gradients(zip(tape.gradient(loss, [self.w]), [self.w]))" \
        "  # a step\n" in r.output


def test_a_class_run_by_module_code_gets_public_step_methods():
    """The class holds no session; module code makes one agent and runs its graph
    (awjuliani-style contextual bandits)."""
    r = migrated("driven_bandit.py")
    assert r.mode == "tape", codes(r)
    out = r.output
    code = out.split('"""', 2)[2]  # (after the module's docstring)
    for gone in ("tf.Session", "sess:", "sess.run(init", "placeholder", "contrib", "tf_slim",
                 "init =", "trainable_variables()", "reset_default_graph"):
        assert gone not in code, gone
    # the step methods are called from outside: public names
    assert "    def run_chosen_action(self, state_in):\n" in out
    assert "    def run_update_weights(self, state_in, reward_holder, action_holder):\n" in out
    assert "        action = myAgent.run_chosen_action(state_in=[s])\n" in out
    assert "    _, ww = myAgent.run_update_weights(**feed_dict)\n" in out
    assert '    feed_dict = {"reward_holder": [reward], "action_holder": [action],\n' in out
    # __init__'s parameter the one-hot encoding reads is kept on the object
    assert "        self.s_size = s_size\n" in out
    assert "        state_in_OH = tf.one_hot(state_in, self.s_size)\n" in out
    # module code lists the agent's variables: its layer is built where __init__ makes it
    assert "weights = [*myAgent.output_layer.trainable_variables][0]\n" in out
    assert "        self.output_layer(tf_keras.Input([s_size]))" in out
    assert "        self.optimizer = tf.compat.v1.train.GradientDescentOptimizer(learning_rate=lr)\n" \
        in out
    assert not migrate_source(out, "driven_bandit.py").changed


@pytest.mark.parametrize("change, code, why", [
    # a graph value read by module code outside the session block
    (("print(ww)\n", "print(ww)\nprint(myAgent.output)\n"), "TS107",
     "`myAgent.output`, a graph value of `Agent`, is used outside the session block"),
    # the collection also holds a variable of the module's own
    (("weights = tf.trainable_variables()[0]\n",
      "bias = tf.Variable(0.0)\nweights = tf.trainable_variables()[0]\n"), "TS125",
     "holds the variables `myAgent` made and others"),
    # a collection read before the object is made, in the graph the class was read in
    (("tf.reset_default_graph()\nmyAgent = Agent(lr=0.1, s_size=3, a_size=4)\n",
      "before = tf.trainable_variables()\nmyAgent = Agent(lr=0.1, s_size=3, a_size=4)\n"),
     "TS125", "the variables objects of `Agent` make where they are made are not listed"),
    # a value module code computes from the object's variables, fetched at each run
    (("weights = tf.trainable_variables()[0]\n",
      "weights = tf.reduce_sum(tf.trainable_variables()[0])\n"), "TS107",
     "`weights`, fetched beside the values of `myAgent`, is computed by module code"),
    # the object's attribute named like a parameter the graph reads, set by module code
    (("print(ww)\n", "print(ww)\nmyAgent.s_size = 5\n"), "TS107",
     "`self.s_size` is taken (set outside the class)"),
    # a graph value read in the session block other than by a run: named as written
    (("        if i % 10 == 0:\n", "        print(myAgent.output)\n        if i % 10 == 0:\n"),
     "TS107", "`myAgent.output` is a graph value used after the graph is run"),
    # two objects, or the object made in the session block: the shape is said
    (("myAgent = Agent(lr=0.1, s_size=3, a_size=4)\n",
      "myAgent = Agent(lr=0.1, s_size=3, a_size=4)\nother = Agent(lr=0.2, s_size=3, a_size=4)\n"),
     "TS107", "module code makes several objects of `Agent` (myAgent, other)"),
    (("myAgent = Agent(lr=0.1, s_size=3, a_size=4)\nweights = tf.trainable_variables()[0]\n"
      "init = tf.global_variables_initializer()\n\nwith tf.Session() as sess:\n",
      "\nwith tf.Session() as sess:\n    myAgent = Agent(lr=0.1, s_size=3, a_size=4)\n"
      "    weights = tf.trainable_variables()[0]\n    init = tf.global_variables_initializer()\n"),
     "TS107", "`myAgent = Agent(...)` is not a statement before the session block in its body"),
])
def test_a_class_run_by_module_code_it_cannot_follow(change, code, why):
    source = (DATA / "driven_bandit.py").read_text(encoding="utf-8").replace(*change)
    r = migrate_source(source, "driven.py")
    assert r.mode == "compat"
    assert any(f.code == code and why in f.message for f in r.findings), \
        [(f.code, f.message) for f in r.findings]


def test_a_parameter_of_another_build_method_read_by_a_step_keeps_compat_form():
    source = textwrap.dedent("""\
        import tensorflow as tf


        class Net:
            def __init__(self):
                self._build(3)
                self.sess = tf.Session()

            def _build(self, depth):
                self.x = tf.placeholder(tf.int32, [None])
                self.y = tf.one_hot(self.x, depth)

            def encode(self, x):
                return self.sess.run(self.y, {self.x: x})
    """)
    r = migrate_source(source, "net.py")
    assert r.mode == "compat", r.output
    assert any("`depth`, a parameter of `_build`" in f.message for f in r.findings), codes(r)


def test_methods_passed_the_session_module_code_opened_lose_it():
    """`predict(self, sess, x)` runs the session it is passed, `act` passes it on;
    module code opened it and runs the agent's loss itself."""
    r = migrated("driven_passed_session.py")
    assert r.mode == "tape", codes(r)
    out = r.output
    code = out.split('"""', 2)[2]
    assert "sess" not in code.replace('"""sess.run(', "")
    assert "    def predict(self, context):\n" \
        "        return self.run_best_action(context_in=[context])[0]\n" in out
    assert "    def act(self, epsilon, context, rng):\n" in out
    assert "        return self.predict(context)\n" in out
    assert "    def train(self, context, action, reward):\n" in out
    assert "    action = agent.act(0.2, context, rng)\n" in out
    assert "        loss = agent.run_loss(action_in=[action], reward_in=[reward], " \
        "context_in=[context])\n" in out
    assert "print(agent.predict(0), agent.predict(1), agent.predict(2))\n" in out
    assert any("`act` no longer takes the session `sess`" in c.description for c in r.changes)
    assert not migrate_source(out, "driven_passed_session.py").changed


def test_an_agent_made_and_run_by_main():
    """`main()` makes the agent, lists its variables and opens the session it
    passes to the agent's methods: its body is read as module code's would be."""
    r = migrated("driven_in_main.py")
    assert r.mode == "tape", codes(r)
    out = r.output
    code = out.split('"""', 2)[2]
    assert "sess" not in code.replace('"""sess.run(', "")
    for gone in ("reset_default_graph", "global_variables_initializer", "placeholder"):
        assert gone not in code, gone
    assert "def main():\n" in out and "if __name__ == '__main__':\n    main()\n" in out
    assert "    agent = Agent()\n    n_variables = len([agent.W])\n" in out
    assert "        action = agent.act(0.2, context, rng)\n" in out
    assert "            loss = agent.run_loss(action_in=[action], reward_in=[reward], " \
        "context_in=[context])\n" in out
    assert "    print(n_variables, agent.predict(0), agent.predict(1), agent.predict(2))\n" in out
    assert not migrate_source(out, "driven_in_main.py").changed


def test_weights_from_a_helper_method_and_a_forward_method():
    """`self.W1 = self.init_weights(shape)` makes a variable (TF1's default var_list
    lists it); `self.forward(x)` computes with them (the tape watches that call)."""
    r = migrated("driven_xor_forward.py")
    assert r.mode == "tape", codes(r)
    out = r.output
    assert "        self.W1 = self.init_weights([2, 5])\n" in out
    assert "    def init_weights(self, shape):\n" \
        "        return tf.Variable(np.linspace(-1.0, 1.0, np.prod(shape))" in out
    assert "        with tf.GradientTape() as tape:\n" \
        "            logits = self.forward(input_ph)\n" in out
    assert "zip(tape.gradient(loss, [self.W1, self.b1, self.w2, self.b2]), " \
        "[self.W1, self.b1, self.w2, self.b2])" in out
    assert "        prediction = self.forward(input_ph, train=False)\n" \
        "        return prediction.numpy()\n" in out  # (forward returns tensors only)
    assert not migrate_source(out, "driven_xor_forward.py").changed


def _bandit_driven_under(header: str, after: str = "") -> str:
    """driven_bandit.py with its module code (from `bandits = ...` on) under ``header``."""
    source = (DATA / "driven_bandit.py").read_text(encoding="utf-8")
    head, tail = source.split("bandits = np.array")
    body = "\n".join("    " + line if line.strip() else line
                     for line in ("bandits = np.array" + tail).splitlines())
    return head + header + "\n" + body + "\n" + after


def test_an_agent_made_and_run_in_the_main_guard():
    r = migrate_source(_bandit_driven_under("if __name__ == '__main__':"), "guard.py")
    assert r.mode == "tape", codes(r)
    assert "\n    weights = [*myAgent.output_layer.trainable_variables][0]\n" in r.output
    assert "            action = myAgent.run_chosen_action(state_in=[s])\n" in r.output
    assert "tf.Session" not in r.output.split('"""', 2)[2]  # (after the docstring)


def test_a_local_of_main_fetched_beside_the_agents_values_keeps_compat_form():
    # the step method would read `weights`, a local of main(): NameError
    r = migrate_source(_bandit_driven_under("def main():", "\n\nmain()\n"), "in_main.py")
    assert r.mode == "compat"
    assert any(f.code == "TS107" and "`weights`, fetched beside the values of `myAgent`, is a "
               "local of `main()`" in f.message for f in r.findings), codes(r)


def test_a_method_passing_on_the_session_under_its_own_name():
    # act(self, session, ...) calls self.predict(session, ...): both lose it
    source = (DATA / "driven_passed_session.py").read_text(encoding="utf-8").replace(
        "    def act(self, sess, epsilon, context, rng):", "    def act(self, session, epsilon, context, rng):").replace(
        "        return self.predict(sess, context)\n", "        return self.predict(session, context)\n")
    r = migrate_source(source, "renamed.py")
    assert r.mode == "tape", codes(r)
    assert "    def act(self, epsilon, context, rng):\n" in r.output
    assert "        return self.predict(context)\n" in r.output
    assert "    action = agent.act(0.2, context, rng)\n" in r.output


def test_a_method_using_the_session_passed_otherwise_keeps_compat_form():
    source = (DATA / "driven_passed_session.py").read_text(encoding="utf-8").replace(
        "        return self.predict(sess, context)\n",
        "        print(sess)\n        return self.predict(sess, context)\n")
    r = migrate_source(source, "passed.py")
    assert r.mode == "compat"
    assert "TS106" in [c for c, _ in codes(r)], codes(r)


def test_the_session_passed_by_keyword_goes_too():
    source = (DATA / "driven_passed_session.py").read_text(encoding="utf-8").replace(
        "agent.train(sess, context, action, reward)",
        "agent.train(sess=sess, context=context, action=action, reward=reward)").replace(
        "return self.predict(sess, context)", "return self.predict(sess=sess, context=context)")
    r = migrate_source(source, "keyword.py")
    assert r.mode == "tape", codes(r)
    assert "agent.train(context=context, action=action, reward=reward)" in r.output
    assert "return self.predict(context=context)" in r.output


def test_a_collection_read_in_the_session_block_builds_the_layers():
    source = (DATA / "driven_bandit.py").read_text(encoding="utf-8").replace(
        "weights = tf.trainable_variables()[0]\n", "").replace(
        "    sess.run(init)\n", "    sess.run(init)\n    weights = tf.trainable_variables()[0]\n")
    r = migrate_source(source, "in_block.py")
    assert r.mode == "tape", codes(r)
    assert "\nweights = [*myAgent.output_layer.trainable_variables][0]\n" in r.output
    assert "        self.output_layer(tf_keras.Input([s_size]))" in r.output


def test_a_collection_read_after_a_reset_before_the_object_holds_none_of_its():
    source = (DATA / "driven_bandit.py").read_text(encoding="utf-8").replace(
        "myAgent = Agent(lr=0.1, s_size=3, a_size=4)\n",
        "before = tf.trainable_variables()\nmyAgent = Agent(lr=0.1, s_size=3, a_size=4)\n")
    r = migrate_source(source, "before.py")
    assert r.mode == "tape", codes(r)
    assert "\nbefore = []\n" in r.output


def test_a_run_of_variables_alone_is_their_numpy_values():
    r = migrate_source(AGENT.replace("{extra}", "\n    def weights(self):\n"
                                     "        return self.sess.run([self.w])\n"), "agent.py")
    assert r.mode == "tape", codes(r)
    assert "        return [self.w.numpy()]\n" in r.output


def test_module_code_that_only_passes_the_session_to_the_objects_methods():
    source = (DATA / "driven_passed_session.py").read_text(encoding="utf-8").replace(
        """            loss = sess.run(agent.loss, {
                agent.action_in: [action],
                agent.reward_in: [reward],
                agent.context_in: [context]
            })
            print('Step {}, Loss={}'.format(ep, loss))""", "            print('Step', ep)")
    r = migrate_source(source, "passes_only.py")
    assert r.mode == "tape", codes(r)
    assert "    agent.train(context, action, reward)\n" in r.output


def test_a_constant_of_module_code_fetched_beside_the_objects_values():
    # nothing it reads changes between runs: computed once, it is what TF1 computed
    source = (DATA / "driven_bandit.py").read_text(encoding="utf-8").replace(
        "weights = tf.trainable_variables()[0]\n",
        "weights = tf.trainable_variables()[0]\nscale = tf.constant([1.0, 2.0]) * 2.0\n").replace(
        "_, ww = sess.run([myAgent.update, weights]", "_, ww, sc = sess.run([myAgent.update, weights, scale]")
    r = migrate_source(source, "constant.py")
    assert r.mode == "tape", codes(r)
