"""aligned_random: the n-th random draw of every forward run is keyed by [seed, n].

The expected numbers are TensorFlow's own stateless ops called with that key
outside the block, so each test checks the key itself, not only that backends
agree with one another. Issue #20: the count used to restart when ``id()`` of
the run's recorder changed, and a new run that got a freed run's address kept
counting; these tests run many forward runs, freed and created in between, with
retracing under ``tf.function``.
"""

import gc
import threading

import numpy as np
import pytest
import tensorflow as tf

from tapeshift.compat import build
from tapeshift.compat.backends import BACKENDS
from tapeshift.compat.cuts import Recorder
from tapeshift.compat.random_alignment import forward_run
from tapeshift.compat.testing import aligned_random, assert_close
from tapeshift.compat.vjp import trace

pytestmark = pytest.mark.tf

SEED = 7
RATE = 0.5
PARAMS = {
    "a": np.linspace(0.5, 2.0, 4).astype(np.float32),
    "b": np.linspace(-1.0, 1.0, 3).astype(np.float32),
    "c": np.ones((2, 3), np.float32),
    "d": np.full(2, 0.25, np.float32),
}
INPUTS = {"x": np.array([[0.1, 0.2], [0.3, 0.4]], np.float32)}


def noisy(p, i):
    """Four draws, in this order: normal, uniform, dropout, the compat.v1 normal.

    Each gradient is one draw (times a constant), so the gradients show the key."""
    n0 = tf.random.normal([4])
    u1 = tf.random.uniform([3])
    dropped = tf.nn.dropout(p["c"], rate=RATE)
    n3 = tf.compat.v1.random_normal([2])
    return (tf.reduce_sum(p["a"] * n0) + tf.reduce_sum(p["b"] * u1) + tf.reduce_sum(dropped)
            + tf.reduce_sum(p["d"] * n3) + 0.0 * tf.reduce_sum(i["x"]))


def key(n, seed=SEED):
    return tf.constant([seed, n], tf.int64)


def expected(seed=SEED):
    """The draws noisy() must make, from the documented key, outside any block."""
    n0 = tf.random.stateless_normal([4], key(0, seed)).numpy()
    u1 = tf.random.stateless_uniform([3], key(1, seed)).numpy()
    mask = tf.nn.experimental.stateless_dropout(tf.ones([2, 3]), RATE, key(2, seed)).numpy()
    n3 = tf.random.stateless_normal([2], key(3, seed)).numpy()
    target = (np.sum(PARAMS["a"] * n0) + np.sum(PARAMS["b"] * u1)
              + np.sum(PARAMS["c"] * mask) + np.sum(PARAMS["d"] * n3))
    return {"target": np.float32(target), "a": n0, "b": u1, "c": mask, "d": n3}


def check(result, want, what):
    assert_close(result.target, want["target"], name=f"{what}: target")
    for n in ("a", "b", "c", "d"):
        assert_close(result.grads[n], want[n], name=f"{what}: d/d{n} (draw of {n})")


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_call_draws_seed_n_for_its_nth_random_op(backend):
    want = expected()
    assert 0 < np.count_nonzero(want["c"]) < want["c"].size  # the mask really drops
    with aligned_random(SEED):
        with build(noisy, PARAMS, backend=backend) as fn:
            for call in range(3):
                check(fn(INPUTS), want, f"{backend}, call {call}")
        with build(noisy, PARAMS, backend=backend) as fn:
            other = fn(INPUTS)
    # the seed matters: another seed, other draws
    with aligned_random(SEED + 1):
        check(build(noisy, PARAMS, backend=backend)(INPUTS), expected(SEED + 1), "seed + 1")
    check(other, want, f"{backend}, second program")


def test_two_runs_of_one_recorder_object_draw_the_same_numbers():
    """The id-reuse case made certain: two forward runs, one recorder identity."""
    recorder = Recorder(())

    def draws(p, i):
        return tf.concat([tf.random.normal([3]), tf.random.uniform([2])], 0)

    with aligned_random(SEED):
        first = trace(draws, {}, {}, {}, recorder, None).target.numpy()
        second = trace(draws, {}, {}, {}, recorder, None).target.numpy()
    want = np.concatenate([tf.random.stateless_normal([3], key(0)).numpy(),
                           tf.random.stateless_uniform([2], key(1)).numpy()])
    assert_close(first, want, name="first run vs [seed, 0], [seed, 1]")
    assert_close(second, want, name="second run of the same recorder object")


@pytest.mark.slow
def test_many_runs_freed_and_created_between_calls_all_draw_the_same_numbers():
    """Hundreds of forward runs in one process, each program freed after its run,
    so that a new run's objects often get a freed run's addresses (before the fix,
    about 1 tape run in 40 then kept counting): every run restarts at [seed, 0]."""
    want = expected()
    wrong = []
    with aligned_random(SEED):
        kept = build(noisy, PARAMS, backend="tape")  # a long-lived program among the freed ones
        for k in range(600):
            backends = BACKENDS if k % 20 == 0 else ("tape",)
            for backend in backends:
                with build(noisy, PARAMS, backend=backend) as fn:
                    value = fn.value(INPUTS)
                if not np.allclose(value, want["target"], rtol=1e-5, atol=1e-6):
                    wrong.append((k, backend, float(value)))
            if k % 50 == 0:
                check(kept(INPUTS), want, f"kept tape program, round {k}")
                gc.collect()
    assert not wrong, (f"{len(wrong)} of 690 runs drew other numbers than [seed, 0..3] "
                       f"(round, backend, value): {wrong[:5]}")


def test_every_retrace_under_tf_function_starts_at_seed_zero():
    """A new input signature retraces the function backend's tf.function; a new
    trace is a new forward run, whatever was traced and freed before it."""
    want = expected()
    traces = []

    def counted(p, i):  # its Python runs once per trace
        traces.append(i["x"].shape[0])
        return noisy(p, i)

    with aligned_random(SEED):
        with build(counted, PARAMS, backend="function") as fn:
            for rows in (1, 2, 3, 2, 5, 1):
                x = np.full((rows, 2), 0.5, np.float32)
                check(fn({"x": x}), want, f"function traced for {rows} rows")
                gc.collect()
        assert traces == [1, 2, 3, 5]
        # a user's own tf.function around a forward run, retraced per shape
        @tf.function(autograph=False, reduce_retracing=False)
        def forward(x):
            return trace(noisy, {n: tf.constant(v) for n, v in PARAMS.items()}, {"x": x},
                         {}, Recorder(()), None).target

        for rows in (1, 4, 2, 4):
            assert_close(forward(tf.ones([rows, 2])), want["target"],
                         name=f"user tf.function traced for {rows} rows")
        assert forward.experimental_get_tracing_count() == 3


def test_draws_outside_forward_runs_count_from_the_block_start():
    """A net called directly (SlimModel's discovery run, say) draws from the
    block's own count, and does not shift the count of any forward run."""
    want = expected()
    with aligned_random(SEED):
        outside0 = tf.random.normal([2]).numpy()
        with build(noisy, PARAMS, backend="tape") as fn:
            check(fn(INPUTS), want, "tape run after a draw outside")
        outside1 = tf.random.uniform([2]).numpy()
        check(build(noisy, PARAMS, backend="graph")(INPUTS), want, "graph run after two")
    assert_close(outside0, tf.random.stateless_normal([2], key(0)).numpy(), name="outside draw 0")
    assert_close(outside1, tf.random.stateless_uniform([2], key(1)).numpy(), name="outside draw 1")


def test_a_nested_forward_run_has_its_own_count_and_the_outer_resumes():
    with aligned_random(SEED):
        with forward_run():
            outer0 = tf.random.normal([2]).numpy()
            with forward_run():
                inner0 = tf.random.normal([2]).numpy()
                inner1 = tf.random.normal([2]).numpy()
            outer1 = tf.random.normal([2]).numpy()
    draw = [tf.random.stateless_normal([2], key(n)).numpy() for n in (0, 1)]
    assert_close(outer0, draw[0], name="outer draw 0")
    assert_close(inner0, draw[0], name="inner draw 0")
    assert_close(inner1, draw[1], name="inner draw 1")
    assert_close(outer1, draw[1], name="outer draw 1, after the inner run")


def test_block_restores_the_ops_refuses_nesting_and_other_threads():
    originals = (tf.random.normal, tf.nn.dropout, tf.compat.v1.random_uniform)
    errors = []

    def elsewhere():
        try:
            tf.random.normal([1])
        except RuntimeError as e:
            errors.append(str(e))

    with aligned_random(SEED):
        assert tf.random.normal is not originals[0]
        with pytest.raises(RuntimeError, match="do not nest"):
            with aligned_random(SEED + 1):
                pass
        # the failed inner block changed nothing: still seeded by SEED
        assert_close(tf.random.normal([2]).numpy(),
                     tf.random.stateless_normal([2], key(0)).numpy(), name="after refused nesting")
        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join()
    assert (tf.random.normal, tf.nn.dropout, tf.compat.v1.random_uniform) == originals
    assert len(errors) == 1 and "did not enter aligned_random" in errors[0]
