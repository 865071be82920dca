"""Positions in a rewritten file -> positions in the file the user wrote.

The pre-rules (contrib, custom gradients, feeds) rewrite a file before the
other rules read it, so those rules report lines of the rewritten text. A
report must name lines of the original. Lines that survived unchanged map
through a diff; lines moved elsewhere (graph code copied into a step
function, re-indented) map to the original line with the same text; a line
the pre-rule wrote itself maps to the closest original line it resembles,
else to the nearest mapped line above it.
"""

from __future__ import annotations

import difflib
from dataclasses import replace
from typing import Dict, List, Optional, Sequence, Set, Tuple, TypeVar

T = TypeVar("T")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


class LineMap:
    """Built when the pre-rules changed a file, used only if a rule reports
    something on it: the diff is made at the first question, and a line the
    diff could not match looks for its closest original line only when a
    question reaches it (``get_close_matches`` compares it with every line of
    the original: quadratic over a file whose fed code moved into functions)."""

    def __init__(self, original: str, rewritten: str) -> None:
        self._original = original
        self._rewritten = rewritten
        self._old: List[str] = []
        self._new: List[str] = []
        self._map: Optional[Dict[int, int]] = None  # new line -> original line, once diffed
        self._unmatched: Set[int] = set()  # new lines the diff left, not looked at yet
        self._by_text: Dict[str, List[int]] = {}
        self._stripped: List[str] = []

    def _diff(self) -> Dict[int, int]:
        if self._map is not None:
            return self._map
        self._old = self._original.splitlines()
        self._new = self._rewritten.splitlines()
        self._map = {}
        matcher = difflib.SequenceMatcher(None, self._old, self._new, autojunk=False)
        for tag, a0, a1, b0, b1 in matcher.get_opcodes():
            if tag == "equal":
                for k in range(b1 - b0):
                    self._map[b0 + k + 1] = a0 + k + 1
            else:
                self._unmatched.update(range(b0 + 1, b1 + 1))
        for i, line in enumerate(self._old, 1):
            if line.strip():
                self._by_text.setdefault(line.strip(), []).append(i)
        self._stripped = list(self._by_text)
        return self._map

    def _mapped(self, n: int) -> Optional[int]:
        """The original line of new line ``n``, if it has one."""
        found = self._diff().get(n)
        if found is not None or n not in self._unmatched:
            return found
        self._unmatched.discard(n)
        text = self._new[n - 1].strip()
        if not text:
            return None
        hits = self._by_text.get(text)
        if not hits:
            close = difflib.get_close_matches(text, self._stripped, n=1, cutoff=0.6)
            hits = self._by_text[close[0]] if close else None
        if hits:
            self._map[n] = hits[0]  # type: ignore[index]
            return hits[0]
        return None

    def line(self, line: int) -> int:
        for n in range(line, 0, -1):
            found = self._mapped(n)
            if found is not None:
                return found
        return 1 if line >= 1 else line

    def position(self, line: int, column: int) -> Tuple[int, int]:
        if line < 1:
            return line, column
        old = self.line(line)
        if column < 1 or not (1 <= old <= len(self._old)) or line > len(self._new):
            return old, column
        shift = _indent(self._old[old - 1]) - _indent(self._new[line - 1])
        return old, max(1, column + shift)

    def remap(self, records: Sequence[T]) -> List[T]:
        """Findings or changes (anything with ``line`` and ``column``) moved back."""
        out = []
        for r in records:
            line, column = self.position(r.line, r.column)
            out.append(replace(r, line=line, column=column))
        return out
