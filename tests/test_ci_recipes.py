"""The GitHub Actions recipe of docs/ci.md, run locally with the same commands.

Every ``run:`` step of the workflow in the document except the install (the
tapeshift under test is on PATH) runs as Actions runs it (bash, ``-eo
pipefail``, ``CI=true``) in a fresh git repository; ``uses:`` steps cannot run
here, so what they are given is checked instead (the SARIF file the upload
step names exists and is SARIF 2.1.0 with the findings).
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow  # each test runs a job's bash script

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ci.md"
LEGACY = (ROOT / "examples" / "reference_tf1.py").read_text()
CLEAN = "import tensorflow as tf\n\nx = tf.constant(1.0)\n"


def workflow():
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), re.S)
    flows = [yaml.safe_load(b) for b in blocks if "\njobs:" in b]
    assert len(flows) == 1, "docs/ci.md has one GitHub Actions workflow"
    return flows[0]


def run_step(step, cwd: Path):
    script = cwd.parent / "step.sh"
    script.write_text(step["run"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(step.get("env", {}))
    env["CI"] = "true"
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def run_job(name, cwd: Path):
    """(step, completed process) for each run: step but the install, in order,
    stopping after the first that fails, as Actions does."""
    done = []
    for step in workflow()["jobs"][name]["steps"]:
        if "run" not in step or "pip install" in step["run"]:
            continue
        proc = run_step(step, cwd)
        done.append((step, proc))
        if proc.returncode != 0:
            break
    return done


@pytest.fixture(params=["legacy", "clean"])
def repo(request, tmp_path):
    r = tmp_path / "repo"
    (r / "pkg").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(r)], check=True)
    (r / "pkg" / "clean.py").write_text(CLEAN)
    if request.param == "legacy":
        (r / "pkg" / "legacy.py").write_text(LEGACY)
    return request.param, r


def test_the_workflow_is_well_formed():
    flow = workflow()
    check, migrate = flow["jobs"]["check"], flow["jobs"]["migrate"]
    assert check["permissions"]["security-events"] == "write"
    upload = [s for s in check["steps"] if "upload-sarif" in s.get("uses", "")]
    assert len(upload) == 1 and "always()" in upload[0]["if"]
    assert upload[0]["with"]["category"] == "tapeshift"
    assert any("tapeshift migrate --check" in s.get("run", "") for s in migrate["steps"])


def test_check_job_writes_sarif_and_fails_on_ts201(repo):
    kind, r = repo
    (step, proc), = run_job("check", r)
    assert proc.returncode == (1 if kind == "legacy" else 0), proc.stderr
    upload = [s for s in workflow()["jobs"]["check"]["steps"] if "upload-sarif" in s.get("uses", "")]
    sarif = json.loads((r / upload[0]["with"]["sarif_file"]).read_text())
    assert sarif["version"] == "2.1.0"
    results = sarif["runs"][0]["results"]
    where = [(x["ruleId"], x["level"], x["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
              x["locations"][0]["physicalLocation"]["region"]["startLine"],
              x["locations"][0]["physicalLocation"]["region"]["startColumn"]) for x in results]
    assert where == ([("TS201", "error", "pkg/legacy.py", 26, 15)] if kind == "legacy" else [])


def test_migrate_job_fails_with_the_diff_when_a_file_would_change(repo):
    kind, r = repo
    before = {p: p.read_bytes() for p in r.rglob("*.py")}
    (step, proc), = run_job("migrate", r)
    if kind == "legacy":
        assert proc.returncode == 1, proc.stderr
        assert "would migrate pkg/legacy.py" in proc.stdout + proc.stderr
        assert "--- a/pkg/legacy.py" in proc.stdout
        assert "-grad_W_direct = tf.gradients(loss, W)[0]" in proc.stdout
        assert "+grad_W_direct = tape.gradient(loss, W)" in proc.stdout
    else:
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == ""
    assert {p: p.read_bytes() for p in r.rglob("*.py")} == before  # nothing written
    assert not (r / ".tapeshift-cache").exists()


def test_migrate_job_exit_2_is_not_hidden(tmp_path):
    r = tmp_path / "repo"
    r.mkdir()
    subprocess.run(["git", "init", "-q", str(r)], check=True)
    (r / "broken.py").write_bytes(b"\xff\xfe not a Python file \x00\n")
    (step, proc), = run_job("migrate", r)
    assert proc.returncode == 2 and "broken.py" in proc.stderr
