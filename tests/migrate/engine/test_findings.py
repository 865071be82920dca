"""The registry of codes, Finding records, and docs/codes.md."""

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tapeshift.migrate.engine.registry import codes_markdown
from tapeshift.migrate.engine.findings import (
    REGISTRY,
    Severity,
    load_all_codes,
    make_finding,
    register,
)

ROOT = Path(__file__).resolve().parents[3]


def test_codes_are_well_formed_and_documented():
    load_all_codes()
    assert REGISTRY
    for code, info in REGISTRY.items():
        assert re.fullmatch(r"TS\d{3}", code) and info.code == code
        assert re.fullmatch(r"[a-z0-9-]+", info.name)
        for part in (info.summary, info.what, info.why, info.example, info.use_instead,
                     info.fix_safety):
            assert part.strip(), (code, part)
    assert all(code[:3] in ("TS1", "TS2") for code in REGISTRY)  # migrate, check
    assert sum(code.startswith("TS1") for code in REGISTRY) >= 16


def test_docs_codes_md_documents_every_code():
    load_all_codes()
    text = (ROOT / "docs" / "codes.md").read_text()
    for code, info in REGISTRY.items():
        assert f"## {code} {info.name}\n" in text, code
    assert text == codes_markdown(), "regenerate docs/codes.md (see its header)"


def test_register_refuses_duplicates():
    info = next(iter(REGISTRY.values()))
    with pytest.raises(ValueError):
        register(info)
    with pytest.raises(ValueError):
        register(dataclasses.replace(info, code="TS199"))


def test_finding_is_a_frozen_record():
    f = make_finding("TS107", "a.py", 3, 5, "feeds")
    assert f.severity is Severity.WARNING and f.location() == "a.py:3:5"
    assert f.to_dict()["name"] == "session-feeds-placeholders"
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.line = 4
    assert make_finding("TS101", "a.py", 1, 1).message == REGISTRY["TS101"].summary
    with pytest.raises(KeyError):
        make_finding("TS999", "a.py", 1, 1)


def test_migrate_runs_without_tensorflow():
    code = ("import sys, tapeshift.migrate.engine.pipeline, tapeshift.migrate.commands.migrate;"
            "r = tapeshift.migrate.engine.pipeline.migrate_source(open('examples/reference_tf1.py').read());"
            "assert r.mode == 'tape';"
            "assert 'tensorflow' not in sys.modules, 'TensorFlow was imported'")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
