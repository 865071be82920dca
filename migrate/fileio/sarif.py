"""Findings as SARIF 2.1.0, for code-scanning tools."""

from __future__ import annotations

import json
from typing import Iterable, Sequence

from tapeshift.migrate.engine.findings import REGISTRY, Finding, Severity

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def to_sarif(findings: Sequence[Finding], codes: Iterable[str], version: str) -> str:
    codes = sorted(set(codes) | {f.code for f in findings})
    index = {c: i for i, c in enumerate(codes)}
    rules = []
    for c in codes:
        info = REGISTRY[c]
        rules.append({
            "id": c,
            "name": info.name,
            "shortDescription": {"text": info.summary},
            "fullDescription": {"text": info.what},
            "help": {"text": f"{info.why}\n\nUse instead:\n{info.use_instead}\n\n"
                             f"Fix safety: {info.fix_safety}"},
            "defaultConfiguration": {"level": LEVEL[info.severity]},
        })
    results = [{
        "ruleId": f.code,
        "ruleIndex": index[f.code],
        "level": LEVEL[f.severity],
        "message": {"text": f.message},
        "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": f.path.replace("\\", "/")},
            "region": {"startLine": max(f.line, 1), "startColumn": max(f.column, 1)},
        }}],
        "properties": {"changesNumbers": f.changes_numbers},
    } for f in findings]
    log = {
        "version": "2.1.0",
        "$schema": SCHEMA,
        "runs": [{
            "tool": {"driver": {"name": "tapeshift", "version": version,
                                "informationUri": "https://pypi.org/project/tapeshift/",
                                "rules": rules}},
            "results": results,
        }],
    }
    return json.dumps(log, indent=2)
