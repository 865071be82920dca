"""``tapeshift migrate PATH...``: rewrite TF1 gradient code into TF2 tape form.

Modes of output (one at a time; the default is ``--diff``):
    --diff       print a unified diff, write nothing
    --check      print the files that would change; exit 1 if any would
    --in-place   rewrite the files (atomically, keeping their mode)
    --out DIR    write a migrated copy of the tree to DIR (other files copied)

Files are migrated by ``--jobs`` worker processes (``tapeshift.migrate.engine.batch``), selected
by ``tapeshift.migrate.fileio.files.discover`` (globs, .gitignore, no symlinks), decoded and
re-encoded byte for byte (``tapeshift.migrate.fileio.encoding``), notebooks cell by cell
(``tapeshift.migrate.fileio.notebooks``), and cached by content when writing (``tapeshift.migrate.fileio.cache``).
Writes happen in this process, one file at a time, atomically.

The report (each change, each finding, a summary) goes to ``--report FILE``
or, without it, to stderr; ``--format json`` makes it JSON.

``--shard K/N`` processes shard K of N of the files found (by a hash of each
path relative to the root it was found under; ``tapeshift.migrate.fileio.files.Shard``),
so that N jobs, each with its own cache, together do what one run does; the
report says which shard ran and how many files were in it.

Exit codes: 0 success (nothing to change, or changes shown/written); 1
``--check`` found files that would change; 2 usage error, or a path that could
not be read or parsed (the other files are still processed).
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import shutil
import sys
from pathlib import Path
from typing import List, Optional

from tapeshift.migrate.engine import registry
from tapeshift.migrate.engine.exit_codes import ExitCode
from tapeshift.migrate.engine.findings import Severity
from tapeshift.migrate.fileio.cache import DEFAULT_DIR as DEFAULT_CACHE_DIR
from tapeshift.migrate.checks import add_fix_argument, requested_fixes
from tapeshift.migrate.fileio.files import DEFAULT_SUFFIXES, Shard, atomic_write, discover
from tapeshift.migrate.engine.pipeline import MODES, MigrationResult
from tapeshift.migrate.engine.python_syntax import parse
from tapeshift.migrate.engine.batch import Progress, migrate_files, tree_helper_facts, write_output
from tapeshift.migrate.engine.settings import Settings

HELP = "Rewrite TF1 gradient code (tf.gradients, Session) into TF2 GradientTape form."



def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="Python files or directories (searched for *.py)")
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--diff", action="store_true",
                     help="print a unified diff and write nothing (the default)")
    out.add_argument("--check", action="store_true",
                     help="write nothing; exit 1 when any file would change")
    out.add_argument("--in-place", action="store_true", help="rewrite the files in place")
    out.add_argument("--out", metavar="DIR",
                     help="write a migrated copy of the tree to DIR (other files copied)")
    parser.add_argument("--mode", choices=MODES, default="tape",
                        help="tape: convert to GradientTape form, falling back per file; "
                             "compat: only run files on tensorflow.compat.v1 (default: tape)")
    parser.add_argument("--report", metavar="FILE",
                        help="write the report to FILE instead of stderr")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="report format (default: text)")
    add_fix_argument(parser, "apply these `tapeshift check` fixes while migrating (they "
                             "change numbers, on purpose; the report says so). Without it "
                             "the chain-rule mistake is kept as written and reported")
    for option in registry.options():  # the rules' opt-in behaviours
        parser.add_argument(option.flag, action="store_true", dest=option.name, help=option.help)
    parser.add_argument("--shard", type=_shard, default=None, metavar="K/N",
                        help="only shard K of N (1 <= K <= N) of the files found, chosen by a "
                             "stable hash of each path relative to its root: N jobs with "
                             "--shard 1/N ... N/N together migrate what one run does")
    parser.add_argument("--verify", action="store_true",
                        help="run each changed file that runs as a script before and after "
                             "(tapeshift verify) and add the outcome to the report; "
                             "exit 1 on a mismatch, 2 when a script fails")
    parser.add_argument("-j", "--jobs", type=int, metavar="N", default=None,
                        help="worker processes (default: all cores; 1 runs in this process)")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bar (it is only drawn on a terminal anyway)")
    parser.add_argument("--include", action="append", default=[], metavar="GLOB",
                        help="only files matching GLOB (gitignore syntax; repeatable)")
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="skip files matching GLOB (gitignore syntax; repeatable); "
                             ".gitignore files are respected too")
    cache = parser.add_mutually_exclusive_group()
    cache.add_argument("--cache-dir", metavar="DIR",
                       help="reuse results of unchanged files from DIR (default: "
                            "./.tapeshift-cache, and only with --in-place or --out)")
    cache.add_argument("--no-cache", action="store_true", help="use no cache")
    parser.add_argument("--verify-timeout", type=float, default=600.0, metavar="S",
                        help="seconds each script may run under --verify (default: 600)")
    parser.add_argument("--seed", type=_seed, default=None, metavar="N",
                        help="with --verify: as tapeshift verify --seed (Python's random, numpy's "
                             "global generator and TensorFlow's seeds start from N in both runs)")
    parser.add_argument("--align-random", action="store_true",
                        help="with --verify: as tapeshift verify --align-random (TensorFlow's random "
                             "draws in both runs come from one stateless stream, of seed --seed N "
                             "or 0)")
    parser.add_argument("--legacy-runs", type=_legacy_runs, default=None, metavar="N",
                        help="with --verify: as tapeshift verify --legacy-runs (run the legacy "
                             "script N >= 2 times and judge values that differ between its runs "
                             "against their spread)")


def _shard(text: str) -> Shard:
    try:
        return Shard.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _seed(text: str) -> int:
    from tapeshift.migrate.legacy.verify import seed_value  # loaded only when --seed is given

    return seed_value(text)


def _legacy_runs(text: str) -> int:
    from tapeshift.migrate.legacy.verify import legacy_runs_value  # loaded only when given

    return legacy_runs_value(text)


# --------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------
def _summary(results: List[MigrationResult], errors: List[str]) -> dict:
    count = lambda m: sum(1 for r in results if r.mode == m)  # noqa: E731
    return {
        "files": len(results),
        "changed": sum(1 for r in results if r.changed),
        "tape": count("tape"),
        "compat": count("compat"),
        "fixed": count("fixed"),
        "unchanged": count("unchanged"),
        "errors": count("error") + len(errors),
        "findings": sum(len(r.findings) for r in results),
        "changes": sum(len(r.changes) for r in results),
    }


def _shard_line(shard: dict) -> str:
    return (f"shard {shard['shard']}: {shard['files']} of the {shard['of']} file(s) found "
            f"(the other shards have the rest)")


def format_text(results: List[MigrationResult], errors: List[str],
                verified: Optional[dict] = None, shard: Optional[dict] = None) -> str:
    verified = verified or {}
    lines: List[str] = []
    for r in results:
        if not r.findings and not r.changes and not r.changed:
            continue
        lines.append(f"{r.path}: {r.mode}")
        if r.path in verified:
            lines.append(f"  verify: {verified[r.path].summary()}")
        for c in r.changes:
            lines.append(f"  {c.location()}: change [{c.rule}] {c.description}")
        for f in r.findings:
            lines.append(f"  {f.location()}: {f.code} {f.severity.value} [{f.name}] {f.message}")
    for e in errors:
        lines.append(f"error: {e}")
    if shard:
        lines.append(_shard_line(shard))
    s = _summary(results, errors)
    fixes = f", {s['fixed']} fixes only" if s["fixed"] else ""
    lines.append(
        f"{s['files']} file(s): {s['changed']} changed ({s['tape']} tape form, "
        f"{s['compat']} compat mode{fixes}), {s['unchanged']} unchanged, {s['errors']} error(s); "
        f"{s['changes']} change(s), {s['findings']} finding(s)")
    return "\n".join(lines) + "\n"


def format_json(results: List[MigrationResult], errors: List[str],
                verified: Optional[dict] = None, shard: Optional[dict] = None) -> str:
    verified = verified or {}
    doc: dict = {"shard": shard} if shard else {}
    doc |= {
        "files": [
            {"path": r.path, "mode": r.mode, "changed": r.changed,
             "changes": [c.to_dict() for c in r.changes],
             "findings": [f.to_dict() for f in r.findings],
             **({"verify": verified[r.path].to_dict()} if r.path in verified else {})}
            for r in results
        ],
        "errors": errors,
        "summary": _summary(results, errors),
    }
    return json.dumps(doc, indent=2) + "\n"


def _diff(r: MigrationResult) -> str:
    return "".join(difflib.unified_diff(
        r.source.splitlines(keepends=True), r.output.splitlines(keepends=True),
        fromfile=f"a/{r.path.lstrip('/')}", tofile=f"b/{r.path.lstrip('/')}"))


def _cache_dir(args: argparse.Namespace) -> Optional[Path]:
    """The cache directory: given, or the default when the run writes files anyway
    (so ``--diff`` and ``--check`` write nothing at all unless asked to)."""
    if args.no_cache:
        return None
    if args.cache_dir:
        return Path(args.cache_dir)
    if not (args.in_place or args.out):
        return None
    return Path(DEFAULT_CACHE_DIR)  # in the working directory, as ruff and mypy keep theirs


def runs_as_script(source: str) -> bool:
    """True when the module does something at top level beyond defining things."""
    tree = parse(source)
    if tree is None:
        return False
    quiet = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for node in tree.body:
        if isinstance(node, quiet):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a docstring
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Constant):
            continue  # a module constant
        return True
    return False


def _verify(results: List[MigrationResult], args: argparse.Namespace) -> dict:
    """``tapeshift verify`` on each changed file that runs as a script: path -> report."""
    from tapeshift.migrate.legacy.verify import verify_sources

    out = {}
    for r in results:
        if r.changed and not r.error and runs_as_script(r.source):
            out[r.path] = verify_sources(r.source, r.output, r.path, timeout=args.verify_timeout,
                                         seed=args.seed, align_random=args.align_random,
                                         legacy_runs=args.legacy_runs or 1)
    return out


# --------------------------------------------------------------------------
def rule_options(args) -> tuple:
    """The pipeline's opt-in behaviours named by the flags."""
    return tuple(option.name for option in registry.options() if getattr(args, option.name, False))


def run(args: argparse.Namespace) -> int:
    args.fix, problem = requested_fixes(args.fix)
    if problem:
        print(f"tapeshift migrate: {problem}", file=sys.stderr)
        return ExitCode.ERROR
    out_dir = Path(args.out) if args.out else None
    cache_dir = _cache_dir(args)
    skip = [d for d in (out_dir, cache_dir) if d is not None]  # never read our own output
    found = discover(args.paths, args.include, args.exclude, skip=skip,
                     suffixes=None if out_dir is not None else DEFAULT_SUFFIXES)
    errors = list(found.errors)
    settings = Settings(mode=args.mode, options=rule_options(args), fix=args.fix, jobs=args.jobs,
                        cache_dir=cache_dir)
    # gradient helpers called across files: planned on every file found, before a
    # shard is chosen (each shard plans the same)
    tree_facts = tree_helper_facts(found.files, settings) if args.mode == "tape" else {}
    shard = None
    if args.shard is not None:  # every file, copied ones too, is in exactly one shard
        total = sum(1 for f, _ in found.files if f.suffix in DEFAULT_SUFFIXES)
        found.files = args.shard.select(found.files)
        shard = {"shard": str(args.shard), "index": args.shard.index, "count": args.shard.count,
                 "files": sum(1 for f, _ in found.files if f.suffix in DEFAULT_SUFFIXES),
                 "of": total}
    migratable = [(f, r) for f, r in found.files if f.suffix in DEFAULT_SUFFIXES]
    if out_dir is not None:  # everything else in the tree is copied as it is
        for f, rel in found.files:
            if f.suffix not in DEFAULT_SUFFIXES:
                try:
                    (out_dir / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(f, out_dir / rel)
                except OSError as exc:
                    errors.append(f"{f}: cannot copy: {exc}")
    rel_of = {str(f): rel for f, rel in migratable}

    def write(_, record) -> None:  # in this process, one file at a time
        try:
            if args.in_place and record.changed:
                write_output(record)
            elif out_dir is not None and not write_output(record, out_dir / rel_of[record.path]):
                (out_dir / rel_of[record.path]).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(record.path, out_dir / rel_of[record.path])
        except OSError as exc:
            errors.append(f"{record.path}: cannot write: {exc}")

    results = migrate_files([f for f, _ in migratable], settings=settings,
                            progress=Progress(len(migratable), quiet=args.quiet), on_result=write,
                            tree_facts=tree_facts)

    if args.check:
        for r in results:
            if r.changed:
                print(f"would migrate {r.path} ({r.mode})")
    elif not args.in_place and out_dir is None:
        for r in results:
            if r.changed:
                sys.stdout.write(_diff(r))

    verified = _verify(results, args) if args.verify else {}
    report = (format_json if args.format == "json" else format_text)(results, errors, verified,
                                                                     shard)
    if args.report:
        # what stopped a file from being processed is also said on stderr
        for r in results:
            for f in r.findings:
                if f.severity is Severity.ERROR:
                    print(f"{f.location()}: {f.code} {f.message}", file=sys.stderr)
        for e in errors:
            print(f"error: {e}", file=sys.stderr)
        try:
            atomic_write(Path(args.report), report)
        except OSError as exc:
            print(f"tapeshift migrate: cannot write report: {exc}", file=sys.stderr)
            return ExitCode.ERROR
    else:
        sys.stderr.write(report)

    if errors or any(r.error for r in results):
        return ExitCode.ERROR
    if verified:
        worst = max(v.exit_code for v in verified.values())
        if worst != ExitCode.OK:
            return worst
    if args.check and any(r.changed for r in results):
        return ExitCode.FOUND
    return ExitCode.OK
