"""``tapeshift migrate --shard K/N`` on the corpus: the shards against one run.

Fetches tf-slim 1.1.0 and tflearn 0.5.0 as ``benchmarks/corpus.py`` does (into the
gitignored ``benchmarks/corpus-data/``), then runs the command line once over both
trees and once per shard for each N asked, each run with an empty cache of its
own and ``--out`` a directory of its own, one after another on this machine, and
prints per N: the files and wall time of each shard, the slowest shard (what a
CI matrix of N jobs waits for, each on its own machine), and whether the
shards' outputs are disjoint and their union is the one run's output byte for
byte, with the same per-file records (mode, changes, findings).

    python benchmarks/shards.py [--shards 2 4] [--jobs N] [--packages tf-slim tflearn]

It measures the tapeshift of the checkout it sits in (that checkout first on
``PYTHONPATH``): run it from a ``git worktree`` of a commit when the working
tree may change under it (another run of the codemod must see the same rules).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from corpus import CORPUS, fetch  # noqa: E402


def migrate(trees, out: Path, jobs: int, shard: str | None):
    report = out.with_suffix(".json")
    command = [sys.executable, "-m", "tapeshift.migrate", "migrate", "--out", str(out),
               "--jobs", str(jobs), "--cache-dir", str(out.with_suffix(".cache")),
               "--format", "json", "--report", str(report), "--quiet",
               *(["--shard", shard] if shard else []), *map(str, trees)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    started = time.perf_counter()
    code = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          env=env).returncode
    seconds = time.perf_counter() - started
    return code, seconds, json.loads(report.read_text())


def files_of(out: Path) -> dict:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--packages", nargs="+", default=["tf-slim", "tflearn"], choices=sorted(CORPUS))
    args = parser.parse_args()
    trees = list(fetch(HERE / "corpus-data", args.packages).values())
    work = Path(tempfile.mkdtemp(prefix="tapeshift-shards-"))
    try:
        code, whole_s, whole = migrate(trees, work / "whole", args.jobs, None)
        one_run = files_of(work / "whole")
        key = lambda r: r["path"]  # noqa: E731
        print(f"{' + '.join(args.packages)}: one run {len(whole['files'])} files, "
              f"{whole_s:.1f} s, exit {code}, --jobs {args.jobs}")
        for n in args.shards:
            union, records, times, sizes, disjoint = {}, [], [], [], True
            for k in range(1, n + 1):
                _, seconds, report = migrate(trees, work / f"s{k}of{n}", args.jobs, f"{k}/{n}")
                out = files_of(work / f"s{k}of{n}")
                disjoint &= not (set(out) & set(union))
                union.update(out)
                records += report["files"]
                times.append(seconds)
                sizes.append(report["shard"]["files"])
            same = union == one_run and sorted(records, key=key) == sorted(whole["files"], key=key)
            if not same:
                by_path = {r["path"]: r for r in whole["files"]}
                for name in sorted(set(union) | set(one_run)):
                    if union.get(name) != one_run.get(name):
                        print(f"    output differs: {name}")
                for r in records:
                    if r != by_path.get(r["path"]):
                        print(f"    record differs: {r['path']}")
            print(f"  {n} shards: files {sizes}, seconds {[round(t, 1) for t in times]}, slowest "
                  f"{max(times):.1f} s ({max(times) / whole_s:.2f} of one run); disjoint: "
                  f"{disjoint}; union == one run (bytes and records): {same}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
