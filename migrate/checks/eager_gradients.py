"""TS203: ``tf.gradients`` in a module that runs eagerly.

DESCRIPTION: tf.gradients outside tf.function and graph blocks in eager code.
"""

from __future__ import annotations

from typing import List

from tapeshift.migrate.checks.facts import Facts
from tapeshift.migrate.checks.codes import GRADIENTS_IN_EAGER
from tapeshift.migrate.engine.findings import Finding, make_finding

DESCRIPTION = "tf.gradients in eager code"
CODE = GRADIENTS_IN_EAGER.code


def check(facts: Facts, path: str) -> List[Finding]:
    if not facts.shows_eager_mode:
        return []
    out = []
    for site in facts.gradient_sites:
        if site.grad.kind != "tf1" or site.in_tf_function or site.in_graph_block:
            continue
        call = site.grad.call
        out.append(make_finding(
            CODE, path, facts.line(call), facts.col(call),
            "tf.gradients raises under eager execution (\"tf.gradients is not supported "
            "when eager execution is enabled\"); take the gradient from a GradientTape",
        ))
    return out
