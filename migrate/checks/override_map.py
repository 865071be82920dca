"""TS207: ``gradient_override_map`` in code that runs eagerly.

DESCRIPTION: the override map is silently ignored under eager execution.
"""

from __future__ import annotations

from typing import List

from tapeshift.migrate.checks.facts import Facts
from tapeshift.migrate.checks.codes import OVERRIDE_MAP_EAGER
from tapeshift.migrate.engine.findings import Finding, make_finding

DESCRIPTION = "gradient_override_map in eager code"
CODE = OVERRIDE_MAP_EAGER.code


def check(facts: Facts, path: str) -> List[Finding]:
    if not facts.shows_eager_mode:
        return []
    return [
        make_finding(CODE, path, facts.line(call), facts.col(call),
                     "gradient_override_map has no effect under eager execution or a "
                     "GradientTape (no error, the default gradient is used); use "
                     "@tf.custom_gradient")
        for call in facts.override_maps
    ]
