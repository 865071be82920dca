"""Finding, reading and safely writing the files a command works on."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Iterator, List, Optional, Tuple

SKIP_DIRS = frozenset({"__pycache__", "node_modules", "venv", "build", "dist"})


def walk(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            yield Path(dirpath) / name


def inputs(paths: List[str]) -> Tuple[List[Tuple[Path, Path]], List[str]]:
    """(file, path relative to its root) pairs for every file under ``paths``, and errors."""
    files: List[Tuple[Path, Path]] = []
    errors: List[str] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            for f in walk(p):
                files.append((f, f.relative_to(p)))
        elif p.is_file():
            files.append((p, Path(p.name)))
        else:
            errors.append(f"{raw}: no such file or directory")
    return files, errors


def python_files(paths: List[str]) -> Tuple[List[Tuple[Path, Path]], List[str]]:
    """Like ``inputs``, keeping ``.py`` files (and any file named explicitly)."""
    files, errors = inputs(paths)
    explicit = {Path(p) for p in paths}
    return [(f, r) for f, r in files if f.suffix == ".py" or f in explicit], errors


def read_source(path: Path) -> str:
    with open(path, encoding="utf-8", newline="") as fh:
        return fh.read()


def atomic_write(path: Path, text: str, mode_from: Optional[Path] = None) -> None:
    """Write ``text`` to ``path`` via a temporary file in the same directory and
    ``os.replace``, keeping the file mode of ``mode_from`` (or of ``path``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    source = mode_from if mode_from is not None else path
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if source.exists():
            os.chmod(tmp, source.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
