"""Instructions the migration executes on a tree: this checkout against another, counted by Valgrind.

Wall and CPU seconds on a shared machine move by 10-20% from one run of the
same code to the next, more than most single engine steps save; the number
of instructions a run executes moves by well under 1%. This script runs the
pipeline (``migrate_source``, tape mode, as the tree runner's workers do)
over every ``.py`` file of a tree, one process, under ``valgrind
--tool=cachegrind --cache-sim=no``, for this checkout and for ``--baseline``
(another checkout, e.g. ``git worktree add /tmp/base <commit>``), both at
once, and prints a table: instructions in all and in the migration alone (the
same run without migrating: Python's start, imports and reading the files).

Valgrind makes a run about 30 times slower: give it a part of a big tree
(``benchmarks/corpus-data/trees/tensor2tensor-1.15.7/tensor2tensor/utils``,
20k lines, takes about 4 minutes on 2 cores), or ``--limit`` files.

    python benchmarks/instructions.py TREE [--baseline CHECKOUT] [--limit N]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent

#: run in the measured process: migrate every file given (or only read them)
_JOB = r"""
import sys
from tapeshift.migrate.engine.pipeline import migrate_source
from tapeshift.migrate.fileio.encoding import decode_source
paths = open(sys.argv[2]).read().split("\n")
texts = [(p, decode_source(open(p, "rb").read())[0]) for p in paths if p]
if sys.argv[1] == "migrate":
    for path, text in texts:
        migrate_source(text, path)
"""

_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def instructions(checkout: Path, files: Path, what: str, out: Path) -> subprocess.Popen:
    """Start one counted run (``what``: "migrate" or "read") of ``checkout``'s code."""
    env = dict(os.environ, PYTHONPATH=str(checkout), PYTHONDONTWRITEBYTECODE="1")
    cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no",
           f"--cachegrind-out-file={out}.cg", sys.executable, "-c", _JOB, what, str(files)]
    # run from the output's folder: ``python -c`` puts its working directory first on
    # sys.path, which from a checkout would import that checkout's code for both runs
    return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, cwd=str(out.parent),
                            stderr=open(f"{out}.log", "w"))


def counted(out: Path) -> int:
    text = Path(f"{out}.log").read_text()
    found = _REFS.search(text)
    if not found:
        raise SystemExit(f"{out}.log: no instruction count (valgrind said: {text[-400:]})")
    return int(found.group(1).replace(",", ""))


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--baseline", type=Path, default=None, metavar="CHECKOUT",
                        help="another checkout whose code is counted in the same run")
    parser.add_argument("--limit", type=int, default=None, help="the first N files only")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("instructions.py: valgrind is not installed", file=sys.stderr)
        return 2
    paths = sorted(str(p) for p in args.tree.rglob("*.py"))[:args.limit]
    if not paths:
        print(f"instructions.py: no .py file under {args.tree}", file=sys.stderr)
        return 2
    checkouts = {"this checkout": ROOT}
    if args.baseline is not None:
        checkouts["baseline"] = args.baseline.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        files = Path(tmp) / "files.txt"
        files.write_text("\n".join(paths))
        runs: Dict[tuple, Path] = {}
        procs = []
        for name, checkout in checkouts.items():
            for what in ("migrate", "read"):
                runs[(name, what)] = Path(tmp) / f"{len(runs)}"
                procs.append(instructions(checkout, files, what, runs[(name, what)]))
        for proc in procs:
            if proc.wait():
                print("instructions.py: a counted run failed: see the logs below", file=sys.stderr)
                for out in runs.values():
                    print(Path(f"{out}.log").read_text()[-1000:], file=sys.stderr)
                return 1
        counts = {key: counted(out) for key, out in runs.items()}
    lines = sum(Path(p).read_bytes().count(b"\n") for p in paths)
    print(f"Instructions (Valgrind cachegrind) to migrate {len(paths)} files, {lines} lines, "
          f"of {args.tree}; python {sys.version.split()[0]}\n")
    print("| code | instructions, whole run | start, imports, reading | migration | per line |")
    print("|---|---|---|---|---|")
    migration = {}
    for name, checkout in checkouts.items():
        whole, base = counts[(name, "migrate")], counts[(name, "read")]
        migration[name] = whole - base
        print(f"| {name} ({checkout}) | {whole / 1e9:.3f} G | {base / 1e9:.3f} G | "
              f"{migration[name] / 1e9:.3f} G | {migration[name] / max(lines, 1) / 1e3:.0f} k |")
    if "baseline" in migration:
        change = migration["this checkout"] / migration["baseline"] - 1
        print(f"\nMigration, this checkout against the baseline: {change:+.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
