"""A content-hash cache of per-file migration results, so a rerun skips files already done.

The key of a file is a SHA-256 of: its bytes, its kind (Python or notebook),
the migration mode and options, the tapeshift version and a fingerprint of the
codemod's own source (so editing a rule invalidates the cache without a
version bump). An entry is a small JSON document (never a pickle: a cache
directory committed to a repository must not be able to run code) under
``DIR/ab/abcdef....json``, written atomically. An entry that cannot be read
or does not parse is a miss (and is removed); the cache never fails a run.

The default directory is ``.tapeshift-cache/`` at the tree root; it gets a
``.gitignore`` (``*``) and a ``CACHEDIR.TAG`` so neither git nor backup tools
pick it up.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Dict, Mapping, Optional

from tapeshift.migrate.fileio.files import atomic_write_bytes

DEFAULT_DIR = ".tapeshift-cache"
FORMAT = 1
_TAG = (b"Signature: 8a477f597d28d172789f06886806bc55\n"
        b"# This file is a cache directory tag created by tapeshift.\n")


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """Hash of the tapeshift version and of every ``.py`` file of the ``migrate`` package."""
    from tapeshift import migrate

    h = hashlib.sha256(str(getattr(migrate, "__version__", "")).encode())
    root = Path(migrate.__file__).parent
    for f in sorted(root.rglob("*.py")):
        try:
            h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
        except OSError:
            continue
    return h.hexdigest()


def cache_key(data: bytes, kind: str, mode: str, options: Optional[Mapping[str, Any]] = None) -> str:
    """The cache key of a file's bytes for one kind ("python"/"notebook"), mode and options."""
    h = hashlib.sha256()
    head = json.dumps({"format": FORMAT, "code": code_fingerprint(), "kind": kind,
                       "mode": mode, "options": dict(options or {})}, sort_keys=True)
    h.update(head.encode() + b"\0")
    h.update(data)
    return h.hexdigest()


class Cache:
    """Entries (JSON-able dicts) by key, in a directory."""

    def __init__(self, directory: os.PathLike | str):
        self.directory = Path(directory)
        self.hits = 0
        self.misses = 0
        self._ready = False

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> Optional[Dict[str, Any]]:
        path = self._path(key)
        try:
            entry = json.loads(path.read_bytes())
            if not isinstance(entry, dict) or entry.get("key") != key or entry.get("format") != FORMAT:
                raise ValueError("stale or foreign entry")
        except FileNotFoundError:
            self.misses += 1
            return None
        except (OSError, ValueError, UnicodeDecodeError):
            with contextlib.suppress(OSError):
                path.unlink()
            self.misses += 1
            return None
        self.hits += 1
        return entry["value"]

    def put(self, key: str, value: Dict[str, Any]) -> bool:
        """Store ``value``; False (and nothing raised) when the cache cannot be written."""
        try:
            self._prepare()
            data = json.dumps({"format": FORMAT, "key": key, "value": value},
                              separators=(",", ":")).encode()
            atomic_write_bytes(self._path(key), data, fsync=False)
            return True
        except (OSError, TypeError, ValueError):
            return False

    def _prepare(self) -> None:
        if self._ready:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        for name, content in ((".gitignore", b"# created by tapeshift\n*\n"), ("CACHEDIR.TAG", _TAG)):
            p = self.directory / name
            if not p.exists():
                with contextlib.suppress(OSError):
                    atomic_write_bytes(p, content, fsync=False)
        self._ready = True

    def clear(self) -> None:
        import shutil

        shutil.rmtree(self.directory, ignore_errors=True)
        self._ready = False


def encode_bytes(data: Optional[bytes]) -> Optional[str]:
    return None if data is None else base64.b64encode(data).decode("ascii")


def decode_bytes(text: Optional[str]) -> Optional[bytes]:
    return None if text is None else base64.b64decode(text.encode("ascii"), validate=True)
