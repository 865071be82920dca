"""TS204-TS206: a GradientTape used in ways that fail or silently give None.

DESCRIPTION: second gradient from a non-persistent tape; gradient of a tensor
computed before the tape; tape.gradient inside the tape's own block.
"""

from __future__ import annotations

from typing import List

import libcst as cst

from tapeshift.migrate.checks.facts import Facts
from tapeshift.migrate.checks.codes import INSIDE_OWN_BLOCK, OUTSIDE_TAPE, TAPE_TWICE
from tapeshift.migrate.engine.findings import Finding, make_finding

DESCRIPTION = "GradientTape reused, queried for an unrecorded tensor, or queried inside its block"


def check(facts: Facts, path: str) -> List[Finding]:
    out: List[Finding] = []
    for tape in facts.tapes:
        calls = sorted(tape.calls, key=facts.line)
        if tape.persistent is False and len(calls) > 1:
            second = calls[1]
            out.append(make_finding(
                TAPE_TWICE.code, path, facts.line(second), facts.col(second),
                f"tape {tape.name!r} is not persistent and already answered at line "
                f"{facts.line(calls[0])}; this call raises. Open it with persistent=True "
                "or ask for every source in one call",
            ))
        start, end = tape.body_lines
        for call in calls:
            line = facts.line(call)
            inside = start < line <= end
            if inside and tape.persistent is False and not tape.enclosing_tapes:
                out.append(make_finding(
                    INSIDE_OWN_BLOCK.code, path, line, facts.col(call),
                    f"{tape.name}.gradient inside the block of tape {tape.name!r} records "
                    "the gradient computation on the tape; move it below the block",
                ))
            target = call.args[0].value if call.args else None
            if (isinstance(target, cst.Name) and target.value in tape.env_before
                    and target.value not in tape.assigned_in_body and not inside):
                out.append(make_finding(
                    OUTSIDE_TAPE.code, path, line, facts.col(call),
                    f"{target.value} was computed before tape {tape.name!r} started "
                    f"recording (line {start}); its gradient is None",
                ))
    return out
