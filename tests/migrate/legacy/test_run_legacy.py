"""``tapeshift run-legacy``: an unmodified TF1 script on TF2."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tapeshift.migrate.legacy import run_legacy
from tapeshift.migrate.legacy.printed import printed_numbers
from tapeshift.migrate.legacy.run_legacy import (
    CONTRIB_REPLACEMENTS,
    CONTRIB_TF_SLIM,
    ContribAttributeError,
    ContribModuleError,
    LegacyImports,
    contrib_message,
    execute_script,
)

ROOT = Path(__file__).resolve().parents[3]
REFERENCE_TF1 = ROOT / "examples" / "reference_tf1.py"


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


# -- in process: no TensorFlow behaviour is changed here ------------------------

@pytest.fixture
def isolated_main(monkeypatch):
    """Let execute_script replace argv, sys.path[0] and __main__ for one test only."""
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])


def test_execute_script_exit_codes_argv_and_traceback(tmp_path, isolated_main, capsys):
    script = _write(tmp_path / "s.py", """\
        import sys
        print(sys.argv[1:], __name__)
        kind = sys.argv[1]
        value = 42
        if kind == "code":
            sys.exit(3)
        if kind == "message":
            sys.exit("bad input")
        if kind == "raise":
            def inner():
                raise ValueError("boom")
            inner()
        """)
    code, globs = execute_script(script, [str(script), "code", "--x"])
    assert code == 3 and globs["value"] == 42  # globals survive sys.exit
    assert capsys.readouterr().out == "['code', '--x'] __main__\n"
    assert execute_script(script, [str(script), "none"])[0] == 0
    assert execute_script(script, [str(script), "message"])[0] == 1
    assert capsys.readouterr().err == "bad input\n"
    assert execute_script(script, [str(script), "raise"])[0] == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):\n")
    assert "run_legacy.py" not in err  # starts at the script's frame, like Python
    assert 'in inner\n    raise ValueError("boom")' in err and err.endswith("ValueError: boom\n")


def test_contrib_messages_name_the_module_and_replacement():
    msg = contrib_message("rnn")
    assert msg.startswith("tf.contrib.rnn does not exist in TensorFlow 2")
    assert "tf.keras.layers.RNN" in msg and "tf.contrib.rnn's core cells" in msg
    msg = contrib_message("rnn", "tf.contrib.rnn.LayerNormBasicLSTMCell")
    assert msg.startswith("tf.contrib.rnn.LayerNormBasicLSTMCell does not exist")
    assert "tensorflow_probability" in contrib_message("distributions")
    assert "knows no maintained replacement" in contrib_message("not_a_real_module")
    err = ContribModuleError("seq2seq")
    assert isinstance(err, ImportError) and err.module == "tf.contrib.seq2seq"
    assert isinstance(ContribAttributeError("rnn"), AttributeError)


@pytest.mark.tf
def test_replacement_table_names_real_apis():
    import importlib

    import tensorflow as tf

    for name, target in CONTRIB_TF_SLIM.items():
        assert importlib.import_module(target), name
    for name, text in CONTRIB_REPLACEMENTS.items():
        first = text.split()[0].rstrip(",;")
        if not first.startswith("tf."):
            continue
        obj = tf
        for part in re.split(r"[.(]", first)[1:]:
            if not part or part.endswith(")"):
                break
            obj = getattr(obj, part, None)
            assert obj is not None, f"tf.contrib.{name} -> {first}: no {part}"


@pytest.mark.tf
def test_imports_are_redirected_only_for_user_code(tmp_path):
    import tensorflow as real_tf
    import tf_slim

    user = tmp_path / "proj"
    user.mkdir()
    _write(user / "user_mod_a.py", """\
        import tensorflow as tf
        import tensorflow.contrib.slim as slim2
        from tensorflow.contrib import slim as slim3
        from tensorflow import gradients
        import tensorflow.contrib.layers as layers
        """)
    other = tmp_path / "elsewhere"
    other.mkdir()
    _write(other / "other_mod_b.py", "import tensorflow as tf\n")
    sys.path[:0] = [str(user), str(other)]
    try:
        with LegacyImports([user]) as hook:
            import other_mod_b
            import user_mod_a
        assert not hook.is_user_file(tf_slim.__file__)
    finally:
        sys.path.remove(str(user))
        sys.path.remove(str(other))
        sys.modules.pop("user_mod_a", None)
        sys.modules.pop("other_mod_b", None)
    assert other_mod_b.tf is real_tf
    assert user_mod_a.tf is not real_tf
    assert user_mod_a.tf.Session is real_tf.compat.v1.Session
    assert user_mod_a.gradients is real_tf.compat.v1.gradients
    assert user_mod_a.tf.contrib.slim is user_mod_a.slim2 is user_mod_a.slim3 is tf_slim
    assert user_mod_a.layers is sys.modules["tf_slim.layers"]
    assert sys.modules["tensorflow"] is real_tf
    # tf.contrib.rnn: TF 1.x's core cells (tf-keras' on Keras 3) and tf.nn's static_rnn
    cells = run_legacy.legacy_rnn_cell(real_tf.compat.v1)
    assert user_mod_a.tf.nn.rnn_cell is cells
    assert user_mod_a.tf.contrib.rnn.BasicLSTMCell is cells.BasicLSTMCell
    assert user_mod_a.tf.contrib.rnn.static_rnn is real_tf.compat.v1.nn.static_rnn
    assert user_mod_a.tf.nn.relu is real_tf.compat.v1.nn.relu
    with pytest.raises(AttributeError, match=r"tf\.contrib\.rnn\.LayerNormBasicLSTMCell does "
                                             r"not exist .*tf\.keras\.layers\.RNN"):
        _ = user_mod_a.tf.contrib.rnn.LayerNormBasicLSTMCell
    with pytest.raises(AttributeError, match=r"tf\.contrib\.seq2seq .*tensorflow_addons"):
        _ = user_mod_a.tf.contrib.seq2seq
    assert not hasattr(user_mod_a.tf.contrib, "distributions")


# -- in a subprocess: the real thing -------------------------------------------

PROBE = """\
    import sys
    import tensorflow as tf
    import tensorflow.contrib.slim as slim2
    from tensorflow.contrib import slim as slim3
    import tf_slim
    import probe_helper
    print("argv", sys.argv[1:])
    print("slim", tf.contrib.slim is tf_slim, slim2 is tf_slim, slim3 is tf_slim)
    print("helper", probe_helper.tf is tf, "eager", tf.executing_eagerly())
    print("real", sys.modules["tensorflow"] is not tf)
    x = tf.placeholder(tf.float32, [None, 3])
    y = slim2.fully_connected(x, 2, weights_initializer=tf.ones_initializer())
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        print("fc", sess.run(y, {x: [[1.0, 2.0, 3.0]]}))
    from tensorflow.contrib import rnn
    import tensorflow.contrib.rnn as rnn2
    print("rnn", rnn is rnn2 is tf.contrib.rnn, rnn.GRUCell is tf.nn.rnn_cell.GRUCell,
          rnn.static_rnn is tf.nn.static_rnn)
    for stmt in ("import tensorflow.contrib.seq2seq", "from tensorflow.contrib import distributions"):
        try:
            exec(stmt)
        except ImportError as exc:
            print("error", exc)
    sys.stderr.write("to stderr\\n")
    sys.exit(int(sys.argv[1]))
    """


@pytest.mark.slow
@pytest.mark.tf
def test_run_legacy_passes_argv_streams_exit_code_and_resolves_contrib(tmp_path, capfd):
    script = _write(tmp_path / "probe.py", PROBE)
    _write(tmp_path / "probe_helper.py", "import tensorflow as tf\n")
    code = run_legacy.main([str(script), "3", "--flag", "two words"])
    out, err = capfd.readouterr()
    assert code == 3, err
    assert "argv ['3', '--flag', 'two words']" in out
    assert "slim True True True" in out
    assert "helper True eager False" in out
    assert "real True" in out
    assert "fc [[6. 6.]]" in out
    assert "rnn True True True" in out
    assert re.search(r"error tf\.contrib\.seq2seq does not exist .*tensorflow_addons", out)
    assert re.search(r"error tf\.contrib\.distributions .*tensorflow_probability", out)
    assert "to stderr" in err


@pytest.mark.slow
@pytest.mark.tf
def test_run_legacy_prints_what_tf1_would_on_the_reference(capfd, tmp_path):
    code = run_legacy.main([str(REFERENCE_TF1)])
    legacy_out, err = capfd.readouterr()
    assert code == 0, err
    # the same script with the TF1 import spelled out, run by plain Python
    source = REFERENCE_TF1.read_text().replace(
        "import tensorflow as tf\n",
        "import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()\n")
    substituted = _write(tmp_path / "reference_substituted.py", source)
    proc = subprocess.run([sys.executable, str(substituted)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ""}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    expected = printed_numbers(proc.stdout)
    got = printed_numbers(legacy_out)
    assert len(got) == len(expected) == 9
    assert got[-1] is expected[-1] is False
    assert got[:-1] == pytest.approx(expected[:-1], rel=1e-5, abs=1e-6)


def test_run_legacy_missing_script(capsys, tmp_path):
    assert run_legacy.main([str(tmp_path / "nope.py")]) == 2
    assert "no such script" in capsys.readouterr().err


def test_both_subcommands_are_wired_into_the_cli(capsys):
    from tapeshift.migrate.commands.cli import main

    assert main(["run-legacy", "--help"]) == 0
    assert "tf.contrib.slim" in capsys.readouterr().out
    assert main(["verify", "--help"]) == 0
    out = capsys.readouterr().out
    assert "float32, complex64, Python float, printed   1e-5    1e-6" in out
    assert "exit codes: 0" in out


VARIABLE_KIND = """\
import tensorflow as tf
v = tf.get_variable("v", [2], initializer=tf.ones_initializer())
print(type(v).__name__, tf.resource_variables_enabled())
"""


@pytest.mark.tf
@pytest.mark.parametrize("flag, expected", [
    ([], "RefVariable False"),
    (["--resource-variables"], "ResourceVariable True"),
])
def test_resource_variables_switch_is_tf1s_own(flag, expected, tmp_path, capfd):
    """TF1 graphs make ref variables by default; --resource-variables makes TF2's kind
    (tf.enable_resource_variables()), which verify --legacy-resource-variables uses."""
    script = _write(tmp_path / "kind.py", VARIABLE_KIND)
    assert ("--resource-variables" in run_legacy.runner_command(
        script, legacy=True, resource_variables=bool(flag))) == bool(flag)
    code = run_legacy.main([*flag, str(script)])
    out, err = capfd.readouterr()
    assert code == 0, err
    assert out.strip() == expected
