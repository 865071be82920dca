"""Acceptance for `tapeshift check --fix TS201` on the reference legacy script:
the fixed split equals the direct gradient when the script runs on TF1 (through
run-legacy) and on TF2 after `tapeshift migrate`, while the unfixed script's
split does not."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tapeshift.migrate.legacy.printed import printed_numbers
from tapeshift.migrate.commands.cli import main
from tapeshift.migrate.engine.pipeline import migrate_source

pytestmark = pytest.mark.tf

ROOT = Path(__file__).resolve().parents[3]


def run(args, cwd):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}
    p = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return printed_numbers(p.stdout)


def direct_and_split(values):
    """The reference script prints direct (4 numbers), split (4), allclose (bool)."""
    assert len(values) == 9, values
    return np.array(values[:4]), np.array(values[4:8]), values[8]


@pytest.mark.slow
def test_fixed_reference_split_equals_direct_on_tf1_and_tf2(tmp_path, capsys):
    script = tmp_path / "reference_tf1.py"
    shutil.copy(ROOT / "examples" / "reference_tf1.py", script)
    before = direct_and_split(run(["-m", "tapeshift", "run-legacy", str(script)], tmp_path))
    assert before[2] is False  # the elementwise product is not the chain rule

    assert main(["check", "--fix", "TS201", str(script)]) == 0
    assert "TS201" in capsys.readouterr().out

    direct, split, close = direct_and_split(run(["-m", "tapeshift", "run-legacy", str(script)],
                                                tmp_path))
    assert close is True
    np.testing.assert_allclose(split, direct, rtol=1e-5, atol=1e-6)  # float32
    np.testing.assert_allclose(direct, before[0], rtol=1e-5, atol=1e-6)  # direct unchanged

    migrated = migrate_source(script.read_text(), str(script))
    assert migrated.mode == "tape", [f.message for f in migrated.findings]
    assert "tf.gradients" not in migrated.output and "Session" not in migrated.output
    tf2 = tmp_path / "reference_tf2_fixed.py"
    tf2.write_text(migrated.output)
    d2, s2, close2 = direct_and_split(run([str(tf2)], tmp_path))
    assert close2 is True
    np.testing.assert_allclose(s2, d2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(d2, direct, rtol=1e-5, atol=1e-6)
