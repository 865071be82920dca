"""One file, start to finish, without writing anything: :func:`process_file` and its record.

Decode (PEP 263 cookie, BOM, line endings: :mod:`tapeshift.migrate.fileio.encoding`), migrate (a
``.py`` file through :func:`tapeshift.migrate.engine.pipeline.migrate_source`, a ``.ipynb`` cell by
cell through :mod:`tapeshift.migrate.fileio.notebooks`), encode back the way the file was stored,
and check the bytes to be written (they compile, they still declare the file's encoding). Returns
a picklable :class:`FileRecord`. Whatever goes wrong becomes an error record, never an exception.
Writing stays with the caller: :func:`write_output` (atomic, keeps the mode).

This is the job :mod:`tapeshift.migrate.engine.batch` runs on its workers; batch.py re-exports
its names. The pipeline is imported inside the functions that migrate, as when they were in
batch.py (whose ``tree_helper_facts`` still does the same); a test replaces
``pipeline.migrate_source`` and expects the next file to use the replacement.
"""

from __future__ import annotations

import concurrent.futures as cf
import gc
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence, Tuple

from tapeshift.migrate.fileio.encoding import (BOM, SourceDecodeError, SourceEncoding, decode_source,
                              encode_source, same_encoding)
from tapeshift.migrate.fileio.files import atomic_write_bytes
from tapeshift.migrate.engine.findings import TS100, TS114, Change, Finding, Severity, make_finding
from tapeshift.migrate.engine.python_syntax import compile_quietly, compiled_already
from tapeshift.migrate.engine.settings import Settings

NOTEBOOK_SUFFIX = ".ipynb"


# --------------------------------------------------------------------------
# records
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class FileRecord:
    """What happened to one file. Same shape as ``MigrationResult`` (``path``,
    ``source``, ``output``, ``mode``, ``findings``, ``changes``, ``changed``,
    ``error``), so report code takes either, plus what a writer needs."""

    path: str
    #: "python" or "notebook"
    kind: str
    #: The file's text as decoded (BOM removed, line endings kept); "" when unreadable.
    source: str
    #: The migrated text; equal to ``source`` unless the file is to be rewritten.
    output: str
    #: "tape", "compat", "unchanged" or "error" (the file must not be written).
    mode: str
    findings: Tuple[Finding, ...] = ()
    changes: Tuple[Change, ...] = ()
    #: The exact bytes to write when ``changed``; None otherwise.
    output_bytes: Optional[bytes] = None
    #: Why the file is an error, in one line naming the file (None otherwise).
    message: Optional[str] = None
    #: With ``check_idempotent``: did migrating the output change nothing?
    idempotent: Optional[bool] = None
    #: The record came from the cache.
    cached: bool = False
    #: False for failures that depend on the run, not the bytes (I/O, crashes).
    cacheable: bool = True
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return self.output_bytes is not None

    @property
    def error(self) -> bool:
        return self.mode == "error"


def _kind_of(path: str) -> str:
    return "notebook" if path.endswith(NOTEBOOK_SUFFIX) else "python"


def error_record(path: str, code: str, message: str, source: str = "", kind: Optional[str] = None,
                 findings: Sequence[Finding] = (), cacheable: bool = True) -> FileRecord:
    """An error record whose finding (``code``: TS100 input, TS114 tapeshift) says why."""
    finding = make_finding(code, path, 1, 1, message)
    return FileRecord(path, kind or _kind_of(path), source, source, "error",
                      (*findings, finding), (), None, f"{path}: {message}", cacheable=cacheable)


def crash_record(path: Any, exc: BaseException) -> FileRecord:
    """The record of a file whose job raised or whose worker process died."""
    what = ("the worker process died" if isinstance(exc, cf.process.BrokenProcessPool)
            else f"{type(exc).__name__}: {exc}")
    return error_record(str(path), TS114.code, f"internal error, file left untouched: {what}",
                        cacheable=False)


# --------------------------------------------------------------------------
# one file
# --------------------------------------------------------------------------
def _compiles(data: bytes, path: str) -> Optional[str]:
    try:
        compile_quietly(data, path)
    except (SyntaxError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    except (RecursionError, MemoryError) as exc:  # pragma: no cover - pathological input
        return f"{type(exc).__name__}"
    return None


def _migrate_python(text: str, enc: SourceEncoding, path: str, settings: Settings,
                    started: float) -> FileRecord:
    from tapeshift.migrate.engine.pipeline import migrate_source

    check_idempotent = settings.check_idempotent
    result = migrate_source(text, path, settings=settings)
    if result.mode == "error" or result.output == text:
        mode_out = "error" if result.mode == "error" else "unchanged"
        msg = None
        if mode_out == "error":
            msg = "; ".join(f"{f.location()}: {f.message}" for f in result.findings
                            if f.severity is Severity.ERROR) or f"{path}: not migrated"
        return FileRecord(path, "python", text, text, mode_out, result.findings, result.changes,
                          None, msg, None if not check_idempotent else True,
                          seconds=time.perf_counter() - started)
    try:
        data = encode_source(result.output, enc)
    except UnicodeEncodeError as exc:
        return error_record(path, TS114.code, f"the migrated text cannot be stored as {enc.codec} "
                            f"({exc.reason}); file left untouched", text, "python", result.findings)
    if not same_encoding(data, enc):
        return error_record(path, TS114.code, "the migration would move or drop the file's "
                            "encoding declaration; file left untouched", text, "python",
                            result.findings)
    # the bytes hold the text the pipeline compiled, in the codec their cookie
    # declares (same_encoding): Python decodes them to that text again
    problem = None if compiled_already(result.output) else _compiles(data, path)
    if problem:
        return error_record(path, TS114.code, f"the migrated file does not compile ({problem}); "
                            f"file left untouched", text, "python", result.findings)
    idem = None
    if check_idempotent:
        again = migrate_source(result.output, path, settings=settings)
        idem = again.output == result.output
    return FileRecord(path, "python", text, result.output, result.mode, result.findings,
                      result.changes, data, None, idem, seconds=time.perf_counter() - started)


def _migrate_nb(data: bytes, path: str, settings: Settings, started: float) -> FileRecord:
    from tapeshift.migrate.fileio.notebooks import NotebookError, cell_sources, migrate_notebook
    from tapeshift.migrate.engine.pipeline import migrate_source

    bom = data.startswith(BOM)
    try:
        raw = data[len(BOM):].decode("utf-8") if bom else data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return error_record(path, TS100.code, f"cannot decode: a notebook must be UTF-8 ({exc.reason} "
                            f"at offset {exc.start}); file left untouched", kind="notebook")
    crlf = "\r\n" in raw and "\n" not in raw.replace("\r\n", "")
    text = raw.replace("\r\n", "\n") if crlf else raw
    enc = SourceEncoding("utf-8", bom, "\r\n" if crlf else "\n")

    check_idempotent = settings.check_idempotent

    def cell(source: str, cell_path: str):
        return migrate_source(source, cell_path, settings=settings)

    try:
        nb = migrate_notebook(text, cell, path)
    except NotebookError as exc:
        return error_record(path, TS100.code, f"{exc.args[0].split(': ', 1)[1]}; file left untouched",
                            raw, "notebook")
    if nb.mode == "error" or not nb.changed:
        mode_out = "error" if nb.mode == "error" else "unchanged"
        msg = None
        if mode_out == "error":
            msg = nb.message or "; ".join(f"{f.location()}: {f.message}" for f in nb.findings
                                          if f.severity is Severity.ERROR) or f"{path}: not migrated"
        return FileRecord(path, "notebook", raw, raw, mode_out, nb.findings, nb.changes, None, msg,
                          None if not check_idempotent else True,
                          seconds=time.perf_counter() - started)
    out = encode_source(nb.output, enc)
    # the rewritten notebook must read back with exactly the migrated cells
    expected = [c.output for c in nb.cells]
    try:
        got = [s for s in cell_sources(nb.output)]
        ok = all(e in got for e in expected)
    except ValueError:
        ok = False
    if not ok:
        return error_record(path, TS114.code, "the rewritten notebook does not read back; "
                            "file left untouched", raw, "notebook", nb.findings)
    idem = None
    if check_idempotent:
        idem = not migrate_notebook(nb.output, cell, path).changed
    output_text = out[len(BOM):].decode("utf-8") if bom else out.decode("utf-8")
    return FileRecord(path, "notebook", raw, output_text, nb.mode, nb.findings, nb.changes, out,
                      None, idem, seconds=time.perf_counter() - started)


def process_file(path: str, mode: str = "tape", data: Optional[bytes] = None,
                 check_idempotent: bool = False, fix: Sequence[str] = (),
                 options: Sequence[str] = (), settings: Optional[Settings] = None) -> FileRecord:
    """Migrate one file (``.py`` or ``.ipynb``) without writing it.

    ``data``: the file's bytes when the caller already read them (the cache
    does), else the file is read here. With ``check_idempotent`` the output is
    migrated once more and ``record.idempotent`` says whether that changed
    anything (it doubles the cost; for tests and benchmarks). ``settings``, when
    given, says all of that instead of ``mode``, ``check_idempotent``, ``fix``
    and ``options``.
    """
    if settings is None:
        # Settings makes tuples of the sequences; mypy reads the fields' tuple types (batch.py's
        # arg-type errors are silenced by module in pyproject.toml, this module's here)
        settings = Settings(mode=mode, options=options, fix=fix,  # type: ignore[arg-type]
                            check_idempotent=check_idempotent)
    with _collect_after():
        return _process_file(str(path), data, settings)


@contextmanager
def _collect_after() -> Iterator[None]:
    """Python's cycle collector off while one file is migrated, then one
    collection of what that file left.

    A file's syntax trees are hundreds of thousands of objects that live until
    it is done; each automatic collection of the older generations walks them
    all again (about 7% of migrating the benchmark corpus). Everything made
    while collection is off stays in the youngest generation, so collecting
    that one alone afterwards frees the file's cycles, whatever else the
    process holds.
    """
    if not gc.isenabled():  # the caller manages collection itself
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(0)


def _process_file(path: str, data: Optional[bytes], settings: Settings) -> FileRecord:
    started = time.perf_counter()
    if data is None:
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            return error_record(path, TS100.code, f"cannot read: {exc.strerror or exc}",
                                cacheable=False)
    try:
        if path.endswith(NOTEBOOK_SUFFIX):
            return _migrate_nb(data, path, settings, started)
        try:
            text, enc = decode_source(data, path)
        except SourceDecodeError as exc:
            return error_record(path, TS100.code, f"cannot decode: {exc.reason}; file left untouched",
                                kind="python")
        return _migrate_python(text, enc, path, settings, started)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # a bug must cost one file, not the run
        return crash_record(path, exc)


def write_output(record: FileRecord, dest: Optional[os.PathLike] = None) -> bool:
    """Write a changed record's bytes atomically to ``dest`` (default: the file
    itself), keeping the original file's mode. False when there was nothing to write."""
    if record.output_bytes is None or record.error:
        return False
    atomic_write_bytes(Path(dest) if dest is not None else Path(record.path), record.output_bytes,
                       mode_from=Path(record.path))
    return True
