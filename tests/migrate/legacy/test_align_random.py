"""``tapeshift verify --align-random``: TF random draws from one stateless stream in both runs.

Each TF test writes a small TF1 program and its TF2 counterpart by hand and
checks three things: without the option they MISMATCH, with it they agree
value by value, and the aligned values are exactly the stateless draws
``tf.random.stateless_*(shape, [seed, k])`` scaled to the distribution, with
``k`` the draw's order or, for a layer weight, ``name_key(variable name)``.
"""

import hashlib
import json
import math
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tapeshift.migrate.legacy import align_report, verify
from tapeshift.migrate.legacy.align import DEFAULT_SEED, NAME_KEY_BASE, layer_key, name_key
from tapeshift.migrate.legacy.report import ScriptRun, VerifyReport
from tapeshift.migrate.legacy.verify import run_captured, verify_sources


def _src(text: str) -> str:
    return textwrap.dedent(text)


def _write(path: Path, text: str) -> Path:
    path.write_text(_src(text))
    return path


def _row(out: str, name: str) -> str:
    match = re.search(rf"^{re.escape(name)}\s.*$", out, re.MULTILINE)
    assert match, f"no row {name!r} in:\n{out}"
    return match.group(0)


def _tf():
    """The expected draws, computed eagerly in this process."""
    import tensorflow as tf

    return tf


def _glorot_limit(fan_in: int, fan_out: int) -> float:
    # what init_ops.GlorotUniform (TF1) and tf_keras' GlorotUniform both compute
    return math.sqrt(3.0 * (1.0 / max(1.0, (fan_in + fan_out) / 2.0)))


def _verify_both_ways(legacy: str, new: str, path: Path, **kwargs):
    plain = verify_sources(_src(legacy), _src(new), path, **kwargs)
    aligned = verify_sources(_src(legacy), _src(new), path, align_random=True, **kwargs)
    return plain, aligned


# -- quick: no TensorFlow ------------------------------------------------------

def test_name_keys_are_sha256_of_the_name_above_every_order_count():
    key = name_key("Discriminator/l/kernel")
    digest = hashlib.sha256(b"Discriminator/l/kernel").digest()
    assert key == (1 << 62) | (int.from_bytes(digest[:8], "big") >> 2)
    assert NAME_KEY_BASE <= key < 2**63          # an int64, never an order count n
    assert name_key("Discriminator/l/kernel", 1) == name_key("Discriminator/l/kernel#1") != key
    assert name_key("Discriminator/l/bias") != key
    assert DEFAULT_SEED == 0


def _record(**kw):
    base = {"seed": 0, "order_draws": 0, "created": 0, "weights": {}, "unaligned": {},
            "failed": {}, "stateless": {}, "traced": 0, "repeated": {}, "in_loops": [],
            "in_functions": [], "renamed": []}
    return {**base, **kw}


def test_causes_from_the_two_records():
    same = _record(order_draws=3, created=3, weights={"Net/l1/kernel": 1})
    assert align_report.causes(same, _record(order_draws=3, weights={"Net/l1/kernel": 1})) == {}

    # a graph op run at every step is keyed by each run: drawn as often as the new run, no cause
    repeated = align_report.causes(
        _record(order_draws=5, created=2, run_draws=5,
                repeated={"dropout/random_uniform/RandomUniform": 4}),
        _record(order_draws=5, drew_at={"s.py:8": 4}))
    assert repeated == {}

    loop = align_report.causes(_record(order_draws=2, in_loops=["while/RandomUniform"]),
                               _record(order_draws=2))
    assert list(loop) == [align_report.PER_STEP]
    assert "legacy has random ops in a while_loop: while/RandomUniform" in loop[align_report.PER_STEP]

    fewer = align_report.causes(_record(order_draws=3), _record(order_draws=1))
    assert list(fewer) == [align_report.DRAW_COUNT]
    more = align_report.causes(_record(order_draws=2, run_draws=2),
                               _record(order_draws=5, drew_at={"s.py:8": 4}))
    assert list(more) == [align_report.DRAW_COUNT]
    assert more[align_report.DRAW_COUNT].startswith(
        "random draw counts (the legacy run drew 2 keyed by order, the new run 5; new drew by "
        "order more than once at s.py:8 (4 draws)): draws are keyed by their position")

    other = align_report.causes(
        _record(weights={"Net/l1/kernel": 1}),
        _record(weights={"kernel": 1}, unaligned={"UniformCandidateSampler": 2},
                stateless={"StatelessRandomUniformV2": 1}, renamed=[["a/w", "a/w_1"]]))
    assert list(other) == [align_report.UNALIGNED, align_report.STATELESS, align_report.WEIGHT_NAMES]
    assert "new: UniformCandidateSampler x2" in other[align_report.UNALIGNED]
    assert "only in legacy: Net/l1/kernel; only in new: kernel; new keyed a/w but named the " \
           "variable a/w_1" in other[align_report.WEIGHT_NAMES]


def test_report_blames_align_causes_not_random_ops_when_aligned():
    def run(role, align, ops):
        r = ScriptRun(role, Path("s.py"), [], 0, "", "", 0.0, random_ops=ops, align=align)
        r.values, r.dtypes = {"w": np.array([1.0, 2.0])}, {"w": "float32"}
        return r

    legacy = run("legacy", _record(order_draws=1, created=1, run_draws=1), {"RandomUniform": 1})
    new = run("new", _record(order_draws=3), {"RandomUniform": 3})
    new.values["w"] = np.array([1.0, 2.5])
    report = verify.compare_runs(legacy, new)
    assert report.align_random and not report.random_ops_differ
    assert report.random_causes == [align_report.DRAW_COUNT]
    text = report.to_text()
    assert "MISMATCH (random draw counts)" in _row(text, "w")
    assert ("aligned random draws (--align-random, stream seed 0): legacy: 1 keyed by order "
            "(1 in session runs), 0 by layer weight name; new: 3 keyed by order (run), 0 by layer "
            "weight name") in text
    assert "random ops used" not in text
    assert report.to_dict()["align_random"] == 0

    unaligned = VerifyReport(run("legacy", {}, {"RandomUniform": 1}), new)
    assert not unaligned.align_random and unaligned.random_ops_differ


def test_the_option_reaches_both_runs_with_its_seed(monkeypatch, tmp_path):
    calls = []

    def fake_run(script, args=(), **kwargs):
        calls.append(kwargs)
        return ScriptRun("legacy" if kwargs["legacy"] else "new", Path(script), [], 0, "", "", 0.0)

    monkeypatch.setattr(verify, "run_captured", fake_run)
    a, b = _write(tmp_path / "a.py", "x = 1\n"), _write(tmp_path / "b.py", "x = 1\n")
    verify.main([str(a), str(b), "--align-random"])
    verify.main([str(a), str(b), "--align-random", "--seed", "7"])
    verify.main([str(a), str(b), "--seed", "7"])
    assert [(c["seed"], c["align_random"]) for c in calls] == [
        (None, 0), (None, 0), (7, 7), (7, 7), (7, None), (7, None)]


def test_runner_command_carries_the_stream_seed(tmp_path, monkeypatch):
    seen = []

    def popen(cmd, **kwargs):
        seen.append(cmd)
        raise OSError("not started")

    monkeypatch.setattr(verify.subprocess, "Popen", popen)
    run = run_captured(_write(tmp_path / "s.py", "x = 1\n"), legacy=True, seed=3, align_random=3,
                       warm=False)  # the command a fresh interpreter gets
    assert run.failed
    [cmd] = seen
    end = cmd.index("--", 3)
    assert cmd[end - 4:end] == ["--seed", "3", "--align-random", "3"]


# -- the programs ------------------------------------------------------------

XOR_TF1 = """\
    import numpy as np
    import tensorflow as tf

    X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], np.float32)
    Y = np.array([[0], [1], [1], [0]], np.float32)
    x = tf.placeholder(tf.float32, [None, 2])
    y = tf.placeholder(tf.float32, [None, 1])
    W1 = tf.Variable(tf.random_uniform([2, 4], -1.0, 1.0))
    b1 = tf.Variable(tf.zeros([4]))
    W2 = tf.Variable(tf.random_normal([4, 1], stddev=0.5))
    b2 = tf.Variable(tf.zeros([1]))
    h = tf.nn.sigmoid(tf.matmul(x, W1) + b1)
    out = tf.matmul(h, W2) + b2
    loss = tf.reduce_mean(tf.square(out - y))
    train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        W1_0, W2_0 = sess.run([W1, W2])
        for _ in range(5):
            _, final_loss = sess.run([train, loss], {x: X, y: Y})
    print(final_loss)
    """
XOR_TF2 = """\
    import numpy as np
    import tensorflow as tf

    X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], np.float32)
    Y = np.array([[0], [1], [1], [0]], np.float32)
    W1 = tf.Variable(tf.random.uniform([2, 4], -1.0, 1.0))
    b1 = tf.Variable(tf.zeros([4]))
    W2 = tf.Variable(tf.random.normal([4, 1], stddev=0.5))
    b2 = tf.Variable(tf.zeros([1]))
    W1_0, W2_0 = W1.numpy(), W2.numpy()
    for _ in range(5):
        with tf.GradientTape() as tape:
            h = tf.nn.sigmoid(tf.matmul(X, W1) + b1)
            out = tf.matmul(h, W2) + b2
            loss = tf.reduce_mean(tf.square(out - Y))
        final_loss = loss.numpy()
        for v, g in zip([W1, b1, W2, b2], tape.gradient(loss, [W1, b1, W2, b2])):
            v.assign_sub(0.5 * g)
    print(final_loss)
    """


@pytest.mark.slow
@pytest.mark.tf
def test_xor_net_mismatches_without_and_agrees_with_align_random(tmp_path):
    plain, aligned = _verify_both_ways(XOR_TF1, XOR_TF2, tmp_path / "xor.py", seed=7)
    assert plain.status == "mismatch" and "random ops" in plain.random_causes
    assert aligned.status == "ok", aligned.to_text()
    for name in ("W1", "b1", "W2", "b2", "W1_0", "W2_0", "final_loss", "stdout:1"):
        assert _row(aligned.to_text(), name).endswith("ok")
    # --seed 7 keys the stream: the n-th draw is [7, n], in the TF1 graph and eagerly alike
    tf = _tf()
    w1 = tf.random.stateless_uniform([2, 4], [7, 0], -1.0, 1.0).numpy()
    w2 = tf.random.stateless_normal([4, 1], [7, 1], stddev=0.5).numpy()
    for run in (aligned.legacy, aligned.new):
        assert np.array_equal(run.values["W1_0"], w1) and np.array_equal(run.values["W2_0"], w2)
        assert run.align["seed"] == 7 and run.align["order_draws"] == 2
    assert aligned.legacy.align["created"] == 2 and aligned.new.align["created"] == 0
    assert aligned.to_dict()["align_random"] == 7


GET_VARIABLE_TF1 = """\
    import tensorflow as tf
    with tf.variable_scope("Net"):
        w = tf.get_variable("w", [2, 3])
        v = tf.get_variable("v", [3], initializer=tf.truncated_normal_initializer(stddev=0.1))
        u = tf.get_variable("u", [4], dtype=tf.float64,
                            initializer=tf.random_uniform_initializer(-2.0, 2.0, dtype=tf.float64))
    ints = tf.random_uniform([6], 0, 10, dtype=tf.int64)
    shuffled = tf.random_shuffle(tf.range(8))
    samples = tf.multinomial(tf.log([[0.2, 0.3, 0.5]]), 5)
    gamma = tf.random_gamma([3], [1.0, 2.0])
    poisson = tf.random_poisson([1.5, 4.0], [3])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        ints_, shuffled_, samples_, gamma_, poisson_ = sess.run(
            [ints, shuffled, samples, gamma, poisson])
    """
GET_VARIABLE_TF2 = """\
    import tensorflow as tf
    w = tf.Variable(tf.compat.v1.glorot_uniform_initializer()([2, 3]), name="Net/w")
    v = tf.Variable(tf.compat.v1.truncated_normal_initializer(stddev=0.1)([3]), name="Net/v")
    u = tf.Variable(tf.compat.v1.random_uniform_initializer(-2.0, 2.0, dtype=tf.float64)(
        [4], dtype=tf.float64), name="Net/u")
    ints_ = tf.random.uniform([6], 0, 10, dtype=tf.int64).numpy()
    shuffled_ = tf.random.shuffle(tf.range(8)).numpy()
    samples_ = tf.random.categorical(tf.math.log([[0.2, 0.3, 0.5]]), 5).numpy()
    gamma_ = tf.random.gamma([3], [1.0, 2.0]).numpy()
    poisson_ = tf.random.poisson([3], [1.5, 4.0]).numpy()
    """


@pytest.mark.slow
@pytest.mark.tf
def test_get_variable_initializers_and_every_distribution(tmp_path):
    plain, aligned = _verify_both_ways(GET_VARIABLE_TF1, GET_VARIABLE_TF2, tmp_path / "gv.py")
    assert plain.status == "mismatch"
    assert aligned.status == "ok", aligned.to_text()
    assert {r.name for r in aligned.rows if r.status == "ok"} >= {
        "w", "v", "u", "ints_", "shuffled_", "samples_", "gamma_", "poisson_"}
    tf = _tf()
    limit = _glorot_limit(2, 3)
    expected = {
        "w": tf.random.stateless_uniform([2, 3], [0, 0], -limit, limit),
        "v": tf.random.stateless_truncated_normal([3], [0, 1], stddev=0.1),
        "u": tf.random.stateless_uniform([4], [0, 2], -2.0, 2.0, dtype=tf.float64),
        "ints_": tf.random.stateless_uniform([6], [0, 3], 0, 10, dtype=tf.int64),
        "shuffled_": tf.random.experimental.stateless_shuffle(tf.range(8), [0, 4]),
        "samples_": tf.random.stateless_categorical(tf.math.log([[0.2, 0.3, 0.5]]), 5, [0, 5]),
        "gamma_": tf.random.stateless_gamma([3, 2], [0, 6], [1.0, 2.0]),
        "poisson_": tf.random.stateless_poisson([3, 2], [0, 7], [1.5, 4.0], dtype=tf.float32),
    }
    for run in (aligned.legacy, aligned.new):
        for name, value in expected.items():
            got = run.values[name]
            assert got.dtype == value.numpy().dtype, (run.role, name)
            assert np.array_equal(got, value.numpy()), (run.role, name, got, value.numpy())
    assert aligned.legacy.align["by_op"] == aligned.new.align["by_op"] == {
        "Multinomial": 1, "RandomGamma": 1, "RandomPoissonV2": 1, "RandomShuffle": 1,
        "RandomUniform": 2, "RandomUniformInt": 1, "TruncatedNormal": 1}


LAYERS_TF1 = """\
    import numpy as np
    import tensorflow as tf

    X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], np.float32)
    x = tf.placeholder(tf.float32, [None, 2])

    def net(inp, reuse=False):
        with tf.variable_scope("Net", reuse=reuse):
            h = tf.layers.dense(inp, 8, tf.nn.relu, name="l1")
            h = tf.layers.dense(h, 8, tf.nn.relu, name="l2")
            return tf.layers.dense(h, 1, name="out")

    y1 = net(x)
    y2 = net(x * 2.0, reuse=True)
    noise = tf.random_normal([3])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out1, out2, noise_ = sess.run([y1, y2, noise], {x: X})
        k_l1, k_l2, k_out = sess.run(
            [v for v in tf.trainable_variables() if v.name.endswith("kernel:0")])
    """
LAYERS_TF2 = """\
    import numpy as np
    import tensorflow as tf
    import tf_keras

    X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], np.float32)
    out_layer = tf_keras.layers.Dense(1, name="Net/out")
    l2 = tf_keras.layers.Dense(8, tf.nn.relu, name="Net/l2")
    l1 = tf_keras.layers.Dense(8, tf.nn.relu, name="Net/l1")
    out_layer(tf.zeros([1, 8]))   # the last TF1 layer is built first here,
    l2(tf.zeros([1, 8]))

    @tf.function
    def net(inp):                 # and the first one lazily, inside a tf.function
        return out_layer(l2(l1(inp)))

    out1 = net(X).numpy()
    out2 = net(X * 2.0).numpy()
    noise_ = tf.random.normal([3]).numpy()
    k_l1, k_l2, k_out = l1.kernel.numpy(), l2.kernel.numpy(), out_layer.kernel.numpy()
    """


@pytest.mark.slow
@pytest.mark.tf
def test_tf_layers_under_a_reused_scope_align_with_keras_dense_named_by_it(tmp_path):
    plain, aligned = _verify_both_ways(LAYERS_TF1, LAYERS_TF2, tmp_path / "layers.py")
    assert plain.status == "mismatch"
    assert aligned.status == "ok", aligned.to_text()
    for name in ("out1", "out2", "noise_", "k_l1", "k_l2", "k_out"):
        assert _row(aligned.to_text(), name).endswith("ok")
    names = {"k_l1": ("Net/l1/kernel", 2, 8), "k_l2": ("Net/l2/kernel", 8, 8),
             "k_out": ("Net/out/kernel", 8, 1)}
    tf = _tf()
    for run in (aligned.legacy, aligned.new):
        # weights by name (whatever the build order), the one other draw by order: n = 0
        assert run.align["weights"] == {n: 1 for n, _, _ in names.values()}
        assert run.align["order_draws"] == 1 and run.align["renamed"] == []
        for value, (var, fan_in, fan_out) in names.items():
            limit = _glorot_limit(fan_in, fan_out)
            want = tf.random.stateless_uniform([fan_in, fan_out], [0, name_key(var)], -limit, limit)
            assert np.array_equal(run.values[value], want.numpy()), (run.role, value)
        assert np.array_equal(run.values["noise_"], tf.random.stateless_normal([3], [0, 0]).numpy())


DROPOUT_TF1 = """\
    import numpy as np
    import tensorflow as tf
    X = np.ones([4, 3], np.float32)
    W = tf.Variable(tf.random_normal([3, 2]))
    h = tf.nn.dropout(tf.matmul(X, W), keep_prob=0.5)
    loss = tf.reduce_sum(tf.square(h))
    train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        W0 = sess.run(W)
        for _ in range(4):
            sess.run(train)
        W_final = sess.run(W)
    """
DROPOUT_TF2 = """\
    import numpy as np
    import tensorflow as tf
    X = np.ones([4, 3], np.float32)
    W = tf.Variable(tf.random.normal([3, 2]))
    W0 = W.numpy()
    for _ in range(4):
        with tf.GradientTape() as tape:
            h = tf.nn.dropout(tf.matmul(X, W), rate=0.5)
            loss = tf.reduce_sum(tf.square(h))
        W.assign_sub(0.01 * tape.gradient(loss, W))
    W_final = W.numpy()
    """


@pytest.mark.slow
@pytest.mark.tf
def test_per_step_dropout_draws_the_same_masks_in_both_runs(tmp_path, capsys):
    legacy = _write(tmp_path / "drop_tf1.py", DROPOUT_TF1)
    new = _write(tmp_path / "drop_tf2.py", DROPOUT_TF2)
    assert verify.main([str(legacy), str(new), "--align-random"]) == 0
    out = capsys.readouterr().out
    assert _row(out, "W0").endswith("ok")       # the initial value, drawn by the initializer's run
    assert _row(out, "W_final").endswith("ok")  # and the dropout mask of each of the 4 steps
    # the legacy graph's 2 random ops ran 5 times in all, each run keyed in creation order
    assert ("legacy: 5 keyed by order (5 in session runs), 0 by layer weight name; new: 5 keyed "
            "by order (run), 0 by layer weight name") in out


@pytest.mark.slow
@pytest.mark.tf
def test_a_session_run_keys_its_random_ops_in_creation_order(tmp_path):
    """Each run gives the random ops it executes the next counts, in the order they were made;
    an op no run executes takes none."""
    legacy = _write(tmp_path / "runs.py", """\
        import tensorflow as tf
        x = tf.placeholder(tf.float32, [2])
        unused = tf.random_uniform([2])                       # created, never run: no count
        late = tf.random_uniform([2]) + x                     # created 2nd, run 2nd in a run
        w = tf.Variable(tf.random_normal([2]))                # drawn by the initializer: 0
        early = tf.random_normal([2]) * w                     # created 4th
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            first = sess.run([early, late], feed_dict={x: [1.0, 1.0]})     # late 1, early 2
            second = sess.run(late, feed_dict={x: [1.0, 1.0]})             # 3
            fed = sess.run(late, feed_dict={late: [5.0, 5.0]})              # fed: nothing drawn
            third = sess.run(early)                                        # 4
        """)
    run = run_captured(legacy, legacy=True, align_random=3)
    assert not run.failed, run.stderr
    tf = _tf()

    def uniform(k):
        return tf.random.stateless_uniform([2], [3, k]).numpy()

    def normal(k):
        return tf.random.stateless_normal([2], [3, k]).numpy()

    w = normal(0)
    assert np.array_equal(run.values["first"][1], uniform(1) + 1.0)
    assert np.array_equal(run.values["first"][0], normal(2) * w)
    assert np.array_equal(run.values["second"], uniform(3) + 1.0)
    assert np.array_equal(run.values["fed"], [5.0, 5.0])
    assert np.array_equal(run.values["third"], normal(4) * w)
    assert run.align["order_draws"] == 5 and run.align["run_draws"] == 5
    assert run.align["run_unplanned"] == 0 and run.align["created"] == 4


@pytest.mark.slow
@pytest.mark.tf
def test_an_unaligned_random_op_is_named(tmp_path):
    legacy = """\
        import tensorflow as tf
        a = tf.Variable(tf.random_normal([2]))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            a_ = sess.run(a)
        """
    new = """\
        import tensorflow as tf
        g = tf.random.Generator.from_seed(1)
        a_ = g.normal([2]).numpy()
        """
    report = verify_sources(_src(legacy), _src(new), tmp_path / "gen.py", align_random=True)
    assert report.status == "mismatch"
    assert align_report.UNALIGNED in report.random_causes
    assert report.new.align["unaligned"] == {"StatelessRandomNormalV2 (tf.random.Generator)": 1}
    text = report.to_text()
    assert ("unaligned random ops (new: StatelessRandomNormalV2 (tf.random.Generator)): "
            "--align-random cannot make these draw from its stream") in text
    assert "not aligned: StatelessRandomNormalV2 (tf.random.Generator)" in text


@pytest.mark.slow
@pytest.mark.tf
def test_new_run_keys_by_execution_and_legacy_run_by_creation(tmp_path):
    """One run of each role: tf.function, Keras 2 initialisers and Dropout, while_loop, tf.data."""
    new = _write(tmp_path / "new.py", """\
        import tensorflow as tf
        import tf_keras
        a = tf.random.uniform([2]).numpy()                       # n = 0, eagerly

        @tf.function
        def f():
            return tf.random.normal([2]), tf.random.uniform([2])

        first = [t.numpy() for t in f()]                         # n = 1, 2 as the trace runs
        second = [t.numpy() for t in f()]                        # n = 3, 4: the next call
        glorot = tf_keras.initializers.GlorotUniform()([2, 2]).numpy()   # n = 5
        # in a layer's call: keyed by the layer (dropout, draw 0, run 0), not by order
        dropped = tf_keras.layers.Dropout(0.5)(tf.ones([4]), training=True).numpy()
        b = tf.random.uniform([2]).numpy()                       # n = 6
        """)
    run = run_captured(new, legacy=False, align_random=5)
    assert not run.failed, run.stderr
    tf = _tf()
    limit = _glorot_limit(2, 2)
    assert np.array_equal(run.values["a"], tf.random.stateless_uniform([2], [5, 0]).numpy())
    assert np.array_equal(run.values["first"][0], tf.random.stateless_normal([2], [5, 1]).numpy())
    assert np.array_equal(run.values["first"][1], tf.random.stateless_uniform([2], [5, 2]).numpy())
    assert np.array_equal(run.values["second"][0], tf.random.stateless_normal([2], [5, 3]).numpy())
    assert np.array_equal(run.values["second"][1], tf.random.stateless_uniform([2], [5, 4]).numpy())
    assert np.array_equal(run.values["glorot"],
                          tf.random.stateless_uniform([2, 2], [5, 5], -limit, limit).numpy())
    keep = tf.random.stateless_uniform([4], [5, layer_key("dropout", 0, 0)]).numpy() >= 0.5
    assert np.array_equal(run.values["dropped"], np.where(keep, 2.0, 0.0).astype(np.float32))
    assert np.array_equal(run.values["b"], tf.random.stateless_uniform([2], [5, 6]).numpy())
    assert run.align["order_draws"] == 7 and run.align["traced"] == 2
    assert run.align["layer_draws"] == {"dropout#0": 1}
    assert run.align["unaligned"] == {} and run.align["stateless"] == {}

    legacy = _write(tmp_path / "legacy.py", """\
        import tensorflow as tf
        loop = tf.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s + tf.random_uniform([])),
                             [tf.constant(0), tf.constant(0.0)])
        noisy = tf.data.Dataset.range(3).map(lambda x: tf.random_normal([]))
        element = tf.data.make_one_shot_iterator(noisy).get_next()
        with tf.Session() as sess:
            looped = sess.run(loop)[1]
            elements = [sess.run(element) for _ in range(3)]
        """)
    run = run_captured(legacy, legacy=True, align_random=0)
    assert not run.failed, run.stderr
    # tf.data's function graph is keyed once, when created (n = 0): each element gets that draw;
    # the loop's op is keyed as each pass runs (n = 1, 2, 3)
    assert len(set(run.values["elements"].tolist())) == 1
    assert run.values["elements"][0] == tf.random.stateless_normal([], [0, 0]).numpy()
    u = [tf.random.stateless_uniform([], [0, k]).numpy() for k in (1, 2, 3)]
    assert run.values["looped"] == np.float32(np.float32(np.float32(u[0]) + u[1]) + u[2])
    assert run.align["in_loops"] == ["while/random_uniform/RandomUniform"]
    assert len(run.align["in_functions"]) == 1 and run.align["created"] == 2
    assert run.align["function_created"] == 1
    # executions counted as they ran: the loop's op 3 times in one session run, each keyed
    # as it ran (an op in a while_loop is not planned)
    assert run.align["repeated"] == {"while/random_uniform/RandomUniform": 3}
    assert run.align["run_draws"] == 3 and run.align["run_unplanned"] == 3


@pytest.mark.slow
@pytest.mark.tf
def test_migrate_verify_passes_align_random_through(tmp_path):
    script = _write(tmp_path / "xor.py", XOR_TF1)
    from tapeshift.migrate.commands.cli import main

    reports = {}
    for extra in ((), ("--align-random",)):
        path = tmp_path / f"report{len(extra)}.json"
        assert main(["migrate", "--verify", "--check", "--no-cache", "-j", "1", "--format", "json",
                     "--report", str(path), *extra, str(script)]) == 1  # --check: it would change
        [entry] = json.loads(path.read_text())["files"]
        reports[extra] = entry["verify"]
    assert reports[()]["status"] == "mismatch" and reports[()]["align_random"] is None
    assert reports[("--align-random",)]["status"] == "ok"
    assert reports[("--align-random",)]["align_random"] == 0


@pytest.mark.slow
@pytest.mark.tf
def test_a_layer_built_by_hand_names_its_weight_kernel_and_verify_says_so(tmp_path):
    new = _write(tmp_path / "built.py", """\
        import tf_keras
        out_layer = tf_keras.layers.Dense(1, name="Net/out")
        out_layer.build((None, 8))    # outside __call__: no name scope, the variable is `kernel`
        kernel = out_layer.kernel.numpy()
        """)
    run = run_captured(new, legacy=False, align_random=0)
    assert not run.failed, run.stderr
    assert run.align["weights"] == {"kernel": 1} and run.align["renamed"] == []
    legacy = _record(weights={"Net/out/kernel": 1})
    causes = align_report.causes(legacy, run.align)
    assert list(causes) == [align_report.WEIGHT_NAMES]
    assert causes[align_report.WEIGHT_NAMES].startswith(
        "unmatched weight names (only in legacy: Net/out/kernel; only in new: kernel)")


@pytest.mark.slow
@pytest.mark.tf
def test_a_cond_branch_not_taken_and_a_run_that_raises_use_no_count(tmp_path):
    """A random op in a tf.cond branch is keyed when it runs, so an evaluation run that
    skips it leaves the next training run's count alone; a run that fails before any
    op it planned ran gives its counts back."""
    legacy = _write(tmp_path / "cond.py", """\
        import numpy as np
        import tensorflow as tf
        training = tf.placeholder(tf.bool, [])
        x = tf.ones([2])
        h = tf.cond(training, lambda: x * tf.random_uniform([2]), lambda: x)   # in a branch
        def fail():
            raise ValueError("end of data")
        failed = tf.py_func(fail, [], tf.int32)
        noise = tf.random_normal(tf.reshape(failed, [1]))     # planned, runs after `failed`
        with tf.Session() as sess:
            first = sess.run(h, {training: True})      # drawn as it runs: 0
            skipped = sess.run(h, {training: False})   # not drawn, no count
            try:
                sess.run(noise)                        # plans 1 for noise, then raises
            except Exception:
                pass
            second = sess.run(h, {training: True})     # 1 again
        """)
    run = run_captured(legacy, legacy=True, align_random=0)
    assert not run.failed, run.stderr
    tf = _tf()
    assert np.array_equal(run.values["first"], tf.random.stateless_uniform([2], [0, 0]).numpy())
    assert np.array_equal(run.values["skipped"], [1.0, 1.0])
    assert np.array_equal(run.values["second"], tf.random.stateless_uniform([2], [0, 1]).numpy())
    assert run.align["order_draws"] == 2 and run.align["run_unplanned"] == 2
