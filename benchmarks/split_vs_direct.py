"""Split-at-every-layer versus direct gradient, per backend, side by side.

A tanh MLP (default 512 wide, batch 256) at 8 and 32 layers. For each backend
the direct and the split program are compiled once, warmed up, then timed in
alternation (direct, split, direct, split, ...) so that load on this shared
machine hits both alike; the table shows median times and the median of the
paired ratios (each split run over the direct run just before it). For the
graph backend it also counts graph ops (split / direct).

    python benchmarks/split_vs_direct.py [--depths 8 32] [--width 512] [--batch 256] [--repeats 21]

Targets (issue "compat"): split/direct <= 1.10 on graph and function and
<= 1.15 on tape at both depths; graph op count for split <= 1.5x direct.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tapeshift.compat import BACKENDS, build, cut  # noqa: E402

TARGETS = {"graph": 1.10, "function": 1.10, "tape": 1.15}


def mlp(depth: int):
    def model(p, i):
        h = i["x"]
        for l in range(depth):
            h = cut(f"h{l}", tf.tanh(tf.matmul(h, p[f"W{l}"])))
        return tf.reduce_mean(tf.square(h))

    return model


def setup(depth, width, batch, seed=0):
    rng = np.random.default_rng(seed)
    params = {f"W{l}": (rng.normal(size=(width, width)) / np.sqrt(width)).astype(np.float32)
              for l in range(depth)}
    inputs = {"x": rng.normal(size=(batch, width)).astype(np.float32)}
    return params, inputs


def measure(backend, depth, width, batch, repeats):
    params, inputs = setup(depth, width, batch)
    model = mlp(depth)
    cuts = [f"h{l}" for l in range(depth)]
    direct = build(model, params, backend=backend)
    split = build(model, params, cuts=cuts, backend=backend)
    times = {"direct": [], "split": []}
    for _ in range(3):  # warm-up: traces, graph optimisation, allocator
        direct(inputs), split(inputs)
    for _ in range(repeats):
        for name, fn in (("direct", direct), ("split", split)):
            t0 = time.perf_counter()
            fn(inputs)
            times[name].append(time.perf_counter() - t0)
    ops = None
    if backend == "graph":
        ops = (direct.compiled(inputs).op_count(), split.compiled(inputs).op_count())
    direct.close(), split.close()
    d, s = statistics.median(times["direct"]), statistics.median(times["split"])
    # each split run is compared with the direct run just before it, which saw
    # the same load on this shared machine; the median of those ratios is the figure
    ratio = statistics.median(b / a for a, b in zip(times["direct"], times["split"]))
    return d, s, ratio, ops


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--depths", type=int, nargs="+", default=[8, 32])
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=21)
    args = ap.parse_args(argv)
    print(f"tanh MLP, width {args.width}, batch {args.batch}, split at every layer; "
          f"{args.repeats} alternating pairs, median ratio; TF {tf.__version__}, "
          f"{os.cpu_count()} cores")
    header = f"{'backend':9} {'layers':>6} {'direct ms':>10} {'split ms':>9} {'ratio':>6} {'target':>7} {'ops split/direct':>17}"
    print(header)
    print("-" * len(header))
    worst = 0.0
    for depth in args.depths:
        for backend in BACKENDS:
            d, s, ratio, ops = measure(backend, depth, args.width, args.batch, args.repeats)
            worst = max(worst, ratio / TARGETS[backend])
            op_col = f"{ops[1]}/{ops[0]} = {ops[1] / ops[0]:.2f}" if ops else ""
            print(f"{backend:9} {depth:6d} {d * 1e3:10.2f} {s * 1e3:9.2f} {ratio:6.3f} "
                  f"{'<=' + format(TARGETS[backend], '.2f'):>7} {op_col:>17}")
    print(f"\nworst ratio / target: {worst:.3f} ({'within' if worst <= 1 else 'OVER'} target)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
