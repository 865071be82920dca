"""Migrate a Jupyter notebook (``.ipynb``) cell by cell.

Each code cell's source goes through a callback (``migrate_cell(source,
cell_path)``, normally :func:`tapeshift.migrate.engine.pipeline.migrate_source`). IPython syntax
that is not Python is masked before and restored after: line magics
(``%matplotlib inline``), shell escapes (``!pip install ...``), assignments
from them (``files = !ls``), help (``obj?``, ``?obj``), and the first line of a
cell magic whose body is Python (``%%time``, ``%%timeit``, ``%%capture``);
cells of any other cell magic (``%%bash``, ``%%writefile``, ...) and non-code
cells are left alone. Outputs, metadata and execution counts are kept.

The notebook's JSON is rewritten only when some cell changed, and only with
the formatting it had (indent, key order, ASCII escaping, trailing newline):
the formatting is found by re-serialising the unchanged notebook until one
way gives back exactly the original text; when none does, the notebook is
reported and left untouched. Findings carry the cell: their path is
``NOTEBOOK:cell_N`` (N counts all cells from 1, as Jupyter shows them).
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

#: Cell magics whose body is Python: the magic line is masked, the body migrated.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})

_MAGIC_LINE = re.compile(
    r"^[ \t]*(?:%%?[A-Za-z]|![^=]|\?"                      # %magic, !shell, ?help
    r"|[A-Za-z_][\w.]*(?:[ \t]*,[ \t]*[A-Za-z_][\w.]*)*[ \t]*=[ \t]*[%!]"  # x = !ls, x = %who
    r"|[^#\n]*[^\s?#]\?\??[ \t]*$)"                        # obj? / obj??
)
_PLACEHOLDER = "__tapeshift_magic_{}__"
_PLACEHOLDER_LINE = re.compile(r"^([ \t]*)__tapeshift_magic_(\d+)__[ \t]*$")


class NotebookError(ValueError):
    """The file is not a notebook this module can rewrite without loss."""


@dataclass(frozen=True)
class CellResult:
    index: int  # 0-based position among all cells
    source: str
    output: str
    mode: str
    findings: tuple = ()
    changes: tuple = ()


@dataclass(frozen=True)
class NotebookResult:
    """The notebook's text before and after, and what happened in each code cell."""

    source: str
    output: str
    #: "tape", "compat" (any cell fell back), "unchanged" or "error" (any cell
    #: could not be migrated: the notebook is left untouched).
    mode: str
    cells: Tuple[CellResult, ...] = ()
    findings: tuple = ()
    changes: tuple = ()
    #: Why the notebook could not be rewritten, when that is not a cell's finding.
    message: Optional[str] = None

    @property
    def changed(self) -> bool:
        return self.output != self.source


def cell_path(path: str, index: int) -> str:
    return f"{path}:cell_{index + 1}"


# --------------------------------------------------------------------------
# magics
# --------------------------------------------------------------------------
def mask_magics(source: str) -> Tuple[Optional[str], Dict[int, str]]:
    """``source`` with each IPython-only line replaced by a placeholder name
    (keeping its indentation), and the lines taken out. ``(None, {})`` when the
    cell is a cell magic whose body is not Python (leave the cell alone)."""
    lines = source.splitlines(keepends=True)
    masked: Dict[int, str] = {}
    out: List[str] = []
    for i, line in enumerate(lines):
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        if i == 0 and body.lstrip().startswith("%%"):
            name = body.lstrip()[2:].split(None, 1)[0] if body.lstrip()[2:].strip() else ""
            if name not in PYTHON_CELL_MAGICS:
                return None, {}
        if _MAGIC_LINE.match(body) and not body.lstrip().startswith("#"):
            n = len(masked)
            masked[n] = body
            indent = body[:len(body) - len(body.lstrip())]
            out.append(f"{indent}{_PLACEHOLDER.format(n)}{ending}")
        else:
            out.append(line)
    return "".join(out), masked


def unmask_magics(source: str, masked: Dict[int, str]) -> Optional[str]:
    """Put the masked lines back; None when a placeholder went missing or was
    duplicated (the caller then keeps the cell as it was)."""
    if not masked:
        return source
    seen = set()
    out: List[str] = []
    for line in source.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        m = _PLACEHOLDER_LINE.match(body)
        if m and int(m.group(2)) in masked and int(m.group(2)) not in seen:
            n = int(m.group(2))
            seen.add(n)
            original = masked[n]
            old_indent = original[:len(original) - len(original.lstrip())]
            text = original if m.group(1) == old_indent else m.group(1) + original.lstrip()
            out.append(text + line[len(body):])
        elif m or "__tapeshift_magic_" in body:
            return None
        else:
            out.append(line)
    return "".join(out) if seen == set(masked) else None


# --------------------------------------------------------------------------
# JSON formatting
# --------------------------------------------------------------------------
_FORMATS: Tuple[Tuple[Any, bool], ...] = tuple(
    (indent, ascii_) for indent in (1, 2, 4, 3, "\t", None) for ascii_ in (False, True))


def _dump(doc: Any, indent: Any, ensure_ascii: bool, newline: bool) -> str:
    seps = (",", ": ") if indent is not None else (", ", ": ")
    text = json.dumps(doc, indent=indent, ensure_ascii=ensure_ascii, separators=seps)
    return text + "\n" if newline else text


def find_format(text: str, doc: Any) -> Optional[Tuple[Any, bool, bool]]:
    """(indent, ensure_ascii, trailing newline) that re-serialise ``doc`` to
    exactly ``text``, or None."""
    newline = text.endswith("\n")
    for indent, ascii_ in _FORMATS:
        if _dump(doc, indent, ascii_, newline) == text:
            return indent, ascii_, newline
    return None


# --------------------------------------------------------------------------
def _cell_language(doc: Dict[str, Any]) -> str:
    meta = doc.get("metadata") or {}
    lang = (meta.get("language_info") or {}).get("name") or (meta.get("kernelspec") or {}).get("language")
    return (lang or "python").lower()


def migrate_notebook(text: str, migrate_cell: Callable[[str, str], Any],
                     path: str = "<notebook>") -> NotebookResult:
    """Migrate the code cells of the notebook ``text``.

    ``migrate_cell(source, cell_path)`` returns an object with ``output``,
    ``mode``, ``findings`` and ``changes`` (a ``MigrationResult``). Raises
    :class:`NotebookError` when ``text`` is not a notebook (bad JSON, no
    ``cells`` list). Never raises for what a cell holds.
    """
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise NotebookError(f"{path}: not a notebook: invalid JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
        raise NotebookError(f"{path}: not a notebook: no list of cells")
    if _cell_language(doc) != "python":
        return NotebookResult(text, text, "unchanged")

    cells: List[CellResult] = []
    new_sources: Dict[int, Any] = {}
    for index, cell in enumerate(doc["cells"]):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        raw = cell.get("source", "")
        source = "".join(raw) if isinstance(raw, list) else raw
        if not isinstance(source, str) or not source.strip():
            continue
        cp = cell_path(path, index)
        masked_src, masked = mask_magics(source)
        if masked_src is None:
            continue
        result = migrate_cell(masked_src, cp)
        findings = tuple(_with_path(f, cp) for f in result.findings)
        changes = tuple(_with_path(c, cp) for c in result.changes)
        output = source
        if result.mode != "error" and result.output != masked_src:
            restored = unmask_magics(result.output, masked)
            if restored is None:
                return NotebookResult(text, text, "error", tuple(cells), findings, changes,
                                      f"{cp}: the codemod moved an IPython magic line; "
                                      f"notebook left untouched")
            output = restored
        cells.append(CellResult(index, source, output, result.mode if output != source or
                                result.mode == "error" else "unchanged", findings, changes))
        if output != source:
            new_sources[index] = (output.splitlines(keepends=True)
                                  if isinstance(raw, list) else output)

    findings = tuple(f for c in cells for f in c.findings)
    changes = tuple(c for cell in cells for c in cell.changes)
    modes = {c.mode for c in cells}
    if "error" in modes:
        return NotebookResult(text, text, "error", tuple(cells), findings, changes)
    if not new_sources:
        return NotebookResult(text, text, "unchanged", tuple(cells), findings, changes)
    fmt = find_format(text, doc)
    if fmt is None:
        return NotebookResult(text, text, "error", tuple(cells), findings, changes,
                              f"{path}: cannot rewrite the notebook keeping its JSON "
                              f"formatting; notebook left untouched")
    for index, src in new_sources.items():
        doc["cells"][index]["source"] = src
    output = _dump(doc, *fmt)
    mode = "compat" if "compat" in modes else "tape"
    return NotebookResult(text, output, mode, tuple(cells), findings, changes)


def _with_path(record: Any, path: str) -> Any:
    if dataclasses.is_dataclass(record) and hasattr(record, "path"):
        return dataclasses.replace(record, path=path)
    return record


def cell_sources(text: str) -> List[str]:
    """The source of each code cell (a helper for tests and reports)."""
    doc = json.loads(text)
    out = []
    for cell in doc.get("cells", []):
        if cell.get("cell_type") == "code":
            raw = cell.get("source", "")
            out.append("".join(raw) if isinstance(raw, list) else raw)
    return out


__all__: Sequence[str] = (
    "NotebookError", "NotebookResult", "CellResult", "migrate_notebook", "mask_magics",
    "unmask_magics", "find_format", "cell_path", "PYTHON_CELL_MAGICS",
)
