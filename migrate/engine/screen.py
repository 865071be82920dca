"""Which rules can have anything to do with a file, told from its text alone.

A rule matches TensorFlow by qualified name, and every part of the API name
of a node (``train.AdamOptimizer``, ``gradients``) is an identifier spelled
somewhere in the file: in an attribute chain (``tf.train.AdamOptimizer``) or in
an import (``from tensorflow.train import AdamOptimizer as Adam``). So a rule
that can only act on, say, a TensorFlow ``gradients`` has nothing to do in a
file that never spells ``gradients``, and the pipeline need not run it: no
LibCST pass, no scope analysis. The test is a regular expression over the
text (comments and strings included, which can only make it run a rule for
nothing, never skip one that has work).

:func:`triggers` gives, for a rule, the identifiers one of which a file must
spell for the rule to change, report or share anything; None when the rule
is always run. A rule says so itself with a ``SCREEN_NAMES`` class attribute
(``TapeshiftCodemod.SCREEN_NAMES``); for the rules that do not, the sets
below are built from the rules' own tables, and ``tests/scale/test_screen.py``
checks them (and that a screened-out rule never has anything to do on the
examples, the test data and the programs written in the tests).
"""

from __future__ import annotations

import ast
import functools
import re
from typing import Dict, FrozenSet, Optional

from tapeshift.migrate.engine.python_syntax import parse

_IDENTIFIER = re.compile(r"[^\W\d]\w*")


def identifiers(code: str) -> FrozenSet[str]:
    """Every identifier spelled in ``code`` (a superset of its NAME tokens:
    words in strings and comments are included)."""
    return frozenset(_IDENTIFIER.findall(code))


def code_identifiers(code: str) -> Optional[FrozenSet[str]]:
    """The identifiers of the code itself (names, attribute names, imported
    modules and names, keyword arguments, definitions and parameters), without
    the words of comments and strings; None when Python cannot parse ``code``.
    Python's parser and a walk of its tree: worth it where a screen's words
    are common in docstrings and the work it saves is large."""
    tree = parse(code)
    if tree is None:
        return None
    out = set()
    for node in ast.walk(tree):
        kind = type(node)
        if kind is ast.Name:
            out.add(node.id)
        elif kind is ast.Attribute:
            out.add(node.attr)
        elif kind is ast.alias:
            out.update(node.name.split("."))
            if node.asname:
                out.add(node.asname)
        elif kind is ast.ImportFrom:
            out.update((node.module or "").split("."))
        elif kind is ast.keyword or kind is ast.arg:
            if node.arg:
                out.add(node.arg)
        elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            out.add(node.name)
        elif kind in (ast.Global, ast.Nonlocal):
            out.update(node.names)
        elif kind in (ast.MatchAs, ast.MatchStar):
            if node.name:
                out.add(node.name)
        elif kind is ast.MatchClass:
            out.update(node.kwd_attrs)
        elif kind is ast.MatchMapping and node.rest:
            out.add(node.rest)
    out.discard("")
    return frozenset(out)


def _last(name: str) -> str:
    return name.rpartition(".")[2]


def _lasts(names) -> FrozenSet[str]:
    return frozenset(_last(n) for n in names)


@functools.lru_cache(maxsize=1)
def _known() -> Dict[type, FrozenSet[str]]:
    """Trigger identifiers of the rules that do not declare ``SCREEN_NAMES``."""
    from tapeshift.migrate.rules import compat_v1_imports, feeds, renames, tf1_only
    from tapeshift.migrate.rules.compat_v1_imports import CompatV1ToTF2Imports
    from tapeshift.migrate.rules.contrib_slim import ContribToTfSlim
    from tapeshift.migrate.rules.custom_gradients import CustomGradientsToTape
    from tapeshift.migrate.rules.feeds import FeedsToFunctions
    from tapeshift.migrate.rules.gradients import GradientsToTape
    from tapeshift.migrate.rules.keras_optimizers import MAPPINGS, V1OptimizersToKeras
    from tapeshift.migrate.rules.renames import RenameTF1Names
    from tapeshift.migrate.rules.tf1_only import TF1OnlyNames, TF1OnlyNamesLeft
    from tapeshift.migrate.engine.tf1_api_table import TF1_ONLY

    return {
        # tf.contrib.* references and imports; TS118 for a file importing tf_slim
        ContribToTfSlim: frozenset({"contrib", "tf_slim"}),
        # nothing without a gradient_override_map(...) scope
        CustomGradientsToTape: frozenset({"gradient_override_map"}),
        # nothing without a TensorFlow Session
        FeedsToFunctions: frozenset(feeds.SESSIONS),
        # nothing without a TensorFlow gradients(...) call
        GradientsToTape: frozenset({"gradients"}),
        # names in its two tables only
        RenameTF1Names: _lasts([*renames.RENAMES, *renames.CASTS]) | renames.OTHER_DEFAULTS,
        # train.<kind> optimizers it maps (when the option is on)
        V1OptimizersToKeras: frozenset(MAPPINGS),
        # tensorflow.compat.v1 imports and X.compat.v1.NAME; the behaviour switches
        CompatV1ToTF2Imports: frozenset({"compat"}) | compat_v1_imports.BEHAVIOUR_SWITCHES,
        # names with a TF1-only prefix (not handled by another rule), tf.contrib
        TF1OnlyNames: _lasts(TF1_ONLY - tf1_only.HANDLED) | tf1_only.GONE,
        TF1OnlyNamesLeft: _lasts(TF1_ONLY) | tf1_only.GONE | tf1_only.EAGER_UNSUPPORTED,
    }


def triggers(rule: type) -> Optional[FrozenSet[str]]:
    """The identifiers one of which a file must spell for ``rule`` to have
    anything to do there; None: no such set is known, always run it."""
    declared = rule.__dict__.get("SCREEN_NAMES")
    if declared is not None:
        return frozenset(declared)
    return _known().get(rule)


def may_act(rule: type, names: FrozenSet[str]) -> bool:
    """False when ``rule`` certainly changes, reports and shares nothing in a
    file whose identifiers are ``names``."""
    needed = triggers(rule)
    return needed is None or not needed.isdisjoint(names)
