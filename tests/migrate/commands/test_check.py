"""`tapeshift check` in-process: formats, exit codes, --fix in place."""

import json
import os
import shutil
from pathlib import Path

import pytest

from tapeshift.migrate.commands.cli import main

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.fixture
def legacy(tmp_path):
    p = tmp_path / "reference_tf1.py"
    shutil.copy(EXAMPLES / "reference_tf1.py", p)
    return p


def product_line(path):
    return next(i for i, l in enumerate(path.read_text().splitlines(), 1)
                if "grad_W_step =" in l)


def test_text_reports_the_chain_rule_error_at_the_product(legacy, capsys):
    assert main(["check", str(legacy)]) == 1
    out = capsys.readouterr().out
    line = product_line(legacy)
    assert f"{legacy}:{line}:15: TS201 [error] elementwise product of dloss/dh and dh/dW" in out
    assert out.rstrip().endswith("1 files checked: 1 errors, 0 warnings")


def test_json_and_sarif(legacy, capsys):
    assert main(["check", "--format", "json", str(legacy)]) == 1
    data = json.loads(capsys.readouterr().out)
    [f] = data["findings"]
    assert (f["code"], f["severity"], f["line"], f["changes_numbers"], f["fixed"]) == (
        "TS201", "error", product_line(legacy), True, False)
    assert data["summary"]["errors"] == 1

    assert main(["check", "--format", "sarif", str(legacy)]) == 1
    sarif = json.loads(capsys.readouterr().out)
    assert sarif["version"] == "2.1.0"
    run = sarif["runs"][0]
    ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert ids == sorted(ids) and {"TS201", "TS202", "TS207"} <= set(ids)
    [res] = run["results"]
    assert res["ruleId"] == "TS201" and ids[res["ruleIndex"]] == "TS201"
    assert res["level"] == "error"
    region = res["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (product_line(legacy), 15)


def test_fix_in_place_keeps_mode_and_clears_the_error(legacy, capsys):
    os.chmod(legacy, 0o751)
    assert main(["check", "--fix", "TS201", str(legacy)]) == 0
    out = capsys.readouterr().out
    assert "(fixed)" in out and "1 fixed" in out
    text = legacy.read_text()
    assert "grad_W_step = tf.gradients(h, W, grad_ys=grad_loss_h)[0]" in text
    assert oct(legacy.stat().st_mode & 0o777) == "0o751"
    assert main(["check", str(legacy)]) == 0
    assert capsys.readouterr().out.strip() == "1 files checked: 0 errors, 0 warnings"


def test_clean_tree_and_bad_input(tmp_path, capsys):
    (tmp_path / "ok.py").write_text("import tensorflow as tf\ng = tf.gradients(l, h, grad_ys=u)\n")
    (tmp_path / "notes.txt").write_text("tf.gradients(loss, h)[0] * tf.gradients(h, W)[0]")
    assert main(["check", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["check", str(tmp_path / "missing.py")]) == 2
    assert "missing.py: no such file or directory" in capsys.readouterr().err
    assert main(["check", "--fix", "TS204", str(tmp_path)]) == 2
    assert "no automatic fix for TS204" in capsys.readouterr().err
    (tmp_path / "py2.py").write_text("import tensorflow\nprint 'x'\n")
    assert main(["check", str(tmp_path)]) == 2
    assert "TS100" in capsys.readouterr().out
