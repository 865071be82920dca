"""The tape-form rate on real TF1 code: how many files `tapeshift migrate` takes to tape form.

    python benchmarks/tape_rate.py [--verify] [--corpus NAME ...] [--tree DIR ...] [--json FILE]

Corpora:

* ``scripts``: the public single-file TF1 scripts listed in
  ``benchmarks/scripts.toml``, read from ``benchmarks/scripts-data/<owner>__<repo>/<path>``
  (gitignored; a script that is not there is listed as missing, not an error);
* the pinned TF1-era packages of :data:`PACKAGES`, fetched with
  ``pip download --no-deps`` into ``benchmarks/corpus-data/`` (gitignored) and unpacked;
* ``--tree DIR``: any folder (with ``--tree`` and no ``--corpus``, only the trees).

Every ``.py`` file goes through ``tapeshift.migrate.engine.pipeline.migrate_source`` in tape mode.
The table counts the TF1 files the codemod changes (or fails on), how many of
them reach tape form, fall back to compat mode or end in an error, the
tape-form rate (tape / those files), and the reasons that keep files out of
tape form: the codes of the findings that block it, in how many files each.

``--verify`` runs ``tapeshift verify`` (``tapeshift.migrate.legacy.verify.verify_sources``) on every
manifest script that runs without data and reached tape form: the original
under run-legacy against the tape-form output under TF2, each in a fresh
temporary working directory. That part needs TensorFlow; the rate does not.

Exit code: 0 when everything was measured (and verified equal), 1 when a
verified script mismatched or failed, 2 on bad input (unreadable manifest,
a package pip cannot fetch).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Sequence

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from _download import DownloadError, fetch_package  # noqa: E402
from tapeshift.migrate.fileio.encoding import SourceDecodeError, decode_source  # noqa: E402
from tapeshift.migrate.engine.findings import REGISTRY  # noqa: E402
from tapeshift.migrate.engine.pipeline import migrate_source  # noqa: E402

PACKAGES = {
    "tf-slim": "1.1.0", "tflearn": "0.5.0", "tensorlayer": "1.11.1",
    "tensorforce": "0.4.4", "dopamine-rl": "2.0.5", "dm-sonnet": "1.36",
}
CORPORA = ("scripts", *PACKAGES)
MANIFEST = HERE / "scripts.toml"
SCRIPTS_DATA = HERE / "scripts-data"
CORPUS_DATA = HERE / "corpus-data"
TOP = 10


# -- the manifest ---------------------------------------------------------------

@dataclass(frozen=True)
class Script:
    repo: str
    path: str
    commit: str
    what: str
    runs_without_data: bool
    sha256: str = ""
    run_seconds: Optional[float] = None
    args: tuple = ()
    note: str = ""
    #: folders the script writes into and expects to exist: made in the working
    #: directory of each verify run
    dirs: tuple = ()

    @property
    def local(self) -> Path:
        owner, name = self.repo.split("/")
        return Path(f"{owner}__{name}") / self.path

    @property
    def url(self) -> str:
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{self.path}"


class ManifestError(ValueError):
    pass


def load_manifest(path: Path) -> List[Script]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib
        except ModuleNotFoundError:
            raise ManifestError(f"{path}: reading TOML needs Python 3.11+ or `pip install tomli`")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ManifestError(f"{path}: {exc}") from exc
    scripts = []
    for i, entry in enumerate(data.get("script", []), 1):
        where = f"{path}: [[script]] #{i}"
        missing = [k for k in ("repo", "path", "commit", "what", "runs_without_data") if k not in entry]
        if missing:
            raise ManifestError(f"{where} ({entry.get('path', '?')}): missing {', '.join(missing)}")
        if entry["repo"].count("/") != 1:
            raise ManifestError(f"{where}: repo must be owner/name, not {entry['repo']!r}")
        if len(entry["commit"]) != 40 or any(c not in "0123456789abcdef" for c in entry["commit"]):
            raise ManifestError(f"{where} ({entry['path']}): commit must be 40 hex digits")
        if not isinstance(entry["runs_without_data"], bool):
            raise ManifestError(f"{where} ({entry['path']}): runs_without_data must be true or false")
        unknown = set(entry) - set(Script.__dataclass_fields__)
        if unknown:
            raise ManifestError(f"{where} ({entry['path']}): unknown key(s) {sorted(unknown)}")
        scripts.append(Script(**{**entry, "args": tuple(entry.get("args", ())),
                                 "dirs": tuple(entry.get("dirs", ()))}))
    if not scripts:
        raise ManifestError(f"{path}: no [[script]] entries")
    return scripts


# -- measuring --------------------------------------------------------------------

@dataclass
class FileResult:
    path: str           # relative to the corpus root
    mode: str           # tape, compat, error or unchanged (no --fix here, so never "fixed")
    tf: bool            # counted as a TF1 file (changed, or an error on a file naming tensorflow)
    reasons: List[str] = field(default_factory=list)   # codes keeping it out of tape form
    message: str = ""   # the first blocking finding: line:col code message
    tf1_only: List[str] = field(default_factory=list)  # the TF1-only APIs TS109 names


def measure_source(source: str, path: str) -> "tuple[FileResult, str]":
    """One file through the codemod: its record and the migrated text."""
    result = migrate_source(source, path, mode="tape")
    mode = result.mode
    tf = result.changed or (mode == "error" and "tensorflow" in source)
    if mode == "compat":
        blocking = [f for f in result.findings if REGISTRY[f.code].blocks_tape]
    elif mode == "error":  # what made it an error (unparsable, internal), not what came before
        blocking = [f for f in result.findings if f.code in ("TS100", "TS114")] or list(result.findings)
    else:
        blocking = []
    reasons = sorted({f.code for f in blocking})
    first = min(blocking, key=lambda f: (f.line, f.column), default=None)
    message = f"{first.line}:{first.column} {first.code} {first.message}" if first else ""
    # TS109's message starts with the API's name: "tf.train.Saver: ..."
    tf1_only = sorted({f.message.split(":")[0] for f in blocking
                       if f.code == "TS109" and f.message.startswith("tf.") and ":" in f.message})
    return FileResult(path, mode, tf, reasons, message, tf1_only), result.output


def measure_file(file: Path, rel: str) -> "tuple[FileResult, str, str]":
    try:
        source, _ = decode_source(file.read_bytes(), str(file))
    except (OSError, SourceDecodeError) as exc:
        return FileResult(rel, "error", True, ["undecodable"], str(exc)), "", ""
    result, output = measure_source(source, str(file))
    result.path = rel
    return result, source, output


@dataclass
class Corpus:
    name: str
    files: List[FileResult] = field(default_factory=list)
    seconds: float = 0.0  # wall time of the codemod over the corpus

    def count(self, mode: str) -> int:
        return sum(1 for f in self.files if f.tf and f.mode == mode)

    @property
    def tf1(self) -> int:
        return sum(1 for f in self.files if f.tf)

    @property
    def rate(self) -> Optional[float]:
        return self.count("tape") / self.tf1 if self.tf1 else None

    def reasons(self) -> List["tuple[str, int]"]:
        """(code, number of TF1 files it keeps out of tape form), most files first."""
        counts = collections.Counter(code for f in self.files if f.tf for code in f.reasons)
        return sorted(counts.items(), key=lambda item: (-item[1], item[0]))

    def tf1_only(self) -> List["tuple[str, int]"]:
        """(TF1-only API, number of TF1 files out of tape form that use it), most files first."""
        counts = collections.Counter(name for f in self.files if f.tf for name in f.tf1_only)
        return sorted(counts.items(), key=lambda item: (-item[1], item[0]))

    def summary(self) -> dict:
        return {"corpus": self.name, "files": len(self.files), "tf1_files": self.tf1,
                "tape": self.count("tape"), "compat": self.count("compat"),
                "error": self.count("error"), "tape_rate": self.rate,
                "reasons": {code: {"name": code_name(code), "files": n} for code, n in self.reasons()},
                "tf1_only_apis": dict(self.tf1_only()), "seconds": round(self.seconds, 1),
                "errors": [{"path": f.path, "codes": f.reasons, "message": f.message}
                           for f in self.files if f.tf and f.mode == "error"]}


def py_files(root: Path) -> List[Path]:
    return sorted(p for p in root.rglob("*.py") if p.is_file() and not p.name.startswith("."))


def measure_tree(name: str, root: Path) -> Corpus:
    corpus, start = Corpus(name), time.perf_counter()
    for file in py_files(root):
        corpus.files.append(measure_file(file, file.relative_to(root).as_posix())[0])
    corpus.seconds = time.perf_counter() - start
    return corpus


def measure_scripts(scripts: Sequence[Script], data: Path):
    """The manifest's scripts that are in ``data``: (corpus, {script: (source, output)}, missing, changed)."""
    corpus, texts, missing, changed = Corpus("scripts"), {}, [], []
    start = time.perf_counter()
    for script in scripts:
        file = data / script.local
        if not file.is_file():
            missing.append(script)
            continue
        if script.sha256 and hashlib.sha256(file.read_bytes()).hexdigest() != script.sha256:
            changed.append(script)
        result, source, output = measure_file(file, script.local.as_posix())
        corpus.files.append(result)
        texts[script] = (result, source, output)
    corpus.seconds = time.perf_counter() - start
    return corpus, texts, missing, changed


# -- verifying ------------------------------------------------------------------

def verify_scripts(texts: dict, data: Path, timeout: float, seed: Optional[int] = 0,
                   align_random: bool = True) -> List[dict]:
    """``tapeshift verify`` on every manifest script that runs without data and that
    the codemod changed (tape form or compat mode), ``--seed``/``--align-random``
    as given (docs/verify.md: random draws of the two runs from one stream)."""
    from tapeshift.migrate.legacy.verify import verify_sources  # runs TensorFlow in subprocesses only

    env = {"MPLBACKEND": "Agg", "TF_CPP_MIN_LOG_LEVEL": "2"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    rows = []
    try:
        for script, (result, source, output) in texts.items():
            if not script.runs_without_data:
                continue
            row = {"script": script.local.as_posix(), "mode": result.mode}
            if result.mode not in ("tape", "compat"):
                row["status"] = "not-migrated"
            else:
                with tempfile.TemporaryDirectory(prefix="tape-rate-") as cwd:
                    for folder in script.dirs:
                        (Path(cwd) / folder).mkdir(parents=True, exist_ok=True)
                    report = verify_sources(source, output, data / script.local, timeout=timeout,
                                            args=script.args, cwd=cwd, seed=seed,
                                            align_random=align_random)
                row["status"] = report.status
                row["summary"] = report.summary()
            print(f"# verify {row['script']}: {row['status']}", file=sys.stderr, flush=True)
            rows.append(row)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return rows


# -- printing ---------------------------------------------------------------------

def pct(x: Optional[float]) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def code_name(code: str) -> str:
    return REGISTRY[code].name if code in REGISTRY else code


def print_table(corpora: List[Corpus], overall: Corpus) -> None:
    print("| corpus | files | TF1 files changed | tape form | compat mode | error | tape-form rate |")
    print("|---|---|---|---|---|---|---|")
    for c in [*corpora, overall] if len(corpora) > 1 else corpora:
        label = f"**{c.name}**" if c is overall else c.name
        print(f"| {label} | {len(c.files)} | {c.tf1} | {c.count('tape')} | {c.count('compat')} "
              f"| {c.count('error')} | {pct(c.rate)} |")


def print_reasons(corpora: List[Corpus], overall: Corpus, top: int) -> None:
    for c in [*corpora, overall] if len(corpora) > 1 else corpora:
        reasons = c.reasons()[:top]
        if not reasons:
            continue
        print(f"\n{c.name}: top reasons (TF1 files each keeps out of tape form; a file can have several)")
        for code, n in reasons:
            print(f"  {code} {code_name(code)}: {n}")
        apis = c.tf1_only()[:top]
        if apis:
            print("  TF1-only APIs named by TS109 (files each): "
                  + ", ".join(f"{name} {n}" for name, n in apis))


def print_files(corpora: List[Corpus]) -> None:
    for c in corpora:
        print(f"\n{c.name}: every TF1 file")
        for f in c.files:
            if f.tf:
                why = f" {' '.join(f.reasons)}" if f.reasons else ""
                print(f"  {f.mode:6} {f.path}{why}" + (f" - {f.message}" if f.message else ""))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", action="append", choices=CORPORA, metavar="NAME",
                        help=f"measure this corpus (repeatable; default: all of {', '.join(CORPORA)})")
    parser.add_argument("--tree", action="append", type=Path, default=[], metavar="DIR",
                        help="also measure this folder, named after it (repeatable)")
    parser.add_argument("--verify", action="store_true",
                        help="verify the tape-form output of every manifest script that runs without data")
    parser.add_argument("--timeout", type=float, default=600.0, help="per script run, in seconds (verify)")
    parser.add_argument("--seed", type=int, default=0,
                        help="verify: Python's, numpy's and TensorFlow's seeds in both runs (default 0)")
    parser.add_argument("--no-align", action="store_true",
                        help="verify without --align-random (TF random draws then differ)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the figures here too")
    parser.add_argument("--top", type=int, default=TOP, help="reasons shown per corpus (default: 10)")
    parser.add_argument("--list", action="store_true", help="also list every TF1 file: its mode and reasons")
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    parser.add_argument("--scripts-data", type=Path, default=SCRIPTS_DATA)
    parser.add_argument("--corpus-data", type=Path, default=CORPUS_DATA)
    args = parser.parse_args(argv)
    names = args.corpus or ([] if args.tree else list(CORPORA))
    head = git_head()  # the commit measured (others may commit during a long run)
    for tree in args.tree:
        if not tree.is_dir():
            print(f"tape_rate: --tree {tree}: not a folder", file=sys.stderr)
            return 2

    corpora: List[Corpus] = []
    texts: dict = {}
    missing: List[Script] = []
    changed: List[Script] = []
    scripts: List[Script] = []
    if "scripts" in names:
        try:
            scripts = load_manifest(args.manifest)
        except ManifestError as exc:
            print(f"tape_rate: {exc}", file=sys.stderr)
            return 2
        corpus, texts, missing, changed = measure_scripts(scripts, args.scripts_data)
        corpora.append(corpus)
    for name in names:
        if name == "scripts":
            continue
        try:
            root = fetch_package(name, PACKAGES[name], args.corpus_data)
        except DownloadError as exc:
            print(f"tape_rate: {exc}", file=sys.stderr)
            return 2
        corpora.append(measure_tree(name, root))
        print(f"# {name}: {len(corpora[-1].files)} files, {corpora[-1].seconds:.0f} s",
              file=sys.stderr, flush=True)
    for tree in args.tree:
        corpora.append(measure_tree(tree.resolve().name, tree))

    overall = Corpus("overall", [f for c in corpora for f in c.files], sum(c.seconds for c in corpora))
    today = datetime.date.today().isoformat()
    print(f"\nTape-form rate, tapeshift {head}, {today}, python {sys.version.split()[0]}\n")
    print_table(corpora, overall)
    print_reasons(corpora, overall, args.top)
    if args.list:
        print_files(corpora)
    if "scripts" in names:
        here = len(scripts) - len(missing)
        print(f"\nscripts: {here} of {len(scripts)} manifest scripts in {args.scripts_data}")
        for s in missing:
            print(f"  missing: {s.local.as_posix()}  (save {s.url} there)")
        for s in changed:
            print(f"  differs from the manifest's sha256 (not the version listed): {s.local.as_posix()}")

    verified: List[dict] = []
    if args.verify:
        verified = verify_scripts(texts, args.scripts_data, args.timeout, args.seed,
                                  not args.no_align)
        options = " ".join([*([f"--seed {args.seed}"] if args.seed is not None else []),
                            *([] if args.no_align else ["--align-random"])]) or "no options"
        print(f"\nverify ({tf_version()}; {options}): {len(verified)} manifest scripts run "
              "without data")
        print("| mode | scripts | OK | MISMATCH | script failure | nothing compared |")
        print("|---|---|---|---|---|---|")
        for mode in ("tape", "compat"):
            rows = [r for r in verified if r["mode"] == mode]
            c = collections.Counter(r["status"] for r in rows)
            print(f"| {mode} | {len(rows)} | {c['ok']} | {c['mismatch']} | {c['failed']} "
                  f"| {c['nothing-compared']} |")
        for r in verified:
            if "summary" in r:
                print(f"  [{r['mode']}] {r['script']}: {r['summary']}")

    if args.json:
        figures = {"date": today, "tapeshift": head, "python": sys.version.split()[0],
                   "corpora": [c.summary() for c in corpora], "overall": overall.summary(),
                   "missing_scripts": [s.local.as_posix() for s in missing],
                   "verify": verified, "tensorflow": tf_version() if args.verify else None}
        write_json(args.json, figures)
    bad = [r for r in verified if r["status"] in ("mismatch", "failed", "nothing-compared")]
    return 1 if bad else 0


def write_json(path: Path, figures: dict) -> None:
    """Written whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(figures, f, indent=2)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def git_head() -> str:
    """HEAD's short hash, marked when the codemod's files differ from it (a shared checkout)."""
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip() or "?"
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "migrate", "compat"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return head + (" + uncommitted changes in migrate/" if dirty else "")


def tf_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return f"tensorflow {version('tensorflow')}"
    except PackageNotFoundError:
        return "tensorflow not installed"


if __name__ == "__main__":
    sys.exit(main())
