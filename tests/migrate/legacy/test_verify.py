"""``tapeshift verify`` end to end: each script in its own subprocess."""

import json
import re
import textwrap
from pathlib import Path

import pytest

from tapeshift.migrate.legacy import verify
from tapeshift.migrate.legacy.verify import run_captured, verify_sources

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"


def example_pairs():
    pairs = []
    for legacy in sorted(EXAMPLES.glob("*_tf1.py")):
        new = legacy.with_name(legacy.name[: -len("_tf1.py")] + "_tf2.py")
        if new.exists():
            pairs.append(pytest.param(legacy, new, id=legacy.name[: -len("_tf1.py")]))
    return pairs


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


def _row(out: str, name: str) -> str:
    match = re.search(rf"^{re.escape(name)}\s.*$", out, re.MULTILINE)
    assert match, f"no row {name!r} in:\n{out}"
    return match.group(0)


def test_the_reference_pair_is_among_the_examples():
    assert "reference" in [p.id for p in example_pairs()]


@pytest.mark.slow
@pytest.mark.tf
@pytest.mark.parametrize("legacy,new", example_pairs())
def test_verify_passes_on_every_example_pair(legacy, new, capsys):
    code = verify.main([str(legacy), str(new)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "name" in out and "max abs diff" in out and "max rel diff" in out
    assert re.search(r"^OK: all [1-9]\d* compared agree", out, re.MULTILINE), out
    if legacy.name == "reference_tf1.py":
        for name in ("W", "b", "x", "y0", "direct_grad", "step_grad",
                     "stdout:1", "stdout:3", "stdout:5"):
            assert _row(out, name).endswith("ok"), out


@pytest.mark.slow
@pytest.mark.tf
def test_verify_fails_naming_a_changed_constant(tmp_path, capsys):
    source = (EXAMPLES / "reference_tf2.py").read_text()
    changed = source.replace("[[0.8, 0.9], [0.7, 0.6]]", "[[0.8, 0.9], [0.7, 0.65]]")
    assert changed != source
    new = _write(tmp_path / "reference_changed_tf2.py", changed)
    code = verify.main([str(EXAMPLES / "reference_tf1.py"), str(new), "--json"])
    out = capsys.readouterr().out
    assert code == 1, out
    report = json.loads(out)
    status = {row["name"]: row["status"] for row in report["rows"]}
    # the constant itself is named (a tf.constant has a value even in a graph)...
    assert status["y0"] == "mismatch"
    assert report["summary"].startswith("MISMATCH") and "y0" in report["summary"]
    y0 = next(row for row in report["rows"] if row["name"] == "y0")
    assert y0["note"] == "at (1, 1): 0.6 vs 0.65"
    # ...and so is everything computed from it
    assert status["direct_grad"] == status["step_grad"] == "mismatch"
    assert status["W"] == status["b"] == status["x"] == "ok"
    assert not any(row["random"] for row in report["rows"])


@pytest.mark.slow
@pytest.mark.tf
def test_random_op_mismatch_is_reported(tmp_path):
    # verify_sources: the API `migrate --verify` uses for text held in memory
    legacy = textwrap.dedent("""\
        import tensorflow as tf
        tf.set_random_seed(0)
        w = tf.Variable(tf.random_normal([3]))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            doubled = sess.run(w * 2.0)
        """)
    new = textwrap.dedent("""\
        import tensorflow as tf
        tf.random.set_seed(0)
        w = tf.Variable(tf.random.normal([3]))
        doubled = (w * 2.0).numpy()
        """)
    path = tmp_path / "rand.py"
    report = verify_sources(legacy, new, path)
    assert list(tmp_path.iterdir()) == []  # temporary files removed
    assert report.exit_code == 1 and report.legacy.path == report.new.path == path
    out = report.to_text()
    assert "MISMATCH (random ops)" in _row(out, "doubled")
    assert ("random ops used (legacy: RandomStandardNormal (in a TF1 graph); "
            "new: RandomStandardNormal (eagerly))") in out
    assert "graph-level seed" in out and "stateless" in out


@pytest.mark.slow
@pytest.mark.tf
def test_a_failing_script_exits_2_naming_it(tmp_path, capsys):
    # (run-legacy provides tf.contrib.rnn's core cells, not its layer-normalised one)
    legacy = _write(tmp_path / "uses_rnn_tf1.py", """\
        import tensorflow as tf
        cell = tf.contrib.rnn.LayerNormBasicLSTMCell(4)
        """)
    new = _write(tmp_path / "uses_rnn_tf2.py", "print(1)\n")
    code = verify.main([str(legacy), str(new)])
    out = capsys.readouterr().out
    assert code == 2, out
    assert f"FAILED: the legacy script {legacy} exited with code 1 (through run-legacy)" in out
    assert "Traceback (most recent call last):" in out
    assert re.search(r"ContribAttributeError: tf\.contrib\.rnn\.LayerNormBasicLSTMCell does not "
                     r"exist .*tf\.keras\.layers\.RNN", out), out


def test_timeout_and_non_tf_new_script(tmp_path):
    slow = _write(tmp_path / "slow.py", "import time\ntime.sleep(60)\n")
    run = run_captured(slow, legacy=False, timeout=1)
    assert run.timed_out and run.failed
    assert "did not finish within the 1 s timeout" in run.error
    quick = _write(tmp_path / "quick.py", """\
        import sys
        import numpy as np
        total = np.float32(1.5) + 1
        sizes = [1, 2, 3]
        losses = [0.5, 0.25]
        info = {"lr": 0.1, "name": "x"}
        print("args", sys.argv[1:])
        sys.exit(0)
        """)
    seen = []
    run = run_captured(quick, ["a"], legacy=False, on_output=lambda *line: seen.append(line))
    assert not run.failed, run.stderr
    assert run.stdout == "args ['a']\n"
    assert ("new", "stdout", "args ['a']\n") in seen  # the tee
    assert run.dtypes == {"total": "float32", "sizes": "py:int", "losses": "py:float",
                          "info['lr']": "py:float"}
    assert run.values["sizes"].tolist() == [1, 2, 3]
    assert run.random_ops == {}


# -- randomness in the child (issue #24): scripts without TensorFlow, so quick --

def test_unseeded_draws_are_recorded_with_their_first_line(tmp_path):
    script = _write(tmp_path / "draws.py", """\
        import random
        import numpy as np
        from numpy.random import mtrand

        a = np.random.random_sample()
        b = [np.random.rand(2) for _ in range(2)]
        c = random.random()
        rng = np.random.default_rng()
        d = rng.random()
        """)
    run = run_captured(script, legacy=False)
    assert not run.failed, run.stderr
    assert run.seed is None
    first = lambda line: f"{script}:{line}"  # noqa: E731
    assert run.unseeded == {
        "numpy": {"calls": 3, "call": "np.random.random_sample", "first": first(5)},
        "python": {"calls": 1, "call": "random.random", "first": first(7)},
        "numpy default_rng": {"calls": 1, "call": "np.random.default_rng()", "first": first(8)},
    }


def test_seeded_scripts_and_library_draws(tmp_path):
    seeded = _write(tmp_path / "seeded.py", """\
        import random
        import numpy as np
        np.random.seed(0)
        random.seed(1)
        a = np.random.randn(3)
        b = random.randint(0, 9)
        rng = np.random.default_rng(5)
        """)
    run = run_captured(seeded, legacy=False)
    assert not run.failed, run.stderr
    assert run.unseeded == {}
    late = _write(tmp_path / "late.py", """\
        import numpy as np
        from numpy.random import mtrand
        x = np.random.uniform()
        np.random.seed(3)
        y = np.random.uniform()
        np.random.seed(None)
        mtrand._rand.random_sample()  # a library holding the generator itself
        """)
    run = run_captured(late, legacy=False)
    assert not run.failed, run.stderr
    # the draw before the seed is the script's; the one after seed(None) no wrapped call saw
    assert run.unseeded["numpy"] == {"calls": 1, "call": "np.random.uniform", "first": f"{late}:3"}
    backstop = _write(tmp_path / "backstop.py", """\
        from numpy.random import mtrand
        mtrand._rand.random_sample()
        """)
    run = run_captured(backstop, legacy=False)
    assert run.unseeded["numpy"]["call"] == "numpy's global generator, by library code"


@pytest.mark.slow
def test_seed_starts_python_numpy_and_tensorflow_from_n(tmp_path):
    import random

    import numpy as np

    script = _write(tmp_path / "seed.py", """\
        import random
        import numpy as np
        a = np.random.random_sample(3)
        b = random.random()
        """)
    run = run_captured(script, legacy=False, seed=11)
    assert not run.failed, run.stderr
    assert run.seed == 11 and run.unseeded == {}
    assert run.values["a"].tolist() == np.random.RandomState(11).random_sample(3).tolist()
    assert run.values["b"].item() == random.Random(11).random()
    assert "--seed" in run.command and run.command[run.command.index("--seed") + 1] == "11"


@pytest.mark.slow
def test_seed_fixes_the_string_hashes_of_both_runs_unless_the_environment_does(tmp_path):
    import os

    # a vocabulary numbered in a set's order: salted per process without PYTHONHASHSEED
    script = _write(tmp_path / "vocab.py", """\
        import os
        words = "the king is a royal he is the queen she is royal".split()
        word2int = {w: i for i, w in enumerate(set(words))}
        print(os.environ.get("PYTHONHASHSEED"), hash("king"), sorted(word2int.items()))
        """)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    runs = [run_captured(script, legacy=False, seed=3, env=env) for _ in range(2)]
    assert not any(r.failed for r in runs), runs[0].stderr
    assert runs[0].stdout.startswith("3 ")
    assert runs[0].stdout == runs[1].stdout  # one hash of "king", one numbering
    own = run_captured(script, legacy=False, seed=3, env={**env, "PYTHONHASHSEED": "7"})
    assert own.stdout.startswith("7 ")  # the caller's choice is kept
    unseeded = run_captured(script, legacy=False, env=env)
    assert unseeded.stdout.startswith("None ")  # without --seed: left alone


def test_seed_option_is_checked(capsys):
    for bad in ("-1", "x", str(2**32)):
        assert verify.main(["a.py", "b.py", "--seed", bad]) == 2
        err = capsys.readouterr().err
        assert "argument --seed: must be" in err and bad in err
