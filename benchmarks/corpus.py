"""tapeshift migrate versus tf_upgrade_v2 on real TF1-era packages, in one run.

Fetches the fixed corpus with ``pip download`` (tf-slim 1.1.0, tflearn 0.5.0)
into ``benchmarks/corpus-data/`` (gitignored), unpacks each into a tree, then
on each tree and on both together:

* ``tf_upgrade_v2 --intree T --outtree O`` (it ships with tensorflow), timed;
* tapeshift through ``migrate.tree.migrate_files`` (``--jobs`` workers, no
  cache), timed, outputs written to a copy of the tree;
* the same again with a warm cache (the rerun a CI job would do), timed;
* the current CLI ``tapeshift migrate --out DIR TREE``, timed: ``--cli auto``
  (the default) runs it with ``--jobs`` once the CLI has that flag (seen in
  ``--help``) and, until then, only with ``--cli always``;
* LibCST's own floor on the same workers: parse and print every file back
  (the least any LibCST codemod does); parse, run one transformer that changes
  nothing and print (what each rule pass adds); parse and resolve the scope
  analysis that qualified names need (the least a rule matching TensorFlow by
  qualified name does), timed.

and prints: files, lines, wall time of each, the ratio, crashes (files a tool
failed on), outputs that fail to compile, idempotence failures (tapeshift's
output migrated again changes), and tapeshift's findings by code.

    python benchmarks/corpus.py [--jobs N] [--packages tf-slim tflearn] [--cli auto|always|skip]

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
from typing import Dict, List, Tuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from migrate.cache import Cache  # noqa: E402
from migrate.encoding import decode_source  # noqa: E402
from migrate.files import discover  # noqa: E402
from migrate.python_syntax import compile_quietly  # noqa: E402
from migrate.tree import default_jobs, migrate_files, run_tree, write_output  # noqa: E402

CORPUS = {"tf-slim": "1.1.0", "tflearn": "0.5.0"}


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


def run_tf_upgrade(tree: Path, out: Path) -> Tuple[float, int, int, int]:
    """(seconds, files it failed on, outputs that fail to compile, of inputs that compiled)."""
    shutil.rmtree(out, ignore_errors=True)
    report = out.parent / (out.name + ".report.txt")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    t0 = time.perf_counter()
    subprocess.run([bin_path("tf_upgrade_v2"), "--intree", str(tree), "--outtree", str(out),
                    "--reportfile", str(report)], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env=env)
    seconds = time.perf_counter() - t0
    failed = 0
    if report.exists():
        text = report.read_text(errors="replace")
        failed = text.count("Failed to parse")
    bad = 0
    for f in py_files(tree):
        o = out / f.relative_to(tree)
        if compiles(f) and (not o.exists() or not compiles(o)):
            bad += 1
    return seconds, failed, bad, 0


def run_tapeshift(tree: Path, out: Path, jobs: int, cache_dir: Path):
    files = py_files(tree)
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(cache_dir, ignore_errors=True)
    # first run: a fresh cache (filled as files are done), then the rerun a CI job would do
    t0 = time.perf_counter()
    records = migrate_files(files, jobs=jobs, cache=Cache(cache_dir))
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    again = migrate_files(files, jobs=jobs, cache=Cache(cache_dir))
    warm = time.perf_counter() - t0
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
    # idempotence: migrate the changed outputs again (untimed)
    changed = [out / f.relative_to(tree) for f, r in zip(files, records) if r.changed]
    second = migrate_files(changed, jobs=jobs) if changed else []
    idem = sum(1 for r in second if r.changed)
    codes = collections.Counter(f.code for r in records for f in r.findings)
    modes = collections.Counter(r.mode for r in records)
    slowest = sorted(((r.seconds, Path(r.path).relative_to(tree).as_posix()) for r in records),
                     reverse=True)[:3]
    return dict(cold=cold, warm=warm, misses=misses, slowest=slowest, crashes=crashes, errors=errors, bad=bad, idem=idem,
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


def run_cli(tree: Path, out: Path, jobs: int, with_jobs: bool) -> Tuple[float, int]:
    shutil.rmtree(out, ignore_errors=True)
    cmd = [bin_path("tapeshift"), "migrate", "--out", str(out), "--report", str(out) + ".report.txt"]
    if with_jobs:
        cmd += ["--jobs", str(jobs), "--no-cache"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd + [str(tree)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0, proc.returncode


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=HERE / "corpus-data",
                        help="download and work directory (default: benchmarks/corpus-data, gitignored)")
    parser.add_argument("--jobs", type=int, default=default_jobs())
    parser.add_argument("--packages", nargs="+", choices=sorted(CORPUS), default=sorted(CORPUS))
    parser.add_argument("--cli", choices=("auto", "always", "skip"), default="auto",
                        help="also time the tapeshift CLI (auto: when it has --jobs)")
    args = parser.parse_args(argv)

    trees = fetch(args.data, args.packages)
    work = args.data / "out"
    work.mkdir(parents=True, exist_ok=True)
    with_jobs = cli_has_jobs()
    do_cli = args.cli == "always" or (args.cli == "auto" and with_jobs)

    rows = []
    all_codes: collections.Counter = collections.Counter()
    for name, tree in trees.items():
        files = py_files(tree)
        lines = count_lines(files)
        tf_s, tf_fail, tf_bad, _ = run_tf_upgrade(tree, work / f"{name}.tf_upgrade_v2")
        ts = run_tapeshift(tree, work / f"{name}.tapeshift", args.jobs, work / f"{name}.cache")
        cli = run_cli(tree, work / f"{name}.cli", args.jobs, with_jobs) if do_cli else None
        ts["floor"] = run_libcst_floor(files, args.jobs)
        all_codes.update(ts["codes"])
        rows.append((name, len(files), lines, tf_s, tf_fail, tf_bad, ts, cli))
        print(f"# {name}: done ({len(files)} files)", file=sys.stderr, flush=True)

    print(f"\nCorpus benchmark: tapeshift (in-process tree API, --jobs {args.jobs}; first run fills the cache) vs tf_upgrade_v2, "
          f"python {sys.version.split()[0]}, {default_jobs()} core(s)\n")
    print("| package | files | lines | tf_upgrade_v2 s | tapeshift s | ratio | cached s | cached ratio "
          "| crashes (tfu/ts) | fail to compile (tfu/ts) | idempotence failures | ts errors | ts modes |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, n, lines, tf_s, tf_fail, tf_bad, ts, cli in rows:
        modes = ", ".join(f"{k} {v}" for k, v in sorted(ts["modes"].items()))
        print(f"| {name} | {n} | {lines} | {tf_s:.1f} | {ts['cold']:.1f} | {ts['cold'] / tf_s:.2f} "
              f"| {ts['warm']:.2f} | {ts['warm'] / tf_s:.3f} | {tf_fail}/{ts['crashes']} "
              f"| {tf_bad}/{ts['bad']} | {ts['idem']} | {ts['errors']} | {modes} |")
    if len(rows) > 1:
        tf_t = sum(r[3] for r in rows)
        ts_t = sum(r[6]["cold"] for r in rows)
        w_t = sum(r[6]["warm"] for r in rows)
        print(f"| **total** | {sum(r[1] for r in rows)} | {sum(r[2] for r in rows)} | {tf_t:.1f} "
              f"| {ts_t:.1f} | {ts_t / tf_t:.2f} | {w_t:.2f} | {w_t / tf_t:.3f} "
              f"| {sum(r[4] for r in rows)}/{sum(r[6]['crashes'] for r in rows)} "
              f"| {sum(r[5] for r in rows)}/{sum(r[6]['bad'] for r in rows)} "
              f"| {sum(r[6]['idem'] for r in rows)} | {sum(r[6]['errors'] for r in rows)} | |")
    if do_cli:
        print("\nCLI (`tapeshift migrate --out DIR TREE`" + (" --jobs N --no-cache" if with_jobs else
                                                             ", single process") + "):")
        for name, *_rest, cli in rows:
            print(f"  {name}: {cli[0]:.1f} s, exit {cli[1]}")
    else:
        print("\nCLI not timed (" + ("--cli skip" if args.cli == "skip" else
                                     "it has no --jobs yet; --cli always to time it anyway") + ")")
    for name, *_rest, ts, _cli in rows:
        print(f"{name}: slowest files (s): " + ", ".join(f"{p} {t:.1f}" for t, p in ts["slowest"])
              + f"; cache misses on rerun: {ts['misses']}")
    print(f"\nLibCST alone on the same {args.jobs} worker(s), wall s (tf_upgrade_v2 s for scale):")
    print("| package | tf_upgrade_v2 | parse + codegen | parse + one no-op transformer pass + codegen "
          "| parse + scope analysis | tapeshift |")
    print("|---|---|---|---|---|---|")
    for name, n, lines, tf_s, tf_fail, tf_bad, ts, cli in rows:
        floor = ts["floor"]
        print(f"| {name} | {tf_s:.1f} | {floor['codegen']:.1f} | {floor['pass']:.1f} "
              f"| {floor['scopes']:.1f} | {ts['cold']:.1f} |")
    if len(rows) > 1:
        total = {k: sum(r[6]["floor"][k] for r in rows) for k in FLOORS}
        print(f"| total | {sum(r[3] for r in rows):.1f} | {total['codegen']:.1f} | {total['pass']:.1f} "
              f"| {total['scopes']:.1f} | {sum(r[6]['cold'] for r in rows):.1f} |")
    print("\nFindings by code: " + ", ".join(f"{c} {n}" for c, n in sorted(all_codes.items())))
    print("Targets: crashes 0, fail to compile 0, idempotence failures 0, ratio <= 0.50, "
          "cached ratio <= 0.05")
    ok = all(r[6]["crashes"] == 0 and r[6]["bad"] == 0 and r[6]["idem"] == 0 for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
