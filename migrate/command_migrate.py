"""``tapeshift migrate PATH...``: rewrite TF1 gradient code into TF2 tape form.

Modes of output (one at a time; the default is ``--diff``):
    --diff       print a unified diff, write nothing
    --check      print the files that would change; exit 1 if any would
    --in-place   rewrite the files (atomically, keeping their mode)
    --out DIR    write a migrated copy of the tree to DIR (other files copied)

The report (each change, each finding, a summary) goes to ``--report FILE``
or, without it, to stderr; ``--format json`` makes it JSON.

Exit codes: 0 success (nothing to change, or changes shown/written); 1
``--check`` found files that would change; 2 usage error, or a path that could
not be read or parsed (the other files are still processed).
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Iterator, List, Optional, Tuple

from migrate.cli import EXIT_ERROR, EXIT_FOUND, EXIT_OK
from migrate.findings import Severity
from migrate.checks import FIXES
from migrate.pipeline import MODES, MigrationResult, migrate_source

HELP = "Rewrite TF1 gradient code (tf.gradients, Session) into TF2 GradientTape form."

_SKIP_DIRS = {"__pycache__", ".git", ".hg", ".svn", ".tox", ".venv", "venv", ".mypy_cache",
              ".pytest_cache", "node_modules", ".tapeshift-cache"}


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
    parser.add_argument("--fix", action="append", metavar="CODE[,CODE]", default=[],
                        type=lambda v: [c.strip() for c in v.split(",") if c.strip()],
                        help="apply these `tapeshift check` fixes while migrating (they "
                             "change numbers, on purpose; the report says so). Without it "
                             "the chain-rule mistake is kept as written and reported")
    parser.add_argument("--verify", action="store_true",
                        help="run each changed file that runs as a script before and after "
                             "(tapeshift verify) and add the outcome to the report; "
                             "exit 1 on a mismatch, 2 when a script fails")
    parser.add_argument("--verify-timeout", type=float, default=600.0, metavar="S",
                        help="seconds each script may run under --verify (default: 600)")


# --------------------------------------------------------------------------
# files
# --------------------------------------------------------------------------
def _walk(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            yield Path(dirpath) / name


def _inputs(paths: List[str]) -> Tuple[List[Tuple[Path, Path]], List[str]]:
    """(file, path relative to its --out destination) pairs, and errors."""
    files: List[Tuple[Path, Path]] = []
    errors: List[str] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            for f in _walk(p):
                files.append((f, f.relative_to(p)))
        elif p.is_file():
            files.append((p, Path(p.name)))
        else:
            errors.append(f"{raw}: no such file or directory")
    return files, errors


_BOM = "\ufeff"


def _read(path: Path) -> str:
    """The file's text, line endings untouched (a UTF-8 BOM stays in the text)."""
    with open(path, encoding="utf-8", newline="") as fh:
        return fh.read()


def _migrate(source: str, path: str, mode: str, fix=()) -> MigrationResult:
    # LibCST does not take a BOM: migrate the text behind it, then put it back
    if source.startswith(_BOM):
        r = migrate_source(source[1:], path, mode, fix=fix)
        return MigrationResult(r.path, source, _BOM + r.output, r.mode, r.findings, r.changes)
    return migrate_source(source, path, mode, fix=fix)


def atomic_write(path: Path, text: str, mode_from: Optional[Path] = None) -> None:
    """Write ``text`` to ``path`` via a temporary file in the same directory and
    ``os.replace``, keeping the file mode of ``mode_from`` (or of ``path``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    source = mode_from if mode_from is not None else path
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if source.exists():
            os.chmod(tmp, source.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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


def format_text(results: List[MigrationResult], errors: List[str],
                verified: Optional[dict] = None) -> str:
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
    s = _summary(results, errors)
    fixes = f", {s['fixed']} fixes only" if s["fixed"] else ""
    lines.append(
        f"{s['files']} file(s): {s['changed']} changed ({s['tape']} tape form, "
        f"{s['compat']} compat mode{fixes}), {s['unchanged']} unchanged, {s['errors']} error(s); "
        f"{s['changes']} change(s), {s['findings']} finding(s)")
    return "\n".join(lines) + "\n"


def format_json(results: List[MigrationResult], errors: List[str],
                verified: Optional[dict] = None) -> str:
    verified = verified or {}
    doc = {
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


def runs_as_script(source: str) -> bool:
    """True when the module does something at top level beyond defining things."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
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
    from migrate.verify import verify_sources

    out = {}
    for r in results:
        if r.changed and not r.error and runs_as_script(r.source):
            out[r.path] = verify_sources(r.source, r.output, r.path, timeout=args.verify_timeout)
    return out


# --------------------------------------------------------------------------
def run(args: argparse.Namespace) -> int:
    args.fix = [c for group in args.fix for c in group]
    unknown = [c for c in args.fix if c not in FIXES]
    if unknown:
        print(f"tapeshift migrate: no automatic fix for {', '.join(unknown)} "
              f"(fixable: {', '.join(FIXES)})", file=sys.stderr)
        return EXIT_ERROR
    files, errors = _inputs(args.paths)
    results: List[MigrationResult] = []
    out_dir = Path(args.out) if args.out else None
    if out_dir is not None:  # never migrate our own output again
        out_abs = out_dir.resolve()
        files = [(p, r) for p, r in files
                 if out_abs != p.resolve() and out_abs not in p.resolve().parents]
    for path, rel in files:
        is_py = path.suffix == ".py"
        if out_dir is not None and not is_py:
            try:
                dest = out_dir / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, dest)
            except OSError as exc:
                errors.append(f"{path}: cannot copy: {exc}")
            continue
        if not is_py:
            continue
        try:
            source = _read(path)
        except (OSError, UnicodeDecodeError) as exc:
            errors.append(f"{path}: cannot read: {exc}")
            continue
        result = _migrate(source, str(path), args.mode, fix=args.fix)
        results.append(result)
        try:
            if args.in_place and result.changed:
                atomic_write(path, result.output)
            elif out_dir is not None:
                atomic_write(out_dir / rel, result.output, mode_from=path)
        except OSError as exc:
            errors.append(f"{path}: cannot write: {exc}")

    if args.check:
        for r in results:
            if r.changed:
                print(f"would migrate {r.path} ({r.mode})")
    elif not args.in_place and out_dir is None:
        for r in results:
            if r.changed:
                sys.stdout.write(_diff(r))

    verified = _verify(results, args) if args.verify else {}
    report = (format_json if args.format == "json" else format_text)(results, errors, verified)
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
            return EXIT_ERROR
    else:
        sys.stderr.write(report)

    if errors or any(r.error for r in results):
        return EXIT_ERROR
    if verified:
        worst = max(v.exit_code for v in verified.values())
        if worst != EXIT_OK:
            return worst
    if args.check and any(r.changed for r in results):
        return EXIT_FOUND
    return EXIT_OK
