"""Issue #24: verify on small TF1 scripts shaped like public tutorials, end to end.

Each script in ``data/real_scripts`` is migrated by the codemod (``tapeshift
migrate --out``), then the legacy script and its migration run in their own
subprocesses. Their numbers are all equal; what must not make verify say
MISMATCH is what the issue found on real scripts: graph tensors printed
before they are run (the migration prints their eager values) and unseeded
numpy / Python random draws (``--seed``). One number changed in the migrated
script must still be a MISMATCH naming it.

Forms the codemod gives them (checked below): ``print_gradients``,
``numpy_linreg``, ``random_init_tape`` and ``default_init`` (``tf.get_variable``
with its random default initializer: a TF1 graph and eager TF2 draw different
numbers, so it is verified with ``--align-random`` as well as ``--seed``)
reach tape form; ``python_random`` (a graph tensor printed in a training
script) moves to compat mode, which still makes it a valid verify test of a
TF2 run in graph mode.
"""

from pathlib import Path

import pytest

from tapeshift.migrate.commands import cli
from tapeshift.migrate.legacy.compare import compare_runs
from tapeshift.migrate.legacy.verify import run_captured

DATA = Path(__file__).resolve().parent / "data" / "real_scripts"
SEED = 7

# script -> (form the codemod gives, (text in the migrated script, the same with one number changed),
#            module values that must be compared and agree)
# (scripts whose TF random draws differ between a TF1 graph and eager TF2 also align them)
ALIGNED = {"default_init"}
SCRIPTS = {
    "print_gradients": ("tape", ("y = x * x + 2.0 * x", "y = x * x + 2.5 * x"), ("g", "gw", "zv")),
    "numpy_linreg": ("tape", ("train_Y = 2.0 * train_X + 0.5 + noise",
                              "train_Y = 2.0 * train_X + 0.55 + noise"),
                     ("train_X", "noise", "W", "b", "final_W", "final_b")),
    "python_random": ("compat", ("(3.0, 6.1)", "(3.0, 6.2)"), ("xs", "ys", "w", "l")),
    "default_init": ("tape", ("[0.2, -0.4, 0.9]", "[0.2, -0.4, 0.95]"), ("W", "gW", "gb", "l")),
}


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    """The codemod's output for every script: name -> (legacy path, migrated path)."""
    out = tmp_path_factory.mktemp("migrated")
    legacy = sorted(DATA.glob("*_tf1.py"))
    code = cli.main(["migrate", "-q", "--no-cache", "-j", "1", "--out", str(out),
                     *map(str, legacy)])
    assert code == 0
    pairs = {}
    for path in legacy:
        new = out / path.name
        assert new.is_file(), f"the codemod wrote no {new}"
        pairs[path.name[: -len("_tf1.py")]] = (path, new)
    return pairs


def _form(text: str) -> str:
    if "disable_v2_behavior" in text:
        return "compat"
    return "tape" if "GradientTape" in text else "other"


def _rows(report) -> dict:
    return {r.name: r for r in report.rows}


def test_the_data_set_and_the_forms_the_codemod_gives(migrated):
    assert set(migrated) == {*SCRIPTS, "random_init_tape"}
    for name, (form, *_rest) in SCRIPTS.items():
        assert _form(migrated[name][1].read_text()) == form, name
    assert _form(migrated["random_init_tape"][1].read_text()) == "tape"


@pytest.mark.slow
@pytest.mark.tf
@pytest.mark.parametrize("name", list(SCRIPTS))
def test_seeded_verify_says_ok_and_one_changed_number_is_a_mismatch(name, migrated, tmp_path):
    form, (before, after), values = SCRIPTS[name]
    legacy_path, new_path = migrated[name]
    align = SEED if name in ALIGNED else None
    legacy = run_captured(legacy_path, legacy=True, seed=SEED, align_random=align)
    new = run_captured(new_path, legacy=False, seed=SEED, align_random=align)
    report = compare_runs(legacy, new)
    text = report.to_text()
    assert report.exit_code == 0 and report.status == "ok", text
    rows = _rows(report)
    for value in values:
        assert rows[value].status == "ok", text
    assert sum(r.kind == "printed" and r.status == "ok" for r in report.rows) >= 2, text

    source = new_path.read_text()
    assert source.count(before) == 1, (name, before)
    changed = tmp_path / new_path.name
    changed.write_text(source.replace(before, after))
    bad = compare_runs(legacy, run_captured(changed, legacy=False, seed=SEED, align_random=align))
    text = bad.to_text()
    assert bad.exit_code == 1 and bad.status == "mismatch", text
    assert bad.random_causes == [], text  # seeded: nothing random to blame
    assert "MISMATCH" in text and "likely cause" not in text
    assert any(rows[v].status == "ok" and _rows(bad)[v].status == "mismatch" for v in values), text


@pytest.mark.slow
@pytest.mark.tf
def test_printed_graph_tensors_are_set_aside_not_read_as_numbers(migrated):
    """The issue's first case: print(gradients) before running it, on both sides."""
    legacy_path, new_path = migrated["print_gradients"]
    report = compare_runs(run_captured(legacy_path, legacy=True), run_captured(new_path, legacy=False))
    text = report.to_text()
    assert report.exit_code == 0, text
    assert "<tf.Tensor 'gradients/" in report.legacy.stdout          # TF1 printed symbols
    assert "numpy=8.0>" in report.new.stdout                         # TF2 printed values
    symbolic = [r for r in report.rows if r.status == "symbolic"]
    assert [r.name for r in symbolic] == ["stdout:1", "stdout:2", "stdout:3"], text
    assert "gradients/AddN:0" in symbolic[0].note and "8.0" in symbolic[0].note
    # the prints after them are compared, line for line
    assert [(r.name, r.status) for r in report.rows if r.kind == "printed" and r.compared] == [
        ("stdout:4", "ok"), ("stdout:5", "ok"), ("stdout:6", "ok")], text
    assert not any(r.name == "stdout" for r in report.rows), text


@pytest.mark.slow
@pytest.mark.tf
def test_unseeded_numpy_is_named_as_the_cause_and_seed_fixes_it(migrated):
    legacy_path, new_path = migrated["numpy_linreg"]
    report = compare_runs(run_captured(legacy_path, legacy=True), run_captured(new_path, legacy=False))
    text = report.to_text()
    assert report.exit_code == 1, text
    assert report.random_causes == ["unseeded numpy"], text
    assert "likely cause: unseeded numpy" in report.summary()
    assert _rows(report)["train_X"].status == "mismatch"
    assert "MISMATCH (unseeded numpy)" in text
    # the first unseeded draw, by file and line, in both runs
    assert f"legacy: np.random.rand at {legacy_path}:5" in text or \
        "legacy: np.random.rand at tests/migrate/legacy/data/real_scripts/numpy_linreg_tf1.py:5" in text, text
    assert f"new: np.random.rand at {new_path}:5" in text, text
    assert "--seed N" in text


@pytest.mark.slow
@pytest.mark.tf
def test_tf_random_ops_with_seed_alone_are_a_mismatch_naming_them(migrated):
    """Graph seed and eager seed N give different streams: --seed must not claim OK."""
    legacy_path, new_path = migrated["random_init_tape"]
    report = compare_runs(run_captured(legacy_path, legacy=True, seed=SEED),
                          run_captured(new_path, legacy=False, seed=SEED))
    text = report.to_text()
    assert report.exit_code == 1, text
    assert report.random_causes == ["random ops"], text
    assert "likely cause: TF random ops" in report.summary()
    assert _rows(report)["W1"].status == "mismatch" and "(random ops)" in text
    assert f"--seed {SEED} set TensorFlow's graph seed and eager seed to {SEED}" in text
    assert "RandomStandardNormal" in text and "TruncatedNormal" in text
    # the features (no random op) still agree
    assert _rows(report)["features"].status == "ok"


@pytest.mark.slow
@pytest.mark.tf
def test_migrate_verify_passes_the_seed_through(tmp_path, capsys):
    """``tapeshift migrate --verify --seed N`` in diff mode: nothing written, verify OK."""
    script = tmp_path / "python_random_tf1.py"
    script.write_text((DATA / "python_random_tf1.py").read_text())
    code = cli.main(["migrate", "--verify", "--seed", str(SEED), "--no-cache", "-j", "1", str(script)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "verify: OK: all" in captured.err, captured.err
    assert script.read_text() == (DATA / "python_random_tf1.py").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["python_random_tf1.py"]
