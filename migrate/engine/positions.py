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
from typing import Dict, List, Sequence, Tuple, TypeVar

T = TypeVar("T")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


class LineMap:
    def __init__(self, original: str, rewritten: str) -> None:
        self._old = original.splitlines()
        self._new = rewritten.splitlines()
        self._map: Dict[int, int] = {}
        matcher = difflib.SequenceMatcher(None, self._old, self._new, autojunk=False)
        unmatched: List[int] = []
        for tag, a0, a1, b0, b1 in matcher.get_opcodes():
            if tag == "equal":
                for k in range(b1 - b0):
                    self._map[b0 + k + 1] = a0 + k + 1
            else:
                unmatched.extend(range(b0 + 1, b1 + 1))
        by_text: Dict[str, List[int]] = {}
        for i, line in enumerate(self._old, 1):
            if line.strip():
                by_text.setdefault(line.strip(), []).append(i)
        stripped = list(by_text)
        for n in unmatched:
            text = self._new[n - 1].strip()
            if not text:
                continue
            hits = by_text.get(text)
            if not hits:
                close = difflib.get_close_matches(text, stripped, n=1, cutoff=0.6)
                hits = by_text[close[0]] if close else None
            if hits:
                self._map[n] = hits[0]

    def line(self, line: int) -> int:
        for n in range(line, 0, -1):
            if n in self._map:
                return self._map[n]
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
