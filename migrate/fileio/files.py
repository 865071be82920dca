"""Finding, reading and safely writing the files a command works on.

Discovery (:func:`discover`): the files under the given paths that a command
should process, with include/exclude globs and ``.gitignore`` rules applied,
never following a symbolic link (a linked file or directory is skipped and
reported; its target, when it lies in the tree, is processed on its own).

Sharding (:class:`Shard`): a deterministic 1/N share of the files found, by a
SHA-256 of each file's path relative to the root it was found under, so that N
CI jobs each migrate their share and the shards together are one run.

Writing (:func:`atomic_write_bytes`, :func:`atomic_write`): a temporary file in
the target's directory, fsynced, given the old file's mode, then renamed over
the target. Ctrl-C during a write is held back until the rename is done (or
the temporary file removed), so an interrupted run never leaves a partial file.

Glob and ``.gitignore`` patterns follow git's rules (gitignore(5)): ``*``,
``?``, ``[...]``, ``**``, a leading ``/`` or an inner ``/`` anchors a pattern
to its base directory, a trailing ``/`` matches directories only, ``!``
re-includes, the last matching pattern wins, and a file inside an ignored
directory cannot be re-included. The globs are compiled by pathspec (the
library black uses for this); each path of the walk is decided on its own, as
git decides it, rather than by pathspec's whole-path answer, which differs
from git on ``*`` + ``!*/`` (git keeps the directories) and on ``build/`` +
``!build/keep.py`` (git keeps ``build/keep.py`` ignored); POSIX classes
(``[[:digit:]]``), which pathspec does not know, are spelled out. Not read:
``core.excludesFile`` and ``$GIT_DIR/info/exclude`` outside the tree root's
repository. An invalid pattern in a ``.gitignore`` is left out (git does the
same); an invalid ``--include``/``--exclude`` glob is an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import signal
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

import pathspec

SKIP_DIRS = frozenset({"__pycache__", "node_modules", "venv", "build", "dist"})

#: What :func:`discover` picks up by default.
DEFAULT_SUFFIXES = (".py", ".ipynb")


# --------------------------------------------------------------------------
# gitignore-style patterns
# --------------------------------------------------------------------------
#: The group pathspec's gitignore regexes give the ``/`` after a directory a
#: pattern matched when the path goes on below it (``build/`` matching
#: ``build/x.py``). Git decides each path of a walk on its own, so here a
#: match through that group is no match (see :meth:`Pattern.parse`).
_DESCENDANT_GROUP = "(?P<ps_d>/)"


#: POSIX character classes in a bracket expression, which git's wildmatch
#: knows and pathspec does not (``[[:digit:]]``), as the ASCII ranges git uses.
#: ``punct``, ``graph``, ``print`` and ``cntrl``, whose ranges take in ``[``,
#: ``/`` or ``!`` that pathspec's brackets cannot hold plainly, make a pattern
#: invalid rather than wrong.
_POSIX_CLASSES = {
    "alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "blank": " \t", "digit": "0-9", "lower": "a-z",
    "space": " \t\n\r\f\v", "upper": "A-Z", "xdigit": "0-9A-Fa-f",
}


def _posix_classes(glob: str) -> str:
    """``glob`` with each ``[:name:]`` inside a bracket expression spelled as ranges."""
    out: List[str] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if c == "\\" and i + 1 < n:
            out.append(glob[i:i + 2])
            i += 2
            continue
        if c != "[":
            out.append(c)
            i += 1
            continue
        j = i + 1  # a bracket expression: "[", "!" or "^", a leading "]" is literal
        if j < n and glob[j] in "!^":
            j += 1
        if j < n and glob[j] == "]":
            j += 1
        body: List[str] = [glob[i:j]]
        while j < n and glob[j] != "]":
            name = glob[j + 2:glob.find(":]", j + 2)] if glob.startswith("[:", j) else None
            if name in _POSIX_CLASSES:
                body.append(_POSIX_CLASSES[name])
                j += len(name) + 4
            elif name in ("punct", "graph", "print", "cntrl"):
                raise InvalidPattern(f"the character class [:{name}:] is not supported")
            else:
                body.append(glob[j])
                j += 1
        if j >= n:  # no closing "]": left to pathspec as it was
            out.append(glob[i:])
            break
        out.append("".join(body) + "]")
        i = j + 1
    return "".join(out)


class InvalidPattern(ValueError):
    """A glob that cannot be compiled (``[z-a]``, a trailing backslash)."""


@dataclass(frozen=True)
class Pattern:
    """One gitignore-style pattern, relative to a base directory.

    The glob is compiled by pathspec (``GitIgnoreSpec``, git's wildmatch
    rules: ``*``, ``?``, ``[...]``, ``**``, anchoring, escapes, trailing
    spaces); which paths it is asked about, ``!`` and the last-match-wins
    order are :class:`PatternSet`'s and :func:`discover`'s, as in git's own
    walk.
    """

    text: str
    regex: "re.Pattern[str]"
    negated: bool = False
    dir_only: bool = False

    @classmethod
    def parse(cls, line: str) -> Optional["Pattern"]:
        """The pattern on one line of a ``.gitignore`` (None for blanks and
        comments); :class:`InvalidPattern` for a glob git would not match."""
        raw = line.rstrip("\n").rstrip("\r")
        # trailing spaces are ignored unless escaped with a backslash
        stripped = raw.rstrip(" ")
        if stripped.endswith("\\") and len(stripped) < len(raw):
            stripped += " "
        if not stripped or stripped.startswith("#"):
            return None
        negated = stripped.startswith("!")
        body = stripped[1:] if negated else stripped
        # "dir/" matches directories only: the glob without its slash, asked
        # about directories alone (pathspec's "dir/" regex wants a path below it)
        dir_only = body.endswith("/") and not body.endswith("\\/")
        if dir_only:
            body = body.rstrip("/")
        if not body:
            return None
        if negated and body[:1] in ("!", "#"):  # "!!a", "!#a": only the first "!" negates
            body = "\\" + body
        try:
            if "[:" in body:
                body = _posix_classes(body)
            compiled = pathspec.GitIgnoreSpec.from_lines([body]).patterns
        except InvalidPattern as exc:
            raise InvalidPattern(f"invalid pattern {line.strip()!r}: {exc}") from None
        except (ValueError, re.error) as exc:  # re.error's position is in the regex, not the glob
            detail = exc.msg if isinstance(exc, re.error) else str(exc)
            raise InvalidPattern(f"invalid pattern {line.strip()!r}: {detail}") from None
        if not compiled or compiled[0].regex is None:
            raise InvalidPattern(f"invalid pattern {line.strip()!r}: not a valid glob")
        regex = compiled[0].regex
        # the path itself, not a path below one the glob names: the group that
        # would carry a match on into a directory's contents can never match
        exact = re.compile(regex.pattern.replace(_DESCENDANT_GROUP, "(?!)"), regex.flags)
        return cls(line.strip(), exact, negated, dir_only)

    def matches(self, rel: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        return self.regex.search(rel) is not None


def parse_patterns(lines: Iterable[str], *, strict: bool = True) -> List[Pattern]:
    """The patterns on ``lines``; an invalid one raises :class:`InvalidPattern`
    (``strict``, for globs given on the command line) or is left out, as git
    leaves it out of a ``.gitignore``."""
    out: List[Pattern] = []
    for line in lines:
        try:
            p = Pattern.parse(line)
        except InvalidPattern:
            if strict:
                raise
            continue
        if p is not None:
            out.append(p)
    return out


@dataclass
class PatternSet:
    """Patterns from several files, each relative to its own base directory.

    The last pattern that matches decides (``!`` re-includes). Sets are checked
    base directory by base directory, shallowest first, so a deeper
    ``.gitignore`` overrides a shallower one, as in git.
    """

    layers: List[Tuple[Path, List[Pattern]]] = field(default_factory=list)

    def add(self, base: Path, patterns: Sequence[Pattern]) -> None:
        if patterns:
            self.layers.append((base, list(patterns)))

    def add_file(self, base: Path, file: Path) -> None:
        try:
            with open(file, encoding="utf-8", errors="surrogateescape") as fh:
                self.add(base, parse_patterns(fh, strict=False))
        except OSError:
            pass

    def decision(self, path: Path, is_dir: bool) -> Optional[bool]:
        """True (ignored), False (re-included) or None (no pattern matched)."""
        result: Optional[bool] = None
        for base, patterns in self.layers:
            try:
                rel = path.relative_to(base).as_posix()
            except ValueError:
                continue
            if rel in ("", "."):
                continue
            for p in patterns:
                if p.matches(rel, is_dir):
                    result = not p.negated
        return result

    def ignored(self, path: Path, is_dir: bool) -> bool:
        return self.decision(path, is_dir) is True

    def copy(self) -> "PatternSet":
        return PatternSet(list(self.layers))


def matches_glob(patterns: Sequence[Pattern], rel: str, is_dir: bool = False) -> bool:
    """True when the last of ``patterns`` that matches ``rel`` is not negated."""
    result = False
    for p in patterns:
        if p.matches(rel, is_dir):
            result = not p.negated
    return result


def _git_top(start: Path) -> Optional[Path]:
    for d in (start, *start.parents):
        if (d / ".git").exists():
            return d
    return None


def gitignore_for(root: Path) -> PatternSet:
    """The ``.gitignore`` rules that apply at ``root``: those of its repository's
    directories from the top down to ``root`` and ``.git/info/exclude``
    (``root``'s own ``.gitignore`` included; deeper ones are read while walking)."""
    root = root.resolve()
    patterns = PatternSet()
    top = _git_top(root)
    if top is None:
        patterns.add_file(root, root / ".gitignore")
        return patterns
    patterns.add_file(top, top / ".git" / "info" / "exclude")
    chain = [root, *root.parents]
    for d in reversed(chain[:chain.index(top) + 1]):
        patterns.add_file(d, d / ".gitignore")
    return patterns


# --------------------------------------------------------------------------
# discovery
# --------------------------------------------------------------------------
@dataclass
class Discovery:
    """What :func:`discover` found."""

    #: (file, path relative to the root it was found under), in a stable order.
    files: List[Tuple[Path, Path]] = field(default_factory=list)
    #: "PATH: reason" for each path given that does not exist.
    errors: List[str] = field(default_factory=list)
    #: (path, reason) for each symbolic link that was not followed.
    skipped: List[Tuple[Path, str]] = field(default_factory=list)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def discover(
    paths: Sequence[str],
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    *,
    gitignore: bool = True,
    suffixes: Optional[Sequence[str]] = DEFAULT_SUFFIXES,
    skip: Sequence[Path] = (),
) -> Discovery:
    """The files under ``paths`` to process.

    Under a directory: files ending in one of ``suffixes`` (or, when
    ``include`` globs are given, files matching one of them), minus those
    matching an ``exclude`` glob or ignored by ``.gitignore`` (``suffixes=None``:
    every file, e.g. to copy the rest of a tree to ``--out``), minus
    :data:`SKIP_DIRS`, hidden directories and the directories in ``skip``
    (e.g. the ``--out`` directory and the cache). Globs are matched against
    the path relative to the directory given, with gitignore rules (``*.py``
    matches at any depth, ``tests/`` any directory called tests, ``/setup.py``
    only at the top). A file named explicitly is always processed unless an
    exclude glob matches its name. Symbolic links are never followed: a linked
    file or directory is reported in ``skipped``.
    """
    found = Discovery()
    try:
        inc = parse_patterns(include)
        exc = parse_patterns(exclude)
    except InvalidPattern as error:  # nothing is processed on a glob that means nothing
        found.errors.append(f"--include/--exclude: {error}")
        return found
    skip_abs = {Path(os.path.abspath(s)) for s in skip}
    seen = set()

    def add(f: Path, rel: Path) -> None:
        key = os.path.realpath(f)
        if key not in seen:
            seen.add(key)
            found.files.append((f, rel))

    for raw in paths:
        p = Path(raw)
        if p.is_dir():  # (a link to a directory named explicitly is walked: it was asked for)
            _walk_into(p, inc, exc, gitignore, None if suffixes is None else tuple(suffixes),
                       skip_abs, found, add)
        elif p.is_file():
            if not matches_glob(exc, p.name):
                add(p, Path(p.name))
        elif p.is_symlink():
            found.errors.append(f"{raw}: broken symbolic link")
        else:
            found.errors.append(f"{raw}: no such file or directory")
    return found


def _walk_into(top: Path, inc, exc, use_gitignore, suffixes, skip_abs, found: Discovery, add) -> None:
    root_real = Path(os.path.realpath(top))
    ignore = gitignore_for(root_real) if use_gitignore else PatternSet()
    # per directory (real path) -> the PatternSet in force there
    stack = {root_real: ignore}
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        d = Path(dirpath)
        real_d = Path(os.path.realpath(d))
        rules = stack.pop(real_d, None) or ignore
        keep = []
        for name in sorted(dirnames):
            sub = d / name
            if name in SKIP_DIRS or name.startswith("."):
                continue
            if Path(os.path.abspath(sub)) in skip_abs:
                continue
            if sub.is_symlink():
                found.skipped.append((sub, _link_reason(sub, root_real)))
                continue
            real_sub = real_d / name
            rel = sub.relative_to(top).as_posix()
            if rules.ignored(real_sub, True) or matches_glob(exc, rel, True):
                continue
            sub_rules = rules
            if use_gitignore and (sub / ".gitignore").is_file():
                sub_rules = rules.copy()
                sub_rules.add_file(real_sub, sub / ".gitignore")
            stack[real_sub] = sub_rules
            keep.append(name)
        dirnames[:] = keep
        for name in sorted(filenames):
            f = d / name
            rel = f.relative_to(top)
            rel_s = rel.as_posix()
            if inc:
                if not matches_glob(inc, rel_s):
                    continue
            elif suffixes is not None and not name.endswith(suffixes):
                continue
            if matches_glob(exc, rel_s) or rules.ignored(real_d / name, False):
                continue
            if f.is_symlink():
                found.skipped.append((f, _link_reason(f, root_real)))
                continue
            if f.is_file():
                add(f, rel)


def _link_reason(link: Path, root: Path) -> str:
    target = Path(os.path.realpath(link))
    if not target.exists():
        return "symbolic link to a missing file: not followed"
    if _inside(target, root):
        return "symbolic link inside the tree: not followed (its target is processed itself)"
    return f"symbolic link out of the tree (to {target}): not followed"


# --------------------------------------------------------------------------
# shards
# --------------------------------------------------------------------------
def shard_of(rel: Path, count: int) -> int:
    """The shard (0 to ``count - 1``) of a file whose path relative to its root is ``rel``.

    A SHA-256 of the path's POSIX spelling, not Python's ``hash()`` (salted per
    process): the same file lands in the same shard on every machine, Python
    version and operating system, whatever else the tree holds.
    """
    data = rel.as_posix().encode("utf-8", "surrogateescape")
    return int.from_bytes(hashlib.sha256(data).digest()[:8], "big") % count


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (``--shard K/N``: K from 1 to N)."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> "Shard":
        """``"K/N"``; ``ValueError`` saying what is wrong otherwise."""
        k, slash, n = text.partition("/")
        if not slash or not k.strip().isdigit() or not n.strip().isdigit():
            raise ValueError(f"expected K/N with whole numbers, as 1/4, got {text!r}")
        shard = cls(int(k), int(n))
        if shard.count < 1:
            raise ValueError(f"N must be 1 or more, got {text!r}")
        if not 1 <= shard.index <= shard.count:
            raise ValueError(f"K must be between 1 and N (1/{shard.count} to "
                             f"{shard.count}/{shard.count}), got {text!r}")
        return shard

    def holds(self, rel: Path) -> bool:
        return shard_of(rel, self.count) == self.index - 1

    def select(self, files: Sequence[Tuple[Path, Path]]) -> List[Tuple[Path, Path]]:
        """The (file, relative path) pairs of :func:`discover` in this shard, in order."""
        return [(f, rel) for f, rel in files if self.holds(rel)]

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


# --------------------------------------------------------------------------
# atomic writes
# --------------------------------------------------------------------------
@contextlib.contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Hold SIGINT (Ctrl-C) back for the block; it takes effect right after.

    Only in the main thread (the one Python delivers signals to); elsewhere a
    no-op (the ``except BaseException`` clean-up in the writers still removes
    the temporary file).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: List[int] = []

    def hold(signum, frame):  # noqa: ARG001
        received.append(signum)

    try:
        old = signal.signal(signal.SIGINT, hold)
    except (ValueError, OSError):  # pragma: no cover - no signals here
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
        if received:
            if callable(old):
                old(signal.SIGINT, None)  # default_int_handler raises KeyboardInterrupt
            elif old == signal.SIG_DFL:
                raise KeyboardInterrupt


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write_bytes(path: Path, data: bytes, mode_from: Optional[Path] = None,
                       fsync: bool = True) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same directory and
    ``os.replace``, keeping the file mode of ``mode_from`` (or of ``path``; a
    new file gets the usual ``0o666 & ~umask``). A symbolic link at ``path``
    is kept: its target is replaced. Ctrl-C never leaves a partial file or a
    temporary file behind."""
    path = Path(path)
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    source = Path(mode_from) if mode_from is not None else path
    try:
        mode = source.stat().st_mode & 0o7777
    except OSError:
        mode = _default_mode()
    with deferred_interrupts():
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                if fsync:
                    os.fsync(fh.fileno())
            os.chmod(tmp, mode)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


def atomic_write(path: Path, text: str, mode_from: Optional[Path] = None) -> None:
    """:func:`atomic_write_bytes` of ``text`` in UTF-8, line endings as given."""
    atomic_write_bytes(path, text.encode("utf-8"), mode_from=mode_from)
