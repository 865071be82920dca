"""``tapeshift verify``: prove a migrated script computes what the legacy one did.

The legacy script runs through ``run-legacy`` (TF1 semantics on TF2) and the
new one under plain TF2, each in its own subprocess with a timeout. Their
final module-level numeric values are compared by name, and the numbers each
printed are compared in order, with dtype-aware tolerances. With
``legacy_runs=N`` (``--legacy-runs N``) the legacy script runs N times, the
runs at most :data:`PARALLEL_RUNS` at a time, and where the legacy runs differ
from each other the new value is judged against their spread
(:mod:`tapeshift.migrate.legacy.spread`).

Public API (no TensorFlow is imported in this process)::

    report = verify_scripts(Path("old.py"), Path("new.py"))   # two files
    report = verify_sources(old_text, new_text, Path("train.py"))  # two versions in memory
    report.exit_code      # 0 agree, 1 mismatch or nothing compared, 2 a script failed
    report.status         # "ok" | "ok-within-spread" | "mismatch" | "nothing-compared" | "failed"
    print(report.to_text())
    report.to_json()

Library code returns records; only :func:`run` prints.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Callable, Sequence

from tapeshift.migrate.engine.exit_codes import ExitCode, standalone_main
from tapeshift.migrate.legacy.align import DEFAULT_SEED as ALIGN_DEFAULT_SEED
# compare_runs and ScriptRun are also named from here in docs/verify.md's Python API
from tapeshift.migrate.legacy.compare import compare_runs
from tapeshift.migrate.legacy.values import TOLERANCE_HELP
from tapeshift.migrate.legacy.report import ScriptRun, VerifyReport
from tapeshift.migrate.legacy.run_legacy import runner_command
from tapeshift.migrate.legacy.warm import start as warm_start

HELP = "run a legacy script (via run-legacy) and its migrated version and compare their numbers"

DEFAULT_TIMEOUT = 600.0

#: with --legacy-runs, how many scripts run at a time (each is a TensorFlow process)
PARALLEL_RUNS = 2


# -- running ----------------------------------------------------------------

def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, AttributeError, OSError):
        proc.kill()


def _load_capture(run: ScriptRun, directory: str) -> None:
    import numpy as np

    meta_path = os.path.join(directory, "meta.json")
    if not os.path.exists(meta_path):
        run.error = "finished but left no captured values (did it replace sys.stdout or os._exit?)"
        return
    with open(meta_path, encoding="utf-8") as f:
        meta = json.load(f)
    with np.load(os.path.join(directory, "values.npz"), allow_pickle=False) as data:
        for i, name in enumerate(meta["names"]):
            run.values[name] = data[f"v{i}"]
            run.dtypes[name] = meta["dtypes"][i]
    run.skipped = dict(meta.get("skipped", {}))
    run.random_ops = dict(meta.get("random_ops", {}))
    run.unseeded = dict(meta.get("unseeded", {}))
    run.random_modes = dict(meta.get("random_modes", {}))
    run.align = dict(meta.get("align") or {})


OutputCallback = Callable[[str, str, str], None]  # (role, "stdout" | "stderr", text)


def _pump(pipe, chunks: list, role: str, stream: str, on_output: OutputCallback | None) -> None:
    """Read one pipe to its end, keeping every line and passing it on (the tee)."""
    try:
        for line in iter(pipe.readline, b""):
            chunks.append(line)
            if on_output is not None:
                try:
                    on_output(role, stream, line.decode("utf-8", errors="replace"))
                except Exception:  # a broken echo must not lose the recording
                    pass
    finally:
        pipe.close()


def run_captured(script: str | os.PathLike, args: Sequence[str] = (), *, legacy: bool,
                 timeout: float | None = DEFAULT_TIMEOUT, cwd: str | os.PathLike | None = None,
                 env: dict | None = None, user_paths: Sequence[str | os.PathLike] = (),
                 on_output: OutputCallback | None = None, seed: int | None = None,
                 align_random: int | None = None, number: tuple[int, int] | None = None,
                 on_start: Callable[[subprocess.Popen], None] | None = None,
                 role: str | None = None, resource_variables: bool = False,
                 no_graph_rewrites: bool = False, warm: bool = True) -> ScriptRun:
    """Run ``script`` in a subprocess (through run-legacy when ``legacy``) and capture its values.

    stdout and stderr are recorded in the returned :class:`ScriptRun`; when
    ``on_output`` is given, each line is also handed to it as it arrives
    (``on_output(role, "stdout" | "stderr", line)``). ``user_paths``: more
    directories whose modules get the legacy ``tf`` (besides the script's
    own), as ``run-legacy --user-path``. ``seed``: Python's ``random``,
    numpy's global generator and TensorFlow's seeds start from it, and the
    string hashes too (``PYTHONHASHSEED``, unless the environment sets it).
    ``align_random``: the seed of the stateless stream TensorFlow's random
    draws come from (``None``: they are left alone; see docs/verify.md).
    ``number``: ``(k, n)`` for the k-th of n runs of the same script (the
    report says "run k of n"; ``on_output`` gets the role ``legacy#k`` for k > 1).
    ``on_start`` is called with the child process once it is started. ``role``
    names the run in reports and output (default ``legacy`` or ``new``).
    ``resource_variables`` / ``no_graph_rewrites`` (legacy runs only): run-legacy's
    ``--resource-variables`` / ``--no-graph-rewrites``.
    ``warm``: fork the run from a process that has imported TensorFlow where one
    can serve it (:mod:`tapeshift.migrate.legacy.warm`); False: a fresh interpreter.
    """
    script = Path(script)
    role = role or ("legacy" if legacy else "new")
    which = f"run {number[0]} of {number[1]}" if number else ""
    label = f"{role}#{number[0]}" if number and number[0] > 1 else role
    tmp = tempfile.mkdtemp(prefix=f"tapeshift-{role}-")
    cmd = runner_command(script, args, legacy=legacy, capture_dir=tmp,
                         user_paths=user_paths if legacy else (),
                         resource_variables=resource_variables and legacy,
                         no_graph_rewrites=no_graph_rewrites and legacy)
    options = []  # runner options, before the "--" that ends them (tapeshift.migrate.legacy.capture)
    if seed is not None:
        options += ["--seed", str(seed)]
    if align_random is not None:
        options += ["--align-random", str(align_random)]
    end = cmd.index("--", 3)
    cmd[end:end] = options
    if on_output is not None:  # line by line as printed, not in 8 KiB blocks
        env = {**(os.environ if env is None else env), "PYTHONUNBUFFERED": "1"}
    if seed is not None and "PYTHONHASHSEED" not in (os.environ if env is None else env):
        # str hashes, so the order of a set of strings, are salted per process
        # unless this is set (it must be, before the interpreter starts)
        env = {**(os.environ if env is None else env), "PYTHONHASHSEED": str(seed)}
    start = time.monotonic()
    run = ScriptRun(role, script, cmd, None, "", "", 0.0, timeout=timeout, seed=seed, which=which,
                    resource_variables=resource_variables and legacy,
                    no_graph_rewrites=no_graph_rewrites and legacy)
    try:
        try:
            proc = warm_start(cmd, cwd=cwd, env=env) if warm else None
            if proc is None:
                proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, cwd=cwd, env=env,
                                        start_new_session=True)
        except OSError as exc:
            run.error = f"could not be started: {exc}"
            return run
        if on_start is not None:
            on_start(proc)
        out: list[bytes] = []
        err: list[bytes] = []
        pumps = [threading.Thread(target=_pump, args=(proc.stdout, out, label, "stdout", on_output),
                                  daemon=True),
                 threading.Thread(target=_pump, args=(proc.stderr, err, label, "stderr", on_output),
                                  daemon=True)]
        for t in pumps:
            t.start()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.wait()
            run.timed_out = True
        except BaseException:
            _kill_group(proc)
            proc.wait()
            raise
        for t in pumps:
            t.join(timeout=10)  # a leftover grandchild may hold a pipe open
        run.returncode = proc.returncode
        run.stdout = b"".join(out).decode("utf-8", errors="replace")
        run.stderr = b"".join(err).decode("utf-8", errors="replace")
        run.duration = time.monotonic() - start
        if run.timed_out:
            run.error = f"did not finish within the {timeout:g} s timeout (killed)"
        elif run.returncode != 0:
            how = " (through run-legacy)" if legacy else ""
            run.error = f"exited with code {run.returncode}{how}"
        else:
            _load_capture(run, tmp)
        return run
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


Job = Callable[[Callable[[subprocess.Popen], None]], ScriptRun]  # on_start -> the run


def run_parallel(jobs: Sequence[Job], parallel: int = PARALLEL_RUNS,
                 required: int = 0) -> list[ScriptRun | None]:
    """Run ``jobs`` (each calls :func:`run_captured` with the ``on_start`` it is given),
    at most ``parallel`` at a time, and return their runs in the order of ``jobs``.

    Once a run has failed, jobs after the first ``required`` that have not
    started yet are skipped (``None``). On an error or Ctrl-C in this thread,
    every child still running is killed and the exception goes on.
    """
    live: list[subprocess.Popen] = []
    lock = threading.Lock()

    def started(proc: subprocess.Popen) -> None:
        with lock:
            live.append(proc)

    results: list[ScriptRun | None] = [None] * len(jobs)
    waiting = list(range(len(jobs)))
    running: dict = {}  # future -> index; jobs are handed out here, one per free slot
    pool = ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="tapeshift-verify")
    try:
        while waiting or running:
            while waiting and len(running) < max(1, parallel):
                i = waiting.pop(0)
                running[pool.submit(jobs[i], started)] = i
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                i = running.pop(future)
                results[i] = future.result()
                if results[i].failed:
                    waiting = [j for j in waiting if j < required]
    except BaseException:
        with lock:
            for proc in live:
                if proc.poll() is None:  # not reaped yet, so the id is still our child's
                    _kill_group(proc)
        raise
    finally:
        pool.shutdown(wait=True)
    return results


def verify_scripts(legacy: str | os.PathLike, new: str | os.PathLike, *,
                   rtol: float | None = None, atol: float | None = None,
                   timeout: float | None = DEFAULT_TIMEOUT, args: Sequence[str] = (),
                   cwd: str | os.PathLike | None = None, printed: bool = True,
                   user_paths: Sequence[str | os.PathLike] = (),
                   on_output: OutputCallback | None = None,
                   seed: int | None = None, align_random: bool = False,
                   legacy_runs: int = 1, parallel: int = PARALLEL_RUNS,
                   after: str | os.PathLike | None = None, after_legacy: bool = True,
                   after_args: Sequence[str] = (),
                   legacy_resource_variables: bool = False,
                   legacy_no_graph_rewrites: bool = False) -> VerifyReport:
    """Run ``legacy`` through run-legacy and ``new`` under TF2, one after the other, and compare
    (with ``legacy_runs`` >= 2, ``parallel`` runs at a time).

    ``rtol``/``atol`` replace the dtype defaults (:data:`TOLERANCES`) for
    every dtype; ``timeout`` is per script, in seconds (``None``: no limit);
    ``args`` are passed to both scripts; ``cwd`` is where both run (default:
    this process's); ``printed=False`` skips comparing printed numbers;
    ``user_paths`` are more directories whose TensorFlow imports run-legacy
    redirects for the legacy script; ``on_output`` receives each line the
    scripts print, as they print it (see :func:`run_captured`); ``seed``
    starts both runs with Python's ``random``, numpy's global generator and
    TensorFlow's seeds set to it (``--seed``); ``align_random`` makes both
    runs' TensorFlow random draws come from one stateless stream, of seed
    ``seed`` (default :data:`ALIGN_DEFAULT_SEED`, 0), keyed by layer weight name
    or by order (``--align-random``, docs/verify.md).

    ``legacy_runs``: with N >= 2 the legacy script runs N times with the same
    options, the runs (the new one included) ``parallel`` at a time, and
    :func:`compare_runs` compares the legacy runs with each other first
    (``--legacy-runs``, docs/verify.md).

    ``after``: a train/predict pair. The training script ``after`` runs first
    (through run-legacy when ``after_legacy``, else under TF2; with ``after_args``
    and ``seed``, in ``cwd``), then ``legacy`` and ``new``, which read what it wrote
    (a checkpoint), ``parallel`` at a time; if it fails, they do not run
    (``--after`` / ``--after-migrated``, docs/verify.md).

    ``legacy_resource_variables``: every run-legacy run makes resource variables,
    not TF1's default ref variables (``--legacy-resource-variables``).
    ``legacy_no_graph_rewrites``: every run-legacy run's sessions run their graphs
    without Grappler, TensorFlow's graph optimizer (``--legacy-no-graph-rewrites``).
    """
    stream = (seed if seed is not None else ALIGN_DEFAULT_SEED) if align_random else None
    # runs forked from one warm process share its string-hash salt: where the legacy
    # runs' spread is measured, each run gets its own unless the salt is fixed anyway
    warm = legacy_runs <= 1 or seed is not None or "PYTHONHASHSEED" in os.environ
    common = dict(timeout=timeout, cwd=cwd, on_output=on_output, seed=seed, align_random=stream,
                  resource_variables=legacy_resource_variables,
                  no_graph_rewrites=legacy_no_graph_rewrites, warm=warm)
    before = None
    if after is not None:
        before = run_captured(after, after_args, legacy=after_legacy, role="training",
                              user_paths=user_paths if after_legacy else (), timeout=timeout,
                              cwd=cwd, on_output=on_output, seed=seed,
                              resource_variables=legacy_resource_variables,
                              no_graph_rewrites=legacy_no_graph_rewrites)
        before.legacy = after_legacy
        if before.failed:
            return VerifyReport(_not_run(legacy, "legacy"), _not_run(new, "new"), before=before)
    if legacy_runs <= 1 and after is None:
        legacy_run = run_captured(legacy, args, legacy=True, user_paths=user_paths, **common)
        new_run = run_captured(new, args, legacy=False, **common)
        return compare_runs(legacy_run, new_run, rtol=rtol, atol=atol, printed=printed)
    if legacy_runs <= 1:  # after the training run: the two predictions side by side
        runs = run_parallel([
            lambda on_start: run_captured(legacy, args, legacy=True, user_paths=user_paths,
                                          on_start=on_start, **common),
            lambda on_start: run_captured(new, args, legacy=False, on_start=on_start, **common),
        ], parallel, required=2)
        report = compare_runs(runs[0] or _not_run(legacy, "legacy"),
                              runs[1] or _not_run(new, "new"), rtol=rtol, atol=atol,
                              printed=printed)
        report.before = before
        return report

    def legacy_job(k: int) -> Job:
        return lambda on_start: run_captured(legacy, args, legacy=True, user_paths=user_paths,
                                             number=(k, legacy_runs), on_start=on_start, **common)

    def new_job(on_start) -> ScriptRun:
        return run_captured(new, args, legacy=False, on_start=on_start, **common)

    # the first legacy run and the new one start together; the other legacy runs follow
    jobs = [legacy_job(1), new_job, *(legacy_job(k) for k in range(2, legacy_runs + 1))]
    runs = run_parallel(jobs, parallel, required=2)
    others = [r for r in runs[2:] if r is not None]
    report = compare_runs(runs[0], runs[1], rtol=rtol, atol=atol, printed=printed,
                          legacy_others=others)
    report.before = before
    return report


def _not_run(script: str | os.PathLike, role: str) -> ScriptRun:
    """A run that did not happen (the training run before it failed)."""
    return ScriptRun(role, Path(script), [], None, "", "", 0.0)


def verify_sources(legacy_source: str, new_source: str, path: str | os.PathLike, *,
                   rtol: float | None = None, atol: float | None = None,
                   timeout: float | None = DEFAULT_TIMEOUT, args: Sequence[str] = (),
                   cwd: str | os.PathLike | None = None, printed: bool = True,
                   user_paths: Sequence[str | os.PathLike] = (),
                   on_output: OutputCallback | None = None,
                   seed: int | None = None, align_random: bool = False,
                   legacy_runs: int = 1, parallel: int = PARALLEL_RUNS,
                   legacy_resource_variables: bool = False,
                   legacy_no_graph_rewrites: bool = False) -> VerifyReport:
    """:func:`verify_scripts` for two versions of the file ``path`` held in memory.

    For ``migrate --verify`` in check or diff mode, where the migrated text is
    not written: both versions are written to hidden temporary files *next to*
    ``path`` (so imports of sibling modules and paths relative to ``__file__``
    work), verified, and removed. The report names ``path`` for both runs.
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    written: list[Path] = []
    try:
        for role, source in (("legacy", legacy_source), ("new", new_source)):
            fd, name = tempfile.mkstemp(prefix=f".{path.stem}.tapeshift-{role}-", suffix=".py",
                                        dir=directory)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(source)
            written.append(Path(name))
        report = verify_scripts(written[0], written[1], rtol=rtol, atol=atol, timeout=timeout,
                                args=args, cwd=cwd, printed=printed, user_paths=user_paths,
                                on_output=on_output, seed=seed, align_random=align_random,
                                legacy_runs=legacy_runs, parallel=parallel,
                                legacy_resource_variables=legacy_resource_variables,
                                legacy_no_graph_rewrites=legacy_no_graph_rewrites)
    finally:
        for tmp in written:
            try:
                tmp.unlink()
            except OSError:
                pass
    legacy_runs_done = report.legacy_runs or [report.legacy]
    for run, tmp in [*((r, written[0]) for r in legacy_runs_done), (report.new, written[1])]:
        run.stderr = run.stderr.replace(str(tmp), str(path))
        run.stdout = run.stdout.replace(str(tmp), str(path))
        for entry in run.unseeded.values():
            first = entry.get("first") or ""
            if first.startswith(str(tmp.resolve())) or first.startswith(str(tmp)):
                entry["first"] = str(path) + first[first.rindex(":"):]
        run.path = path
    return report


# -- the subcommand ---------------------------------------------------------

def _non_negative(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text!r}")
    return value


SEED_MAX = 2**32 - 1  # numpy's global generator takes seeds in [0, 2**32)


def seed_value(text: str) -> int:
    """``--seed``'s type: an integer in [0, 2**32)."""
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"must be between 0 and {SEED_MAX}, got {value}")
    return value


def legacy_runs_value(text: str) -> int:
    """``--legacy-runs``' type: an integer >= 2."""
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 2, got {text!r}") from None
    if value < 2:
        raise argparse.ArgumentTypeError(f"must be an integer >= 2, got {value}")
    return value


LEGACY_RUNS_HELP = (
    "run the legacy script N times (N >= 2; same --seed and --align-random) and compare its "
    "runs with each other first: where they differ (a program that is not deterministic by "
    "itself), the new value agrees when it lies within their range widened by the tolerance, "
    "and the verdict says 'OK within the legacy program's own run-to-run spread' (exit 0). "
    f"At most {PARALLEL_RUNS} scripts run at a time; see docs/verify.md")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = TOLERANCE_HELP
    parser.add_argument("legacy", metavar="LEGACY", help="the TF1 script (run through run-legacy)")
    parser.add_argument("new", metavar="NEW", help="the migrated TF2 script")
    parser.add_argument("--rtol", type=_non_negative, default=None, metavar="R",
                        help="relative tolerance for every dtype (default: by dtype, see below)")
    parser.add_argument("--atol", type=_non_negative, default=None, metavar="A",
                        help="absolute tolerance for every dtype (default: by dtype, see below)")
    parser.add_argument("--timeout", type=_non_negative, default=DEFAULT_TIMEOUT, metavar="S",
                        help=f"seconds each script may run (default {DEFAULT_TIMEOUT:g}; 0: no limit)")
    parser.add_argument("--seed", type=seed_value, default=None, metavar="N",
                        help="start both runs with Python's random, numpy's global generator and "
                             "TensorFlow's seeds set to N (numpy/Python draws then agree; TF random "
                             "ops in a TF1 graph and in TF2 eager still draw different streams; "
                             "--align-random aligns them)")
    parser.add_argument("--align-random", action="store_true",
                        help="make TensorFlow's random draws in both runs come from one stateless "
                             f"stream of seed N (--seed N, else {ALIGN_DEFAULT_SEED}): a layer "
                             "weight's draws keyed by its variable name, a layer call's by the "
                             "layer and its executions, the others by the order they run (a TF1 "
                             "session run's random ops in the order they were created; "
                             "see docs/verify.md)")
    parser.add_argument("--legacy-runs", type=legacy_runs_value, default=None, metavar="N",
                        help=LEGACY_RUNS_HELP)
    parser.add_argument("--legacy-resource-variables", action="store_true",
                        help="run the legacy script with resource variables (TF1's "
                             "tf.enable_resource_variables(), TF2's kind): a graph reads each "
                             "variable once per run, so a train op's update cannot land before a "
                             "backward op of the same run reads it, as it can with TF1's default "
                             "ref variables (see docs/verify.md)")
    parser.add_argument("--legacy-no-graph-rewrites", action="store_true",
                        help="run the legacy script's sessions with Grappler, TensorFlow's "
                             "graph optimizer, off (its meta optimizer, also in a session given "
                             "its own ConfigProto): the graph's ops run as written, as eager code "
                             "runs them, with no rewrite that rounds float32 otherwise (MatMul + "
                             "BiasAdd fused, constants folded); for values that differ by about "
                             "1 ulp and drift apart over training (see docs/verify.md)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--no-printed", dest="printed", action="store_false",
                        help="do not compare the numbers the scripts print")
    parser.add_argument("--user-path", action="append", default=[], metavar="DIR",
                        help="as run-legacy --user-path, for the legacy script (repeatable)")
    parser.add_argument("--show-output", action="store_true",
                        help="show both scripts' stdout and stderr as they run (to stderr with --json)")
    parser.add_argument("--args", dest="script_args", type=shlex.split, default=[],
                        metavar="'ARG ...'",
                        help="arguments for both scripts, as one shell-quoted string "
                             "(write --args='--flag' when it has no space)")
    pair = parser.add_mutually_exclusive_group()
    pair.add_argument("--after", metavar="TRAIN",
                      help="a train/predict pair: run the legacy training script TRAIN first "
                           "(through run-legacy), then LEGACY and NEW, the two prediction "
                           "scripts, on what it wrote (its checkpoint), and compare them; "
                           "all three in the current directory")
    pair.add_argument("--after-migrated", metavar="TRAIN",
                      help="as --after, with the migrated training script TRAIN run under TF2: "
                           "the legacy prediction script then reads the migrated program's "
                           "checkpoint")
    parser.add_argument("--after-args", type=shlex.split, default=[], metavar="'ARG ...'",
                        help="arguments for the training script of --after / --after-migrated")


def run(args: argparse.Namespace) -> int:
    after = args.after or args.after_migrated
    for path in (args.legacy, args.new, *([after] if after else [])):
        if not Path(path).is_file():
            print(f"tapeshift verify: no such script: {path}", file=sys.stderr)
            return ExitCode.ERROR
    if args.after_args and not after:
        print("tapeshift verify: --after-args needs --after or --after-migrated", file=sys.stderr)
        return ExitCode.ERROR
    on_output = None
    if args.show_output:
        def on_output(role: str, stream: str, text: str) -> None:
            target = sys.stderr if (args.json or stream == "stderr") else sys.stdout
            target.write(f"[{role}] {text}" if text.endswith("\n") else f"[{role}] {text}\n")
            target.flush()

    report = verify_scripts(Path(args.legacy), Path(args.new), rtol=args.rtol, atol=args.atol,
                            timeout=args.timeout or None, args=args.script_args,
                            printed=args.printed, user_paths=args.user_path, on_output=on_output,
                            seed=args.seed, align_random=args.align_random,
                            legacy_runs=args.legacy_runs or 1, after=after,
                            after_legacy=args.after is not None, after_args=args.after_args,
                            legacy_resource_variables=args.legacy_resource_variables,
                            legacy_no_graph_rewrites=args.legacy_no_graph_rewrites)
    if args.json:
        print(report.to_json())
    else:
        print(report.to_text())
    return report.exit_code


def main(argv: Sequence[str] | None = None) -> int:
    """``tapeshift verify ARGS``: the command line's own parsing and exit codes."""
    return standalone_main("verify", HELP, add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
