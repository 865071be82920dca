"""Migrate one source string: (new source, findings, changes), tape or compat per file.

Tape form is all or nothing per file: every tape rule first runs on the
original source to collect what it would change and what it cannot convert
(positions refer to the original file). If anything blocks tape form (a
finding whose code ``blocks_tape``), the whole file is migrated in compat mode
instead, with those findings as the reasons. Otherwise the rules run in turn
and the result is checked (nothing TF1-only left, output compiles) before it is
returned. Nothing here prints or writes files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import List, Optional, Sequence, Tuple, Type

import libcst as cst
from libcst.codemod import Codemod, CodemodContext

from migrate.checks import check_source
from migrate.codemods._base import SCRATCH_SHARED, changes_of, findings_of
from migrate.codemods.compat_fallback import CompatFallback
from migrate.codemods.compat_v1_imports import CompatV1ToTF2Imports
from migrate.codemods.contrib_slim import ContribToTfSlim
from migrate.codemods.custom_gradients import CustomGradientsToTape
from migrate.codemods.feeds import TF_FUNCTION, FeedsToFunctions
from migrate.codemods.keras_optimizers import OPTION as KERAS_OPTIMIZERS
from migrate.codemods.keras_optimizers import V1OptimizersToKeras
from migrate.codemods.gradients import GradientsToTape
from migrate.codemods.renames import RenameTF1Names
from migrate.codemods.session import SessionToEager
from migrate.codemods.tf1_only import TF1OnlyNames, TF1OnlyNamesLeft
from migrate.findings import REGISTRY, Change, Finding, Severity, make_finding
from migrate.positions import LineMap

MODES = ("tape", "compat")

#: Tape-form rules that run first, on the original source; the other tape rules
#: read their output (they would otherwise block on what these rewrite away:
#: TS112 for RegisterGradient / gradient_override_map, TS106 for get_default_graph).
PRE_TAPE_RULES: Tuple[Type[Codemod], ...] = (
    ContribToTfSlim, CustomGradientsToTape, FeedsToFunctions,
)
#: Tape-form rules, in the order they run.
TAPE_RULES: Tuple[Type[Codemod], ...] = (
    SessionToEager, GradientsToTape, RenameTF1Names, V1OptimizersToKeras, CompatV1ToTF2Imports,
)
#: Opt-in behaviours (``migrate_source(options=...)``, the command line's flags):
#: step functions as tf.function; v1 optimizers mapped to Keras.
OPTIONS = (TF_FUNCTION, KERAS_OPTIMIZERS)
#: Checks that change nothing but can block tape form.
TAPE_CHECKS: Tuple[Type[Codemod], ...] = (TF1OnlyNames,)
#: Checks on the rules' output: nothing TF1-only may be left at all.
TAPE_CHECKS_AFTER: Tuple[Type[Codemod], ...] = (TF1OnlyNamesLeft,)

_TF_IMPORT = re.compile(r"^\s*(import\s+tensorflow|from\s+tensorflow)\b", re.M)


@dataclass(frozen=True)
class MigrationResult:
    path: str
    source: str
    output: str
    #: "tape", "compat", "fixed" (only ``--fix`` changed it), "unchanged"
    #: (nothing to do) or "error" (not processed).
    mode: str
    findings: Tuple[Finding, ...] = ()
    changes: Tuple[Change, ...] = ()

    @property
    def changed(self) -> bool:
        return self.output != self.source

    @property
    def error(self) -> bool:
        return self.mode == "error"


def _run(rule: Type[Codemod], module: cst.Module, path: str, shared: Optional[dict] = None):
    context = CodemodContext(filename=path)
    if shared is not None:
        context.scratch[SCRATCH_SHARED] = shared
    new = rule(context).transform_module(module)
    return new, findings_of(context), changes_of(context)


def _tf_import_position(source: str) -> Tuple[int, int]:
    match = _TF_IMPORT.search(source)
    if not match:
        return 1, 1
    line = source.count("\n", 0, match.start(1)) + 1
    col = match.start(1) - (source.rfind("\n", 0, match.start(1)) + 1) + 1
    return line, col


def _blocks(findings: Sequence[Finding]) -> bool:
    return any(REGISTRY[f.code].blocks_tape for f in findings)


def _internal(path: str, exc: BaseException) -> Finding:
    return make_finding("TS114", path, 1, 1, f"internal error in the codemod: "
                        f"{type(exc).__name__}: {exc}")


def _compat(module: cst.Module, source: str, path: str,
            reasons: List[Finding]) -> MigrationResult:
    try:
        # tf.contrib is gone from compat.v1 too: its slim parts move to tf_slim first
        slimmed, contrib_findings, contrib_changes = _run(ContribToTfSlim, module, path)
        new, findings, changes = _run(CompatFallback, slimmed, path)
        output = new.code
        compile(output, path, "exec")
    except Exception as exc:  # a codemod bug must never break the file
        return MigrationResult(path, source, source, "error", (*reasons, _internal(path, exc)))
    known = {(f.code, f.line, f.column) for f in reasons}
    findings = [f for f in contrib_findings if (f.code, f.line, f.column) not in known] + findings
    changes = contrib_changes + changes
    if reasons and output != source:
        line, col = _tf_import_position(source)
        reasons = [*reasons, make_finding("TS101", path, line, col)]
    mode = "compat" if output != source else "unchanged"
    return MigrationResult(path, source, output, mode, tuple(reasons + findings), tuple(changes))


def migrate_source(source: str, path: str = "<string>", mode: str = "tape",
                   fix: Sequence[str] = (), options: Sequence[str] = ()) -> MigrationResult:
    """Migrate one file's text. ``mode`` is "tape" (convert, falling back per
    file) or "compat" (only the fallback). ``options`` turn on opt-in
    behaviours of the tape rules (:data:`OPTIONS`).

    The ``tapeshift check`` rules run first and their findings join the
    report; numbers are kept (the chain-rule mistake stays as written) unless
    ``fix`` names codes whose fixes to apply before migrating.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(f"unknown option(s) {unknown}; known: {list(OPTIONS)}")
    checked = check_source(source, path, fix=fix)
    if any(f.code == "TS100" for f in checked.findings):
        return _migrate(source, path, mode, options)  # reports the parse error itself
    fixed = {id(f) for f in checked.fixed}
    notes = tuple(_with_outcome(f, id(f) in fixed) for f in checked.findings)
    result = _migrate(checked.output, path, mode, options)
    fix_changes = tuple(
        Change(rule=f.code, path=f.path, line=f.line, column=f.column,
               description=f"{f.info.name} fixed ({f.info.summary}): numbers change, on purpose")
        for f in checked.fixed
    )
    output_mode = result.mode
    if output_mode == "unchanged" and checked.changed:
        output_mode = "fixed"
    return replace(result, source=source, mode=output_mode,
                   findings=notes + result.findings,
                   changes=tuple(sorted(fix_changes + result.changes, key=_place)))


def _place(record):
    return (record.line, record.column)


def _with_outcome(finding: Finding, fixed: bool) -> Finding:
    if fixed:
        return replace(finding, message=f"{finding.message} [fixed: numbers change]")
    if finding.changes_numbers:
        return replace(finding, message=f"{finding.message} [kept as written, numbers "
                                        f"unchanged; --fix {finding.code} applies the fix]")
    return finding


def _migrate(source: str, path: str, mode: str, options: Sequence[str] = ()) -> MigrationResult:
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        hint = ""
        if re.search(r"^\s*(print\s+[^\s(=]|exec\s+\S)", source, re.M) or "xrange(" in source:
            hint = " (this looks like Python 2 code)"
        finding = make_finding("TS100", path, exc.raw_line, exc.raw_column + 1,
                               f"does not parse as Python 3{hint}: {exc.message}")
        return MigrationResult(path, source, source, "error", (finding,))
    if "tensorflow" not in source:
        return MigrationResult(path, source, source, "unchanged")
    if mode == "compat":
        return _compat(module, source, path, [])

    # 0. the pre-rules rewrite the file; everything below reads their output
    #    (a fallback always starts again from the original)
    original = module
    findings: List[Finding] = []
    changes: List[Change] = []
    shared: dict = {option: True for option in options}
    try:
        for rule in PRE_TAPE_RULES:
            module, f, c = _run(rule, module, path, shared)
            findings.extend(f)
            changes.extend(c)
    except Exception as exc:
        return _compat(original, source, path, [*findings, _internal(path, exc)])
    # a later pre-rule may settle an earlier one's finding (the feeds rule wraps
    # slim model functions in make_template: TS118 no longer holds)
    findings = [f for f in findings if f.code not in shared.get("resolved", ())]
    if _blocks(findings):
        return _compat(original, source, path,
                       [f for f in findings if f.severity is not Severity.INFO])
    # the rules below report lines of the pre-rules' output: map them back
    lines = LineMap(source, module.code) if module is not original else None

    # 1. every rule on that source: what it would change, what it cannot convert
    #    (the first rule's run on it is also the first step of the chain)
    first = None
    try:
        for i, rule in enumerate((*TAPE_RULES, *TAPE_CHECKS)):
            out, f, c = _run(rule, module, path, shared)
            if i == 0:
                first = out
            if lines is not None:
                f, c = lines.remap(f), lines.remap(c)
            findings.extend(f)
            changes.extend(c)
    except Exception as exc:
        return _compat(original, source, path, [*findings, _internal(path, exc)])
    if _blocks(findings):
        reasons = [f for f in findings if f.severity is not Severity.INFO]
        return _compat(original, source, path, reasons)

    # 2. the rules in turn, then checks on the result
    try:
        new = first
        leftover: List[Finding] = []
        for rule in TAPE_RULES[1:]:
            new, f, _ = _run(rule, new, path, shared)
            leftover.extend(f)
        for rule in TAPE_CHECKS_AFTER:
            _, f, _ = _run(rule, new, path, shared)
            leftover.extend(f)
        if lines is not None:
            leftover = lines.remap(leftover)
        output = new.code
        compile(output, path, "exec")
    except Exception as exc:
        return _compat(original, source, path, [_internal(path, exc)])
    if _blocks(leftover):
        return _compat(original, source, path, leftover)
    if output == source:
        return MigrationResult(path, source, source, "unchanged", tuple(findings))
    # a statement copied into several step functions is reported once
    changes = sorted(dict.fromkeys(changes), key=lambda c: (c.line, c.column))
    return MigrationResult(path, source, output, "tape", tuple(findings), tuple(changes))
