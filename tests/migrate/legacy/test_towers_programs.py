"""TF1 tower programs migrated to a MirroredStrategy step, run on one device and on two.

Each program of tests/migrate/data/towers/ trains on two towers (tf.device,
tf.split, compute_gradients per tower, an average_gradients helper, one
apply_gradients). Migrated, it is a tf.distribute.MirroredStrategy step over the
visible devices; ``tapeshift verify`` must find its numbers equal to the TF1
run's (random initial values drawn from one stream, ``--align-random``) on this
machine's one CPU, and again with the CPU split into two logical devices before
TensorFlow starts (a ``sitecustomize`` module the migrated run imports first: the
aligner of ``verify`` starts TensorFlow before the script does, so the script
cannot split the CPU itself). The run on two devices must have had two replicas.
"""

import functools
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tapeshift.migrate.engine.pipeline import migrate_source

DATA = Path(__file__).resolve().parents[1] / "data" / "towers"
PROGRAMS = sorted(p.name for p in DATA.glob("*.py"))
TIMEOUT = 300
#: what the migrated runs also keep: how many replicas computed the steps
REPLICAS = "\nreplicas = strategy.num_replicas_in_sync\n"
SPLIT_CPU = ("import tensorflow as tf\n"
             "tf.config.set_logical_device_configuration(\n"
             "    tf.config.list_physical_devices('CPU')[0],\n"
             "    [tf.config.LogicalDeviceConfiguration() for _ in range({n})])\n")


@functools.cache
def migrated(name):
    return migrate_source((DATA / name).read_text(encoding="utf-8"), name)


def _two_cpus(directory: Path) -> dict:
    """The environment of a Python process whose CPU is two logical devices from the start."""
    site = directory / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SPLIT_CPU.format(n=2), encoding="utf-8")
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """name -> (verify's report on one device, the run on two logical CPUs); the runs of both
    programs started together, three processes at a time."""
    from tapeshift.migrate.legacy.verify import run_captured, verify_sources

    jobs = {}
    with ThreadPoolExecutor(max_workers=3) as pool:
        for name in PROGRAMS:
            directory = tmp_path_factory.mktemp(name.removesuffix(".py"))
            legacy = (DATA / name).read_text(encoding="utf-8")
            new = migrated(name).output + REPLICAS
            (directory / "one").mkdir()
            two = directory / "two" / name
            two.parent.mkdir()
            two.write_text(new, encoding="utf-8")
            jobs[name] = (
                pool.submit(verify_sources, legacy, new, directory / "one" / name,
                            timeout=TIMEOUT, seed=0, align_random=True),
                pool.submit(run_captured, two, legacy=False, timeout=TIMEOUT, seed=0,
                            align_random=0, env=_two_cpus(directory), cwd=two.parent))
        return {name: (one.result(), two.result()) for name, (one, two) in jobs.items()}


@pytest.mark.tf
@pytest.mark.slow
@pytest.mark.parametrize("name", PROGRAMS)
def test_verify_on_one_device_and_on_two(name, runs):
    from tapeshift.migrate.legacy.compare import compare_runs

    assert migrated(name).mode == "tape", [(f.code, f.message) for f in migrated(name).findings]
    report, run_two = runs[name]
    assert report.status == "ok", report.to_text()
    assert int(report.new.values["replicas"]) == 1
    printed = [row for row in report.rows if row.name.startswith("stdout:") and row.compared]
    assert len(printed) >= 6, report.to_text()  # every training step's print

    assert run_two.error is None, run_two.stderr[-3000:]
    assert int(run_two.values["replicas"]) == 2
    on_two = compare_runs(report.legacy, run_two)
    assert on_two.status == "ok", on_two.to_text()
    assert on_two.compared == report.compared
