"""The mirrored backend: on two logical CPUs and across two worker processes, each
in processes of their own (TensorFlow's devices and collectives are set up before
it starts, and this session has long started it with one CPU); and in this
session, on its one device.

tests/compat/distributed/ holds what the child processes run; its files are not
collected here (no test_ prefix).
"""

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tapeshift.compat import (
    BACKENDS,
    CompatError,
    DevicesInitializedError,
    UpstreamGradientError,
    cut,
    gradient,
    logical_cpus,
    split_gradient,
)
from tapeshift.compat.pytest_plugin import default_backends
from tapeshift.compat.testing import assert_close, assert_results_agree

pytestmark = pytest.mark.tf

HERE = Path(__file__).resolve().parent / "distributed"
ROOT = Path(__file__).resolve().parents[2]
CHILD_TIMEOUT = 240  # seconds; each child run takes about 15 s on 2 shared cores


def _env(**extra):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", **extra)
    env.pop("TF_CONFIG", None)
    env.update(extra)
    return env


@pytest.mark.slow
def test_two_logical_cpus_mirrored_equals_graph_in_a_process_of_their_own():
    command = [sys.executable, "-m", "pytest", str(HERE / "cases_two_devices.py"), "-v",
               "-o", "python_files=cases_*.py", "--tf-logical-cpus", "2", "-p", "no:cacheprovider",
               "-n", "0",  # in this process: the cases share its two logical CPUs
               "--rootdir", str(ROOT)]
    try:
        run = subprocess.run(command, cwd=ROOT, env=_env(), capture_output=True, text=True,
                             timeout=CHILD_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the two-device run took over {CHILD_TIMEOUT} s:\n{exc.stdout or ''}")
    out = run.stdout + run.stderr
    tail = out[-6000:]
    assert run.returncode == 0, f"two-device cases failed (exit {run.returncode}):\n{tail}"
    counts = dict((k, int(n)) for n, k in re.findall(r"(\d+) (passed|failed|skipped|errors?)\b", out))
    assert counts.get("passed", 0) >= 25 and set(counts) == {"passed"}, tail
    # the plugin's default set had mirrored, and the marker chose it
    assert re.search(r"test_user_test_on_every_default_backend\[mirrored\] PASSED", out), tail
    assert re.search(r"test_user_test_restricted_to_graph_and_mirrored\[mirrored\] PASSED", out), tail
    assert not re.search(r"test_user_test_restricted_to_graph_and_mirrored\[tape\]", out), tail


def _free_ports(n):
    """Ports the kernel hands out as free; held until all are chosen so that they differ."""
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _run_workers(tmp_path):
    """Two workers on fresh free ports: (ports, [(exit code, output)]). One deadline for
    both; a worker that fails gets its peer killed (it would wait for it)."""
    ports = _free_ports(2)
    cluster = {"worker": [f"localhost:{p}" for p in ports]}
    workers, logs = [], [tmp_path / f"worker{i}.log" for i in range(2)]
    for index in range(2):
        config = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})
        with open(logs[index], "w") as log:  # a file, not a pipe: nothing blocks on output
            workers.append(subprocess.Popen(
                [sys.executable, str(HERE / "worker.py"), str(tmp_path / f"worker{index}.npz")],
                cwd=tmp_path, env=_env(TF_CONFIG=config), stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL))
    deadline = time.monotonic() + CHILD_TIMEOUT
    try:
        while any(w.poll() is None for w in workers):
            if time.monotonic() > deadline or any(w.poll() for w in workers):
                break
            time.sleep(0.2)
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
            w.wait()
    outputs = [log.read_text(errors="replace") for log in logs]
    if time.monotonic() > deadline:
        pytest.fail(f"the workers took over {CHILD_TIMEOUT} s (ports {ports}):\n"
                    + "\n---\n".join(out[-3000:] for out in outputs))
    return ports, [(w.returncode, out) for w, out in zip(workers, outputs)]


@pytest.mark.slow
def test_multi_worker_mirrored_across_two_local_processes_equals_graph(tmp_path):
    ports, done = _run_workers(tmp_path)
    if any(code and re.search(r"(?i)address already in use", log) for code, log in done):
        ports, done = _run_workers(tmp_path)  # a port was taken between choosing and binding
    for index, (code, log) in enumerate(done):
        assert code == 0, f"worker {index} failed (ports {ports}):\n{log[-4000:]}"

    first, second = (np.load(tmp_path / f"worker{i}.npz") for i in range(2))
    mirrored = [k for k in first.files if "/mirrored/" in k and not k.endswith("/replicas")]
    assert len(mirrored) == 2 * 3 * 10  # 2 losses x 3 transform cases x (target, 3 grads, 3 x 2 stages)
    for key in mirrored:
        assert_close(first[key], first[key.replace("/mirrored/", "/graph/")],
                     name=f"multi-worker {key} vs graph")
        # the collectives leave one device's numbers on every worker, bit for bit
        np.testing.assert_array_equal(first[key], second[key], err_msg=key)
    assert {int(first[k]) for k in first.files if k.endswith("/mirrored/replicas")} == {2}


# -- in this session: one CPU, so one replica ---------------------------------
rng = np.random.default_rng(3)
PARAMS = {"W": rng.normal(size=(3, 4)).astype(np.float32)}
INPUTS = {"x": rng.normal(size=(6, 3)).astype(np.float32)}


def _model(p, i):
    h = cut("h", tf.tanh(i["x"] @ p["W"]))
    return tf.reduce_mean(tf.square(h))


def test_on_one_device_mirrored_is_one_replica_and_equals_graph():
    m = split_gradient(_model, PARAMS, INPUTS, cuts=["h"], backend="mirrored")
    g = split_gradient(_model, PARAMS, INPUTS, cuts=["h"], backend="graph")
    assert m.replicas == 1 and m.backend == "mirrored"
    assert_results_agree(m, g, what="mirrored on one device vs graph")


def test_plugin_default_set_has_no_mirrored_on_one_device():
    assert len(tf.config.list_logical_devices("CPU")) == 1
    assert default_backends() == list(BACKENDS) == ["graph", "tape", "function"]


def test_logical_cpus_after_tensorflow_started_says_where_to_call_it():
    tf.constant(1.0)  # devices initialised, as in any session that ran TensorFlow
    with pytest.raises(DevicesInitializedError, match=r"logical_cpus\(2\): TensorFlow has already "
                       r"initialised its devices \(1 logical CPU\).*before anything runs "
                       r"TensorFlow.*--tf-logical-cpus 2"):
        logical_cpus(2)
    logical_cpus(1)  # what it already has: nothing to do
    with pytest.raises(ValueError, match="positive integer, got 0"):
        logical_cpus(0)


def test_options_are_checked_and_legacy_mode_is_refused():
    with pytest.raises(ValueError, match=r"batch_reduction='avg'; choose one of 'mean', 'sum'"):
        split_gradient(_model, PARAMS, INPUTS, cuts=["h"], backend="mirrored", batch_reduction="avg")
    with pytest.raises(CompatError, match=r"legacy_elementwise.*backend='mirrored' refuses it"):
        split_gradient(_model, PARAMS, INPUTS, cuts=["h"], backend="mirrored",
                       mode="legacy_elementwise")


def test_a_bad_upstream_gradient_is_named_with_one_devices_shapes():
    def per_example(p, i):
        return tf.tanh(i["x"] @ p["W"])

    with pytest.raises(UpstreamGradientError, match=r"target 'target' has shape \(6, 4\), not a scalar"):
        gradient(per_example, PARAMS, INPUTS, backend="mirrored")
    with pytest.raises(UpstreamGradientError, match=r"has shape \(3, 4\), but the target has shape \(6, 4\)"):
        gradient(per_example, PARAMS, INPUTS, backend="mirrored",
                 upstream=np.ones((3, 4), np.float32))


def test_plugin_option_too_late_is_a_usage_error_that_says_why():
    from tapeshift.compat.pytest_plugin import pytest_configure

    class Config:
        def addinivalue_line(self, *_):
            pass

        def getoption(self, name, default=None):
            return 2 if name == "--tf-logical-cpus" else default

    tf.constant(1.0)
    with pytest.raises(pytest.UsageError, match=r"--tf-logical-cpus 2: logical_cpus\(2\): "
                       r"TensorFlow has already initialised its devices"):
        pytest_configure(Config())
