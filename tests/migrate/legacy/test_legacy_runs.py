"""`verify --legacy-runs N`: the legacy runs compared with each other first, and a new
value judged against their spread (the envelope rule, migrate/legacy/spread.py).

The unit tests need no TensorFlow and start no process, except `run_parallel`'s,
which run plain Python scripts. The end-to-end tests (`tf`, `slow`) run a small TF1
program that differs between runs by design: each run claims the first free slot
file next to the script, so runs get slots 0, 1, 2... whatever order or overlap
they run in, and its result moves by 1e-3 per slot.
"""

import json
import math
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from tapeshift.migrate.commands.cli import main as cli_main
from tapeshift.migrate.legacy import verify
from tapeshift.migrate.legacy.compare import compare_printed, compare_runs
from tapeshift.migrate.legacy.values import compare_values
from tapeshift.migrate.legacy.report import ScriptRun
from tapeshift.migrate.legacy.spread import (
    compare_with_spread,
    envelope,
    identical,
    run_spread,
)
from tapeshift.migrate.legacy.verify import run_captured, run_parallel, verify_scripts


def _run(role, values, stdout="", error=None, which=""):
    run = ScriptRun(role, Path(f"{role}.py"), [], 0 if error is None else 1, stdout,
                    "Traceback...\nValueError: boom\n" if error else "", 0.1, error=error,
                    which=which)
    run.values = {k: np.asarray(v) for k, v in values.items()}
    run.dtypes = {k: run.values[k].dtype.name for k in values}
    return run


def _legacy(*values_per_run, stdouts=None):
    stdouts = stdouts or [""] * len(values_per_run)
    n = len(values_per_run)
    return [_run("legacy", v, s, which=f"run {k} of {n}")
            for k, (v, s) in enumerate(zip(values_per_run, stdouts, strict=True), start=1)]


# -- the envelope rule ---------------------------------------------------------------

def test_envelope_inside_the_range_at_its_edge_and_beyond():
    stack = np.array([[1.0, 1.0, 1.0, 1.0],
                      [1.1, 1.1, 1.1, 1.1]])
    new = np.array([1.05, 1.1 + 1e-6, 0.9, 1.1 + 1e-3])
    agrees, distance, nearest = envelope(stack, new, rtol=1e-5, atol=1e-6)
    # inside; just beyond hi, within atol + rtol * |hi| (1.2e-5); far below lo; far above hi
    assert agrees.tolist() == [True, True, False, False]
    assert distance[0] == 0 and nearest[0] == 1.05
    assert nearest.tolist()[2:] == [1.0, 1.1]
    assert distance[2] == pytest.approx(0.1) and distance[3] == pytest.approx(1e-3)


def test_envelope_reduces_to_the_normal_rule_when_the_runs_agree():
    legacy = np.float32([0.00109662, 0.5, -3.0, 0.0])
    for new in (np.float32([0.00109661, 0.5, -3.0, 0.0]),      # float32 graph/eager noise
                np.float32([0.00109662, 0.5000052, -3.0, 1e-6]),  # at the tolerance
                np.float32([0.0011, 0.5, -3.1, 1e-3])):           # beyond it
        normal = compare_values("w", legacy, new, "float32", "float32")
        agrees, _, _ = envelope(np.stack([legacy, legacy, legacy]), new, 1e-5, 1e-6)
        assert bool(agrees.all()) == (normal.status == "ok")
        row = compare_with_spread("w", [legacy, legacy.copy()], new, ["float32"] * 2, "float32")
        assert row.to_dict() == normal.to_dict()  # the very same row, no spread
        assert not row.spread


def test_envelope_integers_nan_inf_and_complex():
    # integers and booleans: zero tolerance, so within [lo, hi]
    agrees, _, _ = envelope(np.array([[3, 3], [5, 5]]), np.array([4, 6]), 0.0, 0.0)
    assert agrees.tolist() == [True, False]
    # NaN or infinity in some run: agree with one legacy run by the normal rule
    stack = np.array([[np.nan, 1.0, np.inf], [2.0, np.inf, np.inf]])
    agrees, distance, _ = envelope(stack, np.array([np.nan, 1.0, -np.inf]), 1e-5, 1e-6)
    assert agrees.tolist() == [True, True, False]
    assert distance.tolist()[:2] == [0.0, 0.0] and math.isinf(distance[2])
    agrees, _, _ = envelope(stack, np.array([2.0000001, 5.0, np.inf]), 1e-5, 1e-6)
    assert agrees.tolist() == [True, False, True]
    # complex: real and imaginary parts clipped separately
    stack = np.array([[1 + 1j], [2 + 2j]])
    assert envelope(stack, np.array([1.5 + 1.9j]), 1e-5, 1e-6)[0].tolist() == [True]
    assert envelope(stack, np.array([1.5 + 2.5j]), 1e-5, 1e-6)[0].tolist() == [False]


def test_identical_and_run_spread():
    a = np.float32([1.0, np.nan])
    assert identical([a, a.copy(), a.copy()])
    assert not identical([a, np.float32([1.0, 2.0])])
    assert not identical([np.zeros(2), np.zeros(3)])
    max_abs, max_rel = run_spread([np.float64([1.0, 10.0]), np.float64([1.5, 10.0]),
                                   np.float64([1.25, 10.2])])
    assert max_abs == pytest.approx(0.5)
    assert max_rel == pytest.approx(0.5)  # 0.5 measured against 1.0
    assert run_spread([np.zeros(2), np.zeros(3)]) == (math.inf, math.inf)


def test_compare_with_spread_rows():
    runs = [np.float32([1.0, 2.0]), np.float32([1.001, 2.0]), np.float32([1.002, 2.0])]
    inside = compare_with_spread("w", runs, np.float32([1.0015, 2.0]), ["float32"] * 3, "float32")
    assert (inside.status, inside.spread, inside.max_abs) == ("ok", True, 0.0)
    assert inside.spread_abs == pytest.approx(0.002, rel=1e-3)
    assert inside.note.startswith("legacy runs differ by up to 0.002")
    outside = compare_with_spread("w", runs, np.float32([1.01, 2.0]), ["float32"] * 3, "float32")
    assert outside.status == "mismatch" and outside.spread
    assert outside.max_abs == pytest.approx(0.008, rel=1e-3)
    assert outside.note.startswith("at (0,): 1.01 outside the legacy runs' 1.0 .. 1.002 "
                                   "(by 0.008, 4 times their spread there); legacy runs differ")
    # a legacy run of another shape: agree with one run by the normal rule
    shapes = compare_with_spread("w", [np.zeros(2), np.zeros(3)], np.zeros(3),
                                 ["float64"] * 2, "float64")
    assert shapes.status == "ok" and shapes.spread and "shapes (2,), (3,)" in shapes.note


# -- reports --------------------------------------------------------------------------

def test_ok_within_the_legacy_spread():
    legacy = _legacy({"loss": np.float32(1.0724862), "n": 3},
                     {"loss": np.float32(1.0723495), "n": 3},
                     {"loss": np.float32(1.0723655), "n": 3})
    new = _run("new", {"loss": np.float32(1.0724), "n": 3})
    plain = compare_runs(legacy[0], new)
    assert plain.status == "mismatch"
    report = compare_runs(legacy[0], new, legacy_others=legacy[1:])
    assert (report.status, report.exit_code, report.ok) == ("ok-within-spread", 0, True)
    assert report.summary().startswith(
        "OK within the legacy program's own run-to-run spread: all 2 compared agree "
        "(2 module values, 0 prints), 1 of them only within the spread of its 3 runs: loss")
    text = report.to_text()
    assert "ok (within legacy spread)  legacy runs differ by up to 0.000137" in text
    assert ("the legacy program is not deterministic: its own 3 runs differ, up to 0.000137 "
            "(rel 0.000127), in loss;") in text
    data = json.loads(report.to_json())
    assert data["status"] == "ok-within-spread" and data["legacy_runs"] == 3
    assert set(data["legacy_spread"]) == {"loss"}
    assert len(data["runs"]["legacy_more"]) == 2
    [loss] = [r for r in data["rows"] if r["name"] == "loss"]
    assert loss["spread"] is True and loss["max_abs"] == 0.0


def test_outside_the_legacy_spread_is_a_mismatch_naming_it():
    legacy = _legacy({"loss": np.float32(1.0724862)}, {"loss": np.float32(1.0723495)})
    report = compare_runs(legacy[0], _run("new", {"loss": np.float32(1.08)}),
                          legacy_others=legacy[1:])
    assert (report.status, report.exit_code) == ("mismatch", 1)
    assert report.summary() == ("MISMATCH: 1 of 1 differ: loss "
                                "(likely cause: legacy nondeterminism: see below)")
    text = report.to_text()
    assert "MISMATCH (outside legacy spread)  1.08 outside the legacy runs' 1.0723495 .. 1.0724862" \
        in text
    assert "Outside that spread: loss. 2 runs sample the spread; more (--legacy-runs 10)" in text
    assert "--legacy-runs 3 checks" not in text


def test_a_value_the_legacy_runs_agree_on_is_judged_normally():
    # the legacy runs differ in `noise` only; `w` differs from them all: a plain mismatch
    legacy = _legacy({"w": np.float32([1, 2]), "noise": 0.1}, {"w": np.float32([1, 2]), "noise": 0.2})
    report = compare_runs(legacy[0], _run("new", {"w": np.float32([1, 2.5]), "noise": 0.15}),
                          legacy_others=legacy[1:])
    rows = {r.name: r for r in report.rows}
    assert rows["w"].status == "mismatch" and not rows["w"].spread
    assert rows["noise"].status == "ok" and rows["noise"].spread
    assert "likely cause" not in report.summary()  # nondeterminism does not explain w
    assert "its own 2 runs differ, up to 0.1 (rel 1), in noise" in report.to_text()


def test_a_deterministic_legacy_gives_the_plain_report():
    values = {"w": np.float32([1, 2]), "steps": 5}
    stdout = "step 0 loss 0.5\nstep 1 loss 0.25\n"
    new = _run("new", {"w": np.float32([1, 2.0000005]), "steps": 5},
               "step 0 loss 0.5000001\nstep 1 loss 0.25\n")
    legacy = _legacy(values, dict(values), stdouts=[stdout, stdout])
    plain = compare_runs(legacy[0], new).to_dict()
    twice = compare_runs(legacy[0], new, legacy_others=legacy[1:])
    assert (twice.status, twice.exit_code) == ("ok", 0)
    assert twice.legacy_spread == {}
    assert twice.to_dict()["rows"] == plain["rows"]
    assert twice.summary() == plain["summary"]
    text = twice.to_text()
    assert "legacy runs: 2, identical in every value and printed number compared" in text
    assert "not deterministic" not in text and "spread" not in text


def test_printed_numbers_against_the_legacy_spread():
    legacy = ["step 0 loss 1.0724862\nstep 50 loss 0.9\n",
              "step 0 loss 1.0723495\nstep 50 loss 0.9\n",
              "step 0 loss 1.0723655\nstep 50 loss 0.9\n"]
    rows, notes = compare_printed(legacy[0], "step 0 loss 1.0724\nstep 50 loss 0.9\n",
                                  legacy_others=legacy[1:])
    assert notes == []
    assert [(r.name, r.status, r.spread) for r in rows] == [("stdout:1", "ok", True),
                                                          ("stdout:2", "ok", False)]
    # an integer that differs between the legacy runs: within [lo, hi], exactly
    rows, _ = compare_printed("n 3\n", "n 4\n", legacy_others=["n 5\n"])
    assert rows[0].status == "ok" and rows[0].spread
    rows, _ = compare_printed("n 3\n", "n 6\n", legacy_others=["n 5\n"])
    assert rows[0].status == "mismatch" and "6.0 outside the legacy runs' 3.0 .. 5.0" in rows[0].note
    # legacy runs that print different counts: compared with the first run only, and said
    rows, notes = compare_printed("took 3 s, 0.5\n", "took 3 s, 0.5\n",
                                  legacy_others=["took 3 s, 4 retries, 0.5\n"])
    assert [r.status for r in rows] == ["ok"] and not rows[0].spread
    assert notes == ["the legacy runs did not print alike (run 1 printed 2 numbers, run 2 3, "
                     "not in the same places): printed numbers were compared with the first "
                     "legacy run only"]
    report = compare_runs(_run("legacy", {}, "took 3 s, 0.5\n"), _run("new", {}, "took 3 s, 0.5\n"),
                          legacy_others=[_run("legacy", {}, "took 3 s, 4 retries, 0.5\n")])
    assert report.status == "ok" and "stdout" in report.legacy_spread
    assert "the legacy program is not deterministic: its own 2 runs differ in stdout" \
        in report.to_text()


def test_plain_mismatch_suggests_legacy_runs_only_when_nothing_else_is_named():
    bad = compare_runs(_run("legacy", {"w": np.float32([1, 2])}),
                       _run("new", {"w": np.float32([1, 2.5])}))
    assert bad.summary() == ("MISMATCH: 1 of 1 differ: w (nothing named explains it; "
                             "--legacy-runs 3 checks whether the legacy program is "
                             "deterministic: see below)")
    text = bad.to_text()
    assert "rerun with --legacy-runs 3" in text and "judge the new values against their spread" in text
    # with a cause named (unseeded numpy), no suggestion
    legacy = _run("legacy", {"w": np.float32([1, 2])})
    legacy.unseeded = {"numpy": {"calls": 1, "call": "np.random.rand", "first": "/x/a.py:3"}}
    named = compare_runs(legacy, _run("new", {"w": np.float32([1, 2.5])}))
    assert "likely cause: unseeded numpy" in named.summary()
    assert "--legacy-runs" not in named.to_text()
    # an OK report suggests nothing
    assert "--legacy-runs" not in compare_runs(_run("legacy", {"w": 1}), _run("new", {"w": 1})).to_text()


def test_a_failed_legacy_run_is_named_with_its_number():
    legacy = _legacy({"w": 1.0}, {"w": 1.0}, {"w": 1.0})
    legacy[2].error, legacy[2].returncode = "exited with code 1 (through run-legacy)", 1
    report = compare_runs(legacy[0], _run("new", {"w": 1.0}), legacy_others=legacy[1:])
    assert (report.status, report.exit_code) == ("failed", 2)
    assert ("FAILED: the legacy script legacy.py (run 3 of 3) exited with code 1 "
            "(through run-legacy)") in report.to_text()


def test_legacy_runs_option_is_checked(capsys):
    for bad in ("1", "0", "x"):
        assert verify.main(["a.py", "b.py", "--legacy-runs", bad]) == 2
        err = capsys.readouterr().err
        assert "argument --legacy-runs: must be an integer >= 2" in err
    assert cli_main(["migrate", "--verify", "--legacy-runs", "1", "a.py"]) == 2
    assert "argument --legacy-runs: must be an integer >= 2" in capsys.readouterr().err


def test_migrate_verify_passes_legacy_runs_on(tmp_path, monkeypatch):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""\
        import tensorflow as tf
        x = tf.constant(2.0)
        g = tf.gradients(x * x, x)
        with tf.Session() as sess:
            print(sess.run(g))
        """))
    seen = {}

    def fake_verify_sources(legacy, new, path, **kwargs):
        seen.update(kwargs)
        return compare_runs(_run("legacy", {"w": 1.0}), _run("new", {"w": 1.0}))

    monkeypatch.setattr(verify, "verify_sources", fake_verify_sources)
    assert cli_main(["migrate", "--verify", "--legacy-runs", "4", "--seed", "3", "-q", "-j", "1",
                     str(script)]) == 0
    assert seen["legacy_runs"] == 4 and seen["seed"] == 3
    seen.clear()
    assert cli_main(["migrate", "--verify", "-q", "-j", "1", str(script)]) == 0
    assert seen["legacy_runs"] == 1


# -- running: at most `parallel` at a time, and stopped on Ctrl-C ---------------------

def test_run_parallel_keeps_order_and_limit(tmp_path):
    script = tmp_path / "nap.py"
    script.write_text("import sys, time\ntime.sleep(0.5)\nprint(sys.argv[1])\n")
    active, peak, lock = [0], [0], threading.Lock()

    def job(k):
        def go(on_start):
            with lock:
                active[0] += 1
                peak[0] = max(peak[0], active[0])
            try:
                return run_captured(script, [str(k)], legacy=False, on_start=on_start)
            finally:
                with lock:
                    active[0] -= 1
        return go

    start = time.monotonic()
    runs = run_parallel([job(k) for k in range(4)], parallel=2)
    assert [r.stdout for r in runs] == ["0\n", "1\n", "2\n", "3\n"]
    assert peak[0] == 2 and time.monotonic() - start >= 1.0


def test_run_parallel_skips_later_runs_after_a_failure(tmp_path):
    fail = tmp_path / "fail.py"
    fail.write_text("raise SystemExit(3)\n")
    ok = tmp_path / "ok.py"
    ok.write_text("import time\ntime.sleep(0.5)\n")
    jobs = [lambda s: run_captured(fail, legacy=False, on_start=s),
            lambda s: run_captured(ok, legacy=False, on_start=s),
            lambda s: run_captured(ok, legacy=False, on_start=s)]
    runs = run_parallel(jobs, parallel=2, required=2)
    assert runs[0].failed and runs[0].returncode == 3
    assert runs[1] is not None and not runs[1].failed  # required: always run
    assert runs[2] is None


def test_run_parallel_kills_its_children_on_interrupt(tmp_path):
    sleeper = tmp_path / "sleep.py"
    sleeper.write_text("import time\ntime.sleep(60)\n")
    started = threading.Event()

    def long(on_start):
        def record(proc):
            on_start(proc)
            started.set()
        return run_captured(sleeper, legacy=False, on_start=record, timeout=None)

    def interrupt(_):
        started.wait(10)
        raise KeyboardInterrupt

    begin = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_parallel([long, interrupt], parallel=2)
    assert time.monotonic() - begin < 30


# -- end to end: a TF1 program that is not deterministic by design ------------------------

SLOTTED_TF1 = """\
import os
import tensorflow as tf

# each run claims the first free slot file next to this script: runs differ by design
here = os.path.dirname(os.path.abspath(__file__))
slot = 0
while True:
    try:
        os.close(os.open(os.path.join(here, f"slot-{slot}"), os.O_CREAT | os.O_EXCL))
        break
    except FileExistsError:
        slot += 1
jitter = tf.constant(slot * 1e-3, tf.float64)

w = tf.Variable(2.0, dtype=tf.float64)
loss = w * w + jitter
train = tf.train.GradientDescentOptimizer(0.25).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(3):
        value = sess.run(loss)  # not fetched with train: that would race
        print("step", step, "loss", value)
        sess.run(train)
    w_final = sess.run(w)
"""

SLOTTED_TF2 = """\
import tensorflow as tf

w = tf.Variable(2.0, dtype=tf.float64)
for step in range(3):
    with tf.GradientTape() as tape:
        loss = w * w + tf.constant({jitter}, tf.float64)
    value = loss.numpy()
    print("step", step, "loss", value)
    w.assign_sub(0.25 * tape.gradient(loss, w))
w_final = w.numpy()
"""


def _pair(directory: Path, jitter: float) -> tuple[Path, Path]:
    directory.mkdir()
    legacy, new = directory / "slotted_tf1.py", directory / "slotted_tf2.py"
    legacy.write_text(SLOTTED_TF1)
    new.write_text(SLOTTED_TF2.format(jitter=jitter))
    return legacy, new


@pytest.mark.slow
@pytest.mark.tf
def test_a_nondeterministic_legacy_program_end_to_end(tmp_path, capsys):
    # legacy run k (from 0) prints losses 4, 1, 0.25 plus k * 1e-3, and leaves `value`, the
    # last one; the new script adds 0.0015, inside the spread of three runs (0 .. 0.002)
    legacy, new = _pair(tmp_path / "plain", 0.0015)
    assert verify.main([str(legacy), str(new)]) == 1
    out = capsys.readouterr().out
    assert ("MISMATCH: 4 of 7 differ: value, stdout:1, stdout:2, stdout:3 (nothing named "
            "explains it; --legacy-runs 3 checks whether the legacy program is deterministic: "
            "see below)") in out
    assert "rerun with --legacy-runs 3 to run it three times" in out

    legacy, new = _pair(tmp_path / "three", 0.0015)
    assert verify.main([str(legacy), str(new), "--legacy-runs", "3"]) == 0
    out = capsys.readouterr().out
    assert sorted(p.name for p in legacy.parent.glob("slot-*")) == ["slot-0", "slot-1", "slot-2"]
    assert ("OK within the legacy program's own run-to-run spread: all 7 compared agree "
            "(4 module values, 3 prints), 4 of them only within the spread of its 3 runs: "
            "value, stdout:1, stdout:2, stdout:3") in out
    assert ("the legacy program is not deterministic: its own 3 runs differ, up to 0.002 "
            "(rel 0.008), in value, stdout:1, stdout:2, stdout:3 (and in slot, jitter, not "
            "compared); where they differ") in out
    for name in ("value", "stdout:1", "stdout:2", "stdout:3"):
        assert "  ok (within legacy spread)  legacy runs differ by up to 0.002" in _line(out, name)
    for name in ("w", "w_final", "step"):
        assert _line(out, name).endswith(" ok")

    # three more legacy runs against a new value outside their spread
    report = verify_scripts(*_pair(tmp_path / "outside", 0.01), legacy_runs=3)
    assert (report.status, report.exit_code) == ("mismatch", 1)
    assert report.likely_causes == ["legacy nondeterminism"]
    assert [r.name for r in report.mismatches] == ["value", "stdout:1", "stdout:2", "stdout:3"]
    assert all(r.spread for r in report.mismatches)
    assert report.mismatches[0].note.startswith(
        "0.26 outside the legacy runs' 0.25 .. 0.252 (by 0.008, 4 times their spread there)")


def _line(out: str, name: str) -> str:
    return next(x for x in out.splitlines() if x.startswith(name + " "))


@pytest.mark.slow
@pytest.mark.tf
def test_a_deterministic_legacy_with_two_runs_is_plain_verify(tmp_path):
    legacy, new = _pair(tmp_path / "fixed", 0.0)
    deterministic = SLOTTED_TF1[:SLOTTED_TF1.index("# each run")] + \
        "jitter = tf.constant(0.0, tf.float64)\n" + SLOTTED_TF1[SLOTTED_TF1.index("\nw = "):]
    assert "slot" not in deterministic
    legacy.write_text(deterministic)
    plain = verify_scripts(legacy, new)
    twice = verify_scripts(legacy, new, legacy_runs=2)
    assert (plain.status, twice.status, twice.exit_code) == ("ok", "ok", 0)
    assert len(twice.legacy_runs) == 2 and twice.legacy_spread == {}
    assert [r.to_dict() for r in twice.rows] == [r.to_dict() for r in plain.rows]
    assert twice.summary() == plain.summary()
    assert "not deterministic" not in twice.to_text() and "spread" not in twice.to_text()
