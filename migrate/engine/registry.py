"""The one registry of migration rules: what each rule declares about itself.

A rule is a :class:`~tapeshift.migrate.engine.rule.TapeshiftCodemod` subclass
in a module of :mod:`tapeshift.migrate.rules`, decorated with
:func:`register_rule`. It declares, as class attributes:

``RULE``
    its id, kebab-case; reports print it beside each change it records.
``PHASE`` and ``ORDER``
    where it runs (one phase or a tuple of them, see :data:`PHASES`) and its
    place within the phase (lower first).
``CODES``
    the :class:`~tapeshift.migrate.engine.findings.CodeInfo` objects of the
    codes it owns; registering the rule registers them (and so documents them
    in ``docs/codes.md``).
``HANDLES``
    TF1-only API names it converts or reports itself: the TF1-only check does
    not report them.
``SCREEN_NAMES``
    identifiers one of which a file must spell for the rule to have anything
    to do (:mod:`tapeshift.migrate.engine.screen`); a function returning them
    when they depend on the other rules.
``SCREEN_CODE``
    optionally, a finer test of the code, False only where the rule certainly
    does nothing (:func:`tapeshift.migrate.engine.screen.code_test`).
``OPTION``
    an opt-in behaviour (a :class:`RuleOption`) that the command line offers.

The pipeline, the screen, the TF1-only check, the docs generator and the
command line read these through this module; adding a rule touches the rule's
file and its tests, nothing else. The rule modules are found by listing the
package, so this module imports none of them itself.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, FrozenSet, Iterable, Tuple, Type

from tapeshift.migrate.engine import findings

if TYPE_CHECKING:  # the base class's module imports the toolkit: not needed at run time
    from tapeshift.migrate.engine.rule import TapeshiftCodemod

    Rule = Type[TapeshiftCodemod]

#: The phases, in the order a file meets them. ``pre``: tape-form rules on the
#: original source, whose output the others read; ``tape``: the tape-form
#: rules in turn; ``check``: checks (that change nothing) on the pre-rules'
#: output, which can block tape form; ``check-after``: checks on the tape
#: rules' output. A file that falls back runs ``compat-pre``, the fallback
#: itself (``compat``), then ``compat-post`` (on the fallback's output).
PHASES = ("pre", "tape", "check", "check-after", "compat-pre", "compat", "compat-post")

#: The package whose modules hold the rules.
RULE_PACKAGE = "tapeshift.migrate.rules"
#: Modules that declare codes besides the engine's findings and the rules.
CODE_MODULES = ("tapeshift.migrate.checks.codes",)

_ID = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*\Z")
# Ids reports printed before ids were kebab-case: kept so that no output changes.
_HISTORIC_IDS = frozenset({"custom_gradients"})


@dataclass(frozen=True)
class RuleOption:
    """An opt-in behaviour of a rule: ``name`` is the key the rule reads in the
    shared facts of a migration (``migrate_source(options=...)``), ``flag``
    the command line's switch for it."""

    name: str
    flag: str
    help: str


_RULES: Dict[str, type] = {}  # id -> rule class, in registration order
_loaded = False


def register_rule(rule: Rule) -> Rule:
    """Class decorator: add ``rule`` to the registry (and its codes to the codes
    registry). Each id, and each class, only once."""
    rule_id = rule.__dict__.get("RULE")
    if not isinstance(rule_id, str) or not (_ID.match(rule_id) or rule_id in _HISTORIC_IDS):
        raise ValueError(f"{rule.__name__}: RULE must be a kebab-case id, not {rule_id!r}")
    if rule_id in _RULES:
        raise ValueError(f"rule id {rule_id!r} is already registered ({_RULES[rule_id].__name__})")
    phases = _phases_of(rule)
    unknown = [p for p in phases if p not in PHASES]
    if not phases or unknown:
        raise ValueError(f"{rule.__name__}: PHASE must name phases of {PHASES}, not {unknown or phases}")
    if not isinstance(getattr(rule, "ORDER", None), int):
        raise ValueError(f"{rule.__name__}: ORDER must be an int")
    for info in rule.__dict__.get("CODES", ()):
        if findings.REGISTRY.get(info.code, None) is not info:
            findings.register(info)
    _RULES[rule_id] = rule
    _changed()
    return rule


def unregister_rule(rule: Rule) -> None:
    """Remove ``rule`` and the codes it registered (for tests that add a rule)."""
    del _RULES[rule.RULE]
    codes: Tuple[findings.CodeInfo, ...] = rule.__dict__.get("CODES", ())
    for info in codes:
        if findings.REGISTRY.get(info.code, None) is info:
            del findings.REGISTRY[info.code]
    _changed()


def load() -> None:
    """Import every module of :data:`RULE_PACKAGE` (their rules register
    themselves) and the other modules that declare codes."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for name in CODE_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:  # a partial install: only what is there
            if exc.name is None or not name.startswith(exc.name):
                raise
    package = importlib.import_module(RULE_PACKAGE)
    for module in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        importlib.import_module(f"{RULE_PACKAGE}.{module.name}")


def rules() -> Tuple[Rule, ...]:
    """Every registered rule, in registration order."""
    load()
    return tuple(_RULES.values())


def _phases_of(rule: Rule) -> Tuple[str, ...]:
    phase = getattr(rule, "PHASE", None)
    return (phase,) if isinstance(phase, str) else tuple(phase or ())


@functools.lru_cache(maxsize=None)
def phase(name: str) -> Tuple[Rule, ...]:
    """The rules of phase ``name``, in the order they run."""
    if name not in PHASES:
        raise ValueError(f"unknown phase {name!r}; known: {PHASES}")
    return tuple(sorted((r for r in rules() if name in _phases_of(r)), key=lambda r: r.ORDER))


@functools.lru_cache(maxsize=None)
def options() -> Tuple[RuleOption, ...]:
    """The rules' opt-in behaviours, in the order the rules run."""
    ordered = [r for p in PHASES for r in phase(p)]
    found: list = [r.OPTION for r in dict.fromkeys(ordered) if r.__dict__.get("OPTION") is not None]
    return tuple(dict.fromkeys(found))


def option_names() -> Tuple[str, ...]:
    return tuple(o.name for o in options())


@functools.lru_cache(maxsize=None)
def handled_names() -> FrozenSet[str]:
    """The TF1-only API names some rule converts or reports itself."""
    return frozenset().union(*(r.__dict__.get("HANDLES", ()) for r in rules()))


def _changed() -> None:
    for cached in (phase, options, handled_names):
        cached.cache_clear()


def ids() -> Iterable[str]:
    load()
    return tuple(_RULES)


def codes_markdown(prefix: str = "") -> str:
    """``docs/codes.md``, rendered from the registry (a test keeps them equal)."""
    out = [
        "# Finding codes",
        "",
        "Every code tapeshift reports, from the one registry of codes (`migrate/engine/findings.py`, filled by the rules).",
        "This file is generated: `python -c \"from tapeshift.migrate.engine.registry import codes_markdown; "
        "print(codes_markdown(), end='')\" > docs/codes.md`.",
        "",
        "Severity: `error` (the file was not processed, the codemod failed on it, an override could not be mapped, or a number is wrong), `warning` (a rewrite was not "
        "made; the file fell back to compat mode), `info` (the rewrite was made; worth "
        "knowing). *Blocks tape form*: while such a finding stands, `tapeshift migrate` "
        "migrates the file in compat mode.",
        "",
        "| code | name | severity | summary |",
        "|---|---|---|---|",
    ]
    load()
    infos = list(findings.iter_codes(prefix))
    for i in infos:
        out.append(f"| [{i.code}](#{i.code.lower()}-{i.name}) | `{i.name}` | {i.severity.value} | {i.summary} |")
    for i in infos:
        out += [
            "",
            f"## {i.code} {i.name}",
            "",
            f"Severity: {i.severity.value}. Blocks tape form: {'yes' if i.blocks_tape else 'no'}.",
            "",
            f"**What it does.** {i.what}",
            "",
            f"**Why.** {i.why}",
            "",
            "**Example.**",
            "",
            "```python",
            i.example,
            "```",
            "",
            "**Use instead.**",
            "",
            (f"```python\n{i.use_instead}\n```" if "\n" in i.use_instead or i.use_instead.startswith(("import", "def", "@", "tape."))
             else i.use_instead),
            "",
            f"**Fix safety.** {i.fix_safety}",
        ]
    return "\n".join(out) + "\n"


findings.add_code_loader(load)
