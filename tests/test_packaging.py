"""`migrate` runs without TensorFlow; `compat` says how to install it."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

@pytest.fixture
def run(block_imports):
    """Run ``code`` in a child Python where TensorFlow is not installed."""
    def run(code):
        return subprocess.run([sys.executable, "-c", block_imports("tensorflow") + code], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
    return run



def test_migrate_cli_runs_without_tensorflow(run):
    p = run("from tapeshift.migrate.commands.cli import main\nraise SystemExit(main(['--help']))")
    assert p.returncode == 0, p.stderr
    assert "demo" in p.stdout
    p = run("import tapeshift.migrate, tapeshift.migrate.commands.cli, sys\n"
            "assert not any(m.startswith('tensorflow') for m in sys.modules), 'tf imported'")
    assert p.returncode == 0, p.stderr


def test_a_subcommand_imports_its_own_module_only(run):
    """`tapeshift migrate` does not load the demo's numpy (its thread pool would
    keep the tree runner from forking its workers); `tapeshift --help` lists all."""
    p = run("import sys\nfrom tapeshift.migrate.commands.cli import main\n"
            "code = main(['migrate', '--check', 'examples/reference_tf2.py'])\n"
            "from tapeshift.migrate.engine.batch import os_threads\n"
            "assert 'numpy' not in sys.modules and 'tapeshift.compat' not in sys.modules, 'demo loaded'\n"
            "assert os_threads() in (None, 1), os_threads()\n"
            "raise SystemExit(code)")
    assert p.returncode in (0, 1), p.stderr
    p = run("from tapeshift.migrate.commands.cli import main\nraise SystemExit(main(['--help']))")
    assert p.returncode == 0 and all(c in p.stdout for c in ("demo", "migrate", "check", "verify"))


def test_compat_imports_and_explains_how_to_install_tensorflow(run):
    p = run("from tapeshift import compat\ncompat.gradient(lambda p, i: 0, {})")
    assert p.returncode == 1
    assert "TensorFlowMissingError" in p.stderr
    assert "pip install 'tapeshift[tf]'" in p.stderr


# -- one TensorFlow distribution --------------------------------------------------------

TF_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tf-nightly", "tf-nightly-cpu")


def _extras():
    import configparser
    import re

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    extras = {}
    for name, text in cfg["options.extras_require"].items():
        reqs = [line.strip() for line in text.splitlines() if line.strip()]
        extras[name] = {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower().replace("_", "-") for r in reqs}
    return extras


def test_every_extra_that_brings_tensorflow_brings_the_same_one():
    """README's two commands install the `tf` and the `test` extra into one
    environment: two TensorFlow distributions there would own the same files."""
    extras = _extras()
    chosen = {name: reqs & set(TF_DISTRIBUTIONS) for name, reqs in extras.items()}
    assert chosen["tf"] and chosen["test"], chosen
    assert all(len(c) <= 1 for c in chosen.values()), chosen
    assert len(set().union(*chosen.values())) == 1, chosen
    # tf-keras requires the `tensorflow` distribution itself: beside tensorflow-cpu
    # it would bring a second one
    for name, reqs in extras.items():
        if "tf-keras" in reqs:
            assert chosen[name] == {"tensorflow"}, (name, chosen[name])


def test_this_environment_has_one_tensorflow_distribution():
    from importlib import metadata

    installed = []
    for name in TF_DISTRIBUTIONS:
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        installed.append(name)
    assert len(installed) <= 1, f"several TensorFlow distributions installed: {installed}"
