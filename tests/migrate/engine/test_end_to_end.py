"""Issue 7, item 2, end to end: a small tree with every awkward kind of file,
discovered with tapeshift.migrate.fileio.files, migrated with tapeshift.migrate.engine.batch on 2 workers,
written back in place, then migrated again."""

import json
import os
import stat
from pathlib import Path

import pytest

from tapeshift.migrate.fileio.cache import Cache
from tapeshift.migrate.fileio.encoding import BOM
from tapeshift.migrate.fileio.files import discover
from tapeshift.migrate.engine.batch import migrate_files, write_output

TF1 = ("import tensorflow as tf\n"
       "x = tf.constant(2.0)\n"
       "with tf.Session() as sess:\n"
       "    print(sess.run(x))\n")
COMPAT = "import tensorflow as tf\nx = tf.placeholder(tf.float32)\n"


def nb_text():
    doc = {"cells": [
        {"cell_type": "code", "execution_count": 1, "id": "a", "metadata": {},
         "outputs": [], "source": ["%matplotlib inline\n", "!pip install -q tf-slim\n",
                                   *TF1.splitlines(keepends=True)]},
        {"cell_type": "code", "execution_count": 2, "id": "b", "metadata": {},
         "outputs": [{"name": "stdout", "output_type": "stream", "text": ["ok\n"]}],
         "source": ["%%time\n", "print('ok')\n"]},
    ], "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


@pytest.fixture
def tree(tmp_path):
    root, outside = tmp_path / "repo", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    files = {
        "crlf.py": TF1.replace("\n", "\r\n").encode(),
        "plain_crlf.py": b"import os\r\nprint(os.sep)\r\n",
        "latin.py": ("# -*- coding: latin-1 -*-\n" + COMPAT + "name = 'café'\n").encode("latin-1"),
        "latin_same.py": "# -*- coding: latin-1 -*-\nname = 'café'\n".encode("latin-1"),
        "bom.py": BOM + TF1.encode(),
        "bom_same.py": BOM + "s = 'é'\n".encode(),
        "pkg/run.py": ("#!/usr/bin/env python\n" + TF1).encode(),
        "py2.py": b"import tensorflow as tf\nprint 'loss', tf\n",
        "ignored/gen.py": TF1.encode(),
        "notebook.ipynb": nb_text().encode(),
        ".gitignore": b"ignored/\n",
    }
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    os.chmod(root / "pkg/run.py", 0o755)
    (outside / "victim.py").write_bytes(TF1.encode())
    (root / "link.py").symlink_to(outside / "victim.py")
    (root / "linkdir").symlink_to(outside)
    return root, outside, files


def run(root, jobs=2, cache=None):
    found = discover([str(root)])
    records = migrate_files([f for f, _ in found.files], jobs=jobs, cache=cache)
    return found, {Path(r.path).relative_to(root).as_posix(): r for r in records}


def test_tree_safety_properties(tree, tmp_path):
    root, outside, original = tree
    found, records = run(root)
    # discovery: ignored file skipped, symlinks not followed, notebook included
    assert sorted(records) == ["bom.py", "bom_same.py", "crlf.py", "latin.py", "latin_same.py",
                               "notebook.ipynb", "pkg/run.py", "plain_crlf.py", "py2.py"]
    assert {p.name for p, _ in found.skipped} == {"link.py", "linkdir"}
    # the run as a whole failed (py2.py), but only that file is an error
    assert [k for k, r in records.items() if r.error] == ["py2.py"]
    assert "Python 2" in records["py2.py"].message
    assert {k for k, r in records.items() if r.changed} == {
        "crlf.py", "latin.py", "bom.py", "pkg/run.py", "notebook.ipynb"}

    for r in records.values():
        write_output(r)

    def data(rel):
        return (root / rel).read_bytes()

    # unchanged files: byte for byte
    for rel in ("plain_crlf.py", "latin_same.py", "bom_same.py", "py2.py", "ignored/gen.py"):
        assert data(rel) == original[rel], rel
    # changed files keep their encoding, and everything they write compiles
    assert b"\r\n" in data("crlf.py") and b"\n" not in data("crlf.py").replace(b"\r\n", b"")
    assert b"Session" not in data("crlf.py")
    assert data("latin.py").startswith(b"# -*- coding: latin-1 -*-\n")
    assert b"name = 'caf\xe9'\n" in data("latin.py") and b"compat.v1" in data("latin.py")
    assert data("bom.py").startswith(BOM) and b"Session" not in data("bom.py")
    for rel in ("crlf.py", "latin.py", "bom.py", "pkg/run.py"):
        compile(data(rel), rel, "exec", dont_inherit=True)
    # executable bit kept
    assert stat.S_IMODE((root / "pkg/run.py").stat().st_mode) == 0o755
    # notebook: magics and outputs kept, TF1 code migrated
    nb = json.loads(data("notebook.ipynb"))
    cell0 = "".join(nb["cells"][0]["source"])
    assert cell0.startswith("%matplotlib inline\n!pip install -q tf-slim\n")
    assert "Session" not in cell0
    assert nb["cells"][1] == json.loads(original["notebook.ipynb"])["cells"][1]
    assert data("notebook.ipynb").endswith(b"}\n") and b'\n "cells": [\n  {\n' in data("notebook.ipynb")
    # nothing outside the tree touched, symlink still a symlink
    assert (outside / "victim.py").read_bytes() == TF1.encode()
    assert (root / "link.py").is_symlink()
    # no temporary files left
    assert not [p for p in root.rglob("*.tmp")]

    # idempotence: migrating the migrated tree changes nothing
    _, again = run(root)
    assert not [k for k, r in again.items() if r.changed]
    assert [k for k, r in again.items() if r.error] == ["py2.py"]


def test_rerun_from_cache_gives_the_same_records(tree, tmp_path):
    root, _, _ = tree
    cache_dir = tmp_path / "cache"
    _, first = run(root, cache=Cache(cache_dir))
    _, second = run(root, jobs=1, cache=Cache(cache_dir))
    assert all(r.cached for k, r in second.items())
    assert {k: (r.mode, r.output_bytes) for k, r in first.items()} == {
        k: (r.mode, r.output_bytes) for k, r in second.items()}


def test_interrupt_while_writing_leaves_whole_files(tree):
    root, _, original = tree
    found = discover([str(root)])
    written = []

    def write_then_interrupt(i, record):
        if write_output(record):
            written.append(record.path)
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        migrate_files([f for f, _ in found.files], jobs=2, on_result=write_then_interrupt)
    assert len(written) == 1
    for rel, data in original.items():
        p = root / rel
        if str(p) not in written:
            assert p.read_bytes() == data, rel
    assert not [p for p in root.rglob("*.tmp")]
