"""`migrate` runs without TensorFlow; `compat` says how to install it."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Make `import tensorflow` fail the way it does when it is not installed.
BLOCK_TF = (
    "import sys\n"
    "class Block:\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name == 'tensorflow' or name.startswith('tensorflow.'):\n"
    "            raise ModuleNotFoundError(f\"No module named '{name}'\")\n"
    "sys.meta_path.insert(0, Block())\n"
)


def run(code):
    return subprocess.run([sys.executable, "-c", BLOCK_TF + code], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_migrate_cli_runs_without_tensorflow():
    p = run("from migrate.cli import main\nraise SystemExit(main(['--help']))")
    assert p.returncode == 0, p.stderr
    assert "demo" in p.stdout
    p = run("import migrate, migrate.cli, sys\n"
            "assert not any(m.startswith('tensorflow') for m in sys.modules), 'tf imported'")
    assert p.returncode == 0, p.stderr


def test_a_subcommand_imports_its_own_module_only():
    """`tapeshift migrate` does not load the demo's numpy (its thread pool would
    keep the tree runner from forking its workers); `tapeshift --help` lists all."""
    p = run("import sys\nfrom migrate.cli import main\n"
            "code = main(['migrate', '--check', 'examples/reference_tf2.py'])\n"
            "from migrate.tree import os_threads\n"
            "assert 'numpy' not in sys.modules and 'compat' not in sys.modules, 'demo loaded'\n"
            "assert os_threads() in (None, 1), os_threads()\n"
            "raise SystemExit(code)")
    assert p.returncode in (0, 1), p.stderr
    p = run("from migrate.cli import main\nraise SystemExit(main(['--help']))")
    assert p.returncode == 0 and all(c in p.stdout for c in ("demo", "migrate", "check", "verify"))


def test_compat_imports_and_explains_how_to_install_tensorflow():
    p = run("import compat\ncompat.gradient(lambda p, i: 0, {})")
    assert p.returncode == 1
    assert "TensorFlowMissingError" in p.stderr
    assert "pip install 'tapeshift[tf]'" in p.stderr
