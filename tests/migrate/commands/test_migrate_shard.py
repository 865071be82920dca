"""`tapeshift migrate --shard K/N`: a stable 1/N share of a tree per job; the shards
are disjoint and together give one run's output, byte for byte, and its findings."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tapeshift.migrate.commands.cli import main
from tapeshift.migrate.fileio.files import Shard, shard_of

ROOT = Path(__file__).resolve().parents[3]
LEGACY = (ROOT / "examples" / "reference_tf1.py").read_text()


def make_tree(top: Path) -> None:
    """24 files in nested folders: TF1 scripts, plain modules, one that does not
    parse, a data file that --out copies, and a .gitignore'd file."""
    for i in range(8):
        d = top / f"pkg{i % 3}" / ("sub" if i % 2 else "")
        d.mkdir(parents=True, exist_ok=True)
        (d / f"train_{i}.py").write_text(LEGACY.replace("0.1", f"0.{i + 1}"))
        (d / f"util_{i}.py").write_text(f"def f{i}(x):\n    return x + {i}\n")
        (d / f"notes_{i}.txt").write_text(f"notes {i}\n")
    (top / "broken.py").write_text("print 'python 2'\n")
    (top / "ignored.py").write_text(LEGACY)
    (top / ".gitignore").write_text("ignored.py\n")


def run(tree: Path, out: Path, tmp: Path, *extra: str):
    report = tmp / f"{out.name}.json"
    code = main(["migrate", "--out", str(out), "--jobs", "1", "--cache-dir", str(tmp / f"{out.name}-cache"),
                 "--format", "json", "--report", str(report), *extra, str(tree)])
    return code, json.loads(report.read_text())


def files_of(out: Path) -> dict:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def test_shards_are_disjoint_and_their_union_is_one_run(tmp_path):
    tree = tmp_path / "tree"
    make_tree(tree)
    code, whole = run(tree, tmp_path / "whole", tmp_path)
    assert code == 2  # broken.py cannot be parsed: reported, left as it is, the rest migrated
    one_run = files_of(tmp_path / "whole")
    assert len(one_run) == 8 * 3 + 2 and "ignored.py" not in one_run  # + broken.py, .gitignore

    outputs, records, codes = {}, [], []
    for k in (1, 2, 3):
        code, report = run(tree, tmp_path / f"shard{k}", tmp_path, "--shard", f"{k}/3")
        codes.append(code)
        shard_files = files_of(tmp_path / f"shard{k}")
        assert report["shard"] == {"shard": f"{k}/3", "index": k, "count": 3,
                                   "files": len(report["files"]), "of": 17}
        assert 0 < len(report["files"]) < 17
        assert not set(shard_files) & set(outputs), f"shard {k} repeats files of another"
        outputs.update(shard_files)
        records += report["files"]

    assert outputs == one_run  # byte for byte, the copied data files included
    by_path = lambda rs: sorted(rs, key=lambda r: r["path"])  # noqa: E731
    assert by_path(records) == by_path(whole["files"])  # same modes, changes and findings
    assert sorted(codes) == [0, 0, 2]  # only the shard holding broken.py reports its error
    assert sum(r["mode"] == "tape" for r in records) == 8


def test_text_report_names_the_shard_and_its_size(tmp_path, capsys):
    tree = tmp_path / "tree"
    make_tree(tree)
    (tree / "broken.py").unlink()
    assert main(["migrate", "--check", "--shard", "2/2", "--jobs", "1", str(tree)]) == 1
    err = capsys.readouterr().err
    held = sum(Shard(2, 2).holds(p.relative_to(tree)) for p in tree.rglob("*.py")
               if p.name != "ignored.py")
    assert f"shard 2/2: {held} of the 16 file(s) found (the other shards have the rest)\n" in err
    assert f"(the other shards have the rest)\n{held} file(s): " in err  # just above the summary


@pytest.mark.parametrize("value, message", [
    ("0/2", "K must be between 1 and N (1/2 to 2/2), got '0/2'"),
    ("3/2", "K must be between 1 and N (1/2 to 2/2), got '3/2'"),
    ("1/0", "N must be 1 or more, got '1/0'"),
    ("a/b", "expected K/N with whole numbers, as 1/4, got 'a/b'"),
    ("2", "expected K/N with whole numbers, as 1/4, got '2'"),
])
def test_bad_shard_is_a_usage_error(tmp_path, capsys, value, message):
    assert main(["migrate", "--shard", value, str(tmp_path)]) == 2
    assert f"tapeshift migrate: error: argument --shard: {message}" in capsys.readouterr().err


def test_shard_of_is_a_stable_hash_of_the_relative_path():
    # pinned: a change of the hash would move files between the shards of a CI matrix
    assert [shard_of(Path(p), 4) for p in ("a.py", "pkg/train.py", "pkg/sub/util_1.py")] == [3, 2, 2]
    assert shard_of(Path("pkg/train.py"), 1) == 0
    code = ("from pathlib import Path; from tapeshift.migrate.fileio.files import shard_of; "
            "print([shard_of(Path(f'm{i}/f{i}.py'), 5) for i in range(12)])")
    seen = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": seed, "PATH": ""}).stdout for seed in ("1", "2")}
    assert seen == {"[0, 0, 3, 2, 2, 4, 2, 3, 2, 4, 2, 0]\n"}  # not Python's salted hash()


def test_the_ci_matrix_of_docs_distributed_md_writes_one_runs_tree(tmp_path, monkeypatch):
    import shlex

    import yaml

    doc = (ROOT / "docs" / "distributed.md").read_text()
    (flow,) = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", doc, re.S) if "--shard" in b]
    job = flow["jobs"]["migrate"]
    (command,) = [s["run"] for s in job["steps"] if "--shard" in s.get("run", "")]
    tree = tmp_path / "src"
    make_tree(tree)
    (tree / "broken.py").unlink()
    monkeypatch.chdir(tmp_path)
    assert main(["migrate", "--out", "one-run", "--no-cache", "--jobs", "1", "src/"]) == 0
    union = {}
    for k in job["strategy"]["matrix"]["shard"]:  # each job in a workspace of its own
        workspace = tmp_path / f"job{k}"
        workspace.mkdir()
        (workspace / "src").symlink_to(tree, target_is_directory=True)
        monkeypatch.chdir(workspace)
        argv = shlex.split(command.replace("${{ matrix.shard }}", str(k)))
        assert argv[:2] == ["tapeshift", "migrate"]
        assert main(argv[1:] + ["--jobs", "1"]) == 0  # in this process: no worker start-up
        report = json.loads((workspace / f"report-{k}.json").read_text())
        assert report["shard"]["shard"] == f"{k}/{len(job['strategy']['matrix']['shard'])}"
        part = files_of(workspace / "migrated")
        assert not set(part) & set(union)
        union.update(part)
    assert union == files_of(tmp_path / "one-run")
