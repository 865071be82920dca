"""``tapeshift check``: gradient pitfalls in TF1 and TF2 code, and their fixes.

Each rule lives in its own module with a ``check(facts, path)`` function;
those with an automatic fix also have a ``Fix`` transformer. All rules read
one shared analysis of the module (``_facts.Facts``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import libcst as cst
from libcst.metadata import MetadataWrapper

from tapeshift.migrate.checks import (
    chain_rule,
    eager_gradients,
    override_map,
    split_bypass,
    tape_misuse,
)
from tapeshift.migrate.checks.facts import Facts
from tapeshift.migrate.engine.toolkit.metadata import clear_tree_caches
from tapeshift.migrate.engine.findings import TS100, Finding, make_finding
from tapeshift.migrate.engine.screen import code_identifiers, identifiers

RULES = (chain_rule, split_bypass, eager_gradients, tape_misuse, override_map)
#: Every rule reads a gradient: ``tf.gradients`` (TF1), ``tape.gradient`` /
#: ``tape.jacobian`` (TF2) or ``gradient_override_map``. A file that spells
#: none of these identifiers has nothing to report, and needs no analysis.
TRIGGERS = frozenset({"gradients", "gradient", "jacobian", "gradient_override_map"})
#: code -> rule module with a ``Fix`` transformer
FIXES = {chain_rule.CODE: chain_rule}


def add_fix_argument(parser, help: str) -> None:
    """``--fix CODE[,CODE]`` (repeatable), as ``check`` and ``migrate`` take it."""
    parser.add_argument("--fix", action="append", metavar="CODE[,CODE]", default=[],
                        type=lambda v: [c.strip() for c in v.split(",") if c.strip()],
                        help=f"{help}; repeat or separate with commas (fixable: {', '.join(FIXES)})")


def requested_fixes(groups: Sequence[Sequence[str]]) -> Tuple[List[str], Optional[str]]:
    """The codes ``--fix`` named, and an error message when one has no fix."""
    codes = [c for group in groups for c in group]
    unknown = [c for c in codes if c not in FIXES]
    if unknown:
        return codes, f"no automatic fix for {', '.join(unknown)} (fixable: {', '.join(FIXES)})"
    return codes, None


@dataclass(frozen=True)
class CheckResult:
    path: str
    source: str
    output: str  # the source with the requested fixes applied
    findings: Tuple[Finding, ...]
    fixed: Tuple[Finding, ...] = ()

    @property
    def changed(self) -> bool:
        return self.output != self.source


def check_source(source: str, path: str = "<string>", fix: Sequence[str] = ()) -> CheckResult:
    """Findings for one file; with ``fix``, the source with those fixes applied."""
    _, problem = requested_fixes([fix])
    if problem:
        raise ValueError(problem)
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        f = make_finding(TS100.code, path, exc.raw_line, exc.raw_column + 1,
                         f"does not parse as Python 3: {exc.message}")
        return CheckResult(path, source, source, (f,))
    try:
        return check_module(module, source, path, fix)
    finally:
        clear_tree_caches()  # let the tree go


def check_module(module: cst.Module, source: str, path: str = "<string>",
                 fix: Sequence[str] = (), wrapper: Optional[MetadataWrapper] = None) -> CheckResult:
    """:func:`check_source` on ``module``, parsed from ``source`` by the caller.

    ``wrapper``: a ``MetadataWrapper`` of ``module`` itself (no copy) whose
    metadata the caller shares with other readers of the tree, as the
    ``migrate`` pipeline does; by default the analysis makes its own.
    """
    _, problem = requested_fixes([fix])
    if problem:
        raise ValueError(problem)
    # every rule is about a gradient (tf.gradients, tape.gradient,
    # gradient_override_map): a file that never says so has nothing to report
    if "tensorflow" not in source or "gradient" not in source \
            or identifiers(source).isdisjoint(TRIGGERS):
        return CheckResult(path, source, source, ())
    # the words may all be in docstrings and comments ("computes the gradients
    # of ..."): the analysis visits every expression, Python's parser is cheaper
    spelled = code_identifiers(source)
    if spelled is not None and spelled.isdisjoint(TRIGGERS):
        return CheckResult(path, source, source, ())
    facts = Facts(module, wrapper, source)
    findings: List[Finding] = []
    for rule in RULES:
        findings.extend(rule.check(facts, path))
    findings.sort(key=lambda f: (f.line, f.column, f.code))
    output = source
    fixed: List[Finding] = []
    for code in fix:
        todo = [f for f in findings if f.code == code]
        if not todo:
            continue
        new = facts.module.visit(FIXES[code].Fix(facts))
        output = new.code
        compile(output, path, "exec")
        fixed.extend(todo)
        facts = Facts(cst.parse_module(output), source=output)
    return CheckResult(path, source, output, tuple(findings), tuple(fixed))
