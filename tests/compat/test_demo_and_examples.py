"""`tapeshift demo` and the compat examples, run in-process."""

import json
import runpy
from pathlib import Path

import numpy as np
import pytest

from tapeshift.migrate.commands.cli import main

pytestmark = pytest.mark.tf

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_demo_json_reports_split_equal_and_legacy_different(capsys):
    assert main(["demo", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"backends", "split_matches_direct", "legacy_matches_direct", "backends_agree"}
    assert set(out["backends"]) == {"graph", "tape", "function"}
    for run in out["backends"].values():
        assert set(run) == {"direct", "split", "legacy_elementwise"}
        assert np.asarray(run["direct"]).shape == (2, 2)
        np.testing.assert_allclose(run["split"], run["direct"], rtol=1e-5, atol=1e-6)
        assert np.max(np.abs(np.subtract(run["legacy_elementwise"], run["direct"]))) > 1e-4
    assert out["split_matches_direct"] is True
    assert out["legacy_matches_direct"] is False
    assert out["backends_agree"] is True


def test_demo_table(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    rows = [l.split()[0] for l in out.splitlines()[2:5]]
    assert rows == ["graph", "tape", "function"]
    assert "legacy matches direct:  NO" in out
    assert "split matches direct:   yes" in out


def test_multistage_example(capsys):
    runpy.run_path(str(EXAMPLES / "multistage.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "split without transform == direct on every backend: True" in out
    assert "clipped split agrees across backends: True" in out
    assert "d loss/d W3 by 0.00000  (above the cut: unchanged)" in out
    clipped = [l for l in out.splitlines() if "clip_by_norm(0.05)" in l]
    assert len(clipped) == 3 and all(l.split()[3] == "0.05000" for l in clipped)
