"""``verify --legacy-no-graph-rewrites`` / ``run-legacy --no-graph-rewrites``: the legacy
sessions run with Grappler, TensorFlow's graph optimizer, off (docs/verify.md)."""

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tapeshift.migrate.legacy import capture, run_legacy, verify
from tapeshift.migrate.legacy.bootstrap import runner_command
from tapeshift.migrate.legacy.compare import compare_runs
from tapeshift.migrate.legacy.report import ScriptRun
from tapeshift.migrate.legacy.verify import run_captured


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


# -- the option's way to the legacy process (no TensorFlow) ----------------------

def test_runner_command_and_the_child_parse_the_switch(monkeypatch):
    """--no-graph-rewrites is a legacy runner's option only, and the child reads it."""
    assert "--no-graph-rewrites" in runner_command("s.py", legacy=True, no_graph_rewrites=True)
    assert "--no-graph-rewrites" not in runner_command("s.py", legacy=True)
    assert "--no-graph-rewrites" not in runner_command("s.py", legacy=False, no_graph_rewrites=True)
    monkeypatch.setattr(capture, "_NO_GRAPH_REWRITES", False)
    monkeypatch.setattr(capture, "_RESOURCE_VARIABLES", False)
    cmd = runner_command("s.py", ["a"], legacy=True, no_graph_rewrites=True, capture_dir="/tmp/c")
    legacy, captured, _, _, _, script, args = capture._parse(cmd[3:])
    assert (legacy, captured, script, args) == (True, "/tmp/c", "s.py", ["a"])
    assert capture._NO_GRAPH_REWRITES and not capture._RESOURCE_VARIABLES


def test_run_legacy_passes_the_switch_to_its_child(monkeypatch, tmp_path):
    commands = []

    class Child:
        def __init__(self, cmd):
            commands.append(cmd)

        def wait(self):
            return 0

    monkeypatch.setattr(run_legacy.subprocess, "Popen", Child)
    script = _write(tmp_path / "s.py", "x = 1\n")
    assert run_legacy.main(["--no-graph-rewrites", str(script), "--no-graph-rewrites"]) == 0
    assert run_legacy.main([str(script)]) == 0
    with_switch, without = commands
    end = with_switch.index("--", 3)
    assert "--no-graph-rewrites" in with_switch[:end]
    assert with_switch[end + 1:] == [str(script), "--no-graph-rewrites"]  # the script's own
    assert "--no-graph-rewrites" not in without


def _run(role: str, w: list) -> ScriptRun:
    run = ScriptRun(role, Path(f"{role}.py"), [], 0, "", "", 0.1)
    run.values, run.dtypes = {"w": np.float32(w)}, {"w": "float32"}
    return run


def _fake_runs(monkeypatch) -> list[dict]:
    """verify's runs, recorded instead of run: each returns w = 1.0."""
    calls: list[dict] = []

    def fake_run_captured(script, args=(), **kwargs):
        calls.append(kwargs)
        legacy = kwargs["legacy"]
        run = _run("legacy" if legacy else "new", [1.0])
        run.path = Path(script)
        run.no_graph_rewrites = kwargs.get("no_graph_rewrites", False) and legacy
        return run

    monkeypatch.setattr(verify, "run_captured", fake_run_captured)
    return calls


@pytest.mark.parametrize("flag", [[], ["--legacy-no-graph-rewrites"]])
def test_verify_threads_the_option_to_its_runs_and_report(flag, monkeypatch, tmp_path, capsys):
    calls = _fake_runs(monkeypatch)
    legacy = _write(tmp_path / "old.py", "w = 1.0\n")
    new = _write(tmp_path / "new.py", "w = 1.0\n")
    assert verify.main([str(legacy), str(new), *flag]) == 0
    text = capsys.readouterr().out
    assert [c.get("no_graph_rewrites") for c in calls] == [bool(flag)] * 2
    assert [c.get("resource_variables") for c in calls] == [False] * 2
    assert ("legacy graph rewrites: off (--legacy-no-graph-rewrites" in text) == bool(flag)
    assert verify.main([str(legacy), str(new), "--json", *flag]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert runs["legacy"].get("no_graph_rewrites", False) == bool(flag)
    assert "no_graph_rewrites" not in runs["new"]


def test_verify_sources_and_the_training_run_of_after_get_it_too(monkeypatch, tmp_path):
    calls = _fake_runs(monkeypatch)
    report = verify.verify_sources("w = 1.0\n", "w = 1.0\n", tmp_path / "m.py",
                                   legacy_no_graph_rewrites=True)
    assert report.ok and report.legacy.no_graph_rewrites and not report.new.no_graph_rewrites
    assert [c["no_graph_rewrites"] for c in calls] == [True, True]
    calls.clear()
    train = _write(tmp_path / "train.py", "w = 1.0\n")
    verify.verify_scripts(train, train, after=train, legacy_no_graph_rewrites=True, parallel=1)
    assert calls[0].get("role") == "training" and len(calls) == 3
    assert all(c["no_graph_rewrites"] for c in calls)


def test_the_mismatch_hint_names_the_option():
    report = compare_runs(_run("legacy", [1, 2]), _run("new", [1, 2.5]))
    text = report.to_text()
    assert "about 1 ulp" in text and "--legacy-no-graph-rewrites runs it with Grappler off" in text


# -- in the legacy process ---------------------------------------------------------

SESSION_CONFIGS = """\
import tensorflow as tf

options = tf.config.optimizer.get_experimental_options()
plain = tf.Session()
given = tf.Session(config=tf.ConfigProto(allow_soft_placement=True))
interactive = tf.InteractiveSession()  # makes a ConfigProto of its own
print(options.get("disable_meta_optimizer"),
      *(s._config.graph_options.rewrite_options.disable_meta_optimizer
        for s in (plain, given, interactive)))
"""


@pytest.mark.slow
@pytest.mark.tf
@pytest.mark.parametrize("flag, expected", [
    ([], "False False False False"),
    (["--no-graph-rewrites"], "True True True True"),
])
def test_every_session_runs_without_grappler(flag, expected, tmp_path, capfd):
    """tf.config.optimizer.set_experimental_options reaches the sessions made without a
    config; one given a ConfigProto (InteractiveSession makes one) gets a copy with the
    meta optimizer off."""
    script = _write(tmp_path / "sessions.py", SESSION_CONFIGS)
    code = run_legacy.main([*flag, str(script)])
    out, err = capfd.readouterr()
    assert code == 0, err
    assert out.strip() == expected


# A regression head of one output unit fine-tuned on targets of about 225. Grappler's
# remapper fuses its MatMul + BiasAdd into one _FusedMatMul kernel, which sums the
# 300 products in another order than MatMul's one-column path: predictions differ
# by 1 ulp (1.5e-5 to 3.1e-5) in some rows, and the residuals (prediction - target,
# 0.0003 to 0.07) by far more than float32's tolerance. Measured with TensorFlow
# 2.21 on one CPU: 7 of 20 residuals differ; on another (AVX-512) none do; with
# Grappler off, every value is equal on both.
REGRESSION_HEAD = """\
import numpy as np
import tensorflow as tf

rng = np.random.RandomState(0)
features = rng.rand(20, 300).astype(np.float32)
true_w = rng.rand(300, 1)
targets = (features @ true_w + 150 + 0.1 * rng.randn(20, 1)).astype(np.float32)
w = tf.Variable((true_w + 0.01 * rng.randn(300, 1)).astype(np.float32))
b = tf.Variable(np.float32([150.0]))
"""

LEGACY_HEAD = REGRESSION_HEAD + """\
x = tf.placeholder(tf.float32, [None, 300])
y = tf.placeholder(tf.float32, [None, 1])
prediction = tf.nn.bias_add(tf.matmul(x, w), b)
loss = tf.losses.mean_squared_error(y, prediction)
train = tf.train.AdamOptimizer(0.001).minimize(loss)

with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(20):
        sess.run(train, {x: features, y: targets})
    loss_, residuals = sess.run([loss, prediction - y], {x: features, y: targets})
"""

NEW_HEAD = REGRESSION_HEAD + """\
optimizer = tf.compat.v1.train.AdamOptimizer(0.001)


def prediction(x):
    return tf.nn.bias_add(tf.matmul(x, w), b)


for step in range(20):
    with tf.GradientTape() as tape:
        step_loss = tf.compat.v1.losses.mean_squared_error(targets, prediction(features))
    optimizer.apply_gradients(zip(tape.gradient(step_loss, [w, b]), [w, b]))
loss_ = tf.compat.v1.losses.mean_squared_error(targets, prediction(features)).numpy()
residuals = (prediction(features) - targets).numpy()
"""


@pytest.mark.slow
@pytest.mark.tf
def test_a_fused_kernel_mismatch_agrees_with_grappler_off(tmp_path):
    legacy = _write(tmp_path / "head_tf1.py", LEGACY_HEAD)
    new = run_captured(_write(tmp_path / "head_tf2.py", NEW_HEAD), legacy=False)
    rewritten = compare_runs(run_captured(legacy, legacy=True), new)
    # whether the fused kernel rounds otherwise depends on the CPU's instructions (seen
    # on some machines, not on others): where it does, only the residuals differ and
    # the report names the flag
    if rewritten.status != "ok":
        assert rewritten.status == "mismatch", rewritten.to_text()
        assert [row.name for row in rewritten.mismatches] == ["residuals"]
        assert "--legacy-no-graph-rewrites" in rewritten.to_text()

    as_written = compare_runs(run_captured(legacy, legacy=True, no_graph_rewrites=True), new)
    assert as_written.status == "ok", as_written.to_text()
    assert all(row.max_abs == 0 for row in as_written.rows), as_written.to_text()
    assert "legacy graph rewrites: off" in as_written.to_text()
    assert json.loads(as_written.to_json())["runs"]["legacy"]["no_graph_rewrites"] is True
