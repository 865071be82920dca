"""tapeshift.migrate.fileio.notebooks: cell by cell, magics kept, JSON formatting kept."""

import json

import pytest

from tapeshift.migrate.fileio.notebooks import (NotebookError, cell_sources, find_format, mask_magics,
                               migrate_notebook, unmask_magics)
from tapeshift.migrate.engine.pipeline import migrate_source

TF1_CELL = ("import tensorflow as tf\n"
            "x = tf.constant(2.0)\n"
            "with tf.Session() as sess:\n"
            "    print(sess.run(x))\n")


def notebook(*cells, indent=1, ascii_=False, newline=True, as_list=True):
    doc = {"cells": [], "metadata": {"kernelspec": {"language": "python", "name": "python3"},
                                     "language_info": {"name": "python"}},
           "nbformat": 4, "nbformat_minor": 5}
    for kind, src in cells:
        cell = {"cell_type": kind, "id": f"c{len(doc['cells'])}", "metadata": {},
                "source": src.splitlines(keepends=True) if as_list else src}
        if kind == "code":
            cell.update(execution_count=1, outputs=[{"name": "stdout", "output_type": "stream",
                                                     "text": ["2.0\n"]}])
        doc["cells"].append(cell)
    text = json.dumps(doc, indent=indent, ensure_ascii=ascii_, sort_keys=True)
    return text + "\n" if newline else text


def migrate(text, path="nb.ipynb"):
    return migrate_notebook(text, lambda src, p: migrate_source(src, p, "tape"), path)


def test_masks_line_magics_shell_and_help():
    src = ("%matplotlib inline\n!pip install -q tf-slim\nfiles = !ls\nimport os\n"
           "os.path?\nfor i in range(2):\n    %time f(i)\nif (a\n    != b):\n    pass\n")
    masked, taken = mask_magics(src)
    assert "%" not in masked.replace("%time", "") and "!pip" not in masked
    assert "    != b):" in masked  # a continuation line is Python, not a shell escape
    assert len(taken) == 5
    compile(masked, "cell", "exec")
    assert unmask_magics(masked, taken) == src


def test_cell_magics():
    assert mask_magics("%%bash\nls\n") == (None, {})
    masked, taken = mask_magics("%%time\nx = 1\n")
    assert masked.startswith("__tapeshift_magic_0__\n") and taken == {0: "%%time"}


def test_unmask_refuses_lost_or_doubled_placeholders():
    masked, taken = mask_magics("%matplotlib inline\nx = 1\n")
    assert unmask_magics("x = 1\n", taken) is None
    assert unmask_magics(masked + "__tapeshift_magic_0__\n", taken) is None


@pytest.mark.parametrize("indent, ascii_, newline, as_list", [
    (1, False, True, True), (2, True, False, True), (4, False, True, False)])
def test_migrates_code_cells_keeping_everything_else(indent, ascii_, newline, as_list):
    text = notebook(("markdown", "# Título\n"), ("code", "%matplotlib inline\n" + TF1_CELL),
                    ("code", "print('unrelated')\n"), indent=indent, ascii_=ascii_,
                    newline=newline, as_list=as_list)
    result = migrate(text)
    assert result.mode == "tape" and result.changed
    before, after = json.loads(text), json.loads(result.output)
    assert after["cells"][0] == before["cells"][0]
    assert after["cells"][2] == before["cells"][2]
    assert after["cells"][1]["outputs"] == before["cells"][1]["outputs"]
    new = cell_sources(result.output)[0]
    assert new.startswith("%matplotlib inline\n") and "Session" not in new
    assert isinstance(after["cells"][1]["source"], list) is as_list
    # formatting: the output is exactly what the original serialisation gives
    assert find_format(result.output, after) == find_format(text, before)
    assert result.output.endswith("\n") is newline
    assert all(f.path.startswith("nb.ipynb:cell_") for f in result.findings)
    assert {c.path for c in result.changes} == {"nb.ipynb:cell_2"}
    assert not migrate(result.output).changed  # idempotent


def test_unchanged_and_error_notebooks_are_left_alone():
    text = notebook(("code", "print(1)\n"))
    assert migrate(text).output == text and migrate(text).mode == "unchanged"
    bad = notebook(("code", TF1_CELL), ("code", "print 'py2'\n"))
    result = migrate(bad)
    assert result.mode == "error" and result.output == bad
    assert any(f.code == "TS100" and f.path == "nb.ipynb:cell_2" for f in result.findings)


def test_unknown_formatting_is_not_rewritten():
    text = notebook(("code", TF1_CELL)).replace('"cells": [', '"cells":  [', 1)
    result = migrate(text)
    assert result.mode == "error" and result.output == text and "formatting" in result.message


def test_not_a_notebook():
    with pytest.raises(NotebookError, match="invalid JSON"):
        migrate("{nope")
    with pytest.raises(NotebookError, match="no list of cells"):
        migrate("{}")
