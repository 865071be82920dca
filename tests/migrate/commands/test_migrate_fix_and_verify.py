"""`tapeshift migrate --fix CODE` and `--verify`: numbers kept by default and
proved; a fix changes them on purpose and the report says so."""

import json
import shutil
from pathlib import Path

import pytest

from tapeshift.migrate.commands.cli import main
from tapeshift.migrate.commands.migrate import runs_as_script
from tapeshift.migrate.engine.pipeline import migrate_source

ROOT = Path(__file__).resolve().parents[3]
REFERENCE = ROOT / "examples" / "reference_tf1.py"


def test_chain_rule_reported_and_kept_by_default_fixed_on_request():
    kept = migrate_source(REFERENCE.read_text(), "reference_tf1.py")
    [f] = [f for f in kept.findings if f.code == "TS201"]
    assert "kept as written, numbers unchanged; --fix TS201" in f.message
    assert "grad_W_step = grad_loss_h * grad_h_W" in kept.output

    fixed = migrate_source(REFERENCE.read_text(), "reference_tf1.py", fix=["TS201"])
    [f] = [f for f in fixed.findings if f.code == "TS201"]
    assert f.message.endswith("[fixed: numbers change]") and f.changes_numbers
    assert "grad_W_step = tape.gradient(h, W, output_gradients=grad_loss_h)" in fixed.output
    assert any(c.rule == "TS201" and "numbers change" in c.description for c in fixed.changes)
    assert fixed.mode == "tape"


def test_fix_alone_on_tf2_code_is_mode_fixed():
    src = (ROOT / "examples" / "reference_tf2.py").read_text()
    r = migrate_source(src, "reference_tf2.py", fix=["TS201"])
    assert r.mode == "fixed" and r.changed
    assert "tape.gradient(h, W, output_gradients=grad_loss_h)" in r.output


def test_runs_as_script():
    assert runs_as_script(REFERENCE.read_text())
    assert not runs_as_script('"""doc"""\nimport tensorflow as tf\nX = 1\ndef f():\n    return tf.gradients(1, 2)\n')


@pytest.mark.slow
@pytest.mark.tf
def test_verify_adds_the_outcome_to_the_report(tmp_path, capsys):
    script = tmp_path / "reference_tf1.py"
    shutil.copy(REFERENCE, script)
    report = tmp_path / "report.json"
    assert main(["migrate", "--verify", "--check", "--format", "json", "--report", str(report),
                 str(script)]) == 1  # --check: the file would change; verify agreed
    doc = json.loads(report.read_text())
    [entry] = doc["files"]
    assert entry["verify"]["status"] == "ok"
    assert script.read_text() == REFERENCE.read_text()  # --check writes nothing

    # a fix changes numbers: verify now reports the mismatch and the exit code says so
    assert main(["migrate", "--verify", "--fix", "TS201", "--in-place", str(script)]) == 1
    err = capsys.readouterr().err
    assert "verify: MISMATCH: " in err and "step_grad" in err


def test_unknown_fix_code_is_a_usage_error(tmp_path, capsys):
    assert main(["migrate", "--fix", "TS999", str(tmp_path)]) == 2
    assert "no automatic fix for TS999" in capsys.readouterr().err
