"""`python -m tapeshift` is the `tapeshift` command: same output, same exit codes."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LEGACY = (ROOT / "examples" / "reference_tf1.py").read_text()
# TF2 code with nothing to migrate and nothing to report
CLEAN = ("import tensorflow as tf\n"
         "W = tf.Variable([[1.0, 2.0], [3.0, 4.0]])\n"
         "x = tf.constant([[0.1, 0.2]])\n"
         "with tf.GradientTape() as tape:\n"
         "    loss = tf.reduce_sum(tf.tanh(tf.matmul(x, W)))\n"
         "grad_W = tape.gradient(loss, W)\n")

# the console script installed beside this interpreter (pip puts it there)
SCRIPT = shutil.which("tapeshift", path=str(Path(sys.executable).parent))



def run(argv, cwd):
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "legacy.py").write_text(LEGACY)
    (tmp_path / "clean.py").write_text(CLEAN)
    return tmp_path


# (arguments, exit code both must give)
CASES = [
    (["--help"], 0),
    (["migrate", "--check", "legacy.py"], 1),   # would change the file
    (["migrate", "--check", "clean.py"], 0),
    (["check", "legacy.py"], 1),                # TS201 is error level
    (["check", "--format", "json", "clean.py"], 0),
    (["migrate", "--no-such-option", "legacy.py"], 2),
    (["check", "missing.py"], 2),
]


@pytest.mark.slow
@pytest.mark.skipif(SCRIPT is None, reason="the tapeshift console script is not installed "
                                          "beside this Python (pip install -e . installs it)")
@pytest.mark.parametrize("args, code", CASES, ids=[" ".join(a) for a, _ in CASES])
def test_python_m_tapeshift_is_the_console_script(tree, args, code):
    module = run([sys.executable, "-m", "tapeshift", *args], tree)
    script = run([SCRIPT, *args], tree)
    assert (module.returncode, script.returncode) == (code, code), module.stderr + script.stderr
    assert module.stdout == script.stdout
    assert module.stderr == script.stderr


def test_python_m_tapeshift_runs_without_tensorflow(tree, block_imports):
    code = block_imports("tensorflow") + ("import runpy, sys\nsys.argv = ['tapeshift', 'migrate', '--check', 'legacy.py']\n"
                       "runpy.run_module('tapeshift', run_name='__main__', alter_sys=True)\n")
    p = run([sys.executable, "-c", code], tree)
    assert p.returncode == 1, p.stderr
    assert "tape.gradient(loss, W)" in p.stdout or "tape.gradient(loss, W)" in p.stderr


def test_importing_tapeshift_imports_nothing_else():
    p = run([sys.executable, "-c", "import sys, tapeshift\n"
             "loaded = {'.'.join(m.split('.')[:2]) for m in sys.modules}\n"
             "assert not loaded & {'tapeshift.migrate', 'tapeshift.compat', 'tensorflow', 'libcst',"
             " 'migrate', 'compat'}, loaded"], ROOT)
    assert p.returncode == 0, p.stderr
