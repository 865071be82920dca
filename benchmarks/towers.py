"""TF1 tower programs migrated to a MirroredStrategy step, measured (the figures of docs/distributed.md).

1. For each program of tests/migrate/data/towers/: the TF1 run (run-legacy) and the
   migrated program on 1, 2 and 4 logical CPUs (split before TensorFlow starts, by a
   sitecustomize module), random initial values drawn from one stream
   (``verify --align-random``); for each device count, how many values and prints
   ``tapeshift verify`` compared, the largest absolute and relative difference among
   them, and the replicas the run had.
2. Where a v1 optimizer may be applied to mirrored variables, on 2 logical CPUs: a
   two-layer net trained 5 steps of GradientDescent on a batch of 32, on one device
   with plain variables (the reference), then with the strategy's variables and the
   optimizer called (a) in ``strategy.run``, each replica's loss divided by the number of
   replicas; (b) outside ``strategy.run`` and outside the strategy's scope, on the
   all-reduced mean gradient; (c) the same inside the scope. For each: the largest
   difference from the reference, and between the two replicas' copies of a variable.

    python benchmarks/towers.py [--devices 1 2 4] [--skip-programs] [--skip-optimizer]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT / "tests" / "migrate" / "data" / "towers"

SPLIT_CPU = ("import tensorflow as tf\n"
             "tf.config.set_logical_device_configuration(\n"
             "    tf.config.list_physical_devices('CPU')[0],\n"
             "    [tf.config.LogicalDeviceConfiguration() for _ in range({n})])\n")

OPTIMIZER = textwrap.dedent('''
    import sys
    import numpy as np
    import tensorflow as tf
    tf.config.set_logical_device_configuration(
        tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * 2)
    rng = np.random.RandomState(0)
    X = rng.randn(32, 6).astype(np.float32)
    Y = rng.randn(32, 1).astype(np.float32)
    INIT = [rng.randn(6, 8).astype(np.float32) * 0.3, np.zeros(8, np.float32),
            rng.randn(8, 1).astype(np.float32) * 0.3]

    def loss_of(v, x, y):
        return tf.reduce_mean(tf.square(tf.matmul(tf.tanh(tf.matmul(x, v[0]) + v[1]), v[2]) - y))

    reference = [tf.Variable(a) for a in INIT]
    opt = tf.compat.v1.train.GradientDescentOptimizer(0.1)
    for _ in range(5):
        with tf.GradientTape() as tape:
            loss = loss_of(reference, X, Y)
        opt.apply_gradients(zip(tape.gradient(loss, reference), reference))

    strategy = tf.distribute.MirroredStrategy()
    rows = lambda v: strategy.experimental_distribute_values_from_function(
        lambda c: tf.split(v, c.num_replicas_in_sync)[c.replica_id_in_sync_group])

    def report(case, variables):
        worst = max(float(np.max(np.abs(v.numpy() - r.numpy())))
                    for v, r in zip(variables, reference))
        copies = max(float(np.max(np.abs(c.numpy() - v.values[0].numpy())))
                     for v in variables for c in v.values)
        print(f"{case}\\t{worst:.3g}\\t{copies:.3g}", flush=True)

    for case in ("a", "b", "c"):
        with strategy.scope():
            mirrored = [tf.Variable(a) for a in INIT]
            opt = tf.compat.v1.train.GradientDescentOptimizer(0.1)

        def replica_grads(x, y):
            with tf.GradientTape() as tape:
                loss = loss_of(mirrored, x, y)
            return tape.gradient(loss, mirrored)

        def replica_step(x, y):
            with tf.GradientTape() as tape:
                loss = loss_of(mirrored, x, y) / tf.distribute.get_replica_context().num_replicas_in_sync
            opt.apply_gradients(zip(tape.gradient(loss, mirrored), mirrored))

        try:
            for _ in range(5):
                if case == "a":
                    strategy.run(replica_step, args=(rows(X), rows(Y)))
                    continue
                grads = strategy.reduce(tf.distribute.ReduceOp.MEAN,
                                        strategy.run(replica_grads, args=(rows(X), rows(Y))),
                                        axis=None)
                if case == "b":
                    opt.apply_gradients(zip(grads, mirrored))
                else:
                    with strategy.scope():
                        opt.apply_gradients(zip(grads, mirrored))
            report(case, mirrored)
        except Exception as exc:
            print(f"{case}\\t{type(exc).__name__}: {exc}", flush=True)
''')


def _environment(directory: Path, n: int) -> dict:
    site = directory / f"site{n}"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SPLIT_CPU.format(n=n), encoding="utf-8")
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


def programs(devices) -> None:
    from tapeshift.migrate.engine.pipeline import migrate_source
    from tapeshift.migrate.legacy.compare import compare_runs
    from tapeshift.migrate.legacy.verify import run_captured

    print("program\tdevices\treplicas\tcompared\tmax abs diff\tmax rel diff\tseconds")
    for path in sorted(DATA.glob("*.py")):
        directory = Path(tempfile.mkdtemp(prefix="towers-"))
        (directory / "old.py").write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
        new = migrate_source(path.read_text(encoding="utf-8"), path.name).output
        (directory / "new.py").write_text(
            new + "\nreplicas = strategy.num_replicas_in_sync\n", encoding="utf-8")
        common = dict(timeout=600, seed=0, align_random=0, cwd=directory)
        with ThreadPoolExecutor(max_workers=2) as pool:
            legacy = pool.submit(run_captured, directory / "old.py", legacy=True, **common)

            def new_run(n):
                start = time.monotonic()
                run = run_captured(directory / "new.py", legacy=False,
                                   env=_environment(directory, n), **common)
                return run, time.monotonic() - start

            runs = {n: pool.submit(new_run, n) for n in devices}
            legacy_run = legacy.result()
            for n in devices:
                run, seconds = runs[n].result()
                report = compare_runs(legacy_run, run)
                rows = [r for r in report.rows if r.compared]
                abs_diff = max((r.max_abs or 0.0) for r in rows) if rows else float("nan")
                rel_diff = max((r.max_rel or 0.0) for r in rows) if rows else float("nan")
                replicas = run.values.get("replicas", "?")
                print(f"{path.name}\t{n}\t{int(replicas) if replicas != '?' else '?'}\t"
                      f"{len(rows)} ({report.status})\t{abs_diff:.3g}\t{rel_diff:.3g}\t"
                      f"{seconds:.1f}", flush=True)


def optimizer() -> None:
    print("\ncase\tmax diff from one device\tmax diff between the replicas' copies")
    script = Path(tempfile.mkdtemp(prefix="towers-")) / "optimizer.py"
    script.write_text(OPTIMIZER, encoding="utf-8")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    print(out.stdout, end="")
    if out.returncode:
        print(out.stderr[-3000:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--skip-programs", action="store_true")
    parser.add_argument("--skip-optimizer", action="store_true")
    args = parser.parse_args()
    if not args.skip_programs:
        programs(args.devices)
    if not args.skip_optimizer:
        optimizer()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
