"""``tapeshift demo``: the reference computation on all three backends.

Prints, per backend, dloss/dW computed directly, split at ``h`` by a
vector-Jacobian product, and by the legacy elementwise product, and whether
they agree (with the float32 tolerance of ``compat.testing``).
"""

from __future__ import annotations

import argparse
import json

import numpy as np

HELP = "run the reference split-gradient computation on the graph, tape and function backends"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def compute() -> dict:
    """Run the reference computation; return the JSON-ready summary."""
    from compat import BACKENDS, gradient, reference, split_gradient
    from compat.testing import compare

    p, i = reference.params(), reference.inputs()
    out: dict = {"backends": {}}
    for name in BACKENDS:
        common = dict(wrt=["W"], backend=name, target_name="loss")
        direct = gradient(reference.model, p, i, **common).grads["W"]
        split = split_gradient(reference.model, p, i, cuts=["h"], **common).grads["W"]
        legacy = split_gradient(
            reference.model, p, i, cuts=["h"], mode="legacy_elementwise", **common
        ).grads["W"]
        out["backends"][name] = {"direct": direct, "split": split, "legacy_elementwise": legacy}

    runs = out["backends"]
    out["split_matches_direct"] = all(compare(r["split"], r["direct"])[0] for r in runs.values())
    out["legacy_matches_direct"] = all(
        compare(r["legacy_elementwise"], r["direct"])[0] for r in runs.values()
    )
    base = runs["graph"]
    out["backends_agree"] = all(
        compare(r[k], base[k])[0] for r in runs.values() for k in ("direct", "split", "legacy_elementwise")
    )
    return out


def run(args: argparse.Namespace) -> int:
    summary = compute()
    if args.json:
        print(json.dumps(_jsonable(summary), indent=2))
    else:
        print(format_table(summary))
    return 0 if summary["split_matches_direct"] and summary["backends_agree"] else 1


def format_table(summary: dict) -> str:
    rows = [("backend", "direct dloss/dW", "split (VJP)", "legacy elementwise",
             "max|split-direct|", "max|legacy-direct|")]
    for name, r in summary["backends"].items():
        rows.append((
            name,
            _matrix(r["direct"]),
            _matrix(r["split"]),
            _matrix(r["legacy_elementwise"]),
            f"{np.max(np.abs(r['split'] - r['direct'])):.2e}",
            f"{np.max(np.abs(r['legacy_elementwise'] - r['direct'])):.2e}",
        ))
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))

    def yes(v):
        return "yes" if v else "NO"

    lines += [
        "",
        f"split matches direct:   {yes(summary['split_matches_direct'])}",
        f"legacy matches direct:  {yes(summary['legacy_matches_direct'])}"
        + ("" if summary["legacy_matches_direct"]
           else "  (the elementwise product is not the chain rule)"),
        f"backends agree:         {yes(summary['backends_agree'])}  (float32: rtol 1e-5, atol 1e-6)",
    ]
    return "\n".join(lines)


def _matrix(a: np.ndarray) -> str:
    return np.array2string(np.asarray(a), precision=8, separator=", ", max_line_width=10_000)\
        .replace("\n", "")


def _jsonable(obj):
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    return obj
