"""Migrate one source string: (new source, findings, changes), tape or compat per file.

Tape form is all or nothing per file: every tape rule first runs on the
original source to collect what it would change and what it cannot convert
(positions refer to the original file). If anything blocks tape form (a
finding whose code ``blocks_tape``), the whole file is migrated in compat mode
instead, with those findings as the reasons. Otherwise the rules run in turn
and the result is checked (nothing TF1-only left, output compiles) before it is
returned. Nothing here prints or writes files.

The file is parsed once. Each version of the tree is a :class:`_Tree` whose
LibCST metadata (scope analysis, qualified names, positions) is resolved at
most once, on first use, and shared by every rule that reads that version
(the ``check`` analysis included); a rule whose output is the code it was
given hands the same tree, metadata and all, to the next rule; a rule that
was already run on the same tree with the same ``shared`` facts is not run
again (:class:`_Runner`); and a rule is not run at all on a file that spells
none of the names it acts on (:mod:`tapeshift.migrate.engine.screen`).
"""

from __future__ import annotations

import copy
import re
import sys
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Sequence, Tuple, Type

import libcst as cst
from libcst.codemod import Codemod, CodemodContext
from libcst.metadata import MetadataWrapper

from tapeshift.migrate.checks import check_module, requested_fixes
from tapeshift.migrate.engine.libcst_speedups import active, parse_module
from tapeshift.migrate.engine.rule import (
    SCRATCH_IDENTIFIERS,
    SCRATCH_SHARED,
    TapeshiftCodemod,
    changes_of,
    findings_of,
)
from tapeshift.migrate.engine.settings import MODES, Settings
from tapeshift.migrate.engine.toolkit.metadata import (clear_tree_caches, note_derived, printed_start_positions,
                                                       qualified_names)
from tapeshift.migrate.engine.toolkit.starts import StartPositions
from tapeshift.migrate.engine.tree_helpers import TREE_HELPERS
from tapeshift.migrate.engine.toolkit.tf_names import api_name
from tapeshift.migrate.engine.toolkit.walk import distinct_nodes, nodes, remembering
from tapeshift.migrate.engine import registry
from tapeshift.migrate.rules.renames import OTHER_DEFAULTS, RENAMES, TF1_SOURCE
from tapeshift.migrate.rules.tf1_only import EAGER_UNSUPPORTED, tf1_only
from tapeshift.migrate.engine.findings import REGISTRY, TS100, TS101, TS114, Change, Finding, Severity, make_finding
from tapeshift.migrate.engine.positions import LineMap
from tapeshift.migrate.engine.python_syntax import compile_quietly, parse
from tapeshift.migrate.engine.screen import identifiers, may_act, may_act_on_code

# Which rules run, and in what order, each rule declares itself (its PHASE and
# ORDER, read through tapeshift.migrate.engine.registry). Tape form: the "pre" rules
# on the original source (the others read their output: they would otherwise
# block on what these rewrite away), then the "tape" rules in turn, with the
# "check" rules (which change nothing but can block tape form) beside them and
# the "check-after" rules on their output. Compat form: "compat-pre", the
# fallback ("compat"), then "compat-post" on the fallback's output. Opt-in
# behaviours (``migrate_source(options=...)``, the command line's flags) are
# the rules' OPTIONs (registry.options()).

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


class _Tree:
    """One version of the module: its code and its metadata, resolved on first
    use and shared by every rule that reads this version."""

    def __init__(self, module: cst.Module, code: Optional[str] = None, parsed: bool = False,
                 parent: Optional[StartPositions] = None):
        """``parent``: for a rule's output, the printed start positions of the
        rule's input, whose unchanged statements it shares."""
        self._module = module
        self._code = code
        self._names: Optional[frozenset] = None
        self._wrapper: Optional[MetadataWrapper] = None
        self._parent = parent
        if parsed:
            # straight from the parser, no node appears twice: no defensive copy
            self._wrapper = MetadataWrapper(module, unsafe_skip_copy=True)

    @property
    def wrapper(self) -> MetadataWrapper:
        if self._wrapper is None:
            # a rule's output may hold one node in two places, which metadata (one
            # answer per node) cannot tell apart: LibCST copies the whole tree;
            # here only a node met again is copied, and the input's statements
            # the output kept are not even walked (they hold each node once)
            module, parent = self._module, self._parent
            if active():
                if parent is not None:
                    module = distinct_nodes(module, parent.part_nodes)
                    note_derived(module, parent)
                elif not _each_node_once(module):
                    module = distinct_nodes(module)
            self._wrapper = MetadataWrapper(module, unsafe_skip_copy=active())
            self._module = self._wrapper.module
        return self._wrapper

    @property
    def module(self) -> cst.Module:
        """The tree to hand to a rule (the wrapped one, so its metadata applies)."""
        return self.wrapper.module

    @property
    def raw(self) -> cst.Module:
        """The tree, without creating a wrapper."""
        return self._module

    @property
    def code(self) -> str:
        if self._code is None:
            self._code = self._module.code
        return self._code

    @property
    def names(self) -> frozenset:
        """Every identifier spelled in the code (and some words of strings and comments)."""
        if self._names is None:
            self._names = identifiers(self.code)
        return self._names


@dataclass
class _Memo:
    tree: _Tree  # the input, kept alive while its id is a key
    shared_before: dict
    shared_after: dict
    result: tuple


class _Runner:
    """Runs rules on trees for one file, remembering what each run gave.

    A rule is not run on a file that spells none of the names it acts on
    (:func:`tapeshift.migrate.engine.screen.may_act`), unless the shared facts hold
    one it declares in ``SCREEN_FACTS`` (the tree's facts about gradient helpers). A rule given a tree it already
    transformed, with ``shared`` facts equal to those of that run, would do
    exactly what it did then (rules are functions of the tree, the path and the
    shared facts), so that result is returned and the shared facts are left as
    that run left them; a rule that declares it neither reads nor writes them
    (``USES_SHARED_FACTS = False``: the contrib rule, run again on the original
    when a file falls back) does it whatever they are.
    """

    def __init__(self, path: str):
        self.path = path
        self._memo: Dict[Tuple[type, int], _Memo] = {}

    def run(self, rule: Type[Codemod], tree: _Tree, shared: Optional[dict] = None):
        """(tree, findings, changes) of ``rule`` on ``tree``; the output is
        ``tree`` itself when the rule left the code as it was."""
        if not active():  # reference mode: as LibCST runs a codemod on its own
            return self._alone(rule, tree, shared)
        if not (may_act(rule, tree.names) and may_act_on_code(rule, tree.code)
                or shared and not shared.keys().isdisjoint(getattr(rule, "SCREEN_FACTS", ()))):
            return tree, [], []  # the file spells nothing the rule acts on
        before = _snapshot(shared)
        key = (rule, id(tree))
        memo = self._memo.get(key)
        # a rule that neither reads nor writes the shared facts did the same with others
        uses_shared = getattr(rule, "USES_SHARED_FACTS", True)
        if memo is not None and memo.tree is tree and before is not None \
                and (memo.shared_before == before or not uses_shared):
            if uses_shared and shared is not None and shared != memo.shared_after:
                shared.clear()
                shared.update(copy.deepcopy(memo.shared_after))
            out, findings, changes = memo.result
            return out, list(findings), list(changes)
        context = CodemodContext(filename=self.path, wrapper=tree.wrapper)
        if shared is not None:
            context.scratch[SCRATCH_SHARED] = shared
        context.scratch[SCRATCH_IDENTIFIERS] = tree.names
        codemod = rule(context)
        new = codemod.transform_module(tree.module)
        if new is tree.module or isinstance(codemod, TapeshiftCodemod) and codemod.kept_tree():
            out = tree  # the same code: no need to print it to compare
        else:
            starts = printed_start_positions(tree.wrapper)
            code = new.code if starts is None else starts.code_of(new)
            out = tree if code == tree.code else _Tree(new, code, parent=starts)
        findings, changes = findings_of(context), changes_of(context)
        # the rule is done with: its state (the context, the trees it read) goes now,
        # not when the cycle collector finds the local visitor classes of its
        # analyses, which close over it (a class is always part of a cycle)
        codemod.__dict__.clear()
        after = _snapshot(context.scratch.get(SCRATCH_SHARED, {}))
        if before is not None and after is not None:
            self._memo[key] = _Memo(tree, before, after, (out, tuple(findings), tuple(changes)))
        return out, findings, changes

    def _alone(self, rule: Type[Codemod], tree: _Tree, shared: Optional[dict]):
        """The rule as LibCST runs a codemod on its own: on a copy of the tree,
        every metadata provider resolved for it alone."""
        context = CodemodContext(filename=self.path)
        if shared is not None:
            context.scratch[SCRATCH_SHARED] = shared
        new = rule(context).transform_module(tree.raw)
        return _Tree(new), findings_of(context), changes_of(context)


def _each_node_once(module: cst.Module) -> bool:
    """No node object appears twice in ``module`` (a walk of the tree: a
    fraction of the deep copy LibCST's ``MetadataWrapper`` makes so that this
    holds). A rule's output shares the nodes it kept with its input, which is
    done with by then: only a node the rule placed twice needs the copy."""
    seen: set = set()
    add = seen.add
    count = 0
    for node in nodes(module):
        add(id(node))
        count += 1
        if count != len(seen):
            return False
    return True


def _snapshot(shared: Optional[dict]) -> Optional[dict]:
    """A copy of the shared facts to compare later (None: they cannot be copied)."""
    if shared is None:
        return {}  # a rule run without shared facts sees an empty dict
    try:
        return copy.deepcopy(shared)
    except Exception:
        return None


def _run(rule: Type[Codemod], module: cst.Module, path: str, shared: Optional[dict] = None):
    """(module, findings, changes) of one rule on one tree, on its own."""
    out, findings, changes = _Runner(path).run(rule, _Tree(module), shared)
    return out.raw, findings, changes


def _written_for_tf1(tree: _Tree) -> bool:
    """The file uses TF1: a ``tensorflow.compat.v1`` name, a TF1-only name or
    one the rules convert (read on the original, before any rule removed them)."""
    for qualified in qualified_names(tree.wrapper).values():
        for q in qualified:
            name = api_name(q.name)
            if name is None:
                continue
            if q.name.startswith("tensorflow.compat.v1") or name in EAGER_UNSUPPORTED \
                    or tf1_only(name, strict=True) or f"tensorflow.{name}" in RENAMES:
                return True
    return False


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
    return make_finding(TS114.code, path, 1, 1, f"internal error in the codemod: "
                        f"{type(exc).__name__}: {exc}")


def _compat(tree: _Tree, source: str, path: str, reasons: List[Finding],
            runner: Optional[_Runner] = None) -> MigrationResult:
    runner = runner or _Runner(path)
    try:
        # "compat-pre": tf.contrib is gone from compat.v1 too (its slim parts move to tf_slim)
        before_findings: List[Finding] = []
        changes: List[Change] = []
        for rule in registry.phase("compat-pre"):
            tree, f, c = runner.run(rule, tree)
            before_findings += f
            changes += c
        findings = []
        for rule in registry.phase("compat"):
            tree, f, c = runner.run(rule, tree)
            findings += f
            changes += c
        # "compat-post" reads the fallback's output: its lines are mapped back to the file's
        # from each rule's input (an import an earlier rule added moves the lines below it)
        for rule in registry.phase("compat-post"):
            rule_input = tree
            tree, f, c = runner.run(rule, tree)
            if f or c:
                lines = LineMap(source, rule_input.code)  # report lines of the file as written
                before_findings += lines.remap(f)
                changes += lines.remap(c)
        output = tree.code
        compile_quietly(output, path)
    except Exception as exc:  # a codemod bug must never break the file
        return MigrationResult(path, source, source, "error", (*reasons, _internal(path, exc)))
    known = {(f.code, f.line, f.column) for f in reasons}
    findings = [f for f in before_findings if (f.code, f.line, f.column) not in known] + findings
    if reasons and output != source:
        line, col = _tf_import_position(source)
        reasons = [*reasons, make_finding(TS101.code, path, line, col)]
    mode = "compat" if output != source else "unchanged"
    return MigrationResult(path, source, output, mode, tuple(reasons + findings), tuple(changes))


def migrate_source(source: str, path: str = "<string>", mode: str = "tape",
                   fix: Sequence[str] = (), options: Sequence[str] = (),
                   settings: Optional[Settings] = None) -> MigrationResult:
    """Migrate one file's text. ``mode`` is "tape" (convert, falling back per
    file) or "compat" (only the fallback). ``options`` turn on opt-in
    behaviours of the tape rules (their ``OPTION``: :func:`registry.options`).

    The ``tapeshift check`` rules run first and their findings join the
    report; numbers are kept (the chain-rule mistake stays as written) unless
    ``fix`` names codes whose fixes to apply before migrating.

    ``settings``, when given, says all of that instead of ``mode``, ``fix`` and
    ``options`` (and whether to run in reference mode).
    """
    if settings is None:
        settings = Settings(mode=mode, fix=tuple(fix), options=tuple(options))
    mode, fix, options = settings.mode, settings.fix, settings.options
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    known_options = registry.option_names()
    unknown = sorted(set(options) - set(known_options))
    if unknown:
        raise ValueError(f"unknown option(s) {unknown}; known: {list(known_options)}")
    _, problem = requested_fixes([fix])
    if problem:
        raise ValueError(problem)
    try:
        with settings.applied(), remembering():  # what walks learn, kept for the file
            return _migrate_checked(source, path, mode, fix, options, settings.tree_helpers)
    finally:
        clear_tree_caches()  # the file's trees are done with


def _migrate_checked(source: str, path: str, mode: str, fix: Sequence[str],
                     options: Sequence[str], tree_helpers: tuple = ()) -> MigrationResult:
    if "tensorflow" not in source and parse(source) is not None:
        # no rule and no check acts on a file that never names TensorFlow: it
        # needs no LibCST tree, only to be Python 3 (Python's parser, many times
        # faster, says so; a file it rejects is reported below as before)
        return MigrationResult(path, source, source, "unchanged")
    try:
        module = parse_module(source)
    except cst.ParserSyntaxError as exc:
        return _unparsable(source, path, exc)
    if parse(source) is None:
        # LibCST's grammar also takes some Python 2 (`except E, e:`); this
        # Python is what must run the output, so its compiler has the last word
        problem = _not_python3(source, path)
        if problem is not None:
            return problem
    # one parse and one metadata resolution serve the checks and the rules
    tree = _Tree(module, source, parsed=True)
    checked = check_module(module, source, path, fix=fix,
                           wrapper=tree.wrapper if active() else None)
    fixed = {id(f) for f in checked.fixed}
    notes = tuple(_with_outcome(f, id(f) in fixed) for f in checked.findings)
    if checked.changed:
        result = _migrate(checked.output, path, mode, options, tree_helpers=tree_helpers)
    else:
        result = _migrate(source, path, mode, options, tree, tree_helpers)
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


_PYTHON2 = re.compile(r"^\s*(print\s+[^\s(=]|exec\s+\S|except\s+[^:#]+,\s*\w+\s*:)", re.M)


def _python2_hint(source: str) -> str:
    if _PYTHON2.search(source) or "xrange(" in source:
        return " (this looks like Python 2 code)"
    return ""


def _unparsable(source: str, path: str, exc: cst.ParserSyntaxError) -> MigrationResult:
    finding = make_finding(TS100.code, path, exc.raw_line, exc.raw_column + 1,
                           f"does not parse as Python 3{_python2_hint(source)}: {exc.message}")
    return MigrationResult(path, source, source, "error", (finding,))


def _not_python3(source: str, path: str) -> Optional[MigrationResult]:
    """TS100 for a text this Python's compiler rejects as a syntax error
    (None for anything else it cannot take, which the rules' output check
    still catches)."""
    try:
        compile_quietly(source, path)
    except SyntaxError as exc:
        finding = make_finding(TS100.code, path, exc.lineno or 1, exc.offset or 1,
                               f"does not compile as Python {sys.version_info[0]}."
                               f"{sys.version_info[1]}{_python2_hint(source)}: {exc.msg}")
        return MigrationResult(path, source, source, "error", (finding,))
    except Exception:
        return None
    return None


def _migrate(source: str, path: str, mode: str, options: Sequence[str] = (),
             tree: Optional[_Tree] = None, tree_helpers: tuple = ()) -> MigrationResult:
    """``tree``: ``source`` already parsed (else it is parsed here); ``tree_helpers``:
    the tree's facts about this file's gradient helpers (engine/tree_helpers.py)."""
    if tree is None:
        try:
            tree = _Tree(parse_module(source), source, parsed=True)
        except cst.ParserSyntaxError as exc:
            return _unparsable(source, path, exc)
    if "tensorflow" not in source:
        return MigrationResult(path, source, source, "unchanged")
    runner = _Runner(path)
    if mode == "compat":
        return _compat(tree, source, path, [], runner)

    # 0. the pre-rules rewrite the file; everything below reads their output
    #    (a fallback always starts again from the original)
    original = tree
    findings: List[Finding] = []
    changes: List[Change] = []
    shared: dict = {option: True for option in options}
    if tree_helpers:
        shared[TREE_HELPERS] = tree_helpers
    if not tree.names.isdisjoint(OTHER_DEFAULTS) and _written_for_tf1(tree):
        shared[TF1_SOURCE] = True
    try:
        for rule in registry.phase("pre"):
            given = tree
            tree, f, c = runner.run(rule, tree, shared)
            if (f or c) and given is not original:
                # a pre-rule reads the earlier ones' output: its lines are mapped back
                pre_lines = LineMap(source, given.code)
                f, c = pre_lines.remap(f), pre_lines.remap(c)
            findings.extend(f)
            changes.extend(c)
    except Exception as exc:
        return _compat(original, source, path, [*findings, _internal(path, exc)], runner)
    # a later pre-rule may settle an earlier one's finding (the feeds rule wraps
    # slim model functions in make_template: TS118 no longer holds)
    findings = [f for f in findings if f.code not in shared.get("resolved", ())]
    if _blocks(findings):
        return _compat(original, source, path,
                       [f for f in findings if f.severity is not Severity.INFO], runner)
    # the rules below report lines of the pre-rules' output: map them back
    # (a tree the pre-rules left as it was maps onto itself)
    lines = LineMap(source, tree.code) if tree is not original else None

    # 1. every rule on that source: what it would change, what it cannot convert
    #    (the first rule's run on it is also the first step of the chain)
    first = None
    tape_rules = registry.phase("tape")
    try:
        for i, rule in enumerate((*tape_rules, *registry.phase("check"))):
            out, f, c = runner.run(rule, tree, shared)
            if i == 0:
                first = out
            if lines is not None:
                f, c = lines.remap(f), lines.remap(c)
            findings.extend(f)
            changes.extend(c)
    except Exception as exc:
        return _compat(original, source, path, [*findings, _internal(path, exc)], runner)
    if _blocks(findings):
        reasons = [f for f in findings if f.severity is not Severity.INFO]
        return _compat(original, source, path, reasons, runner)

    # 2. the rules in turn, then checks on the result (a rule whose input is
    #    still the tree of step 1 is not run again: the runner has its result)
    try:
        new = first
        leftover: List[Finding] = []
        for rule in tape_rules[1:]:
            new, f, _ = runner.run(rule, new, shared)
            leftover.extend(f)
        for rule in registry.phase("check-after"):
            _, f, _ = runner.run(rule, new, shared)
            leftover.extend(f)
        if lines is not None:
            leftover = lines.remap(leftover)
        output = new.code
        compile_quietly(output, path)
    except Exception as exc:
        return _compat(original, source, path, [_internal(path, exc)], runner)
    if _blocks(leftover):
        return _compat(original, source, path, leftover, runner)
    if output == source:
        return MigrationResult(path, source, source, "unchanged", tuple(findings))
    # a statement copied into several step functions is reported once
    changes = sorted(dict.fromkeys(changes), key=lambda c: (c.line, c.column))
    return MigrationResult(path, source, output, "tape", tuple(findings), tuple(changes))
