"""Removing a statement without losing the blank lines and comments above it.

LibCST keeps a statement's leading blank lines and comments on the statement
itself, so ``RemoveFromParent`` drops them with it: a driver line can end up
right under a class, and a comment that introduced a section disappears. A rule
that removes statements mixes in :class:`CarriesLeadingLines`: it calls
:meth:`remove_statement` instead of returning ``RemoveFromParent`` and passes
each statement it leaves through :meth:`with_carried_lines`; the lines of a
removed statement then go to the next statement of the same body that stays.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import libcst as cst

from tapeshift.migrate.engine.toolkit.walk import nodes


class CarriesLeadingLines:
    """Mixin for a transformer: see the module's docstring. :meth:`note_siblings`
    must see the module (in ``visit_Module``) before anything is removed."""

    _next_sibling: Dict[int, Optional[cst.CSTNode]]
    _carried: Dict[int, List[cst.EmptyLine]]

    def note_siblings(self, module: cst.Module) -> None:
        self._next_sibling = {}
        self._carried = {}
        for node in nodes(module):
            if isinstance(node, (cst.Module, cst.IndentedBlock)):
                body = list(node.body)
                for stmt, after in zip(body, [*body[1:], None]):
                    self._next_sibling[id(stmt)] = after

    def remove_statement(self, original: cst.CSTNode, about: Sequence[str] = ()) -> cst.RemovalSentinel:
        """``RemoveFromParent``, its leading lines (with any carried to it) kept for
        the next statement of its body; but not the comment right above it (no blank
        line between) when that comment speaks of ``about`` (``# Initialize the
        variables`` above the initializer): it went with what it describes."""
        own = list(getattr(original, "leading_lines", ()))
        if about:
            own = without_comment_on(own, about)
        carried = self._carried.pop(id(original), [])
        lines = merged_lines(carried, own) if carried else own  # (two went: not their sum)
        after = self._next_sibling.get(id(original)) if hasattr(self, "_next_sibling") else None
        if after is not None and lines:
            self._carried[id(after)] = lines
        return cst.RemoveFromParent()

    def with_carried_lines(self, original: cst.CSTNode, updated: cst.CSTNode) -> cst.CSTNode:
        """``updated`` with the lines of the statements removed just before it: as many
        blank lines as the more generous of the two, then the comments of both."""
        carried = self._carried.pop(id(original), None) if hasattr(self, "_carried") else None
        if not carried or not hasattr(updated, "leading_lines"):
            return updated
        return updated.with_changes(leading_lines=merged_lines(carried, updated.leading_lines))


def without_comment_on(lines: Sequence[cst.EmptyLine], about: Sequence[str]) -> List[cst.EmptyLine]:
    """``lines`` without their last comment block (the comments after the last blank
    line) when it only names what went: at most two short lines (eight words), each
    mentioning one of ``about`` (lowercase words). A longer note says more, and stays."""
    lines = list(lines)
    k = len(lines)
    while k and lines[k - 1].comment is not None:
        k -= 1
    said = [ln.comment.value.lstrip("#").lower() for ln in lines[k:] if ln.comment is not None]
    if said and len(said) <= 2 and all(len(text.split()) <= 8 and any(word in text for word in about)
                                       for text in said):
        return lines[:k]
    return lines


def merged_lines(before: Sequence[cst.EmptyLine], own: Sequence[cst.EmptyLine]) -> List[cst.EmptyLine]:
    """The leading lines of a statement that takes the place of another (``before``,
    the lines of the statement that went): as many blank lines as the more generous
    of the two, then the comments of both (with the blank lines between them)."""
    before, own = list(before), list(own)
    blank = max(_blank_run(before), _blank_run(own))
    if _blank_run(before) < len(before):  # comments before: the own lines follow them
        return [cst.EmptyLine(indent=False)] * blank + before[_blank_run(before):] + own
    return [cst.EmptyLine(indent=False)] * blank + own[_blank_run(own):]


def _blank_run(lines: List[cst.EmptyLine]) -> int:
    """The blank lines before the first comment."""
    k = 0
    while k < len(lines) and lines[k].comment is None:
        k += 1
    return k
