"""Migrate many files: one per-file job, run on worker processes, with a cache.

Three layers, each usable alone:

:func:`process_file`
    One file, start to finish, without writing anything; returns a picklable
    :class:`FileRecord` (:mod:`tapeshift.migrate.engine.file_job`, whose names
    are importable from here too, as before).

:func:`run_tree`
    Any picklable per-item job over a list of items, on a
    ``ProcessPoolExecutor`` with ``jobs`` workers (``jobs=1``: in this
    process). Results come back in input order. A job that raises, or a worker
    that dies, gives that item's crash record and the run goes on. Ctrl-C
    cancels what has not started, stops the workers and re-raises
    ``KeyboardInterrupt`` in the caller; workers never write files, so nothing
    is left half written.

:func:`migrate_files`
    :func:`process_file` over files via :func:`run_tree`, with a
    :class:`tapeshift.migrate.fileio.cache.Cache` consulted in this process first (a rerun over
    unchanged files starts no worker at all).

Writing stays with the caller: :func:`write_output` (atomic, keeps the mode).
Nothing here prints, except :class:`Progress` (:mod:`tapeshift.migrate.fileio.progress`), a
tqdm bar on stderr when stderr is a terminal, outside CI, and the caller did
not ask for quiet.
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import functools
import importlib
import multiprocessing
import os
import signal
import sys
from pathlib import Path
from typing import (Any, Callable, Dict, List, Optional, Sequence, Tuple,
                    TypeVar)

from tapeshift.migrate.fileio.cache import Cache, cache_key, decode_bytes, encode_bytes
from tapeshift.migrate.fileio.encoding import BOM, SourceDecodeError, decode_source
from tapeshift.migrate.engine.findings import TS100, Change, Finding, Severity
from tapeshift.migrate.engine.settings import Settings
from tapeshift.migrate.engine import tree_helpers
# the per-file job; write_output and NOTEBOOK_SUFFIX are imported for those who import them from here
from tapeshift.migrate.engine.file_job import (NOTEBOOK_SUFFIX, FileRecord, _collect_after,  # noqa: F401
                                               _kind_of, crash_record, error_record, process_file,
                                               write_output)
from tapeshift.migrate.fileio.progress import Progress  # noqa: F401 (tapeshift.migrate.engine.batch.Progress, as before)

T = TypeVar("T")
R = TypeVar("R")


def default_jobs() -> int:
    """The number of CPU cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


# --------------------------------------------------------------------------
# many items
# --------------------------------------------------------------------------
def _worker_init() -> None:
    # Ctrl-C is the parent's to handle: it stops the workers itself
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def os_threads() -> Optional[int]:
    """How many threads this process has, C threads included (TensorFlow's);
    None where the system does not tell (only Linux's /proc is read)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None


#: what the workers run: imported before they start
_PRELOAD = ("tapeshift.migrate.engine.batch", "tapeshift.migrate.engine.pipeline")


def _mp_context():
    methods = multiprocessing.get_all_start_methods()
    # Fork when nothing can go wrong: the workers start at once with what this
    # process has imported (the command line has the codemod loaded), where a
    # fork server imports it all again first (most of a second). Never fork a
    # process holding threads (TensorFlow's, a test runner's): a lock one of
    # them held stays locked forever in the child.
    if "fork" in methods and sys.platform.startswith("linux") and os_threads() == 1:
        for name in _PRELOAD:  # loaded once, here, rather than by every worker
            importlib.import_module(name)
        return multiprocessing.get_context("fork")
    if "forkserver" in methods:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(list(_PRELOAD))
        return ctx
    return multiprocessing.get_context("spawn")


def _stop(executor: cf.ProcessPoolExecutor) -> None:
    processes = list((getattr(executor, "_processes", None) or {}).values())
    executor.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        try:
            p.terminate()
        except Exception:  # pragma: no cover - already gone
            pass
    for p in processes:
        try:
            p.join(timeout=5)
        except Exception:  # pragma: no cover
            pass


def run_tree(items: Sequence[T], job: Callable[[T], R], *, jobs: Optional[int] = None,
             on_crash: Callable[[T, BaseException], R] = crash_record,
             progress: Optional[Progress] = None,
             on_result: Optional[Callable[[int, R], None]] = None,
             order: Optional[Sequence[int]] = None) -> List[R]:
    """``[job(item) for item in items]`` on ``jobs`` worker processes.

    ``job`` and the items must be picklable (a module-level function, or a
    ``functools.partial`` of one). A job that raises or a worker that dies
    gives ``on_crash(item, exception)`` for that item. ``on_result(index,
    result)`` is called in this process as each result arrives (in completion
    order; e.g. to write files as they are done). ``order``: the indices in
    the order to hand them to workers (longest first keeps one big file from
    finishing last on an otherwise idle pool); results are in input order
    regardless. Ctrl-C cancels and stops the workers, then
    ``KeyboardInterrupt`` propagates.
    """
    jobs = default_jobs() if jobs is None else max(1, int(jobs))
    results: List[Any] = [None] * len(items)
    done = [False] * len(items)

    def finish(i: int, r: Any) -> None:
        results[i] = r
        done[i] = True
        if progress is not None:
            progress.advance()
        if on_result is not None:
            on_result(i, r)

    try:
        if jobs == 1 or len(items) <= 1:
            for i, item in enumerate(items):
                try:
                    r = job(item)
                except (KeyboardInterrupt, SystemExit):
                    raise
                except BaseException as exc:
                    r = on_crash(item, exc)
                finish(i, r)
            return results

        todo = _run_pool(items, order if order is not None else range(len(items)), job, min(jobs, len(items)), on_crash, finish)
        # a worker died: run what is left one at a time, so the culprit is known
        for i in todo:
            if not done[i]:
                rest = _run_pool(items, [i], job, 1, on_crash, finish)
                if rest:
                    finish(i, on_crash(items[i], cf.process.BrokenProcessPool("worker died")))
        return results
    finally:
        if progress is not None:
            progress.close()


def _run_pool(items, indices, job, workers, on_crash, finish) -> List[int]:
    """Run ``indices`` on a fresh pool; the indices left undone if a worker died."""
    executor = cf.ProcessPoolExecutor(max_workers=workers, mp_context=_mp_context(),
                                      initializer=_worker_init)
    futures: Dict[cf.Future, int] = {}
    try:
        unsent: List[int] = []  # a worker died while the jobs were handed out
        for k, i in enumerate(indices):
            try:
                futures[executor.submit(job, items[i])] = i
            except cf.process.BrokenProcessPool:
                unsent = list(indices)[k:]
                break
        pending = set(futures)

        def handle(fut: cf.Future) -> bool:
            """Deliver a finished future; False when its worker died."""
            i = futures[fut]
            exc = fut.exception()
            if exc is None:
                finish(i, fut.result())
            elif isinstance(exc, cf.process.BrokenProcessPool):
                return False
            else:
                finish(i, on_crash(items[i], exc))
            return True

        dead: List[cf.Future] = []  # jobs whose worker died
        while pending:
            ready, pending = cf.wait(pending, timeout=0.2, return_when=cf.FIRST_COMPLETED)
            dead += [fut for fut in ready if not handle(fut)]
            if dead:
                break
        if dead or unsent:
            # a job that finished after the wait above returned is delivered too
            # (else it would be neither a result nor run again); the rest run again
            todo = [futures[f] for f in dead] + unsent
            for f in pending:
                if not (f.done() and not f.cancelled() and handle(f)):
                    todo.append(futures[f])
            _stop(executor)
            return todo
        executor.shutdown(wait=True)
        return []
    except BaseException:
        _stop(executor)
        raise


# --------------------------------------------------------------------------
# files, with the cache
# --------------------------------------------------------------------------
def _options(check_idempotent: bool, fix: Sequence[str] = (),
             options: Sequence[str] = ()) -> Dict[str, Any]:
    return {"check_idempotent": check_idempotent, "fix": sorted(fix), "options": sorted(options)}


def record_to_cache(record: FileRecord) -> Dict[str, Any]:
    def rel(p: str) -> str:
        return p[len(record.path):] if p.startswith(record.path) else "\0" + p

    return {
        "kind": record.kind, "mode": record.mode,
        "output": encode_bytes(record.output_bytes),
        "message": None if record.message is None else rel(record.message),
        "idempotent": record.idempotent,
        "findings": [[f.code, f.severity.value, rel(f.path), f.line, f.column, f.message,
                      f.changes_numbers] for f in record.findings],
        "changes": [[c.rule, rel(c.path), c.line, c.column, c.description] for c in record.changes],
    }


def record_from_cache(path: str, data: bytes, value: Dict[str, Any]) -> FileRecord:
    """Rebuild a record for ``path`` (whose bytes are ``data``) from a cache entry."""
    def at(p: str) -> str:
        return p[1:] if p.startswith("\0") else path + p

    kind = value["kind"]
    if kind == "notebook":
        body = data[len(BOM):] if data.startswith(BOM) else data
        source = body.decode("utf-8")
    else:
        source, _ = decode_source(data, path)
    out = decode_bytes(value["output"])
    output = source
    if out is not None:
        if kind == "notebook":
            output = (out[len(BOM):] if out.startswith(BOM) else out).decode("utf-8")
        else:
            output, _ = decode_source(out, path)
    findings = tuple(Finding(code, Severity(sev), at(p), line, col, msg, bool(num))
                     for code, sev, p, line, col, msg, num in value["findings"])
    changes = tuple(Change(rule, at(p), line, col, desc) for rule, p, line, col, desc in value["changes"])
    message = value.get("message")
    return FileRecord(path, kind, source, output, value["mode"], findings, changes, out,
                      None if message is None else at(message), value.get("idempotent"),
                      cached=True)


def migrate_files(paths: Sequence[os.PathLike | str], mode: str = "tape", *,
                  jobs: Optional[int] = None, cache: Optional[Cache] = None,
                  progress: Optional[Progress] = None, check_idempotent: bool = False,
                  on_result: Optional[Callable[[int, FileRecord], None]] = None,
                  fix: Sequence[str] = (), rule_options: Sequence[str] = (),
                  settings: Optional[Settings] = None,
                  tree_facts: Optional[Dict[str, tuple]] = None) -> List[FileRecord]:
    """:func:`process_file` for each path, in input order, using ``cache`` when given.

    ``fix`` and ``rule_options`` go to :func:`tapeshift.migrate.engine.pipeline.migrate_source`
    (``fix`` and ``options``) and into the cache key. ``settings``, when given,
    says all of that instead of ``mode``, ``jobs``, ``check_idempotent``, ``fix``
    and ``rule_options`` (and, without ``cache``, where the cache is).

    Files are read here (once); cache hits are answered here; only misses go
    to the workers. ``on_result(index, record)`` as in :func:`run_tree`
    (called for cache hits too). ``tree_facts``: path -> that file's facts about
    gradient helpers across the tree (:func:`tree_helper_facts`), which join its
    settings and its cache key.
    """
    if settings is None:
        settings = Settings(mode=mode, options=rule_options, fix=fix, jobs=jobs,
                            check_idempotent=check_idempotent)
    elif cache is None and settings.cache_dir is not None:
        cache = Cache(settings.cache_dir)
    mode = settings.mode
    names = [str(p) for p in paths]
    records: List[Optional[FileRecord]] = [None] * len(names)
    work: List[Tuple[int, bytes, Optional[str]]] = []
    options = _options(settings.check_idempotent, settings.fix, settings.options)

    def deliver(i: int, r: FileRecord) -> None:
        records[i] = r
        if on_result is not None:
            on_result(i, r)

    for i, name in enumerate(names):
        try:
            with open(name, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            deliver(i, error_record(name, TS100.code, f"cannot read: {exc.strerror or exc}",
                                    cacheable=False))
            if progress is not None:
                progress.advance()
            continue
        facts = (tree_facts or {}).get(name, ())
        key = cache_key(data, _kind_of(name), mode, {**options, "tree_helpers": facts} if facts
                        else options) if cache is not None else None
        if cache is not None:
            value = cache.get(key)
            if value is not None:
                try:
                    deliver(i, record_from_cache(name, data, value))
                    if progress is not None:
                        progress.advance()
                    continue
                except (KeyError, ValueError, TypeError, UnicodeDecodeError, SourceDecodeError):
                    pass  # a damaged entry: migrate again
        work.append((i, data, key))

    job = functools.partial(_job, settings=settings)

    def arrived(k: int, r: FileRecord) -> None:
        i, _, key = work[k]
        if cache is not None and key is not None and r.cacheable:
            cache.put(key, record_to_cache(r))
        deliver(i, r)

    # biggest files first: the codemod's time grows with file size
    order = sorted(range(len(work)), key=lambda k: -len(work[k][1]))
    run_tree([(names[i], data, (tree_facts or {}).get(names[i], ())) for i, data, _ in work],
             job, jobs=settings.jobs,
             on_crash=lambda item, exc: crash_record(item[0], exc), progress=progress,
             on_result=arrived, order=order)
    if progress is not None:
        progress.close()
    return [r for r in records if r is not None]


def _job(item: Tuple[str, bytes, tuple], settings: Settings) -> FileRecord:
    path, data, facts = item
    if facts:
        settings = dataclasses.replace(settings, tree_helpers=facts)
    return process_file(path, data=data, settings=settings)


def tree_helper_facts(files: Sequence[Tuple[Path, Path]], settings: Settings) -> Dict[str, tuple]:
    """The facts about gradient helpers shared across files
    (:mod:`tapeshift.migrate.engine.tree_helpers`) for the files found, ``(file,
    path relative to the folder it was found under)``: planned per folder, over
    all its ``.py`` files (a shard's files too: each shard plans the same)."""
    by_root: Dict[Path, Dict[str, str]] = {}
    for f, rel in files:
        if f.suffix != ".py":
            continue
        root = Path(f)
        for _ in Path(rel).parts:
            root = root.parent
        try:
            text, _ = decode_source(Path(f).read_bytes(), str(f))
        except (OSError, SourceDecodeError):
            continue  # reported when the file itself is migrated
        by_root.setdefault(root, {})[str(f)] = text

    from tapeshift.migrate.engine.pipeline import migrate_source  # (as _migrate_python does)

    def migrate(path: str, source: str, facts: tuple) -> Optional[str]:
        with _collect_after():
            r = migrate_source(source, path, settings=dataclasses.replace(settings,
                                                                          tree_helpers=facts))
        return r.output if r.mode == "tape" else None

    out: Dict[str, tuple] = {}
    for root, texts in by_root.items():
        out.update(tree_helpers.plan(texts, root, migrate))
    return out
