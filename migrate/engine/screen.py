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
is always run. Each rule declares them itself, in its ``SCREEN_NAMES`` class
attribute (``TapeshiftCodemod.SCREEN_NAMES``; a function returning them where
they depend on the other rules), and ``tests/migrate/engine/test_screen.py`` checks
them (and that a screened-out rule never has anything to do on the examples,
the test data and the programs written in the tests).

Where a word is common in files a rule has no work in (``layers``: every
``from tensor2tensor.layers import ...`` spells it), a rule may also declare
a finer test of the code, :func:`code_test` (its ``SCREEN_CODE``: a function
of the code that is False only when the rule certainly does nothing there),
run after the names matched, on the text the pipeline has anyway.
"""

from __future__ import annotations

import ast
import re
from typing import Callable, FrozenSet, Optional

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


def triggers(rule: type) -> Optional[FrozenSet[str]]:
    """The identifiers one of which a file must spell for ``rule`` to have
    anything to do there; None: no such set is known, always run it."""
    declared = rule.__dict__.get("SCREEN_NAMES")  # not inherited: a subclass may act on others
    if isinstance(declared, staticmethod):
        declared = declared.__func__
    if callable(declared):
        declared = declared()
    return None if declared is None else frozenset(declared)


def may_act(rule: type, names: FrozenSet[str]) -> bool:
    """False when ``rule`` certainly changes, reports and shares nothing in a
    file whose identifiers are ``names``."""
    needed = triggers(rule)
    return needed is None or not needed.isdisjoint(names)


def code_test(rule: type) -> Optional[Callable[[str], bool]]:
    """The rule's ``SCREEN_CODE``: a function of a file's code, False when the
    rule certainly changes, reports and shares nothing there (declared by the
    class itself, not inherited); None: no such test."""
    declared = rule.__dict__.get("SCREEN_CODE")
    if isinstance(declared, staticmethod):
        declared = declared.__func__
    return declared


def may_act_on_code(rule: type, code: str) -> bool:
    """False when the rule's ``SCREEN_CODE`` says it does nothing on ``code``."""
    test = code_test(rule)
    return test is None or test(code)
