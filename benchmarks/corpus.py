"""tapeshift migrate versus tf_upgrade_v2 on real TF1-era packages, in one run.

Fetches the fixed corpus with ``pip download`` (tf-slim 1.1.0, tflearn 0.5.0,
tensor2tensor 1.15.7: 590 files, 200700 lines) into ``benchmarks/corpus-data/``
(gitignored), unpacks each into a tree, then on each tree and on all together:

* ``tf_upgrade_v2 --intree T --outtree O`` (it ships with tensorflow), timed;
* tapeshift through ``tapeshift.migrate.engine.batch.migrate_files`` (``--jobs`` workers, a fresh
  cache filled as files are done), timed, outputs written to a copy of the tree;
* the same again with a warm cache (the rerun a CI job would do), timed;
* the current CLI ``tapeshift migrate --out DIR TREE``, timed: ``--cli auto``
  (the default) runs it with ``--jobs`` once the CLI has that flag (seen in
  ``--help``) and, until then, only with ``--cli always``;
* with ``--baseline CHECKOUT``, the same command from another checkout (an
  older commit: ``git worktree add`` or ``git archive``), in the same rounds,
  for before/after figures measured side by side;
* LibCST's own floor on the same workers: parse and print every file back
  (the least any LibCST codemod does); parse, run one transformer that changes
  nothing and print (what each rule pass adds); parse and resolve the scope
  analysis that qualified names need (the least a rule matching TensorFlow by
  qualified name does), timed.

and prints: files, lines, wall time of each, the ratio, the CPU seconds each
tool used (its own process and every process it started: ``os.times()``
before and after, children included once they are waited for) and their
ratio, crashes (files a tool failed on), outputs that fail to compile,
idempotence failures (tapeshift's output migrated again changes), and
tapeshift's findings by code.

    python benchmarks/corpus.py [--jobs N] [--rounds N] [--packages tf-slim tflearn tensor2tensor]
                                [--cli auto|always|skip] [--baseline CHECKOUT]

The script measures the tapeshift of the checkout it sits in (the tree API is
imported from there, and the command runs with that checkout first on
``PYTHONPATH``), so a copy of an older commit with this script in its
``benchmarks/`` measures that commit's code on the same trees.

Both tools run ``--rounds`` times (default 3) on each tree, back to back, the
order swapped every round; the table gives the medians and each round's ratio,
so a burst of load on this shared machine moves one round, not the result.

Targets (issue 7): zero crashes, zero outputs that fail to compile, zero
idempotence failures, tapeshift wall time <= 1/2 of tf_upgrade_v2's with 2
cores, cached rerun <= 1/20.
"""

from __future__ import annotations

import argparse
import collections
import functools
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path
from statistics import median
from typing import Dict, List, Tuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from tapeshift.migrate.fileio.cache import Cache  # noqa: E402
from tapeshift.migrate.fileio.encoding import decode_source  # noqa: E402
from tapeshift.migrate.fileio.files import discover  # noqa: E402
from tapeshift.migrate.engine.python_syntax import compile_quietly  # noqa: E402
from tapeshift.migrate.engine.batch import default_jobs, migrate_files, run_tree, write_output  # noqa: E402

#: Released TF1-era packages on PyPI: tf-slim and tflearn (61k lines), and
#: tensor2tensor 1.15.7, the last TF1 release of Google's large model library
#: (442 files, 139k lines; many files that only define models and problems).
CORPUS = {"tf-slim": "1.1.0", "tflearn": "0.5.0", "tensor2tensor": "1.15.7"}


def cpu_now() -> float:
    """CPU seconds (user + system) of this process and of its children that
    have been waited for."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def bin_path(name: str) -> str:
    here = Path(sys.executable).parent / name
    return str(here) if here.exists() else (shutil.which(name) or name)


def fetch(data: Path, packages: List[str]) -> Dict[str, Path]:
    dl = data / "dl"
    dl.mkdir(parents=True, exist_ok=True)
    trees: Dict[str, Path] = {}
    for name in packages:
        version = CORPUS[name]
        stem = name.replace("-", "_")
        have = [p for p in dl.iterdir() if p.name.lower().replace("-", "_").startswith(f"{stem}_{version}")]
        if not have:
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                            f"{name}=={version}", "-d", str(dl)], check=True)
            have = [p for p in dl.iterdir()
                    if p.name.lower().replace("-", "_").startswith(f"{stem}_{version}")]
        archive = sorted(have)[0]
        tree = data / "trees" / f"{name}-{version}"
        if not tree.exists():
            tmp = Path(tempfile.mkdtemp(dir=data))
            if archive.suffix == ".whl" or archive.suffix == ".zip":
                with zipfile.ZipFile(archive) as z:
                    z.extractall(tmp)
            else:
                with tarfile.open(archive) as t:
                    t.extractall(tmp, filter="data")
            tree.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, tree)
        trees[name] = tree
    return trees


def py_files(tree: Path) -> List[Path]:
    return [f for f, _ in discover([str(tree)], gitignore=False, suffixes=(".py",)).files]


def count_lines(files: List[Path]) -> int:
    return sum(f.read_bytes().count(b"\n") for f in files)


def compiles(path: Path) -> bool:
    try:
        compile_quietly(path.read_bytes(), str(path))
        return True
    except (SyntaxError, ValueError):
        return False


def run_tf_upgrade(tree: Path, out: Path) -> Tuple[float, int, int, float]:
    """(seconds, files it failed on, outputs that fail to compile, CPU seconds)."""
    shutil.rmtree(out, ignore_errors=True)
    report = out.parent / (out.name + ".report.txt")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    c0, t0 = cpu_now(), time.perf_counter()
    subprocess.run([bin_path("tf_upgrade_v2"), "--intree", str(tree), "--outtree", str(out),
                    "--reportfile", str(report)], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env=env)
    seconds, cpu = time.perf_counter() - t0, cpu_now() - c0
    failed = 0
    if report.exists():
        text = report.read_text(errors="replace")
        failed = text.count("Failed to parse")
    bad = 0
    for f in py_files(tree):
        o = out / f.relative_to(tree)
        if compiles(f) and (not o.exists() or not compiles(o)):
            bad += 1
    return seconds, failed, bad, cpu


def time_tapeshift(files: List[Path], jobs: int, cache_dir: Path):
    """(cold seconds, cached-rerun seconds, records, rerun records, cold CPU
    seconds): a first run that fills a fresh cache as files are done, then the
    rerun a CI job would do. The CPU is this process's and its workers' (the
    pool is shut down, its workers waited for, before ``migrate_files`` returns)."""
    shutil.rmtree(cache_dir, ignore_errors=True)
    c0, t0 = cpu_now(), time.perf_counter()
    records = migrate_files(files, jobs=jobs, cache=Cache(cache_dir))
    cold, cpu = time.perf_counter() - t0, cpu_now() - c0
    t0 = time.perf_counter()
    again = migrate_files(files, jobs=jobs, cache=Cache(cache_dir))
    warm = time.perf_counter() - t0
    return cold, warm, records, again, cpu


def check_tapeshift(tree: Path, out: Path, files: List[Path], records, again, jobs: int):
    """Outputs written to a copy of the tree, compiled, and migrated again (untimed)."""
    shutil.rmtree(out, ignore_errors=True)
    misses = sum(1 for r in again if not r.cached)  # only uncacheable records (crashes)
    crashes = sum(1 for r in records if r.error and any(f.code == "TS114" for f in r.findings))
    errors = sum(1 for r in records if r.error)
    for f, r in zip(files, records):
        dest = out / f.relative_to(tree)
        if r.changed:
            write_output(r, dest)
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dest)
    bad = sum(1 for f, r in zip(files, records) if r.changed and not compiles(out / f.relative_to(tree)))
    # idempotence: migrate the changed outputs again
    changed = [out / f.relative_to(tree) for f, r in zip(files, records) if r.changed]
    second = migrate_files(changed, jobs=jobs) if changed else []
    idem = sum(1 for r in second if r.changed)
    codes = collections.Counter(f.code for r in records for f in r.findings)
    modes = collections.Counter(r.mode for r in records)
    slowest = sorted(((r.seconds, Path(r.path).relative_to(tree).as_posix()) for r in records),
                     reverse=True)[:3]
    return dict(misses=misses, slowest=slowest, crashes=crashes, errors=errors, bad=bad, idem=idem,
                codes=codes, modes=modes, changed=len(changed))


FLOORS = ("codegen", "pass", "scopes")


def libcst_floor_job(path: str, kind: str) -> bool:
    """Parse one file with LibCST, then: print it back ("codegen"); run one
    transformer that changes nothing over it and print it ("pass": the least one
    rule costs); or resolve its scope analysis ("scopes")."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, ScopeProvider

    try:
        text, _ = decode_source(Path(path).read_bytes(), path)
        module = cst.parse_module(text)
    except Exception:  # what tapeshift reports as TS100 costs it no more
        return False
    if kind == "scopes":
        MetadataWrapper(module, unsafe_skip_copy=True).resolve(ScopeProvider)
    elif kind == "pass":
        module.visit(cst.CSTTransformer()).code
    else:
        module.code
    return True


def run_libcst_floor(files: List[Path], jobs: int) -> Dict[str, float]:
    """Wall seconds, on ``jobs`` workers, of each of :data:`FLOORS`."""
    order = sorted(range(len(files)), key=lambda i: -files[i].stat().st_size)
    out = {}
    for kind in FLOORS:
        job = functools.partial(libcst_floor_job, kind=kind)
        t0 = time.perf_counter()
        run_tree([str(f) for f in files], job, jobs=jobs, on_crash=lambda item, exc: False,
                 order=order)
        out[kind] = time.perf_counter() - t0
    return out


def cli_has_jobs() -> bool:
    try:
        out = subprocess.run([bin_path("tapeshift"), "migrate", "--help"], capture_output=True,
                             text=True, timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--jobs" in out


def run_cli(tree: Path, out: Path, jobs: int, with_jobs: bool,
            root: Path = ROOT) -> Tuple[float, int, float]:
    """(seconds, exit code, CPU seconds of the command and its workers); a
    non-zero exit prints the end of the command's stderr."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = [bin_path("tapeshift"), "migrate", "--out", str(out), "--report", str(out) + ".report.txt"]
    if with_jobs:
        cmd += ["--jobs", str(jobs), "--no-cache"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(root)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])))
    c0, t0 = cpu_now(), time.perf_counter()
    proc = subprocess.run(cmd + [str(tree)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          env=env)
    seconds, cpu = time.perf_counter() - t0, cpu_now() - c0
    if proc.returncode:
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-3:]
        print(f"# {' '.join(cmd)} {tree}: exit {proc.returncode}: " + " | ".join(tail),
              file=sys.stderr, flush=True)
    return seconds, proc.returncode, cpu


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=HERE / "corpus-data",
                        help="download and work directory (default: benchmarks/corpus-data, gitignored)")
    parser.add_argument("--jobs", type=int, default=default_jobs())
    parser.add_argument("--packages", nargs="+", choices=sorted(CORPUS), default=sorted(CORPUS))
    parser.add_argument("--rounds", type=int, default=3,
                        help="paired runs of both tools per tree, in alternating order; the "
                             "table gives medians (default: 3)")
    parser.add_argument("--cli", choices=("auto", "always", "skip"), default="auto",
                        help="also time the tapeshift CLI (auto: when it has --jobs)")
    parser.add_argument("--baseline", type=Path, default=None, metavar="CHECKOUT",
                        help="another checkout of tapeshift (an older commit, say) whose "
                             "`tapeshift migrate` is timed in the same paired rounds, for "
                             "before/after figures from one run")
    args = parser.parse_args(argv)
    rounds = max(1, args.rounds)

    trees = fetch(args.data, args.packages)
    work = args.data / "out"
    work.mkdir(parents=True, exist_ok=True)
    with_jobs = cli_has_jobs()
    do_cli = args.cli == "always" or (args.cli == "auto" and with_jobs)

    files = {name: py_files(tree) for name, tree in trees.items()}
    timed = {name: dict(tfu=[], ts=[], warm=[], cli=[], cli_exit=[], tfu_cpu=[], ts_cpu=[],
                        cli_cpu=[], base=[], base_cpu=[], base_exit=[]) for name in trees}
    first: Dict[str, tuple] = {}
    tools = ("tfu", "ts", "cli") if do_cli else ("tfu", "ts")
    if args.baseline is not None:
        tools += ("base",)
    for k in range(rounds):
        for name, tree in trees.items():
            # the tools side by side, in reverse order every other round
            # (the machine is shared: what it does to one it does to the other)
            for tool in (tools if k % 2 == 0 else tools[::-1]):
                if tool == "tfu":
                    tf = run_tf_upgrade(tree, work / f"{name}.tf_upgrade_v2")
                    timed[name]["tfu"].append(tf[0])
                    timed[name]["tfu_cpu"].append(tf[3])
                elif tool == "ts":
                    cold, warm, records, again, cpu = time_tapeshift(
                        files[name], args.jobs, work / f"{name}.cache")
                    timed[name]["ts"].append(cold)
                    timed[name]["ts_cpu"].append(cpu)
                    timed[name]["warm"].append(warm)
                else:
                    root = ROOT if tool == "cli" else args.baseline.resolve()
                    seconds, code, cpu = run_cli(tree, work / f"{name}.{tool}", args.jobs,
                                                 with_jobs, root)
                    timed[name][tool].append(seconds)
                    timed[name][f"{tool}_cpu"].append(cpu)
                    timed[name][f"{tool}_exit"].append(code)
            if k == 0:
                first[name] = (tf, records, again)
            print(f"# round {k + 1}/{rounds}: {name} done ({len(files[name])} files)",
                  file=sys.stderr, flush=True)

    rows = []
    all_codes: collections.Counter = collections.Counter()
    for name, tree in trees.items():
        (_, tf_fail, tf_bad, _), records, again = first[name]
        ts = check_tapeshift(tree, work / f"{name}.tapeshift", files[name], records, again, args.jobs)
        ts.update(timed[name])
        ts["ratios"] = [a / b for a, b in zip(ts["ts"], ts["tfu"])]
        ts["floor"] = run_libcst_floor(files[name], args.jobs)
        all_codes.update(ts["codes"])
        rows.append((name, len(files[name]), count_lines(files[name]), tf_fail, tf_bad, ts))

    print(f"\nCorpus benchmark: tapeshift (in-process tree API, --jobs {args.jobs}; first run fills the "
          f"cache) vs tf_upgrade_v2, python {sys.version.split()[0]}, {default_jobs()} core(s); "
          f"medians of {rounds} paired round(s)\n")
    print("| package | files | lines | tf_upgrade_v2 s | tapeshift s | ratio | ratio per round "
          "| CPU s (tfu/ts) | CPU ratio | cached s | cached ratio | crashes (tfu/ts) "
          "| fail to compile (tfu/ts) | idempotence failures | ts errors | ts modes |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")

    def cpu_ratio(ts_cpu, tfu_cpu):
        return median([a / b for a, b in zip(ts_cpu, tfu_cpu)])

    def row(label, n, lines, tfu, ts_s, warm, ratios, tfu_cpu, ts_cpu, fails, bads, idem, errors,
            modes):
        print(f"| {label} | {n} | {lines} | {median(tfu):.1f} | {median(ts_s):.1f} "
              f"| {median(ratios):.2f} | {', '.join(f'{r:.2f}' for r in ratios)} "
              f"| {median(tfu_cpu):.1f} / {median(ts_cpu):.1f} | {cpu_ratio(ts_cpu, tfu_cpu):.2f} "
              f"| {median(warm):.2f} | {median([w / t for w, t in zip(warm, tfu)]):.3f} "
              f"| {fails} | {bads} | {idem} | {errors} | {modes} |")

    for name, n, lines, tf_fail, tf_bad, ts in rows:
        modes = ", ".join(f"{k} {v}" for k, v in sorted(ts["modes"].items()))
        row(name, n, lines, ts["tfu"], ts["ts"], ts["warm"], ts["ratios"], ts["tfu_cpu"],
            ts["ts_cpu"], f"{tf_fail}/{ts['crashes']}", f"{tf_bad}/{ts['bad']}", ts["idem"],
            ts["errors"], modes)
    if len(rows) > 1:
        def total(key):  # per round, summed over the trees
            return [sum(r[5][key][k] for r in rows) for k in range(rounds)]
        tfu_t, ts_t, warm_t = total("tfu"), total("ts"), total("warm")
        row("**total**", sum(r[1] for r in rows), sum(r[2] for r in rows), tfu_t, ts_t, warm_t,
            [a / b for a, b in zip(ts_t, tfu_t)], total("tfu_cpu"), total("ts_cpu"),
            f"{sum(r[3] for r in rows)}/{sum(r[5]['crashes'] for r in rows)}",
            f"{sum(r[4] for r in rows)}/{sum(r[5]['bad'] for r in rows)}",
            sum(r[5]["idem"] for r in rows), sum(r[5]["errors"] for r in rows), "")

    def command_rows(key: str) -> None:
        """One line per tree (and the total) for a command timed in the rounds."""
        for name, *_rest, ts in rows:
            ratios = [a / b for a, b in zip(ts[key], ts["tfu"])]
            print(f"  {name}: {median(ts[key]):.1f} s, ratio {median(ratios):.2f} "
                  f"({', '.join(f'{r:.2f}' for r in ratios)}); CPU {median(ts[key + '_cpu']):.1f} s, "
                  f"CPU ratio {cpu_ratio(ts[key + '_cpu'], ts['tfu_cpu']):.2f}; "
                  f"exit {sorted(set(ts[key + '_exit']))}")
        if len(rows) > 1:
            times, cpus = total(key), total(key + "_cpu")
            ratios = [a / b for a, b in zip(times, total("tfu"))]
            print(f"  total: {median(times):.1f} s, ratio {median(ratios):.2f} "
                  f"({', '.join(f'{r:.2f}' for r in ratios)}); CPU {median(cpus):.1f} s, "
                  f"CPU ratio {cpu_ratio(cpus, total('tfu_cpu')):.2f}")

    if do_cli:
        print("\nCLI (`tapeshift migrate --out DIR TREE`" + (" --jobs N --no-cache" if with_jobs else
                                                             ", single process") + "; a new "
              "process, its start and imports included), in the same rounds:")
        command_rows("cli")
    if args.baseline is not None:
        print(f"\nThe same command from {args.baseline} (the baseline), in the same rounds:")
        command_rows("base")
    if not do_cli:
        print("\nCLI not timed (" + ("--cli skip" if args.cli == "skip" else
                                     "it has no --jobs yet; --cli always to time it anyway") + ")")
    for name, *_rest, ts in rows:
        print(f"{name}: slowest files in round 1 (s): "
              + ", ".join(f"{p} {t:.1f}" for t, p in ts["slowest"])
              + f"; cache misses on rerun: {ts['misses']}")
    print(f"\nLibCST alone on the same {args.jobs} worker(s), wall s, once, after the rounds "
          "(median tf_upgrade_v2 and tapeshift s for scale):")
    print("| package | tf_upgrade_v2 | parse + codegen | parse + one no-op transformer pass + codegen "
          "| parse + scope analysis | tapeshift |")
    print("|---|---|---|---|---|---|")
    for name, n, lines, tf_fail, tf_bad, ts in rows:
        floor = ts["floor"]
        print(f"| {name} | {median(ts['tfu']):.1f} | {floor['codegen']:.1f} | {floor['pass']:.1f} "
              f"| {floor['scopes']:.1f} | {median(ts['ts']):.1f} |")
    if len(rows) > 1:
        floors = {k: sum(r[5]["floor"][k] for r in rows) for k in FLOORS}
        print(f"| total | {median(tfu_t):.1f} | {floors['codegen']:.1f} | {floors['pass']:.1f} "
              f"| {floors['scopes']:.1f} | {median(ts_t):.1f} |")
    print("\nFindings by code: " + ", ".join(f"{c} {n}" for c, n in sorted(all_codes.items())))
    print("Targets: crashes 0, fail to compile 0, idempotence failures 0, ratio <= 0.50, "
          "cached ratio <= 0.05 (CPU ratio: for information; tf_upgrade_v2 runs in one process, "
          f"tapeshift on {args.jobs})")
    ok = all(r[5]["crashes"] == 0 and r[5]["bad"] == 0 and r[5]["idem"] == 0 for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
