"""The pre-commit hooks of .pre-commit-hooks.yaml, run by pre-commit itself.

pre-commit installs the hooks from this repository at HEAD (commit a change
to the hook file before running these) into an environment of its own, pip
installing tapeshift and its requirements from PyPI: no TensorFlow, which the
codemod does not need. Each test installs once (about a minute). Needs the
``git`` binary and a git checkout of tapeshift; ``pre-commit`` is in the test
extra.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LEGACY = (ROOT / "examples" / "reference_tf1.py").read_text()
CLEAN = "import tensorflow as tf\n\nx = tf.constant(1.0)\n"


def _head():
    if shutil.which("git") is None:
        return None
    proc = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


HEAD = _head()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    HEAD is None, reason="pre-commit installs hooks from a git repository: needs the git "
                         "binary and tapeshift as a git checkout")]


def env(home: Path):
    # nothing from a surrounding git hook or repository leaks in
    e = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    e["PRE_COMMIT_HOME"] = str(home)
    return e


def pre_commit(args, cwd: Path, home: Path):
    return subprocess.run([sys.executable, "-m", "pre_commit", *args, "--color", "never"],
                          cwd=cwd, env=env(home), capture_output=True, text=True, timeout=900)


@pytest.fixture
def repo(tmp_path):
    r = tmp_path / "repo"
    r.mkdir()
    subprocess.run(["git", "init", "-q", str(r)], check=True)
    (r / "legacy.py").write_text(LEGACY)
    (r / "clean.py").write_text(CLEAN)
    subprocess.run(["git", "add", "."], cwd=r, check=True)
    return r


def test_try_repo_both_hooks_fail_on_legacy_code_only(repo, tmp_path):
    proc = pre_commit(["try-repo", str(ROOT), "--ref", HEAD, "--all-files"], repo,
                      tmp_path / "home")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "tapeshift check" in out and "tapeshift migrate" in out
    assert out.count("Failed") == 2, out
    # the check hook names the finding; the migrate hook (--check) the file it would change
    assert "legacy.py:26:15: TS201 [error]" in out
    assert "would migrate legacy.py" in out and "would migrate clean.py" not in out
    assert "2 files checked: 1 errors" in out
    assert (repo / "legacy.py").read_text() == LEGACY  # --check writes nothing


def test_migrate_hook_rewrites_in_place_then_passes(repo, tmp_path):
    (repo / ".pre-commit-config.yaml").write_text(
        "repos:\n"
        f"-   repo: {ROOT}\n"
        f"    rev: {HEAD}\n"
        "    hooks:\n"
        "    -   id: tapeshift-check\n"
        "    -   id: tapeshift-migrate\n"
        "        args: [--in-place]\n")
    subprocess.run(["git", "add", ".pre-commit-config.yaml"], cwd=repo, check=True)
    home = tmp_path / "home"

    clean = pre_commit(["run", "--files", "clean.py"], repo, home)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert clean.stdout.count("Passed") == 2

    first = pre_commit(["run", "tapeshift-migrate", "--files", "legacy.py"], repo, home)
    assert first.returncode == 1, first.stdout + first.stderr
    assert "files were modified by this hook" in first.stdout
    migrated = (repo / "legacy.py").read_text()
    assert "tape.gradient(loss, W)" in migrated and "tf.gradients" not in migrated
    compile(migrated, "legacy.py", "exec")
    # nothing left untracked in the repository (the cache ignores itself)
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=repo,
                            capture_output=True, text=True, check=True).stdout
    assert [line for line in status.splitlines() if line.startswith("??")] == []

    subprocess.run(["git", "add", "legacy.py"], cwd=repo, check=True)
    again = pre_commit(["run", "tapeshift-migrate", "--files", "legacy.py"], repo, home)
    assert again.returncode == 0, again.stdout + again.stderr  # the output migrates to itself
    assert (repo / "legacy.py").read_text() == migrated
    # the chain-rule mistake is kept by migrate (numbers unchanged) and still reported
    check = pre_commit(["run", "tapeshift-check", "--files", "legacy.py"], repo, home)
    assert check.returncode == 1 and "TS201 [error]" in check.stdout
