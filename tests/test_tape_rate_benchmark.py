"""benchmarks/tape_rate.py, its rate part: three tiny files, the table counted from them.

No network, no TensorFlow: the codemod alone (one test runs the script in a
process where importing TensorFlow fails).
"""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "tape_rate.py"

TAPE = """\
import tensorflow as tf

x = tf.constant([1.0, 2.0])
y = x * x
g = tf.gradients(y, x)
with tf.Session() as sess:
    print(sess.run(g))
"""

# tf.train.Supervisor has no TF2 counterpart: TS109 keeps the file in compat mode
SUPERVISOR = """\
import tensorflow as tf

w = tf.Variable([1.0, 2.0])
sv = tf.train.Supervisor(logdir="/tmp/run")
"""

PLAIN = """\
import numpy as np

print(np.arange(3).sum())
"""


@pytest.fixture(scope="module")
def tape_rate():
    spec = importlib.util.spec_from_file_location("tape_rate_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "tiny"
    (root / "pkg").mkdir(parents=True)
    (root / "tape_step.py").write_text(TAPE)
    (root / "pkg" / "supervisor.py").write_text(SUPERVISOR)
    (root / "plain.py").write_text(PLAIN)
    (root / "notes.txt").write_text("import tensorflow as tf\n")  # not a .py file: not counted
    return root


def test_the_table_counts_tape_compat_and_non_tf_files(tape_rate, tree, tmp_path, capsys):
    out = tmp_path / "figures.json"
    assert tape_rate.main(["--tree", str(tree), "--json", str(out), "--list"]) == 0
    text = capsys.readouterr().out
    assert "| tiny | 3 | 2 | 1 | 1 | 0 | 50.0% |" in text
    assert "  TS109 tf1-only-api: 1" in text
    assert "  TF1-only APIs named by TS109 (files each): tf.train.Supervisor 1" in text
    # the listing names each TF1 file with its mode; the non-TF file is not listed
    assert "  tape   tape_step.py" in text
    assert "  compat pkg/supervisor.py TS109 - 4:6 TS109 " in text
    assert "plain.py" not in text

    figures = json.loads(out.read_text())
    (tiny,) = figures["corpora"]
    assert {k: tiny[k] for k in ("corpus", "files", "tf1_files", "tape", "compat", "error")} == {
        "corpus": "tiny", "files": 3, "tf1_files": 2, "tape": 1, "compat": 1, "error": 0}
    assert tiny["tape_rate"] == 0.5
    assert tiny["reasons"] == {"TS109": {"name": "tf1-only-api", "files": 1}}
    assert tiny["tf1_only_apis"] == {"tf.train.Supervisor": 1}
    assert figures["overall"]["tape_rate"] == 0.5
    assert figures["verify"] == [] and figures["tensorflow"] is None


def test_a_file_the_codemod_cannot_parse_is_an_error_not_a_fallback(tape_rate, tree, capsys):
    (tree / "broken.py").write_text("import tensorflow as tf\nx = (1,\n")
    assert tape_rate.main(["--tree", str(tree)]) == 0
    text = capsys.readouterr().out
    assert "| tiny | 4 | 3 | 1 | 1 | 1 | 33.3% |" in text
    assert "  TS100 unparsable-source: 1" in text


def test_missing_manifest_scripts_are_listed_not_fatal(tape_rate, tree, tmp_path, capsys):
    manifest = tmp_path / "scripts.toml"
    manifest.write_text(textwrap.dedent("""\
        [[script]]
        repo = "someone/tutorials"
        path = "lesson/tape_step.py"
        commit = "0123456789abcdef0123456789abcdef01234567"
        what = "a tape-form lesson"
        runs_without_data = true

        [[script]]
        repo = "someone/tutorials"
        path = "absent.py"
        commit = "89abcdef0123456789abcdef0123456789abcdef"
        what = "not downloaded"
        runs_without_data = false
        """))
    data = tmp_path / "scripts-data"
    (data / "someone__tutorials" / "lesson").mkdir(parents=True)
    (data / "someone__tutorials" / "lesson" / "tape_step.py").write_text(TAPE)
    argv = ["--corpus", "scripts", "--manifest", str(manifest), "--scripts-data", str(data)]
    assert tape_rate.main(argv) == 0
    text = capsys.readouterr().out
    assert "| scripts | 1 | 1 | 1 | 0 | 0 | 100.0% |" in text
    assert "scripts: 1 of 2 manifest scripts in" in text
    assert ("  missing: someone__tutorials/absent.py  (save https://raw.githubusercontent.com/"
            "someone/tutorials/89abcdef0123456789abcdef0123456789abcdef/absent.py there)") in text


def test_a_bad_manifest_entry_is_named_and_exits_2(tape_rate, tmp_path, capsys):
    manifest = tmp_path / "scripts.toml"
    manifest.write_text('[[script]]\nrepo = "a/b"\npath = "x.py"\ncommit = "abc"\n'
                        'what = "short commit"\nruns_without_data = true\n')
    assert tape_rate.main(["--corpus", "scripts", "--manifest", str(manifest)]) == 2
    err = capsys.readouterr().err
    assert f"{manifest}: [[script]] #1 (x.py): commit must be 40 hex digits" in err


def test_the_committed_manifest_reads_and_lists_at_least_25_scripts(tape_rate):
    scripts = tape_rate.load_manifest(tape_rate.MANIFEST)
    assert len(scripts) >= 25
    assert len({s.local for s in scripts}) == len(scripts)
    assert sum(s.runs_without_data for s in scripts) >= 8


def test_the_rate_part_runs_where_tensorflow_cannot_be_imported(tree):
    blocker = ("import runpy, sys; sys.modules['tensorflow'] = None; "
               f"sys.argv = ['tape_rate.py', '--tree', {str(tree)!r}]; "
               f"runpy.run_path({str(SCRIPT)!r}, run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", blocker], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0, proc.stderr
    assert "| tiny | 3 | 2 | 1 | 1 | 0 | 50.0% |" in proc.stdout


@pytest.fixture(scope="module")
def download():
    spec = importlib.util.spec_from_file_location("download_under_test",
                                                  ROOT / "benchmarks" / "_download.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_local_archive_is_found_by_name_and_version_and_unpacked_whole(download, tmp_path):
    import zipfile

    dl = tmp_path / "dl"
    dl.mkdir()
    with zipfile.ZipFile(dl / "tiny_pkg-1.0-py3-none-any.whl", "w") as z:
        z.writestr("tiny_pkg/core.py", TAPE)
    assert download.find_archive(dl, "tiny-pkg", "1.0").name == "tiny_pkg-1.0-py3-none-any.whl"
    assert download.find_archive(dl, "tiny-pkg", "1.0.1") is None
    assert download.find_archive(dl, "tiny", "1.0") is None
    # already downloaded: fetch_package needs no pip, no network
    tree = download.fetch_package("tiny-pkg", "1.0", tmp_path)
    assert tree == tmp_path / "trees" / "tiny-pkg-1.0"
    assert (tree / "tiny_pkg" / "core.py").read_text() == TAPE


def test_an_archive_member_escaping_the_folder_leaves_no_tree(download, tmp_path):
    import zipfile

    archive = tmp_path / "evil-1.0-py3-none-any.whl"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("../escape.py", "x = 1\n")
    with pytest.raises(download.DownloadError, match="escapes the folder"):
        download.unpack(archive, tmp_path / "trees" / "evil-1.0")
    assert list((tmp_path / "trees").iterdir()) == []


def test_a_script_s_folders_are_made_where_verify_runs_it(tape_rate, tmp_path, monkeypatch):
    """`dirs = ["results"]`: a script saving into ./results/ finds it in the run's folder."""
    from types import SimpleNamespace

    import tapeshift.migrate.legacy.verify as verify

    manifest = tmp_path / "scripts.toml"
    manifest.write_text('[[script]]\nrepo = "a/b"\npath = "x.py"\ncommit = "' + "0" * 40 + '"\n'
                        'what = "saves frames"\nruns_without_data = true\n'
                        'dirs = ["results/frames"]\n')
    script, = tape_rate.load_manifest(manifest)
    assert script.dirs == ("results/frames",)
    seen = []

    def fake_verify(source, output, path, **kwargs):
        seen.append((Path(kwargs["cwd"]) / "results" / "frames").is_dir())
        return SimpleNamespace(status="ok", summary=lambda: "ok")

    monkeypatch.setattr(verify, "verify_sources", fake_verify)
    result = SimpleNamespace(mode="tape")
    rows = tape_rate.verify_scripts({script: (result, "src", "out")}, tmp_path, timeout=1)
    assert seen == [True] and rows[0]["status"] == "ok"
