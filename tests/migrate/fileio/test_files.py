"""tapeshift.migrate.fileio.files: discovery (globs, .gitignore, symlinks) and atomic writes."""

import os
import shutil
import signal
import stat
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tapeshift.migrate.fileio import files
from tapeshift.migrate.fileio.files import Pattern, atomic_write, atomic_write_bytes, discover, parse_patterns


def make(root: Path, rel: str, text: str = "x = 1\n") -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def rels(found):
    return sorted(r.as_posix() for _, r in found.files)


# -- patterns -----------------------------------------------------------------
@pytest.mark.parametrize("pattern, path, is_dir, expected", [
    ("*.py", "a.py", False, True),
    ("*.py", "deep/er/a.py", False, True),
    ("*.py", "a.pyc", False, False),
    ("/setup.py", "setup.py", False, True),
    ("/setup.py", "sub/setup.py", False, False),
    ("docs/*.py", "docs/a.py", False, True),
    ("docs/*.py", "docs/x/a.py", False, False),
    ("docs/*.py", "x/docs/a.py", False, False),
    ("build/", "build", True, True),
    ("build/", "build", False, False),
    ("**/gen", "a/b/gen", True, True),
    ("**/gen", "gen", False, True),
    ("a/**/b", "a/b", True, True),
    ("a/**/b", "a/x/y/b", True, True),
    ("a/**", "a/x/y", False, True),
    ("a/**", "a", True, False),
    ("te?t_*.py", "test_x.py", False, True),
    ("[abc].py", "b.py", False, True),
    ("[!abc].py", "b.py", False, False),
    ("[!abc].py", "d.py", False, True),
    ("\\#x.py", "#x.py", False, True),
    ("a\\ ", "a ", False, True),
])
def test_gitignore_pattern(pattern, path, is_dir, expected):
    p = Pattern.parse(pattern)
    assert p.matches(path, is_dir) is expected


def test_comments_blanks_and_negation():
    pats = parse_patterns(["# comment", "", "   ", "*.log", "!keep.log"])
    assert [p.text for p in pats] == ["*.log", "!keep.log"]
    assert files.matches_glob(pats, "x.log") and not files.matches_glob(pats, "keep.log")


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_agrees_with_git_check_ignore(tmp_path):
    ignore = ["*.gen.py", "/top_only.py", "cache/", "!cache/keep.py", "data/**/raw_*.py",
              "sub/*.py", "!sub/ok.py", "[0-9]*.py", "deep/**"]
    paths = ["a.gen.py", "x/a.gen.py", "top_only.py", "x/top_only.py", "cache/a.py",
             "data/raw_1.py", "data/q/r/raw_2.py", "data/q/cooked.py", "sub/a.py", "sub/ok.py",
             "sub/x/a.py", "1a.py", "x/2b.py", "deep/a.py", "plain.py", "x/y/plain.py"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("\n".join(ignore) + "\n")
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / ".gitignore").write_text("plain.py\n!top_only.py\n")
    for p in paths:
        make(tmp_path, p)
    proc = subprocess.run(["git", "check-ignore", "--no-index", *paths], cwd=tmp_path,
                          capture_output=True, text=True)
    git_ignored = set(proc.stdout.split())
    found = set(rels(discover([str(tmp_path)])))
    for p in paths:
        assert (p in found) is (p not in git_ignored), p


def git_ignored(root: Path, paths):
    proc = subprocess.run(["git", "check-ignore", "--no-index", *paths], cwd=root,
                          capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stderr
    return set(proc.stdout.splitlines())


# Each case: {.gitignore file: lines}, and the files of the tree. discover()
# must keep exactly the files git does not ignore. The first two are where
# pathspec's whole-path answer (GitIgnoreSpec.match_file) differs from git.
GIT_CASES = {
    "everything but directories and .py": (
        {".gitignore": ["*", "!*/", "!*.py"]},
        ["a.py", "a.txt", "d/b.py", "d/e/c.py", "d/e/c.txt"]),
    "no re-including below an ignored directory": (
        {".gitignore": ["build/", "!build/keep.py", "out", "!out/keep.py"]},
        ["build/keep.py", "build/x.py", "out/keep.py", "src/build/y.py", "src/a.py"]),
    "a/** is what is inside a, not a": (
        {".gitignore": ["a/**", "!a/keep.py", "!a/sub/"]},
        ["a/keep.py", "a/x.py", "a/sub/y.py", "b/a/x.py"]),
    "a name without a slash is not the files below it": (
        {".gitignore": ["gen", "!gen/"]},
        ["gen/x.py", "x/gen/y.py", "z.py", "y/gen"]),
    "deeper .gitignore wins, anchored to its own directory": (
        {".gitignore": ["*.py", "!/top.py"], "x/.gitignore": ["!gen", "!/keep.py", "!deep/*.py"],
         "x/deep/.gitignore": ["secret.py"]},
        ["top.py", "x/top.py", "x/keep.py", "x/gen/a.py", "x/y/keep.py",
         "x/deep/ok.py", "x/deep/secret.py"]),
    "directory-only and trailing-space rules": (
        {".gitignore": ["cache/", "tmp/ ", "lib", "!lib/", "*.tmp.py"]},
        ["cache/a.py", "cache.py", "tmp/b.py", "lib/c.py", "lib.py", "x/y.tmp.py"]),
    "double stars and brackets": (
        {".gitignore": ["**/gen/**/*_pb2.py", "data/**/raw_?.py", "[0-9][0-9]_*.py", "!11_*.py",
                        "a/**/b/"]},
        ["gen/x_pb2.py", "p/gen/q/r/y_pb2.py", "gen.py", "data/raw_1.py", "data/q/raw_22.py",
         "10_a.py", "11_b.py", "1_c.py", "a/b/x.py", "a/q/b/y.py", "a/q/bb.py"]),
    "POSIX character classes": (
        {".gitignore": ["[[:digit:]]*.py", "x[[:xdigit:]_].py", "[![:lower:]]y.py",
                        "[[:upper:][:space:]]z.py", "[[:alnum:]][[:alpha:]].pyw"]},
        ["1a.py", "a1.py", "xF.py", "x_.py", "xg.py", "Ay.py", "ay.py", "Az.py", " z.py", "az.py",
         "1a.pyw", "a1.pyw"]),
    "escapes": (
        {".gitignore": ["\\#hash.py", "\\!bang.py", "sp\\ .py", "q\\?.py", "*.pyw", "!!a.pyw",
                        "!#b.pyw"]},
        ["#hash.py", "!bang.py", "sp .py", "q?.py", "qx.py", "!a.pyw", "a.pyw", "#b.pyw", "b.pyw"]),
}


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git binary to compare with")
@pytest.mark.parametrize("case", sorted(GIT_CASES))
def test_discovery_matches_git(tmp_path, case):
    ignores, paths = GIT_CASES[case]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for rel, lines in ignores.items():
        make(tmp_path, rel, "\n".join(lines) + "\n")
    for p in paths:
        make(tmp_path, p)
    ignored = git_ignored(tmp_path, paths)
    found = set(rels(discover([str(tmp_path)], suffixes=(".py", ""))))
    assert {p for p in paths if p not in ignored} == found - set(ignores)
    assert ignored, "every case ignores something"


TREE = ["a.py", "b.txt", "1.py", "d/a.py", "d/e/b.py", "d/e/f/c.py", "e/d/a.py", "gen/x_pb2.py",
        "x/gen/y.py", "out/k.py", "x/out/k.py"]  # (not build/: tapeshift skips it)
ATOMS = ["*.py", "a.py", "/a.py", "d/", "d", "/d/", "e/", "d/*", "d/**", "**/e", "d/**/c.py",
         "e/**/", "*", "*/", "**/", "[ab].py", "?.py", "[0-9].py", "gen/", "out", "x/**",
         "**/gen/*.py", "f", "*.txt"]
IGNORE_LINES = st.lists(st.sampled_from(ATOMS + ["!" + a for a in ATOMS]), min_size=1, max_size=6)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git binary to compare with")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(top=IGNORE_LINES, nested=st.lists(st.sampled_from(ATOMS + ["!" + a for a in ATOMS]),
                                         max_size=3))
def test_discovery_matches_git_on_generated_gitignores(tmp_path_factory, top, nested):
    root = tmp_path_factory.mktemp("tree")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for p in TREE:
        make(root, p)
    make(root, ".gitignore", "\n".join(top) + "\n")
    if nested:
        make(root, "d/.gitignore", "\n".join(nested) + "\n")
    ignored = git_ignored(root, TREE)
    found = set(rels(discover([str(root)], suffixes=(".py", ".txt"))))
    assert found == {p for p in TREE if p not in ignored}, (top, nested)


def test_invalid_globs(tmp_path):
    with pytest.raises(files.InvalidPattern, match="z-a"):
        Pattern.parse("[z-a].py")
    with pytest.raises(files.InvalidPattern, match=r"\[:punct:\] is not supported"):
        Pattern.parse("x[[:punct:]].py")
    make(tmp_path, "a.py")
    make(tmp_path, "b.py")
    # a glob on the command line that means nothing: an error, and nothing processed
    found = discover([str(tmp_path)], exclude=["[z-a].py"])
    assert found.files == [] and "invalid pattern '[z-a].py'" in found.errors[0]
    # in a .gitignore it is left out, as git leaves it out
    (tmp_path / ".gitignore").write_text("[z-a].py\nb.py\n")
    assert rels(discover([str(tmp_path)])) == ["a.py"]


# -- discovery ----------------------------------------------------------------
def test_discover_suffixes_skip_dirs_and_hidden(tmp_path):
    for p in ["a.py", "n.ipynb", "README.md", "pkg/b.py", "__pycache__/c.py", ".hidden/d.py",
              "node_modules/e.py", ".ipynb_checkpoints/n-checkpoint.ipynb"]:
        make(tmp_path, p)
    assert rels(discover([str(tmp_path)])) == ["a.py", "n.ipynb", "pkg/b.py"]
    assert rels(discover([str(tmp_path)], suffixes=None)) == ["README.md", "a.py", "n.ipynb", "pkg/b.py"]


def test_include_and_exclude_globs(tmp_path):
    for p in ["a.py", "tests/test_a.py", "pkg/b.py", "pkg/gen/c.py", "tool.pyw"]:
        make(tmp_path, p)
    assert rels(discover([str(tmp_path)], exclude=["tests/", "gen"])) == ["a.py", "pkg/b.py"]
    assert rels(discover([str(tmp_path)], include=["pkg/**/*.py"])) == ["pkg/b.py", "pkg/gen/c.py"]
    assert rels(discover([str(tmp_path)], include=["*.pyw", "*.py"], exclude=["pkg/"])) == [
        "a.py", "tests/test_a.py", "tool.pyw"]


def test_gitignore_in_parent_repo_applies_to_subtree(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("generated/\n")
    make(tmp_path, "src/generated/a.py")
    make(tmp_path, "src/b.py")
    assert rels(discover([str(tmp_path / "src")])) == ["b.py"]
    assert rels(discover([str(tmp_path / "src")], gitignore=False)) == ["b.py", "generated/a.py"]


def test_symlinks_are_never_followed(tmp_path):
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    make(outside, "secret.py")
    make(outside, "pkg/mod.py")
    make(tree, "real.py")
    (tree / "link_out.py").symlink_to(outside / "secret.py")
    (tree / "dir_out").symlink_to(outside / "pkg")
    (tree / "link_in.py").symlink_to(tree / "real.py")
    (tree / "loop").symlink_to(tree)
    found = discover([str(tree)])
    assert rels(found) == ["real.py"]
    reasons = {p.name: why for p, why in found.skipped}
    assert set(reasons) == {"link_out.py", "dir_out", "link_in.py", "loop"}
    assert "out of the tree" in reasons["link_out.py"]
    assert "inside the tree" in reasons["link_in.py"]


def test_explicit_files_and_missing_paths(tmp_path):
    f = make(tmp_path, "script")
    found = discover([str(f), str(tmp_path / "nope")])
    assert rels(found) == ["script"]
    assert found.errors == [f"{tmp_path / 'nope'}: no such file or directory"]


def test_skip_directories(tmp_path):
    make(tmp_path, "a.py")
    make(tmp_path, "out/a.py")
    assert rels(discover([str(tmp_path)], skip=[tmp_path / "out"])) == ["a.py"]


# -- writing ------------------------------------------------------------------
def leftovers(d: Path):
    return [p.name for p in d.iterdir() if p.name.endswith(".tmp")]


def test_atomic_write_keeps_mode_and_symlink(tmp_path):
    f = make(tmp_path, "run.py", "old\n")
    f.chmod(0o751)
    atomic_write_bytes(f, b"new\r\n")
    assert f.read_bytes() == b"new\r\n"
    assert stat.S_IMODE(f.stat().st_mode) == 0o751
    link = tmp_path / "link.py"
    link.symlink_to(f)
    atomic_write(link, "newer\n")
    assert link.is_symlink() and f.read_text() == "newer\n"
    assert leftovers(tmp_path) == []


def test_new_file_gets_umask_mode(tmp_path):
    old = os.umask(0o022)
    try:
        atomic_write(tmp_path / "sub" / "n.py", "x\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "sub" / "n.py").stat().st_mode) == 0o644


def test_interrupt_during_write_leaves_old_file_and_no_temp(tmp_path, monkeypatch):
    f = make(tmp_path, "a.py", "original\n")

    def boom(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(files.os, "fsync", boom)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_bytes(f, b"half")
    assert f.read_text() == "original\n"
    assert leftovers(tmp_path) == []


@pytest.fixture
def sigint_handler():
    """Install a known SIGINT handler for the test and put back the old one.

    A process started in the background by a non-interactive shell inherits
    SIGINT as ignored, and the writer rightly restores whatever was there.
    """
    def install(handler):
        signal.signal(signal.SIGINT, handler)

    old = signal.getsignal(signal.SIGINT)
    yield install
    signal.signal(signal.SIGINT, old)


def ctrl_c_during_fsync(monkeypatch):
    real_fsync = os.fsync

    def ctrl_c_then_fsync(fd):
        # arrives mid-write, after the data and before the rename
        signal.raise_signal(signal.SIGINT)
        real_fsync(fd)

    monkeypatch.setattr(files.os, "fsync", ctrl_c_then_fsync)


def test_ctrl_c_is_held_until_the_file_is_complete(tmp_path, monkeypatch, sigint_handler):
    sigint_handler(signal.default_int_handler)
    f = make(tmp_path, "a.py", "original\n")
    ctrl_c_during_fsync(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_bytes(f, b"complete\n")
    assert f.read_bytes() == b"complete\n"
    assert leftovers(tmp_path) == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_ignored_ctrl_c_stays_ignored(tmp_path, monkeypatch, sigint_handler):
    sigint_handler(signal.SIG_IGN)
    f = make(tmp_path, "a.py", "original\n")
    ctrl_c_during_fsync(monkeypatch)
    atomic_write_bytes(f, b"complete\n")
    assert f.read_bytes() == b"complete\n"
    assert leftovers(tmp_path) == []
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
