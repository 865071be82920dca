"""`tapeshift migrate` over a tree: workers, globs, .gitignore, cache, notebooks."""

import json
from pathlib import Path

from tapeshift.migrate.commands.cli import main

ROOT = Path(__file__).resolve().parents[3]
LEGACY = (ROOT / "examples" / "reference_tf1.py").read_text()


def notebook(*cells):
    return json.dumps({
        "cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                   "source": c.splitlines(keepends=True)} for c in cells],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


def test_tree_with_jobs_globs_gitignore_cache_and_notebooks(tmp_path, capsys):
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "a.py").write_text(LEGACY)
    (src / "pkg" / "skip_me.py").write_text(LEGACY)
    (src / "ignored.py").write_text(LEGACY)
    (src / ".gitignore").write_text("ignored.py\n")
    (src / "data.txt").write_text("not python\n")
    (src / "nb.ipynb").write_text(notebook("%matplotlib inline", LEGACY))
    out, cache = tmp_path / "out", tmp_path / "cache"
    args = ["migrate", "--out", str(out), "--jobs", "2", "--exclude", "skip_me.py",
            "--cache-dir", str(cache), "--format", "json", "--report", str(tmp_path / "r.json"),
            str(src)]
    assert main(args) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    modes = {Path(f["path"]).name: f["mode"] for f in report["files"]}
    assert modes == {"a.py": "tape", "nb.ipynb": "tape"}
    assert "tape.gradient(loss, W)" in (out / "pkg" / "a.py").read_text()
    assert not (out / "pkg" / "skip_me.py").exists() and not (out / "ignored.py").exists()
    assert (out / "data.txt").read_text() == "not python\n"
    cells = json.loads((out / "nb.ipynb").read_text())["cells"]
    assert "".join(cells[0]["source"]) == "%matplotlib inline"  # the magic is kept
    assert "GradientTape" in "".join(cells[1]["source"])
    first = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert any(cache.rglob("*"))  # results were cached

    # a rerun answers from the cache and writes the same tree
    assert main(args) == 0
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == first


def test_diff_and_check_write_no_cache(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(LEGACY)
    assert main(["migrate", "--check", "a.py"]) == 1
    assert main(["migrate", "a.py"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]
