"""Issue 19's acceptance: a TF1 training script that saves with its global step, a TF1
prediction script that restores the latest checkpoint, and their migrations.

tests/migrate/data/checkpoints/: the model (variable scopes, tf.get_variable,
tf.layers) is `build_model` in each script (the codemod reads one file at a time;
model.py is the same model as a module of its own, which it does not follow:
tests/migrate/rules/test_savers.py). Each direction is one `verify --after` run:
the training script, then both prediction scripts on its checkpoint, compared.
"""

import re
from pathlib import Path

import numpy as np
import pytest

from tapeshift.migrate.engine.pipeline import migrate_source
from tapeshift.migrate.legacy.verify import verify_scripts

pytestmark = [pytest.mark.tf, pytest.mark.slow]

DATA = Path(__file__).resolve().parents[1] / "data" / "checkpoints"


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """The two TF1 scripts and their migrations, in one folder."""
    folder = tmp_path_factory.mktemp("checkpoints")
    for name in ("train", "predict"):
        source = (DATA / f"{name}_tf1.py").read_text()
        r = migrate_source(source, f"{name}_tf1.py")
        assert r.mode == "tape", [(f.code, f.line, f.message) for f in r.findings]
        for gone in ("Session", "placeholder", "tf.train.Saver(", "variable_scope", "(sess"):
            assert gone not in r.output, gone
        (folder / f"{name}_tf1.py").write_text(source)
        (folder / f"{name}_tf2.py").write_text(r.output)
    return folder


def _numbers(text: str) -> list:
    return [float(t) for t in re.findall(r"-?\d+\.\d+(?:e[-+]?\d+)?", text)]


def _names(prefix: Path) -> dict:
    import tensorflow as tf

    return dict(tf.train.list_variables(str(prefix)))


@pytest.fixture(scope="module")
def legacy_run(programs):
    """TF1 training, then both predictions on its checkpoint: (report, run folder)."""
    run = programs / "legacy_run"
    run.mkdir()
    return verify_scripts(programs / "predict_tf1.py", programs / "predict_tf2.py",
                          after=programs / "train_tf1.py", after_args=[str(run)],
                          args=[str(run)], cwd=programs), run


@pytest.fixture(scope="module")
def migrated_run(programs):
    """The migrated training, then both predictions on its checkpoint."""
    run = programs / "migrated_run"
    run.mkdir()
    return verify_scripts(programs / "predict_tf1.py", programs / "predict_tf2.py",
                          after=programs / "train_tf2.py", after_legacy=False,
                          after_args=[str(run)], args=[str(run)], cwd=programs), run


def test_the_migrated_prediction_restores_the_legacy_checkpoint(legacy_run):
    report, run = legacy_run
    assert report.exit_code == 0, report.to_text()
    rows = {r.name: r for r in report.rows}
    assert rows["predictions"].status == "ok" and rows["stdout:1"].status == "ok"
    # predicted from model.ckpt-20 (the latest; the Saver kept 10 and 20)
    assert report.new.stdout.startswith("20 [[")
    assert report.new.values["predictions"].shape == (3, 1)
    # TF1's checkpoint: the graph beside it, Adam's slots and the global step in it
    names = _names(run / "model.ckpt-20")
    assert {"model/w", "model/hidden/kernel", "model/hidden/bias", "model/head/b",
            "model/head/out/kernel", "model/head/out/bias", "global_step", "beta1_power",
            "model/w/Adam", "model/hidden/kernel/Adam_1"} <= set(names)
    assert (run / "model.ckpt-20.meta").exists()


def test_the_legacy_prediction_restores_the_migrated_checkpoint(migrated_run):
    report, run = migrated_run
    assert report.exit_code == 0, report.to_text()
    # the legacy program predicts what the migrated one computed before saving
    trained = _numbers(report.before.stdout.split("step 20 loss")[1])[1:]
    np.testing.assert_allclose(report.legacy.values["predictions"].ravel(), trained, rtol=1e-6)
    # the migrated checkpoint: TF1's names, the global step at 20, the optimizer's
    # slots left out (TS127), no graph (.meta) beside it; the Saver kept 2, and the
    # checkpoint file names the latest as TF1's does (the path as given: here absolute)
    names = _names(run / "model.ckpt-20")
    assert set(names) == {"model/w", "model/hidden/kernel", "model/hidden/bias", "model/head/b",
                          "model/head/out/kernel", "model/head/out/bias", "global_step"}
    assert not (run / "model.ckpt-20.meta").exists()
    assert sorted(p.name for p in run.glob("*.index")) == ["model.ckpt-10.index",
                                                           "model.ckpt-20.index"]
    state = (run / "checkpoint").read_text().splitlines()
    assert state == [f'model_checkpoint_path: "{run}/model.ckpt-20"',
                     f'all_model_checkpoint_paths: "{run}/model.ckpt-10"',
                     f'all_model_checkpoint_paths: "{run}/model.ckpt-20"']


def test_the_two_trainings_saved_the_same_weights(legacy_run, migrated_run):
    """The migrated training computes TF1's weights (deterministic initial values):
    the two checkpoints differ only in what the migrated one leaves out."""
    from tapeshift.migrate.checkpoints.diff import diff_checkpoints
    from tapeshift.migrate.checkpoints.reader import open_checkpoint

    (_, legacy), (_, migrated) = legacy_run, migrated_run
    report = diff_checkpoints(open_checkpoint(legacy), open_checkpoint(migrated))
    assert report.differences == [], [r.to_dict() for r in report.differences]
    assert len(report.rows) == 7 and report.only_b == []
    assert sorted(report.only_a) == sorted(
        ["beta1_power", "beta2_power"] + [f"{v}/{s}" for v in (
            "model/w", "model/hidden/kernel", "model/hidden/bias", "model/head/b",
            "model/head/out/kernel", "model/head/out/bias") for s in ("Adam", "Adam_1")])
