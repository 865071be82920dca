"""``tapeshift checkpoint``: inspect, convert and compare TensorFlow checkpoints.

    tapeshift checkpoint inspect CKPT [--format text|json]
    tapeshift checkpoint convert CKPT OUT (--map FILE | --script MIGRATED.py) [options]
    tapeshift checkpoint diff A B [--rtol R] [--atol A] [--by auto|key|name]

Exit codes: 0 success (diff: equal); 1 convert found unmatched, missing or
mismatched variables and wrote nothing, diff found a difference; 2 usage
error or a checkpoint, map or script that could not be processed (nothing
written). The logic is in :mod:`tapeshift.migrate.checkpoints`; this module
parses and prints. docs/checkpoints.md has the details.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys

from tapeshift.migrate.checkpoints import CheckpointError
from tapeshift.migrate.engine.exit_codes import ExitCode, standalone_main

HELP = "inspect TF1/TF2 checkpoints, convert a TF1 checkpoint for the migrated program, diff two"

_DIFF_EPILOG = """\
A value agrees when |b - a| <= atol + rtol * |a| elementwise (the tolerances of
tapeshift verify, by dtype):
{table}
  int*, uint*, bool             exact     exact
Strings must be equal. --rtol/--atol replace that parameter for every dtype.
Entries pair by key when both checkpoints have the same format, by name (the
original names a TF2 checkpoint records) when one is TF1 and the other TF2
(--by). exit codes: 0 equal; 1 a value, shape or dtype differs, or an entry is
on one side only; 2 a checkpoint could not be read."""

_CONVERT_EPILOG = """\
OUT is a new directory: OUT/ckpt-N (N: the global step) is a tf.train.Checkpoint
holding {"variables": {name: tf.Variable}}, and OUT/checkpoint names it. A
migrated program restores it with plain TensorFlow (docs/checkpoints.md):

    ckpt = tf.train.Checkpoint(variables={v.name.rsplit(":", 1)[0]: v for v in variables})
    ckpt.restore(tf.train.latest_checkpoint("OUT")).assert_existing_objects_matched()

--script runs MIGRATED.py in a child process until a training step starts for
the second time (every variable and optimizer slot exists by then) and matches
the checkpoint's names to its tf.Variable names. --map FILE (JSON or TOML,
{"old name": "new name"}, "scope/" keys rename scopes, "" drops) renames; alone,
it lists what goes into OUT. exit codes: 0 written; 1 unmatched, missing or
mismatched variables, nothing written (--allow-unmatched, --allow-missing);
2 a checkpoint, map or script that could not be processed, or nothing matched."""


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def _tolerance_table() -> str:
    from tapeshift.migrate.legacy.values import TOLERANCES

    rows = [(k, v) for k, v in TOLERANCES.items() if not k.startswith(("py:", "printed"))]
    lines = [f"  {'dtype':<29} {'rtol':<9} atol"]
    lines += [f"  {k:<29} {r:<9g} {a:g}" for k, (r, a) in rows]
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True

    p = actions.add_parser("inspect", help="list the variables of a checkpoint, optimizer slots marked",
                           description="List a checkpoint's variables (name, shape, dtype), marking "
                                       "optimizer slots and state, and its global step. CKPT is a "
                                       "prefix (dir/model.ckpt-100), a directory (its latest "
                                       "checkpoint) or an .index file; TF1 name-based and TF2 "
                                       "object-based checkpoints alike.")
    p.add_argument("ckpt", metavar="CKPT")
    p.add_argument("--format", choices=("text", "json"), default="text")

    c = actions.add_parser("convert", help="write a TF1 checkpoint as a TF2 object-based checkpoint",
                           description="Write the variables of CKPT as a tf.train.Checkpoint at OUT, "
                                       "under the names the migrated program gives them.",
                           epilog=_CONVERT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("ckpt", metavar="CKPT")
    c.add_argument("out", metavar="OUT", help="the directory to create")
    c.add_argument("--map", metavar="FILE", help="JSON or TOML {old name: new name}")
    c.add_argument("--script", metavar="MIGRATED.py",
                   help="the migrated TF2 script whose tf.Variables receive the values")
    c.add_argument("--args", dest="script_args", type=shlex.split, default=[], metavar="'ARG ...'",
                   help="arguments for the script, as one shell-quoted string")
    c.add_argument("--run-to-end", action="store_true",
                   help="let the script finish instead of stopping it at its second training step")
    c.add_argument("--timeout", type=_non_negative, default=600.0, metavar="S",
                   help="seconds the script may run (default 600; 0: no limit)")
    c.add_argument("--allow-unmatched", action="store_true",
                   help="write even if checkpoint variables have no target (they are left out)")
    c.add_argument("--allow-missing", action="store_true",
                   help="write even if target variables are not in the checkpoint (they keep "
                        "their initial values when restored)")
    c.add_argument("--skip-optimizer", action="store_true",
                   help="leave optimizer slots and state (w/Adam, beta1_power...) out, on both sides")
    c.add_argument("--dry-run", action="store_true", help="report the matching, write nothing")
    c.add_argument("--format", choices=("text", "json"), default="text")

    d = actions.add_parser("diff", help="compare two checkpoints tensor by tensor",
                           description="Compare two checkpoints tensor by tensor: per variable the "
                                       "max abs and rel difference; entries on one side only; "
                                       "shape and dtype mismatches.",
                           epilog=_DIFF_EPILOG.format(table=_tolerance_table()),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    d.add_argument("a", metavar="A")
    d.add_argument("b", metavar="B")
    d.add_argument("--rtol", type=_non_negative, default=None, metavar="R")
    d.add_argument("--atol", type=_non_negative, default=None, metavar="A")
    d.add_argument("--by", choices=("auto", "key", "name"), default="auto",
                   help="pair entries by checkpoint key or by variable name (default: auto)")
    d.add_argument("--format", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    try:
        if args.action == "inspect":
            return _inspect(args)
        if args.action == "convert":
            return _convert(args)
        return _diff(args)
    except CheckpointError as exc:
        print(f"tapeshift checkpoint {args.action}: {exc}", file=sys.stderr)
        return ExitCode.ERROR


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows])


# -- inspect ----------------------------------------------------------------

def _inspect(args) -> int:
    from tapeshift.migrate.checkpoints.reader import NAME_BASED, open_checkpoint
    from tapeshift.migrate.checkpoints.roles import summary

    info = open_checkpoint(args.ckpt)
    info.verify()
    if args.format == "json":
        print(json.dumps(info.to_dict(), indent=2))
        return ExitCode.OK
    kind = "tf.train.Saver, TF1" if info.format == NAME_BASED else "tf.train.Checkpoint, TF2"
    print(f"{info.prefix}: {info.format} checkpoint ({kind}), {len(info.entries)} entries")
    if info.global_step is not None:
        print(f"global step: {info.global_step} (from {info.global_step_from})")
    print()
    if info.format == NAME_BASED:
        print(_table(["name", "shape", "dtype", "role"],
                     [[e.name, e.shape_text, e.dtype, e.describe()] for e in info.entries]))
    else:
        print(_table(["object path", "original name", "shape", "dtype", "role"],
                     [[e.path or e.key, e.name if e.recorded_name else "-", e.shape_text, e.dtype,
                       e.describe()] for e in info.entries]))
    print()
    print(summary(info.entries))
    return ExitCode.OK


# -- convert ----------------------------------------------------------------

def _convert(args) -> int:
    from tapeshift.migrate.checkpoints.collect import collect_variables
    from tapeshift.migrate.checkpoints.matching import load_map, plan_conversion
    from tapeshift.migrate.checkpoints.reader import open_checkpoint
    from tapeshift.migrate.checkpoints.roles import MODEL_ROLES
    from tapeshift.migrate.checkpoints.writer import check_destination, write_converted

    if not args.map and not args.script:
        print("tapeshift checkpoint convert: give --map FILE or --script MIGRATED.py (or both)",
              file=sys.stderr)
        return ExitCode.ERROR
    if args.script_args and not args.script:
        print("tapeshift checkpoint convert: --args are for --script", file=sys.stderr)
        return ExitCode.ERROR
    out = check_destination(args.out)
    source = open_checkpoint(args.ckpt)
    rules = load_map(args.map) if args.map else None
    collected = None
    if args.script:
        collected = collect_variables(args.script, args.script_args, run_to_end=args.run_to_end,
                                      timeout=args.timeout or None)
    plan = plan_conversion(source.entries, rules=rules,
                           targets=collected.targets if collected else None,
                           skip_optimizer=args.skip_optimizer)
    target = args.script if args.script else args.map
    # optimizer state and the global step have the same names in every model: they do not count
    model = [e for e in source.entries if e.role in MODEL_ROLES]
    if not any(m.source.role in MODEL_ROLES for m in plan.matched) and (model or not plan.matched):
        what = f"{len(model)} model variables" if model else f"{len(source.entries)} variables"
        raise CheckpointError(
            f"{source.prefix}: none of its {what} matches "
            + (f"the {len(collected.targets)} variables of {args.script}" if collected else
               f"the map {args.map}")
            + " (a checkpoint of another model?); nothing written")
    blocking = plan.blocking(args.allow_missing, args.allow_unmatched)
    written = None
    if not blocking and not args.dry_run:
        values = {m.target: source.read(m.source) for m in plan.matched}
        written = write_converted(values, out, source.global_step)
    code = ExitCode.FOUND if blocking else ExitCode.OK
    if args.format == "json":
        print(json.dumps({"checkpoint": source.prefix, "out": out, "written": written,
                          "map": args.map, "script": args.script,
                          "stopped": collected.stopped if collected else None,
                          "global_step": source.global_step, **plan.to_dict(),
                          "exit_code": int(code)}, indent=2))
        return code
    _print_plan(plan, source, target, collected)
    if written:
        print(f"wrote {written} ({len(plan.matched)} variables); restore it with "
              f"tf.train.Checkpoint(variables={{name: variable}}) (docs/checkpoints.md)")
    elif args.dry_run and not blocking:
        print(f"would write {out} ({len(plan.matched)} variables); --dry-run: nothing written")
    else:
        why = []
        if plan.unmatched and not args.allow_unmatched:
            why.append(f"{len(plan.unmatched)} unmatched (--allow-unmatched leaves them out)")
        if plan.missing and not args.allow_missing:
            why.append(f"{len(plan.missing)} missing (--allow-missing writes without them)")
        if plan.mismatched:
            why.append(f"{len(plan.mismatched)} mismatched")
        print("nothing written: " + "; ".join(why))
    return code


def _print_plan(plan, source, target: str, collected) -> None:
    print(f"{source.prefix} -> {target}")
    if collected is not None:
        stop = collected.stopped or "it ran to its end"
        print(f"{target}: {len(collected.targets)} variable names ({stop})")
    renamed = [m for m in plan.matched if m.source.name != m.target]
    print(f"matched: {len(plan.matched)}" + (f" ({len(renamed)} renamed)" if renamed else ""))
    for m in renamed:
        print(f"  {m.source.name} -> {m.target}")
    if plan.unmatched:
        print(f"unmatched (in the checkpoint, not in {target}): {len(plan.unmatched)}")
        for e in plan.unmatched:
            role = e.describe()
            print(f"  {e.name}  {e.shape_text} {e.dtype}" + (f"  {role}" if role else ""))
    if plan.missing:
        print(f"missing (in {target}, not in the checkpoint): {len(plan.missing)}")
        for name in plan.missing:
            where = collected.where(name) if collected is not None else []
            print(f"  {name}" + (f"  (made at {', '.join(where)})" if where else ""))
    if plan.mismatched:
        print(f"mismatched: {len(plan.mismatched)}")
        for m, why in plan.mismatched:
            where = collected.where(m.target) if collected is not None else []
            print(f"  {m.source.name}: {why}" + (f" (made at {', '.join(where)})" if where else ""))
    if plan.skipped:
        print(f"left out: {len(plan.skipped)}")
        for e, why in plan.skipped:
            print(f"  {e.name}: {why}")


# -- diff -------------------------------------------------------------------

def _number(x) -> str:
    return "-" if x is None else f"{x:.3g}"


def _diff(args) -> int:
    from tapeshift.migrate.checkpoints.diff import EQUAL, diff_checkpoints
    from tapeshift.migrate.checkpoints.reader import open_checkpoint

    a = open_checkpoint(args.a)
    b = open_checkpoint(args.b)
    report = diff_checkpoints(a, b, rtol=args.rtol, atol=args.atol, by=args.by)
    if args.format == "json":
        print(json.dumps(report.to_dict(), indent=2))
        return report.exit_code
    print(f"A: {a.prefix} ({a.format}, {len(a.entries)} entries)")
    print(f"B: {b.prefix} ({b.format}, {len(b.entries)} entries)")
    print(f"paired by {report.by}")
    print()
    if report.rows:
        print(_table(["name", "shape", "dtype", "max abs", "max rel", "status", "note"],
                     [[r.name, r.shape, r.dtype, _number(r.max_abs), _number(r.max_rel),
                       r.status, r.note] for r in report.rows]))
    for side, names in (("A", report.only_a), ("B", report.only_b)):
        if names:
            print(f"only in {side}: {', '.join(names)}")
    equal = sum(r.status == EQUAL for r in report.rows)
    print(f"{equal} equal, {len(report.differences)} different, {len(report.only_a)} only in A, "
          f"{len(report.only_b)} only in B: "
          + ("the checkpoints agree" if report.exit_code == ExitCode.OK else "the checkpoints differ"))
    return report.exit_code


def main(argv=None) -> int:
    """``tapeshift checkpoint ARGS`` on its own (tests, ``python -m``)."""
    return standalone_main("checkpoint", HELP, add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())

