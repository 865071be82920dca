"""``tf.layers`` code on TensorFlow >= 2.16 with Keras 3: run-legacy and compat mode.

The TF1 behaviour reference is the same script on ``tf.compat.v1`` with
``TF_USE_LEGACY_KERAS=1`` (TensorFlow's own switch back to Keras 2, under which
``tf.compat.v1.layers`` works): the closest thing to TF1 on this machine.
run-legacy and the compat-mode output must print its numbers with no
environment variable set.
"""

import importlib
import os
import re
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest

from tapeshift.migrate.legacy import run_legacy
from tapeshift.migrate.legacy.printed import printed_numbers
from tapeshift.migrate.commands.cli import main as cli_main
from tapeshift.migrate.rules.layers_compat_table import TF_KERAS_LEGACY_LAYERS
from tapeshift.migrate.legacy.run_legacy import LegacyImports, LegacyLayersError, LegacyTensorFlow, legacy_layers

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "layers_tf1.py"


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


def _keras_3() -> bool:
    import keras

    return keras.__version__.startswith("3.")


def _plain_env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("TF_USE_LEGACY_KERAS", "PYTHONPATH")}


# -- in process -----------------------------------------------------------------

@pytest.mark.tf
def test_tf_compat_v1_layers_fails_here_and_legacy_layers_is_tf_keras():
    import tensorflow as tf

    tf_keras_layers = importlib.import_module(TF_KERAS_LEGACY_LAYERS)
    if _keras_3():  # what the issue is about: TensorFlow's own tf.layers is gone
        with pytest.raises(AttributeError, match="not available with Keras 3"):
            _ = tf.compat.v1.layers.dense
        assert legacy_layers(tf.compat.v1) is tf_keras_layers
    else:  # Keras 2 (TensorFlow 2.15): TensorFlow's own module is kept
        assert legacy_layers(tf.compat.v1) is tf.compat.v1.layers
    assert legacy_layers(tf.compat.v1).dense is tf_keras_layers.dense


@pytest.mark.tf
def test_every_spelling_of_tf_layers_in_user_code_resolves(tmp_path):
    import tensorflow as real_tf

    layers = legacy_layers(real_tf.compat.v1)
    user = tmp_path / "proj"
    user.mkdir()
    _write(user / "layers_user_mod.py", """\
        import tensorflow as tf
        import tensorflow.compat.v1 as tf1
        from tensorflow.compat import v1 as tf1b
        import tensorflow.compat.v2 as tf2
        from tensorflow import layers as L
        from tensorflow.layers import dense, Dense
        from tensorflow.compat.v1.layers import conv2d
        import tensorflow.layers as tl
        import tensorflow.compat.v1.layers as tl2
        from tensorflow.layers.experimental import keras_style_scope
        from tensorflow.compat.v1 import Session
        """)
    sys.path.insert(0, str(user))
    try:
        with LegacyImports([user]):
            import layers_user_mod as m
    finally:
        sys.path.remove(str(user))
        sys.modules.pop("layers_user_mod", None)
    assert m.tf.layers is m.tf1.layers is m.tf1b.layers is m.L is m.tl is m.tl2 is layers
    assert m.tf.compat.v1 is m.tf1 is m.tf1b is m.tf
    assert (m.dense, m.Dense, m.conv2d) == (layers.dense, layers.Dense, layers.conv2d)
    assert m.keras_style_scope is layers.experimental.keras_style_scope
    assert m.tf2 is real_tf.compat.v2  # only v1 is the legacy tf
    assert m.Session is real_tf.compat.v1.Session
    assert m.tf.keras is real_tf.compat.v1.keras  # tf.keras is left as installed
    assert sys.modules["tensorflow"] is real_tf


class _Keras3Layers:
    """tf.compat.v1.layers as TensorFlow's lazy loader behaves with Keras 3."""

    def __getattr__(self, name):
        raise AttributeError(f"`{name}` is not available with Keras 3.")


def _fake_v1() -> types.ModuleType:
    v1 = types.ModuleType("tensorflow.compat.v1")
    v1.layers = _Keras3Layers()
    v1.__version__ = "2.21.0"
    return v1


def test_without_tf_keras_the_error_says_pip_install_tf_keras(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, TF_KERAS_LEGACY_LAYERS, None)  # as if not installed
    tf = LegacyTensorFlow(_fake_v1())
    with pytest.raises(LegacyLayersError) as info:
        _ = tf.layers
    message = str(info.value)
    assert "tf.layers needs the tf-keras package" in message
    assert "pip install tf-keras~=2.21.0" in message
    assert "`Layer` is not available with Keras 3" in message
    assert isinstance(info.value, ModuleNotFoundError) and info.value.name == "tf_keras"
    # an import of tensorflow.layers by user code says the same
    user = tmp_path / "proj"
    user.mkdir()
    _write(user / "layers_import_mod.py", "from tensorflow.layers import dense\n")
    sys.path.insert(0, str(user))
    try:
        with LegacyImports([user], tf_module=LegacyTensorFlow(_fake_v1())):
            with pytest.raises(LegacyLayersError, match="pip install tf-keras"):
                import layers_import_mod  # noqa: F401
    finally:
        sys.path.remove(str(user))
        sys.modules.pop("layers_import_mod", None)


@pytest.mark.tf
def test_a_submodule_tf_layers_does_not_have_is_an_import_error(tmp_path):
    user = tmp_path / "proj"
    user.mkdir()
    _write(user / "layers_missing_mod.py", "from tensorflow.layers.nothing import x\n")
    sys.path.insert(0, str(user))
    try:
        with LegacyImports([user]):
            with pytest.raises(ModuleNotFoundError, match=r"tensorflow\.layers\.nothing"):
                import layers_missing_mod  # noqa: F401
    finally:
        sys.path.remove(str(user))
        sys.modules.pop("layers_missing_mod", None)


# -- in subprocesses: the real thing ------------------------------------------------

SPELLINGS = """\
    import os
    import numpy as np
    import tensorflow as tf
    import tensorflow.compat.v1 as tf1
    from tensorflow import layers as L
    from tensorflow.layers import dense
    from tensorflow.compat.v1.layers import Dense

    x = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    init = tf.constant_initializer(0.5)
    with tf.variable_scope("a"):
        y1 = tf.layers.dense(x, 2, kernel_initializer=init, name="fc")
    with tf.variable_scope("a", reuse=True):
        y2 = tf1.layers.dense(x, 2, kernel_initializer=init, name="fc")
    y3 = L.dense(x, 2, kernel_initializer=init, name="b")
    y4 = dense(x, 2, kernel_initializer=init, name="c")
    y5 = Dense(2, kernel_initializer=init, name="d")(x)
    y6 = tf.compat.v1.layers.batch_normalization(x, training=True, name="bn")
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    print("variables", len(tf.global_variables()), "updates", len(updates))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        print("sums", *[float(sess.run(y).sum()) for y in (y1, y2, y3, y4, y5)])
        sess.run(updates)
        print("moving mean", sess.run(tf.global_variables("bn/moving_mean")[0]))
    print("legacy keras variable", os.environ.get("TF_USE_LEGACY_KERAS"))
"""


def _expected_spellings():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    dense_sum = float((0.5 * x.sum(axis=1, keepdims=True) * np.ones((1, 2))).sum())
    # kernel+bias for a/fc, b, c, d; gamma, beta, moving mean and variance for bn
    return [12, 2, *[dense_sum] * 5, *(0.01 * x.mean(axis=0))]


def _run(path: Path, env: dict) -> str:
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          env=env, timeout=600, cwd=path.parent)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _migrate_compat(script: Path, out: Path, capfd) -> Path:
    code = cli_main(["migrate", "--mode", "compat", "--out", str(out), str(script)])
    captured = capfd.readouterr()
    assert code == 0, captured.err
    assert "TS124" in captured.err
    new = out / script.name
    text = new.read_text()
    assert re.search(r"tf\.layers\.\w+\(", text) is None, text  # no call left (docstrings aside)
    assert f"import {TF_KERAS_LEGACY_LAYERS} as tf_layers" in text
    return new


@pytest.mark.slow
@pytest.mark.tf
def test_every_spelling_runs_under_run_legacy_and_after_compat_migration(
        tmp_path, capfd, monkeypatch):
    monkeypatch.delenv("TF_USE_LEGACY_KERAS", raising=False)
    script = _write(tmp_path / "spellings.py", SPELLINGS)
    expected = _expected_spellings()

    code = run_legacy.main([str(script)])
    out, err = capfd.readouterr()
    assert code == 0, err
    assert printed_numbers(out) == pytest.approx(expected, rel=1e-6)
    assert "legacy keras variable None" in out  # no environment variable was needed

    new = _migrate_compat(script, tmp_path / "out", capfd)
    assert printed_numbers(_run(new, _plain_env())) == pytest.approx(expected, rel=1e-6)


@pytest.fixture(scope="module")
def reference_output(tmp_path_factory):
    """The example on tf.compat.v1 with TF_USE_LEGACY_KERAS=1: TF1's numbers."""
    source = EXAMPLE.read_text().replace(
        "import tensorflow as tf\n",
        "import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()\n")
    assert "disable_v2_behavior" in source
    path = tmp_path_factory.mktemp("reference") / "layers_reference.py"
    path.write_text(source)
    return _run(path, {**_plain_env(), "TF_USE_LEGACY_KERAS": "1"})


def _check_example_numbers(got: list, expected: list) -> None:
    # "trainable variables 17 batch-norm updates 2", 5 x (step, loss), eval, 4 moving means
    assert len(got) == len(expected) == 17
    assert expected[:2] == [17, 2]  # the second tower reused the first one's variables
    assert all(m > 0 for m in expected[-4:])  # UPDATE_OPS ran: moving means moved off 0
    assert got == pytest.approx(expected, rel=1e-5, abs=1e-6)


@pytest.mark.slow
@pytest.mark.tf
def test_example_under_run_legacy_prints_tf1_numbers(reference_output, capfd, monkeypatch):
    monkeypatch.delenv("TF_USE_LEGACY_KERAS", raising=False)
    code = run_legacy.main([str(EXAMPLE)])
    out, err = capfd.readouterr()
    assert code == 0, err
    _check_example_numbers(printed_numbers(out), printed_numbers(reference_output))


@pytest.mark.slow
@pytest.mark.tf
def test_example_migrated_in_compat_mode_prints_tf1_numbers_and_verifies(
        reference_output, tmp_path, capfd, monkeypatch):
    monkeypatch.delenv("TF_USE_LEGACY_KERAS", raising=False)
    new = _migrate_compat(EXAMPLE, tmp_path / "out", capfd)
    _check_example_numbers(printed_numbers(_run(new, _plain_env())),
                           printed_numbers(reference_output))

    code = cli_main(["verify", str(EXAMPLE), str(new)])
    out, err = capfd.readouterr()
    assert code == 0, out + err
    assert "OK: all" in out
    assert "losses" in out and "moving_mean" in out
