"""tapeshift.migrate.engine.batch: process_file, run_tree, Progress, migrate_files with the cache."""

import io
import os
import pty
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tapeshift.migrate.fileio.cache import Cache
from tapeshift.migrate.engine.batch import (FileRecord, Progress, crash_record, migrate_files, process_file,
                          record_from_cache, record_to_cache, run_tree, write_output)

ROOT = Path(__file__).resolve().parents[3]
TF1 = ("import tensorflow as tf\n"
       "x = tf.constant(2.0)\n"
       "with tf.Session() as sess:\n"
       "    print(sess.run(x))\n")
COMPAT = "import tensorflow as tf\nx = tf.placeholder(tf.float32)\n"


def crashed(item, exc):
    return ("crash", item, type(exc).__name__)


# eval is a picklable builtin: each item says what its worker does
KILL = "__import__('os')._exit(3)"


@pytest.mark.parametrize("jobs", [1, 2])
def test_results_in_input_order_and_exceptions_are_records(jobs):
    items = [f"sum(range({n}))" for n in (50, 3, 20, 1)] + ["1/0", "7"]
    seen = []
    out = run_tree(items, eval, jobs=jobs, on_crash=crashed, on_result=lambda i, r: seen.append(i))
    assert out == [1225, 3, 190, 0, ("crash", "1/0", "ZeroDivisionError"), 7]
    assert sorted(seen) == list(range(6))


def test_a_dying_worker_costs_one_item():
    items = ["1", "2", KILL, "4", "5", "6"]
    out = run_tree(items, eval, jobs=2, on_crash=crashed)
    assert out[:2] == [1, 2] and out[3:] == [4, 5, 6]
    assert out[2] == ("crash", KILL, "BrokenProcessPool")


def test_crash_record_is_an_error():
    r = crash_record("a.py", RuntimeError("boom"))
    assert r.error and not r.changed and "boom" in r.message
    assert r.findings[0].code == "TS114" and not r.cacheable


class TTY(io.StringIO):
    def isatty(self):
        return True


def test_progress_only_on_a_terminal(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    quiet = io.StringIO()
    p = Progress(3, stream=quiet, delay=0)
    p.advance(3)
    p.close()
    assert quiet.getvalue() == "" and p.done == 3
    tty = TTY()
    p = Progress(3, stream=tty, delay=0, quiet=True)
    p.advance(3)
    p.close()
    assert tty.getvalue() == ""
    before = set(threading.enumerate())  # threads of earlier tests may end meanwhile
    p = Progress(3, stream=tty, delay=0)
    p.advance(1)
    time.sleep(0.15)  # tqdm redraws at most every 0.1 s
    p.advance(2)
    assert set(threading.enumerate()) <= before  # no tqdm monitor thread: workers still fork
    p.close()
    drawn = tty.getvalue()
    assert "3/3 files" in drawn
    assert drawn.endswith("\r") and drawn.rsplit("\r", 2)[1].strip() == ""  # the line is cleared


def test_progress_on_a_terminal_of_unknown_size(monkeypatch):
    # a pseudo-terminal nobody sized reports 0 x 0; tqdm alone would draw nothing there
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    master, slave = pty.openpty()
    with os.fdopen(slave, "w", encoding="utf-8") as stream:
        assert tuple(os.get_terminal_size(slave)) == (0, 0)
        p = Progress(3, stream=stream, delay=0)
        p.advance(1)
        time.sleep(0.15)
        p.advance(2)
        p.close()
    drawn = b""
    while select.select([master], [], [], 0.5)[0]:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the other end is closed
            break
        if not chunk:
            break
        drawn += chunk
    os.close(master)
    assert b"3/3 files" in drawn


@pytest.mark.parametrize("env", [{"CI": "true"}, {"TERM": "dumb"}])
def test_no_progress_in_ci_or_on_a_dumb_terminal(monkeypatch, env):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    tty = TTY()
    p = Progress(3, stream=tty, delay=0)
    p.advance(3)
    p.close()
    assert not p.enabled and tty.getvalue() == ""


def test_a_run_without_a_bar_does_not_import_tqdm():
    code = ("import sys; from tapeshift.migrate.engine.batch import Progress; p = Progress(5); p.advance(5); p.close(); "
            "sys.exit('tqdm' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_process_file_kinds(tmp_path):
    (tmp_path / "a.py").write_bytes(TF1.replace("\n", "\r\n").encode())
    r = process_file(str(tmp_path / "a.py"))
    assert r.mode == "tape" and r.changed and b"\r\n" in r.output_bytes
    assert b"\n" not in r.output_bytes.replace(b"\r\n", b"")
    (tmp_path / "p2.py").write_bytes(b"print 'x'\n")
    r = process_file(str(tmp_path / "p2.py"))
    assert r.error and r.output == r.source and r.output_bytes is None
    assert "Python 2" in r.message and r.findings[-1].code == "TS100"
    (tmp_path / "bad.py").write_bytes("x = 'caf\xe9'\n".encode("latin-1"))
    r = process_file(str(tmp_path / "bad.py"))
    assert r.error and r.message.startswith(f"{tmp_path / 'bad.py'}: cannot decode")
    r = process_file(str(tmp_path / "missing.py"))
    assert r.error and "cannot read" in r.message and not r.cacheable


def test_cache_round_trip_and_rerun(tmp_path):
    for name, text in (("a.py", TF1), ("b.py", COMPAT), ("c.py", "x = 1\n"), ("d.py", "print 1\n")):
        (tmp_path / name).write_text(text)
    paths = sorted(str(p) for p in tmp_path.glob("*.py"))
    cache = Cache(tmp_path / ".cache")
    first = migrate_files(paths, jobs=2, cache=cache)
    assert [r.mode for r in first] == ["tape", "compat", "unchanged", "error"]
    second = migrate_files(paths, jobs=2, cache=Cache(tmp_path / ".cache"))
    assert all(r.cached for r in second)
    for a, b in zip(first, second):
        assert (a.path, a.mode, a.source, a.output, a.output_bytes, a.findings, a.changes,
                a.message) == (b.path, b.mode, b.source, b.output, b.output_bytes, b.findings,
                               b.changes, b.message)
    # the same bytes under another name: the findings name the new file
    (tmp_path / "copy.py").write_text(COMPAT)
    (r,) = migrate_files([str(tmp_path / "copy.py")], cache=Cache(tmp_path / ".cache"))
    assert r.cached and all(f.path == str(tmp_path / "copy.py") for f in r.findings)
    # a changed file is a miss
    (tmp_path / "c.py").write_text("y = 2\n")
    assert not migrate_files([str(tmp_path / "c.py")], cache=Cache(tmp_path / ".cache"))[0].cached


def test_record_cache_encoding_keeps_everything(tmp_path):
    p = tmp_path / "n.py"
    p.write_text(COMPAT)
    r = process_file(str(p))
    again = record_from_cache(str(p), p.read_bytes(), record_to_cache(r))
    assert isinstance(again, FileRecord) and again.cached
    assert again.findings == r.findings and again.output_bytes == r.output_bytes


def test_write_output_keeps_mode(tmp_path):
    p = tmp_path / "x.py"
    p.write_text(TF1)
    os.chmod(p, 0o755)
    r = process_file(str(p))
    assert write_output(r)
    assert os.stat(p).st_mode & 0o777 == 0o755
    assert p.read_bytes() == r.output_bytes
    assert not write_output(process_file(str(p)))  # nothing left to do


def test_submission_order_does_not_change_result_order():
    items = ["1", "2", "3", "4"]
    assert run_tree(items, eval, jobs=2, on_crash=crashed, order=[3, 1, 2, 0]) == [1, 2, 3, 4]


# A fresh interpreter knows how many threads it has; pytest's may have more
# (TensorFlow's), so the start method is tested in one.
START_METHOD = """
import sys, threading
from tapeshift.migrate.engine.batch import _mp_context, os_threads, run_tree
if sys.argv[1] == "thread":
    stop = threading.Event()
    threading.Thread(target=stop.wait, daemon=True).start()
count, method = os_threads(), _mp_context().get_start_method()
out = run_tree(["1", "2", "__import__('os')._exit(3)", "4"], eval, jobs=2,
               on_crash=lambda item, exc: type(exc).__name__)
print(count, method, out)
"""


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="thread count read from Linux's /proc")
@pytest.mark.parametrize("threads", ["none", "thread"])
def test_workers_are_forked_only_from_a_single_thread(threads):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", START_METHOD, threads], capture_output=True,
                          text=True, timeout=120, cwd=os.path.dirname(os.path.dirname(
                              os.path.dirname(os.path.abspath(__file__)))))
    assert done.returncode == 0, done.stderr
    count, method, out = done.stdout.split(" ", 2)
    if threads == "none":
        assert (count, method) == ("1", "fork")
    else:
        assert int(count) >= 2 and method == "forkserver"
    # either way a dying worker costs its item only
    assert out.strip() == "[1, 2, 'BrokenProcessPool', 4]"


def test_a_file_is_migrated_with_the_cycle_collector_paused(tmp_path, monkeypatch):
    import gc

    p = tmp_path / "a.py"
    p.write_text(TF1)
    seen = []
    import tapeshift.migrate.engine.pipeline as pipeline

    real = pipeline.migrate_source

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "migrate_source", spy)
    assert gc.isenabled()
    assert process_file(str(p)).mode == "tape"
    assert seen == [False] and gc.isenabled()  # paused for the file, on again after
    gc.disable()  # a caller that manages collection itself keeps it off
    try:
        process_file(str(p))
        assert seen == [False, False] and not gc.isenabled()
    finally:
        gc.enable()


def test_a_migrated_file_s_trees_are_freed_without_the_cycle_collector(tmp_path):
    """The rules' passes leave no reference cycle holding a tree (a recursive
    closure, an instance caching its bound methods, a local visitor class
    closing over the rule): the trees go as the file is done, not when the
    collection after it walks them all again."""
    import gc

    import libcst as cst


    sources = [(ROOT / "examples" / name).read_text() for name in
               ("reference_tf1.py", "ddpg_tf1.py", "layers_tf1.py", "clip_train_tf1.py",
                "linear_regression_tf1.py")]
    for i, source in enumerate(sources):
        (tmp_path / f"m{i}.py").write_text(source)
    process_file(str(tmp_path / "m0.py"))  # imports and first-time tables out of the way
    gc.collect()
    garbage = []
    gc.set_debug(gc.DEBUG_SAVEALL)
    gc.disable()
    try:
        for i, mode in ((1, "tape"), (2, "tape"), (3, "compat"), (4, "tape")):
            process_file(str(tmp_path / f"m{i}.py"), mode=mode)
        gc.collect(0)
        garbage = list(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    modules = [o for o in garbage if isinstance(o, cst.Module)]
    assert not modules, f"{len(modules)} trees freed only by the cycle collector"
