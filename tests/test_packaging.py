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


def test_compat_imports_and_explains_how_to_install_tensorflow():
    p = run("import compat\ncompat.gradient(lambda p, i: 0, {})")
    assert p.returncode == 1
    assert "TensorFlowMissingError" in p.stderr
    assert "pip install 'tapeshift[tf]'" in p.stderr
