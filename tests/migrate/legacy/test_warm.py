"""Warm starts: a run forked from a warm process behaves as a fresh interpreter's run."""

import os
import textwrap
from pathlib import Path

import pytest

from tapeshift.migrate.legacy import warm
from tapeshift.migrate.legacy.verify import run_captured, verify_scripts

pytestmark = pytest.mark.tf  # the warm process imports TensorFlow

#: what a run can see of the interpreter it runs in, and how it ends
PROBE = """\
    import atexit, os, sys, threading, time
    print("argv", sys.argv[1:], "cwd", os.path.basename(os.getcwd()), "env", os.environ.get("PROBE"))
    print("stdin", repr(sys.stdin.read()))
    print("main", __name__, sys.path[0] == os.path.dirname(os.path.abspath(__file__)))
    atexit.register(lambda: print("atexit ran", flush=True))
    def late():
        time.sleep(0.2)
        print("thread finished", flush=True)
    threading.Thread(target=late).start()
    if sys.argv[1:] == ["fail"]:
        raise ValueError("the script's own error")
    sys.exit(int(sys.argv[1]))
    """


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


def _env(**more) -> dict:
    return {**{k: v for k, v in os.environ.items() if k != warm.COLD_SWITCH}, **more}


@pytest.fixture
def probe(tmp_path):
    (tmp_path / "here").mkdir()
    return _write(tmp_path / "probe.py", PROBE), tmp_path / "here"


@pytest.mark.parametrize("legacy", [False, True], ids=["new", "legacy"])
@pytest.mark.parametrize("arg", ["0", "3", "fail"])
def test_a_warm_run_is_a_cold_run(probe, legacy, arg):
    script, cwd = probe
    runs = [run_captured(script, [arg], legacy=legacy, cwd=cwd, seed=1, warm=w,
                         env=_env(PROBE="x")) for w in (True, False)]
    hot, cold = runs
    assert hot.stdout == cold.stdout
    assert hot.returncode == cold.returncode == {"0": 0, "3": 3, "fail": 1}[arg]
    assert "argv ['%s'] cwd here env x" % arg in hot.stdout
    assert "stdin ''" in hot.stdout and "main __main__ True" in hot.stdout
    assert hot.stdout.endswith("thread finished\natexit ran\n")  # the interpreter's shutdown order
    if arg == "fail":
        assert "ValueError: the script's own error" in hot.stderr
        assert "Traceback" in hot.stderr and "probe.py" in hot.stderr


PARENT = """\
    import os, random
    import numpy as np
    print(os.getppid(), os.environ.get("PROBE"), np.random.randint(1 << 30), random.random())
    """


def _parent_and_draws(run) -> tuple[int, str]:
    assert not run.failed, run.stderr
    ppid, env, *draws = run.stdout.split()
    return int(ppid), env, tuple(draws)


def test_runs_share_a_warm_process_per_start_environment(tmp_path):
    script = _write(tmp_path / "parent.py", PARENT)
    first, second = (_parent_and_draws(run_captured(script, legacy=False, env=_env(PROBE=p)))
                     for p in ("a", "b"))
    assert first[0] == second[0] != os.getpid()  # one warm process, not this one
    assert (first[1], second[1]) == ("a", "b")  # each run gets its whole environment
    assert first[2] != second[2]  # NumPy's and Python's generators are not the fork's copies
    other = _parent_and_draws(run_captured(script, legacy=False,
                                           env=_env(TF_CPP_MIN_LOG_LEVEL="3")))
    assert other[0] not in (first[0], os.getpid())  # read while TensorFlow loads: its own
    seeded = [_parent_and_draws(run_captured(script, legacy=True, seed=5))[2] for _ in range(2)]
    assert seeded[0] == seeded[1]


def test_the_cold_switch_starts_a_fresh_interpreter(tmp_path, monkeypatch):
    script = _write(tmp_path / "parent.py", PARENT)
    monkeypatch.setenv(warm.COLD_SWITCH, "1")
    run = run_captured(script, legacy=False, env=_env())
    assert _parent_and_draws(run)[0] == os.getpid()


def test_a_killed_run_and_a_killed_warm_process(tmp_path):
    sleeper = _write(tmp_path / "sleeper.py", "import time\ntime.sleep(60)\n")
    script = _write(tmp_path / "parent.py", PARENT)
    env = _env(TF_WARM_TEST="killed")  # a warm process of its own
    run = run_captured(sleeper, legacy=False, timeout=1, env=env)
    assert run.timed_out and "killed" in run.error
    after = _parent_and_draws(run_captured(script, legacy=False, env=env))
    assert after[0] != os.getpid()  # the warm process still serves
    os.kill(after[0], 9)
    again = _parent_and_draws(run_captured(script, legacy=False, env=env))
    assert again[0] == os.getpid()  # it has gone: the run starts cold


def test_legacy_runs_measuring_spread_start_cold_unless_the_salt_is_fixed(tmp_path):
    legacy = _write(tmp_path / "salt.py", """\
        import os
        print(os.getppid())
        order = sorted(hash(w) % 1000 for w in "the king is a royal".split())
        """)
    report = verify_scripts(legacy, legacy, legacy_runs=2)
    parents = {int(run.stdout.split()[0]) for run in report.legacy_runs}
    assert parents == {os.getpid()}
    seeded = verify_scripts(legacy, legacy, legacy_runs=2, seed=0)
    assert {int(run.stdout.split()[0]) for run in seeded.legacy_runs} != {os.getpid()}


def test_a_new_environment_replaces_the_warm_process_used_longest_ago(tmp_path, monkeypatch):
    script = _write(tmp_path / "parent.py", PARENT)
    monkeypatch.setattr(warm, "MAX_SERVERS", 1)
    first = _parent_and_draws(run_captured(script, legacy=False, env=_env(TF_WARM_TEST="a")))[0]
    second = _parent_and_draws(run_captured(script, legacy=False, env=_env(TF_WARM_TEST="b")))[0]
    assert os.getpid() not in (first, second) and first != second
    with pytest.raises(ProcessLookupError):  # the first has exited (and been reaped)
        os.kill(first, 0)
