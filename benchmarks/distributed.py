"""The mirrored backend against the graph backend, measured (the figures of docs/distributed.md).

Splits the CPU into ``--replicas`` logical devices (before TensorFlow starts),
then for an MLP of ``--batch`` examples (4 -> 64 -> 64 -> 1, tanh) with cuts on
both hidden layers (a row per example: sharded) and on a scaled weight (the
same on every replica: replicated), prints, for a mean-reduced and a
sum-reduced squared error and each set of transforms, the largest difference
between mirrored and graph over every tensor of the result (target, stage
gradients before and after their transform, parameter gradients): absolute, and
relative to the largest magnitude of that tensor, and whether the float32
tolerance of tapeshift.compat.testing holds; then what ``replica_transforms=
"per_replica"`` does to a norm clip, and the time per call of each backend.

    python benchmarks/distributed.py [--replicas 2] [--batch 256] [--calls 20]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()

    from tapeshift.compat import (build, clip_by_norm, clip_by_value, cut, logical_cpus, mask,
                                  scale)

    logical_cpus(args.replicas)
    import tensorflow as tf

    from tapeshift.compat.testing import compare

    def tensors(r):
        out = {"target": r.target, **{f"gradient {n}": v for n, v in r.grads.items()}}
        for st in r.stages:
            out[f"stage {st.name}"], out[f"stage {st.name} passed"] = st.gradient, st.passed
        return out

    rng = np.random.default_rng(0)
    b = args.batch
    params = {"W1": rng.normal(size=(4, 64)).astype(np.float32) * 0.5,
              "W2": rng.normal(size=(64, 64)).astype(np.float32) * 0.2,
              "W3": rng.normal(size=(64, 1)).astype(np.float32) * 0.2}
    inputs = {"x": rng.normal(size=(b, 4)).astype(np.float32),
              "y": rng.normal(size=(b, 1)).astype(np.float32)}

    def net(p, i):
        h1 = cut("h1", tf.tanh(i["x"] @ p["W1"]))
        h2 = cut("h2", tf.tanh(h1 @ cut("w2", 1.0 * p["W2"])))
        return h2 @ p["W3"] - i["y"]

    losses = {"mean": lambda p, i: tf.reduce_mean(tf.square(net(p, i))),
              "sum": lambda p, i: tf.reduce_sum(tf.square(net(p, i)))}
    rows = (np.arange(b * 64).reshape(b, 64) % 5 != 0).astype(np.float32)
    cases = {
        "no transform": {},
        "clip_by_norm on h2": {"h2": clip_by_norm(0.01)},
        "clip_by_value on h1 and h2": {"h1": clip_by_value(-1e-4, 1e-4), "h2": clip_by_value(-2e-4, 2e-4)},
        "clip_by_norm on w2 (replicated)": {"w2": clip_by_norm(0.05)},
        "mask per example on h1, scale on w2": {"h1": mask(rows), "w2": scale(0.5)},
        "custom on h2 (max-normalised)": {"h2": lambda g: g / (1e-6 + tf.reduce_max(tf.abs(g)))},
    }
    print(f"mirrored ({args.replicas} logical CPUs) vs graph, batch {b}, float32; "
          "max abs diff / max diff relative to the tensor's largest magnitude, all tensors")

    def run(backend, loss, transforms, **extra):
        with build(loss, params, cuts=["h1", "w2", "h2"], transforms=transforms, backend=backend,
                   **extra) as fn:
            r = fn(inputs)
            started = time.perf_counter()
            for _ in range(args.calls):
                fn(inputs)
            return r, (time.perf_counter() - started) / args.calls

    timing = {}
    for reduction, loss in losses.items():
        for name, transforms in cases.items():
            m, tm = run("mirrored", loss, transforms, batch_reduction=reduction)
            g, tg = run("graph", loss, transforms)
            timing.setdefault(reduction, (tm, tg))
            worst_abs = worst_rel = 0.0
            ok = True
            for key, gv in tensors(g).items():
                mv = tensors(m)[key]
                d = np.abs(mv.astype(np.float64) - gv)
                worst_abs = max(worst_abs, float(d.max()))
                worst_rel = max(worst_rel, float(d.max() / max(np.abs(gv).max(), 1e-30)))
                ok &= compare(mv, gv)[0]
            print(f"  {reduction:4s} {name:38s} {worst_abs:9.2e} {worst_rel:9.2e}  "
                  f"{'within' if ok else 'OUTSIDE'} float32 tolerance")

    transforms = {"h2": clip_by_norm(0.01)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m, _ = run("mirrored", losses["mean"], transforms, replica_transforms="per_replica")
    g, _ = run("graph", losses["mean"], transforms)
    rel = {n: float(np.abs(m.grads[n] - g.grads[n]).max() / np.abs(g.grads[n]).max()) for n in g.grads}
    print(f"per_replica clip_by_norm(0.01) on h2 (mean loss): stage norm {g.stage('h2').norm:.4f} "
          f"on both; passed on: graph {g.stage('h2').passed_norm:.4f}, mirrored "
          f"{m.stage('h2').passed_norm:.4f} (sqrt({args.replicas}) x 0.01 = "
          f"{0.01 * np.sqrt(args.replicas):.4f}); gradients differ by "
          + ", ".join(f"{n} {v:.1%}" for n, v in rel.items()))
    for reduction, (tm, tg) in timing.items():
        print(f"time per call, {reduction} loss without transforms: mirrored {tm * 1e3:.2f} ms, "
              f"graph {tg * 1e3:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
