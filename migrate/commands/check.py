"""``tapeshift check``: report gradient pitfalls; with ``--fix``, repair them in place.

Exit codes: 0 no error-level finding; 1 an error-level finding remains (after
``--fix``, the ones it did not fix); 2 usage error or a file that could not be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import List

from tapeshift.migrate.checks import CheckResult, add_fix_argument, check_source, requested_fixes
from tapeshift.migrate.fileio.encoding import SourceDecodeError, decode_source, encode_source
from tapeshift.migrate.fileio.files import atomic_write_bytes, discover
from tapeshift.migrate.engine.exit_codes import ExitCode
from tapeshift.migrate.engine.findings import TS100, Finding, Severity, iter_codes
from tapeshift.migrate.fileio.sarif import to_sarif

HELP = "find the chain-rule mistake and other gradient pitfalls (TS2xx); --fix repairs them"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or directories")
    parser.add_argument("--format", choices=("text", "json", "sarif"), default="text",
                        help="output format (default: text; sarif is SARIF 2.1.0)")
    add_fix_argument(parser, "apply these fixes in place")


def run(args: argparse.Namespace) -> int:
    args.fix, problem = requested_fixes(args.fix)
    if problem:
        print(f"tapeshift check: {problem}", file=sys.stderr)
        return ExitCode.ERROR
    found = discover(args.paths, suffixes=(".py",))
    errors = list(found.errors)
    results: List[CheckResult] = []
    for path, _ in found.files:
        try:
            data = path.read_bytes()
            source, encoding = decode_source(data, str(path))
        except OSError as exc:
            errors.append(f"{path}: cannot read: {exc.strerror or exc}")
            continue
        except SourceDecodeError as exc:
            errors.append(str(exc))
            continue
        result = check_source(source, str(path), fix=args.fix)
        if result.changed:  # the fix keeps the file's encoding, BOM and line endings
            atomic_write_bytes(path, encode_source(result.output, encoding))
        results.append(result)
    findings = [f for r in results for f in r.findings]
    fixed = {id(f) for r in results for f in r.fixed}
    remaining = [f for f in findings if id(f) not in fixed]
    if args.format == "sarif":
        from tapeshift.migrate import __version__

        print(to_sarif(findings, [c.code for c in iter_codes("TS2")], __version__))
    elif args.format == "json":
        print(json.dumps({
            "findings": [dict(f.to_dict(), fixed=id(f) in fixed) for f in findings],
            "errors": errors,
            "summary": _summary(results, findings, fixed, errors),
        }, indent=2))
    else:
        for f in findings:
            mark = " (fixed)" if id(f) in fixed else ""
            print(f"{f.location()}: {f.code} [{f.severity.value}] {f.message}{mark}")
        for e in errors:
            print(f"error: {e}", file=sys.stderr)
        s = _summary(results, findings, fixed, errors)
        print(f"{s['files']} files checked: {s['errors']} errors, {s['warnings']} warnings"
              + (f", {s['fixed']} fixed" if s["fixed"] else ""))
    if errors or any(f.code == TS100.code for f in findings):
        return ExitCode.ERROR
    return ExitCode.FOUND if any(f.severity is Severity.ERROR for f in remaining) else ExitCode.OK


def _summary(results, findings: List[Finding], fixed, errors) -> dict:
    return {
        "files": len(results),
        "errors": sum(f.severity is Severity.ERROR for f in findings),
        "warnings": sum(f.severity is Severity.WARNING for f in findings),
        "fixed": len(fixed),
        "unreadable": len(errors),
    }
