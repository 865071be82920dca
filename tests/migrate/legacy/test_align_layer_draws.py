"""``--align-random``: draws in a Keras layer's call are keyed by layer and execution.

A TF1 ``tf.layers.dropout`` op is created once and run at every training step;
its migration calls a ``tf_keras.layers.Dropout`` object at every step. Both
are keyed ``[seed, layer_key(name, index, count)]``: the layer's full name, the
draw's index within the call and how many times that draw ran before. The TF
tests check the values bit for bit against ``tf.random.stateless_*`` with
those keys, in a TF1 graph (count from a py_func that runs only when the
``tf.cond`` branch does), eagerly and inside ``tf.function``; and that a
dropout network and its migration verify equal with the masks changing at each
step in both runs.
"""

import hashlib
import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tapeshift.migrate.legacy import align_report
from tapeshift.migrate.legacy.align import (
    LAYER_KEY_BASE,
    NAME_KEY_BASE,
    layer_key,
    layer_name,
    name_key,
)
from tapeshift.migrate.legacy.verify import run_captured, verify_sources

DATA = Path(__file__).parent / "data" / "align"


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


def _record(**kw):
    base = {"seed": 0, "order_draws": 0, "created": 0, "weights": {}, "layer_draws": {},
            "layer_shared": {}, "unaligned": {}, "failed": {}, "stateless": {}, "traced": 0,
            "repeated": {}, "drew_at": {}, "in_loops": [], "in_functions": [], "renamed": []}
    return {**base, **kw}


def _uniform(shape, k, seed=0):
    import tensorflow as tf

    return tf.random.stateless_uniform(shape, [seed, k]).numpy()


def _normal(shape, k, stddev=1.0, seed=0):
    import tensorflow as tf

    return tf.random.stateless_normal(shape, [seed, k], stddev=stddev).numpy()


def _dropped(shape, name, count, rate=0.5, index=0, seed=0):
    """tf.nn.dropout of ones keyed by the layer draw: 1/(1-rate) where kept, else 0."""
    keep = _uniform(shape, layer_key(name, index, count), seed) >= rate
    return np.where(keep, np.float32(1.0 / (1.0 - rate)), np.float32(0.0)).astype(np.float32)


# -- quick: no TensorFlow ------------------------------------------------------

def test_layer_keys_are_negative_name_hash_plus_count():
    digest = hashlib.sha256(b"net/dropout#0").digest()
    h = int.from_bytes(digest[:4], "big") >> 1
    assert layer_key("net/dropout", 0, 0) == -(2**63) + (h << 32) == LAYER_KEY_BASE + (h << 32)
    assert layer_key("net/dropout", 0, 7) == layer_key("net/dropout", 0, 0) + 7
    second = int.from_bytes(hashlib.sha256(b"net/dropout#1").digest()[:4], "big") >> 1
    assert layer_key("net/dropout", 1, 3) == -(2**63) + (second << 32) + 3
    for name in ("dropout", "dropout_1", "net/dropout", "Net/l1/kernel"):
        for index in (0, 1):
            for count in (0, 1, 2**32 - 1):
                k = layer_key(name, index, count)
                # an int64 below 0: never an order count (>= 0) nor a name key (>= 2**62)
                assert -(2**63) <= k < 0 and k != name_key(name, index)
    assert NAME_KEY_BASE <= name_key("dropout") < 2**63
    assert len({layer_key(f"dropout_{i}", 0, 0) >> 32 for i in range(200)}) == 200


def test_layer_name_is_a_tf_layers_scope_else_the_keras_name():
    class Scope:
        name = "net/dropout"

    class Legacy:               # tf.layers.dropout: layer.name is a global uid, _scope the scope
        name, _scope, _keras_style = "dropout_3", Scope(), False

    class Keras:                # tf_keras.layers.Dropout(name="net/dropout")
        name = "net/dropout"

    class KerasStyle(Legacy):   # a legacy layer in Keras style keeps its Keras name
        _keras_style = True

    assert layer_name(Legacy()) == "net/dropout"
    assert layer_name(Keras()) == "net/dropout"
    assert layer_name(KerasStyle()) == "dropout_3"


def test_layer_draw_counts_are_compared_between_the_runs():
    same = {"dropout#0": 6, "net/drop#0": 6}
    assert align_report.causes(_record(layer_draws=same), _record(layer_draws=dict(same))) == {}
    causes = align_report.causes(
        _record(layer_draws={"dropout#0": 6, "net/dropout#0": 6},
                layer_shared={"net/dropout#0": 2}),
        _record(layer_draws={"dropout#0": 5, "dropout_1#0": 6}))
    assert list(causes) == [align_report.LAYER_DRAWS]
    assert causes[align_report.LAYER_DRAWS].startswith(
        "layer draw counts (dropout#0 ran 6 times in legacy, 5 in new; only in legacy: "
        "net/dropout#0; only in new: dropout_1#0; legacy graph ops sharing a layer's name "
        "(a reused scope), counted in the order TensorFlow runs them: net/dropout#0 (2 ops)): "
        "a draw in a Keras layer's call is keyed by the layer's full name")


def test_per_step_cause_names_loops_and_function_graphs():
    causes = align_report.causes(
        _record(order_draws=5, created=2, run_draws=4, function_created=1,
                repeated={"while/random_uniform/RandomUniform": 3},
                in_loops=["while/random_uniform/RandomUniform"],
                in_functions=["MapDataset/random_normal"]),
        _record(order_draws=5, drew_at={"drop_tf2.py:9": 4}))
    assert list(causes) == [align_report.PER_STEP]
    assert causes[align_report.PER_STEP].startswith(
        "per-step random ops (legacy has random ops in a while_loop: "
        "while/random_uniform/RandomUniform; legacy created random ops in function graphs "
        "(tf.data, tf.function), keyed once: MapDataset/random_normal): --align-random keys a "
        "TF1 graph's random ops by the session runs that execute them")
    # a graph op run at every step, drawn as often as the new run draws by order: no cause
    assert align_report.causes(
        _record(order_draws=5, created=2, run_draws=5,
                repeated={"dropout/random_uniform/RandomUniform": 4}),
        _record(order_draws=5, drew_at={"a.py:3": 4})) == {}


def test_summary_line_counts_layer_draws():
    line = align_report.summary_line(
        _record(weights={"l1/kernel": 1}, layer_draws={"dropout#0": 500, "dropout_1#0": 500}),
        _record(weights={"l1/kernel": 1}, layer_draws={"dropout#0": 500, "dropout_1#0": 500}))
    assert ("legacy: 0 keyed by order, 1 by layer weight name, 1000 in layer calls, keyed by layer "
            "and execution (dropout#0 x500, dropout_1#0 x500); new: 0 keyed by order") in line


# -- TF: one run of each role, values checked against the stateless ops ----------

LEGACY_LAYERS = """\
    import numpy as np
    import tensorflow as tf
    import tf_keras

    ones = tf.ones([4, 6])
    training = tf.placeholder(tf.bool, None)
    with tf.variable_scope("net"):
        dropped = tf.layers.dropout(ones, rate=0.5, training=training)        # net/dropout
    always = tf.layers.dropout(ones, rate=0.5, training=True, name="drop")   # drop
    noisy = tf_keras.layers.GaussianNoise(0.5)(tf.zeros([3]), training=training)

    class TwoDraws(tf_keras.layers.Layer):
        def call(self, x):
            return x + tf.random.uniform([2]), x + tf.random.normal([2])

    two = TwoDraws(name="two")(tf.zeros([2]))

    def tower(v):   # a reused scope: two graph ops draw as tower/drop#0, chained
        with tf.variable_scope("tower", reuse=tf.AUTO_REUSE):
            return tf.layers.dropout(v, rate=0.5, training=True, name="drop")

    chained = tower(tower(ones))
    outside = tf.nn.dropout(ones, keep_prob=0.5)       # no layer: keyed once, by order (n = 0)
    with tf.Session() as sess:
        runs = []
        for train in (True, False, True, True):
            runs.append(sess.run([dropped, noisy], {training: train}))
        dropped_ = np.array([r[0] for r in runs])
        noisy_ = np.array([r[1] for r in runs])
        always_ = np.array([sess.run(always) for _ in range(2)])
        two_ = np.array([sess.run(two) for _ in range(2)])
        outside_ = np.array([sess.run(outside) for _ in range(3)])
        chained_ = np.array([sess.run(chained) for _ in range(2)])
    """


@pytest.mark.slow
@pytest.mark.tf
def test_tf1_graph_counts_a_layer_draw_only_when_its_cond_branch_runs(tmp_path):
    run = run_captured(_write(tmp_path / "legacy.py", LEGACY_LAYERS), legacy=True, align_random=3)
    assert not run.failed, run.stderr
    ones = np.ones([4, 6], np.float32)
    # steps fed True, False, True, True: the draw ran 3 times (counts 0, 1, 2)
    for step, count in ((0, 0), (2, 1), (3, 2)):
        want = _dropped([4, 6], "net/dropout", count, seed=3)
        assert np.array_equal(run.values["dropped_"][step], want), step
        assert np.array_equal(run.values["noisy_"][step],
                              _normal([3], layer_key("gaussian_noise", 0, count), 0.5, seed=3))
    assert np.array_equal(run.values["dropped_"][1], ones)          # training False: identity
    assert np.array_equal(run.values["noisy_"][1], np.zeros(3, np.float32))
    assert not np.array_equal(run.values["dropped_"][0], run.values["dropped_"][2])
    for i in range(2):   # training=True as a Python bool: no cond, counted all the same
        assert np.array_equal(run.values["always_"][i], _dropped([4, 6], "drop", i, seed=3))
        first, second = run.values["two_"][i]
        assert np.array_equal(first, _uniform([2], layer_key("two", 0, i), seed=3))
        assert np.array_equal(second, _normal([2], layer_key("two", 1, i), seed=3))
    # outside a layer: keyed by order, by each session run that draws it (n = 0, 1, 2)
    for i in range(3):
        assert np.array_equal(run.values["outside_"][i],
                              np.where(_uniform([4, 6], i, seed=3) >= 0.5, 2.0, 0.0)), i
    record = run.align
    assert record["layer_draws"] == {"drop#0": 2, "gaussian_noise#0": 3, "net/dropout#0": 3,
                                     "tower/drop#0": 4, "two#0": 2, "two#1": 2}
    # the second op's counter takes the first one's output shape: counted after it, in each run
    for i in range(2):
        want = _dropped([4, 6], "tower/drop", 2 * i, seed=3) * _dropped([4, 6], "tower/drop",
                                                                         2 * i + 1, seed=3)
        assert np.array_equal(run.values["chained_"][i], want), i
    assert record["layer_shared"] == {"tower/drop#0": 2}
    assert record["order_draws"] == 3 and record["created"] == 1 and record["run_draws"] == 3
    [(op, runs)] = record["repeated"].items()                  # the one op, run 3 times
    assert op.endswith("/RandomUniform") and runs == 3
    assert record["drew_at"] == {}


NEW_LAYERS = """\
    import numpy as np
    import tensorflow as tf
    import tf_keras

    ones = tf.ones([4, 6])
    drop = tf_keras.layers.Dropout(0.5, name="net/dropout")
    eager = [drop(ones, training=True).numpy(), drop(ones, training=False).numpy(),
             drop(ones, training=True).numpy()]                       # counts 0, -, 1

    @tf.function
    def step(x, training):
        return drop(x, training=training)

    traced = [step(ones, tf.constant(t)).numpy() for t in (True, False, True)]   # 2, -, 3
    noise = tf_keras.layers.GaussianNoise(0.5)
    noisy = [noise(tf.zeros([3]), training=True).numpy() for _ in range(2)]
    gdrop = tf_keras.layers.GaussianDropout(0.5)(ones, training=True).numpy()
    adrop = tf_keras.layers.AlphaDropout(0.5)(ones, training=True).numpy()
    sdrop = tf_keras.layers.SpatialDropout1D(0.5)(tf.ones([2, 3, 4]), training=True).numpy()
    plain = [tf.random.uniform([2]).numpy() for _ in range(3)]      # by order: n = 0, 1, 2
    """


@pytest.mark.slow
@pytest.mark.tf
def test_tf2_counts_layer_draws_eagerly_and_in_tf_function_alike(tmp_path):
    import tensorflow as tf

    run = run_captured(_write(tmp_path / "new.py", NEW_LAYERS), legacy=False, align_random=0)
    assert not run.failed, run.stderr
    ones = np.ones([4, 6], np.float32)
    eager, traced = run.values["eager"], run.values["traced"]
    assert np.array_equal(eager[0], _dropped([4, 6], "net/dropout", 0))
    assert np.array_equal(eager[1], ones)
    assert np.array_equal(eager[2], _dropped([4, 6], "net/dropout", 1))
    assert np.array_equal(traced[0], _dropped([4, 6], "net/dropout", 2))
    assert np.array_equal(traced[1], ones)
    assert np.array_equal(traced[2], _dropped([4, 6], "net/dropout", 3))
    for i in range(2):
        assert np.array_equal(run.values["noisy"][i],
                              _normal([3], layer_key("gaussian_noise", 0, i), 0.5))
    # GaussianDropout: x * normal(mean 1, stddev sqrt(rate / (1 - rate)))
    want = tf.random.stateless_normal([4, 6], [0, layer_key("gaussian_dropout", 0, 0)],
                                      mean=1.0, stddev=1.0).numpy()
    assert np.array_equal(run.values["gdrop"], want)
    # AlphaDropout keeps where uniform >= rate; SpatialDropout1D draws one mask per channel
    kept = _uniform([4, 6], layer_key("alpha_dropout", 0, 0)) >= 0.5
    assert np.array_equal(run.values["adrop"] == run.values["adrop"][kept][0], kept)
    channel = _uniform([2, 1, 4], layer_key("spatial_dropout1d", 0, 0)) >= 0.5
    assert np.array_equal(run.values["sdrop"],
                          np.broadcast_to(np.where(channel, 2.0, 0.0), [2, 3, 4]))
    for n in range(3):
        assert np.array_equal(run.values["plain"][n], _uniform([2], n))
    record = run.align
    assert record["layer_draws"] == {"alpha_dropout#0": 1, "gaussian_dropout#0": 1,
                                     "gaussian_noise#0": 2, "net/dropout#0": 4,
                                     "spatial_dropout1d#0": 1}
    assert record["order_draws"] == 3 and record["traced"] == 0
    assert record["drew_at"] == {"new.py:20": 3}


# -- a dropout network and its migration -------------------------------------

def _migrate(path: Path) -> str:
    from tapeshift.migrate.engine.pipeline import migrate_source

    result = migrate_source(path.read_text(), path, mode="tape")
    assert result.changed and not result.error
    return result.output


@pytest.mark.slow
@pytest.mark.tf
def test_dropout_network_verifies_equal_with_its_migration(tmp_path):
    script = tmp_path / "dropout_steps.py"
    shutil.copy(DATA / "dropout_steps.py", script)
    migrated = _migrate(script)
    # the migration calls tf_keras Dropout objects at every step, with training=
    assert 'tf_keras.layers.Dropout(rate=0.5, name="net/drop")' in migrated
    assert "d2_layer(h2, training=is_training)" in migrated
    report = verify_sources(script.read_text(), migrated, script, align_random=True)
    assert report.status == "ok", report.to_text()
    assert report.compared == 10 and not report.mismatches
    legacy, new = report.legacy.values, report.new.values
    # the masks change at every step, in both runs, and are the same in both
    for values in (legacy, new):
        kept = values["kept"]
        assert kept.shape == (6, 16, 12)
        assert all(not np.array_equal(kept[i], kept[i + 1]) for i in range(5))
    assert np.array_equal(legacy["kept"], new["kept"])
    assert np.array_equal(legacy["train_losses"], new["train_losses"])
    assert len(set(legacy["train_losses"].tolist())) == 6
    for run in (report.legacy, report.new):
        assert run.align["layer_draws"] == {"dropout#0": 6, "dropout_1#0": 6, "net/drop#0": 6}
        assert run.align["order_draws"] == 0 and run.align["repeated"] == {}
    # step i keeps (d1 != 0) only where net/drop's draw keyed by count i kept: relu's zeros aside
    masks = [_uniform([16, 12], layer_key("net/drop", 0, i)) >= 0.5 for i in range(6)]
    kept = legacy["kept"]
    assert all(not (kept[i] & ~masks[i]).any() for i in range(6))
    assert all((kept[i] & ~masks[i + 1]).any() for i in range(5))   # not the next step's mask


SCOPED_TF1 = """\
    import numpy as np
    import tensorflow as tf
    training = tf.placeholder(tf.bool, None)
    with tf.variable_scope("net"):
        out = tf.layers.dropout(tf.ones([3, 5]), rate=0.5, training=training)   # net/dropout
    with tf.Session() as sess:
        outs = np.array([sess.run(out, {training: True}) for _ in range(3)])
    """
SCOPED_TF2 = """\
    import numpy as np
    import tensorflow as tf
    import tf_keras
    drop = tf_keras.layers.Dropout(rate=0.5{name})
    outs = np.array([drop(tf.ones([3, 5]), training=True).numpy() for _ in range(3)])
    """


@pytest.mark.slow
@pytest.mark.tf
def test_a_tf2_layer_named_otherwise_than_the_tf1_scope_is_reported(tmp_path):
    legacy = textwrap.dedent(SCOPED_TF1)
    unnamed = textwrap.dedent(SCOPED_TF2.format(name=""))
    report = verify_sources(legacy, unnamed, tmp_path / "scoped.py", align_random=True)
    assert report.status == "mismatch"
    assert report.random_causes == [align_report.LAYER_DRAWS]
    assert ("layer draw counts (only in legacy: net/dropout#0; only in new: dropout#0)"
            in report.to_text())
    named = textwrap.dedent(SCOPED_TF2.format(name=', name="net/dropout"'))
    report = verify_sources(legacy, named, tmp_path / "scoped.py", align_random=True)
    assert report.status == "ok", report.to_text()
    outs = report.legacy.values["outs"]
    for i in range(3):
        assert np.array_equal(outs[i], _dropped([3, 5], "net/dropout", i))


@pytest.mark.slow
@pytest.mark.tf
def test_the_codemod_names_an_unnamed_scoped_dropout_as_tf1_did(tmp_path):
    script = tmp_path / "scoped.py"
    script.write_text(textwrap.dedent(SCOPED_TF1))
    migrated = _migrate(script)
    assert 'tf_keras.layers.Dropout(rate=0.5, name="net/dropout")' in migrated
    report = verify_sources(script.read_text(), migrated, script, align_random=True)
    assert report.status == "ok", report.to_text()
    assert report.compared >= 1 and not report.mismatches
    for run in (report.legacy, report.new):
        assert run.align["layer_draws"] == {"net/dropout#0": 3}


OUTSIDE_TF1 = """\
    import numpy as np
    import tensorflow as tf
    X = np.ones([4, 3], np.float32)
    keep_prob = tf.placeholder(tf.float32, None)
    W = tf.Variable(tf.random_normal([3, 2]))
    h = tf.nn.dropout(tf.matmul(X, W), keep_prob)
    noise = tf.random_normal([4, 2], stddev=0.1)
    train = tf.train.GradientDescentOptimizer(0.01).minimize(tf.reduce_sum(tf.square(h + noise)))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        W0 = sess.run(W)
        for _ in range(3):
            sess.run(train, {keep_prob: 0.5})
        h_eval = sess.run(h, {keep_prob: 1.0})
    """
OUTSIDE_TF2 = """\
    import numpy as np
    import tensorflow as tf
    X = np.ones([4, 3], np.float32)
    W = tf.Variable(tf.random.normal([3, 2]))
    W0 = W.numpy()
    for _ in range(3):
        with tf.GradientTape() as tape:
            h = tf.nn.dropout(tf.matmul(X, W), rate=0.5)
            noise = tf.random.normal([4, 2], stddev=0.1)
            loss = tf.reduce_sum(tf.square(h + noise))
        W.assign_sub(0.01 * tape.gradient(loss, W))
    h_eval = tf.matmul(X, W).numpy()
    """


@pytest.mark.slow
@pytest.mark.tf
def test_per_step_draws_outside_layers_are_keyed_by_each_run(tmp_path):
    """tf.nn.dropout on a fed keep_prob and tf.random_normal noise in the training step."""
    report = verify_sources(textwrap.dedent(OUTSIDE_TF1), textwrap.dedent(OUTSIDE_TF2),
                            tmp_path / "outside.py", align_random=True)
    assert report.status == "ok", report.to_text()
    rows = {r.name: r.status for r in report.rows}
    assert rows["W0"] == rows["W"] == rows["h_eval"] == "ok"
    legacy, new = report.legacy.align, report.new.align
    # counted as they ran: the dropout op in 3 training runs and the evaluation (keep_prob a
    # tensor, so it draws at 1.0 too, last: nothing after it is shifted), the noise in the 3
    # training runs only; each run keyed them dropout first, as the TF2 step draws them
    assert legacy["repeated"] == {"dropout/random_uniform/RandomUniform": 4,
                                  "random_normal_1/RandomStandardNormal": 3}
    assert legacy["layer_draws"] == new["layer_draws"] == {}
    assert legacy["order_draws"] == legacy["run_draws"] == 8 and new["order_draws"] == 7
    # the new run's lines (of its temporary file) that drew at each step: dropout, noise
    assert sorted((int(line.rsplit(":", 1)[1]), n) for line, n in new["drew_at"].items()) == [
        (8, 3), (9, 3)]
