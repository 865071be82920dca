"""``tapeshift demo``: the reference computation on all three backends.

Prints, per backend, dloss/dW computed directly, split at ``h`` by a
vector-Jacobian product, and by the legacy elementwise product, and whether
they agree (with the float32 tolerance of ``tapeshift.compat.testing``).

``--plot FILE.png`` also writes the gradient-flow chart (``tapeshift.compat.flow``): one PNG
with two panels, the reference computation split at ``h`` and the multi-stage
example split at every layer with its clip at ``h2``, one series per backend.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

HELP = "run the reference split-gradient computation on the graph, tape and function backends"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--plot", metavar="FILE.png", default=None,
        help="also write the gradient-flow chart to FILE.png: one PNG with two panels, "
             "the reference computation (cut h) and the multi-stage example (cuts h1, h2, "
             "out; clip_by_norm at h2), L2 norm per stage and per final gradient, log "
             "scale, one series per backend (needs: pip install 'tapeshift[plot]')",
    )


def compute() -> dict:
    """Run the reference computation; return the JSON-ready summary."""
    from tapeshift.compat import BACKENDS, gradient, reference, split_gradient
    from tapeshift.compat.testing import compare

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


def flow_results() -> dict:
    """Per panel, per backend: the split results the ``--plot`` chart draws."""
    from tapeshift.compat import BACKENDS, clip_by_norm, reference, split_gradient

    p, i = reference.params(), reference.inputs()
    mp, mi = reference.multistage_params(), reference.multistage_inputs()
    clip = {"h2": clip_by_norm(reference.MULTISTAGE_CLIP_NORM)}
    panels = {
        "reference: cut h": {
            b: split_gradient(reference.model, p, i, cuts=["h"], backend=b, target_name="loss")
            for b in BACKENDS
        },
        f"multi-stage: cuts h1, h2, out; clip_by_norm({reference.MULTISTAGE_CLIP_NORM:g}) at h2": {
            b: split_gradient(reference.multistage_model, mp, mi,
                              cuts=list(reference.MULTISTAGE_CUTS), transforms=clip,
                              backend=b, target_name="loss")
            for b in BACKENDS
        },
    }
    return panels


def plot(path):
    """Write the two-panel gradient-flow chart to ``path``; return the ``FlowChart``."""
    from tapeshift.compat.flow import plot_flow_panels

    return plot_flow_panels(flow_results(), path)


def run(args: argparse.Namespace) -> int:
    if args.plot is not None:
        from tapeshift.compat.flow import require_matplotlib

        try:
            require_matplotlib()  # fail before any computation when matplotlib is missing
        except ImportError as exc:
            print(f"tapeshift demo: {exc}", file=sys.stderr)
            return 2
    summary = compute()
    if args.json:
        print(json.dumps(_jsonable(summary), indent=2))
    else:
        print(format_table(summary))
    ok = summary["split_matches_direct"] and summary["backends_agree"]
    if args.plot is not None:
        try:
            plot(args.plot)
        except OSError as exc:
            print(f"tapeshift demo: cannot write {args.plot}: {exc}", file=sys.stderr)
            return 2
        print(f"tapeshift demo: wrote the gradient-flow chart to {args.plot}", file=sys.stderr)
    return 0 if ok else 1


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
