"""`tapeshift checkpoint` in-process: inspect, convert (--map, --script), diff, and bad input.

The TF1 checkpoints are made here, as TF1 made them: a model under variable
scopes with `tf.compat.v1.get_variable`, an optimizer trained two steps, saved
by `tf.compat.v1.train.Saver` with the global step, in a `tf.Graph`.
"""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tapeshift.migrate.commands.cli import main

pytestmark = pytest.mark.tf

MODEL = {  # name -> shape: the model of every TF1 checkpoint below
    "Actor/eval/l1/kernel": (3, 4),
    "Actor/eval/l1/bias": (4,),
    "Actor/eval/out/kernel": (4, 1),
}
OPTIMIZERS = {  # tf.compat.v1.train optimizer -> the slot names it gives each variable
    "Adam": ["Adam", "Adam_1"],
    "Momentum": ["Momentum"],
    "RMSProp": ["RMSProp", "RMSProp_1"],
    "Adagrad": ["Adagrad"],
}


def save_tf1(directory: Path, optimizer: str = "Adam", steps: int = 2) -> dict:
    """Train the model `steps` steps in a TF1 graph and save it; return {name: value} as saved."""
    import tensorflow as tf

    v1 = tf.compat.v1
    with tf.Graph().as_default():
        v1.set_random_seed(1)
        x = v1.placeholder(tf.float32, [None, 3])
        y = v1.placeholder(tf.float32, [None, 1])
        with v1.variable_scope("Actor"), v1.variable_scope("eval"):
            with v1.variable_scope("l1"):
                w = v1.get_variable("kernel", MODEL["Actor/eval/l1/kernel"])
                b = v1.get_variable("bias", MODEL["Actor/eval/l1/bias"], initializer=v1.zeros_initializer())
            h = tf.nn.relu(tf.matmul(x, w) + b)
            with v1.variable_scope("out"):
                w2 = v1.get_variable("kernel", MODEL["Actor/eval/out/kernel"])
        loss = tf.reduce_mean(tf.square(tf.matmul(h, w2) - y))
        step = v1.train.get_or_create_global_step()
        opt = {"Adam": lambda: v1.train.AdamOptimizer(0.01),
               "Momentum": lambda: v1.train.MomentumOptimizer(0.1, 0.9),
               "RMSProp": lambda: v1.train.RMSPropOptimizer(0.01, momentum=0.5),
               "Adagrad": lambda: v1.train.AdagradOptimizer(0.1)}[optimizer]()
        train = opt.minimize(loss, global_step=step)
        saver = v1.train.Saver()
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            rng = np.random.RandomState(0)
            for _ in range(steps):
                sess.run(train, {x: rng.randn(5, 3), y: rng.randn(5, 1)})
            saver.save(sess, str(directory / "model.ckpt"), global_step=step)
            return {v.op.name: sess.run(v) for v in v1.global_variables()}


def save_name_based(prefix: Path, values: dict) -> None:
    """A name-based checkpoint holding exactly `values` (tf.compat.v1.train.Saver in a graph)."""
    import tensorflow as tf

    v1 = tf.compat.v1
    with tf.Graph().as_default():
        variables = {name: v1.Variable(value, name=name) for name, value in values.items()}
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            v1.train.Saver(variables).save(sess, str(prefix))


@pytest.fixture(scope="module")
def tf1(tmp_path_factory):
    """The Adam-trained TF1 checkpoint: (its directory, {name: value})."""
    directory = tmp_path_factory.mktemp("tf1")
    return directory, save_tf1(directory)


def restore_by_name(out: Path, names_and_shapes: dict, dtypes: dict | None = None) -> dict:
    """The recipe of docs/checkpoints.md, in plain TensorFlow: variables made under their
    names, restored by name from the converted checkpoint; their values."""
    import tensorflow as tf

    made = [tf.Variable(tf.zeros(shape, (dtypes or {}).get(name, tf.float32)), name=name)
            for name, shape in names_and_shapes.items()]
    ckpt = tf.train.Checkpoint(variables={v.name.rsplit(":", 1)[0]: v for v in made})
    status = ckpt.restore(tf.train.latest_checkpoint(str(out)))
    status.assert_existing_objects_matched()
    status.expect_partial()
    return {v.name.rsplit(":", 1)[0]: v.numpy() for v in made}


def columns(line: str) -> list[str]:
    """The cells of a row of a text table (columns are two or more spaces apart)."""
    return re.split(r"\s{2,}", line.strip())


def no_leftovers(parent: Path, out: Path) -> bool:
    """Nothing at `out` and no temporary directory of it beside."""
    return not out.exists() and not [p for p in parent.iterdir() if p.name.startswith(f".{out.name}.")]


# -- inspect ------------------------------------------------------------------

def test_inspect_lists_names_shapes_dtypes_slots_and_the_global_step(tf1, capsys):
    directory, values = tf1
    prefix = directory / "model.ckpt-2"
    assert main(["checkpoint", "inspect", str(prefix)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == f"{prefix}: name-based checkpoint (tf.train.Saver, TF1), 12 entries"
    assert lines[1] == "global step: 2 (from variable global_step)"
    rows = {cells[0]: cells[1:] for cells in (columns(line) for line in lines[4:16])}
    assert rows == {
        "Actor/eval/l1/bias": ["(4,)", "float32"],
        "Actor/eval/l1/bias/Adam": ["(4,)", "float32", "slot Adam of Actor/eval/l1/bias (Adam)"],
        "Actor/eval/l1/bias/Adam_1": ["(4,)", "float32", "slot Adam_1 of Actor/eval/l1/bias (Adam)"],
        "Actor/eval/l1/kernel": ["(3, 4)", "float32"],
        "Actor/eval/l1/kernel/Adam": ["(3, 4)", "float32", "slot Adam of Actor/eval/l1/kernel (Adam)"],
        "Actor/eval/l1/kernel/Adam_1": ["(3, 4)", "float32", "slot Adam_1 of Actor/eval/l1/kernel (Adam)"],
        "Actor/eval/out/kernel": ["(4, 1)", "float32"],
        "Actor/eval/out/kernel/Adam": ["(4, 1)", "float32", "slot Adam of Actor/eval/out/kernel (Adam)"],
        "Actor/eval/out/kernel/Adam_1": ["(4, 1)", "float32", "slot Adam_1 of Actor/eval/out/kernel (Adam)"],
        "beta1_power": ["()", "float32", "optimizer state (Adam)"],
        "beta2_power": ["()", "float32", "optimizer state (Adam)"],
        "global_step": ["()", "int64", "global step"],
    }
    assert set(rows) == set(values)
    assert lines[-1] == "3 variables, 6 optimizer slots, 2 optimizer state variables, 1 global step"

    # the directory, the prefix and the .index name the same checkpoint; JSON says the same
    for given in (directory, f"{prefix}.index"):
        assert main(["checkpoint", "inspect", "--format", "json", str(given)]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["checkpoint"] == str(prefix) and data["format"] == "name-based"
        assert data["global_step"] == 2
        by_name = {v["name"]: v for v in data["variables"]}
        assert by_name["Actor/eval/l1/kernel/Adam_1"] == {
            "name": "Actor/eval/l1/kernel/Adam_1", "key": "Actor/eval/l1/kernel/Adam_1",
            "shape": [3, 4], "dtype": "float32", "role": "slot",
            "slot_of": "Actor/eval/l1/kernel", "slot": "Adam_1", "optimizer": "Adam"}
        assert by_name["global_step"]["role"] == "global-step"


@pytest.mark.parametrize("optimizer", ["Momentum", "RMSProp", "Adagrad"])
def test_inspect_marks_the_slots_of_other_optimizers(tmp_path, optimizer, capsys):
    save_tf1(tmp_path, optimizer)
    assert main(["checkpoint", "inspect", "--format", "json", str(tmp_path)]) == 0
    data = json.loads(capsys.readouterr().out)
    slots = {(v["slot_of"], v["slot"]) for v in data["variables"] if v["role"] == "slot"}
    assert slots == {(name, s) for name in MODEL for s in OPTIMIZERS[optimizer]}
    assert {v["name"] for v in data["variables"] if v["role"] == "variable"} == set(MODEL)


def test_inspect_an_object_based_checkpoint_shows_paths_original_names_and_slots(tmp_path, capsys):
    import tensorflow as tf

    w = tf.Variable(tf.ones([2, 3]), name="scope/w")
    opt = tf.compat.v1.train.MomentumOptimizer(0.1, 0.9)
    opt.apply_gradients([(tf.ones([2, 3]), w)])
    prefix = tf.train.Checkpoint(net=tf.Module(), w=w, opt=opt).save(str(tmp_path / "ckpt"))
    assert main(["checkpoint", "inspect", prefix]) == 0
    out = capsys.readouterr().out
    assert f"{prefix}: object-based checkpoint (tf.train.Checkpoint, TF2), 3 entries" in out
    assert "global step: 1 (from the file name)" in out
    table = [columns(line) for line in out.splitlines()[3:7]]
    assert table == [
        ["object path", "original name", "shape", "dtype", "role"],
        ["save_counter", "save_counter", "()", "int64", "tf.train.Checkpoint's save counter"],
        ["w", "scope/w", "(2, 3)", "float32"],
        ["w/.OPTIMIZER_SLOT/opt/momentum", "scope/w/Momentum", "(2, 3)", "float32",
         "slot momentum of w (optimizer object 'opt')"],
    ]


# -- convert with a map -------------------------------------------------------

def test_convert_with_a_map_and_restore_in_plain_tf2(tf1, tmp_path, capsys):
    directory, values = tf1
    mapping = tmp_path / "names.toml"
    mapping.write_text('"Actor/eval/" = "actor/"\n"global_step" = "step"\n'
                       '"beta1_power" = ""\n"beta2_power" = ""\n')
    out = tmp_path / "converted"
    assert main(["checkpoint", "convert", str(directory), str(out), "--map", str(mapping),
                 "--skip-optimizer"]) == 0
    text = capsys.readouterr().out
    assert "matched: 4 (4 renamed)" in text and "  Actor/eval/l1/kernel -> actor/l1/kernel" in text
    assert f"wrote {out}/ckpt-2 (4 variables)" in text
    assert sorted(os.listdir(out)) == ["checkpoint", "ckpt-2.data-00000-of-00001", "ckpt-2.index"]
    assert (out / "checkpoint").read_text().startswith('model_checkpoint_path: "ckpt-2"\n')

    import tensorflow as tf

    restored = restore_by_name(out, {"actor/l1/kernel": (3, 4), "actor/l1/bias": (4,),
                                     "actor/out/kernel": (4, 1), "step": ()}, {"step": tf.int64})
    for old, new in [("Actor/eval/l1/kernel", "actor/l1/kernel"), ("Actor/eval/l1/bias", "actor/l1/bias"),
                     ("Actor/eval/out/kernel", "actor/out/kernel"), ("global_step", "step")]:
        np.testing.assert_array_equal(restored[new], values[old])
        assert restored[new].dtype == values[old].dtype


def test_convert_reports_unmatched_and_missing_and_writes_only_when_allowed(tf1, tmp_path, capsys):
    directory, values = tf1
    mapping = tmp_path / "names.json"
    mapping.write_text(json.dumps({"Actor/eval/l1/kernel": "k", "Actor/eval/l1/bias": "b",
                                   "Actor/eval/l2/kernel": "k2"}))
    out = tmp_path / "out"
    argv = ["checkpoint", "convert", str(directory), str(out), "--map", str(mapping)]
    assert main(argv) == 1
    text = capsys.readouterr().out
    assert "unmatched (in the checkpoint, not in" in text
    assert "  Actor/eval/out/kernel  (4, 1) float32\n" in text
    assert "  Actor/eval/out/kernel/Adam  (4, 1) float32  slot Adam of Actor/eval/out/kernel (Adam)" in text
    assert "  Actor/eval/l1/kernel/Adam -> k/Adam\n" in text  # a slot follows its variable
    assert "missing (in " in text and "  Actor/eval/l2/kernel\n" in text
    assert text.rstrip().endswith("nothing written: 6 unmatched (--allow-unmatched leaves them out); "
                                  "1 missing (--allow-missing writes without them)")
    assert no_leftovers(tmp_path, out)

    assert main([*argv, "--allow-unmatched"]) == 1
    capsys.readouterr()
    assert no_leftovers(tmp_path, out)
    assert main([*argv, "--allow-unmatched", "--allow-missing", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["written"] == str(out / "ckpt-2") and data["missing"] == ["Actor/eval/l2/kernel"]
    assert [m["target"] for m in data["matched"]] == ["b", "b/Adam", "b/Adam_1", "k", "k/Adam", "k/Adam_1"]
    restored = restore_by_name(out, {"k": (3, 4), "b": (4,)})
    np.testing.assert_array_equal(restored["k"], values["Actor/eval/l1/kernel"])

    # OUT exists now: nothing is overwritten
    assert main([*argv, "--allow-unmatched", "--allow-missing"]) == 2
    assert f"{out}: already exists and is not an empty directory" in capsys.readouterr().err


# -- convert with a migrated script -------------------------------------------

MIGRATED = textwrap.dedent("""\
    # a migrated TF2 program: the TF1 variables made once under their TF1 names,
    # the tf.compat.v1 optimizer (same numbers) in a tape step
    import json
    import os
    import sys

    import numpy as np
    import tensorflow as tf

    VARIANT = os.environ.get("VARIANT", "same")
    RESTORE = os.environ.get("RESTORE")
    if RESTORE:  # the recipe of docs/checkpoints.md: restore each variable as it is created
        ckpt = tf.train.Checkpoint(variables={})
        status = ckpt.restore(tf.train.latest_checkpoint(RESTORE))

        def restore_on_creation(next_creator, **kwargs):
            v = next_creator(**kwargs)
            ckpt.variables[v.name.rsplit(":", 1)[0]] = v
            return v

        scope = tf.variable_creator_scope(restore_on_creation)
        scope.__enter__()

    prefix = "Other" if VARIANT == "other" else "Actor"
    x = tf.constant(np.random.RandomState(0).randn(5, 3), tf.float32)
    y = tf.constant(np.random.RandomState(1).randn(5, 1), tf.float32)
    kernel = tf.Variable(tf.random.normal([4, 3] if VARIANT == "shape" else [3, 4]),
                         name=prefix + "/eval/l1/kernel")
    bias = tf.Variable(tf.zeros([4]), name=prefix + "/eval/l1/bias")
    out_kernel = tf.Variable(tf.random.normal([4, 1]), name=prefix + "/eval/out/kernel")
    global_step = tf.compat.v1.train.get_or_create_global_step()
    opt = tf.compat.v1.train.AdamOptimizer(0.01 if not RESTORE else 0.0)
    variables = [kernel, bias, out_kernel]

    def step():
        with tf.GradientTape() as tape:
            h = tf.nn.relu(tf.matmul(x, kernel if VARIANT != "shape" else tf.transpose(kernel)) + bias)
            loss = tf.reduce_mean(tf.square(tf.matmul(h, out_kernel) - y))
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables), global_step=global_step)

    if VARIANT == "function":
        step = tf.function(step)
    if RESTORE:
        before = {v.name: v.numpy().tolist() for v in variables}
        # creates (and so restores) the slots; zero gradients and a zero learning rate keep the weights
        opt.apply_gradients([(tf.zeros_like(v), v) for v in variables], global_step=global_step)
        status.assert_consumed()
        after = {v.name: v.numpy().tolist() for v in opt.variables() + [global_step]}
        print(json.dumps({"before": before, "after": after,
                          "tapeshift": any(m.startswith("tapeshift") for m in sys.modules)}))
        sys.exit(0)
    for _ in range(10_000):  # collecting stops at the second step
        step()
    print("trained to the end")
""")


@pytest.fixture
def migrated(tmp_path):
    script = tmp_path / "migrated_tf2.py"
    script.write_text(MIGRATED)
    return script


@pytest.mark.slow
def test_convert_with_the_migrated_script_and_restore_it_there(tf1, migrated, tmp_path, capsys, monkeypatch):
    directory, values = tf1
    out = tmp_path / "converted"
    monkeypatch.setenv("VARIANT", "function")
    assert main(["checkpoint", "convert", str(directory / "model.ckpt-2.index"), str(out),
                 "--script", str(migrated)]) == 0
    text = capsys.readouterr().out
    assert "migrated_tf2.py: 12 variable names (the training step step() was called a second time)" in text
    assert "matched: 12\n" in text and f"wrote {out}/ckpt-2 (12 variables)" in text

    # the migrated program restores it with plain TensorFlow, never importing tapeshift
    env = {**os.environ, "VARIANT": "same", "RESTORE": str(out), "TF_CPP_MIN_LOG_LEVEL": "3"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run([sys.executable, str(migrated)], env=env, capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["tapeshift"] is False
    for name in MODEL:  # the weights, bit for bit
        np.testing.assert_array_equal(np.array(got["before"][name + ":0"], np.float32), values[name])
    # the slots and beta powers were restored before the step used them: one Adam step
    # with zero gradients scales m by beta1, v by beta2, the powers by the betas
    after = got["after"]
    for name in MODEL:
        np.testing.assert_allclose(after[name + "/Adam:0"], 0.9 * values[name + "/Adam"], rtol=1e-6)
        np.testing.assert_allclose(after[name + "/Adam_1:0"], 0.999 * values[name + "/Adam_1"], rtol=1e-6)
    np.testing.assert_allclose(after["beta1_power:0"], 0.9 * values["beta1_power"], rtol=1e-6)
    np.testing.assert_allclose(after["beta2_power:0"], 0.999 * values["beta2_power"], rtol=1e-6)
    assert after["global_step:0"] == values["global_step"] + 1

    # and the conversion equals the TF1 checkpoint, paired by name
    assert main(["checkpoint", "diff", str(directory), str(out)]) == 0
    text = capsys.readouterr().out
    assert "paired by name" in text
    assert text.rstrip().endswith("12 equal, 0 different, 0 only in A, 0 only in B: the checkpoints agree")


@pytest.mark.slow
def test_convert_with_a_script_of_another_shape_or_model(tf1, migrated, tmp_path, capsys, monkeypatch):
    directory, _ = tf1
    out = tmp_path / "converted"
    monkeypatch.setenv("VARIANT", "shape")
    assert main(["checkpoint", "convert", str(directory), str(out), "--script", str(migrated)]) == 1
    text = capsys.readouterr().out
    assert "(the optimizer AdamOptimizer applied gradients a second time)" in text
    assert ("  Actor/eval/l1/kernel: shape (3, 4) in the checkpoint, (4, 3) in the script "
            "(made at migrated_tf2.py:") in text
    # the slots of a kernel of another shape cannot match either
    assert "  Actor/eval/l1/kernel/Adam: shape (3, 4) in the checkpoint, (4, 3) in the script" in text
    assert text.rstrip().endswith("nothing written: 3 mismatched")
    assert no_leftovers(tmp_path, out)

    # beta1_power, beta2_power and global_step match any Adam-trained model: not enough
    monkeypatch.setenv("VARIANT", "other")
    assert main(["checkpoint", "convert", str(directory), str(out), "--script", str(migrated)]) == 2
    err = capsys.readouterr().err
    assert (f"{directory}/model.ckpt-2: none of its 3 model variables matches the 12 variables of "
            f"{migrated} (a checkpoint of another model?); nothing written") in err
    assert no_leftovers(tmp_path, out)


@pytest.mark.slow
def test_a_script_that_fails_is_reported_with_its_stderr(tf1, tmp_path, capsys):
    script = tmp_path / "broken.py"
    script.write_text("import tensorflow as tf\nv = tf.Variable(1.0, name='v')\nraise RuntimeError('no data here')\n")
    out = tmp_path / "out"
    assert main(["checkpoint", "convert", str(tf1[0]), str(out), "--script", str(script)]) == 2
    err = capsys.readouterr().err
    assert f"{script}: exited with code 1 before its variables could be collected" in err
    assert "RuntimeError: no data here" in err
    assert no_leftovers(tmp_path, out)


# -- diff ---------------------------------------------------------------------

def test_diff_equal_changed_shapes_dtypes_and_one_sided(tf1, tmp_path, capsys):
    directory, values = tf1
    model = {k: v for k, v in values.items() if k in MODEL}
    save_name_based(tmp_path / "a" / "m", model)
    assert main(["checkpoint", "diff", str(directory / "model.ckpt-2"), str(tmp_path / "a" / "m")]) == 1
    text = capsys.readouterr().out
    assert "paired by key" in text
    assert "only in A: Actor/eval/l1/bias/Adam, Actor/eval/l1/bias/Adam_1, " in text
    assert text.rstrip().endswith("3 equal, 0 different, 9 only in A, 0 only in B: the checkpoints differ")

    save_name_based(tmp_path / "b" / "m", model)
    assert main(["checkpoint", "diff", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert "3 equal, 0 different, 0 only in A, 0 only in B: the checkpoints agree" in capsys.readouterr().out

    changed = dict(model)
    changed["Actor/eval/l1/bias"] = model["Actor/eval/l1/bias"] + np.float32(0.5)
    save_name_based(tmp_path / "c" / "m", changed)
    assert main(["checkpoint", "diff", str(tmp_path / "a"), str(tmp_path / "c")]) == 1
    text = capsys.readouterr().out
    [row] = [line for line in text.splitlines() if line.startswith("Actor/eval/l1/bias ")]
    cells = columns(row)
    assert cells[1:4] == ["(4,)", "float32", "0.5"] and cells[5] == "different"
    assert cells[6].startswith("at (")  # where it differs most, with both values
    assert "2 equal, 1 different" in text

    # within float32's tolerance, unless the tolerance is zero
    nudged = dict(model)
    nudged["Actor/eval/l1/kernel"] = np.nextafter(model["Actor/eval/l1/kernel"], np.float32(np.inf))
    save_name_based(tmp_path / "d" / "m", nudged)
    assert main(["checkpoint", "diff", str(tmp_path / "a"), str(tmp_path / "d")]) == 0
    capsys.readouterr()
    assert main(["checkpoint", "diff", "--rtol", "0", "--atol", "0", "--format", "json",
                 str(tmp_path / "a"), str(tmp_path / "d")]) == 1
    data = json.loads(capsys.readouterr().out)
    [kernel] = [v for v in data["variables"] if v["name"] == "Actor/eval/l1/kernel"]
    assert kernel["status"] == "different" and 0 < kernel["max_abs"] < 1e-6
    assert (kernel["rtol"], kernel["atol"]) == (0, 0)
    assert data["equal"] is False

    reshaped = dict(model)
    reshaped["Actor/eval/l1/kernel"] = model["Actor/eval/l1/kernel"].T.copy()
    reshaped["Actor/eval/l1/bias"] = model["Actor/eval/l1/bias"].astype(np.float64)
    del reshaped["Actor/eval/out/kernel"]
    reshaped["extra"] = np.zeros(2, np.float32)
    save_name_based(tmp_path / "e" / "m", reshaped)
    assert main(["checkpoint", "diff", str(tmp_path / "a"), str(tmp_path / "e")]) == 1
    text = capsys.readouterr().out
    assert "shape (3, 4) in A, (4, 3) in B" in text
    assert "dtype float32 in A, float64 in B" in text
    assert "only in A: Actor/eval/out/kernel" in text and "only in B: extra" in text


# -- bad input ----------------------------------------------------------------

def _bad(case: str, good: Path, tmp_path: Path) -> tuple[Path, str]:
    """A bad CKPT argument and the file its message must name."""
    import shutil

    d = tmp_path / case
    if case == "missing":
        return d / "model.ckpt-2", f"{d}/model.ckpt-2: no such checkpoint ({d}/model.ckpt-2.index"
    shutil.copytree(good, d)
    data = d / "model.ckpt-2.data-00000-of-00001"
    index = d / "model.ckpt-2.index"
    if case == "truncated-data":
        data.write_bytes(data.read_bytes()[:len(data.read_bytes()) // 2])
        return d, f"{data}: variable "
    if case == "truncated-index":
        index.write_bytes(index.read_bytes()[:len(index.read_bytes()) // 2])
        return d / "model.ckpt-2", f"{index}: not a readable checkpoint index (truncated or corrupted?)"
    if case == "meta-only":
        for p in d.iterdir():
            if p.suffix != ".meta":
                p.unlink()
        return d / "model.ckpt-2.meta", f"{d}/model.ckpt-2.meta: a .meta file holds the TF1 graph"
    if case == "meta-only-prefix":
        data.unlink()
        index.unlink()
        return d / "model.ckpt-2", f"{d}/model.ckpt-2.meta: only the graph (.meta)"
    if case == "no-checkpoints":
        for p in d.iterdir():
            p.unlink()
        return d, f"{d}: no checkpoint in this directory"
    raise AssertionError(case)


BAD = ["missing", "truncated-data", "truncated-index", "meta-only", "meta-only-prefix", "no-checkpoints"]


@pytest.mark.parametrize("case", BAD)
def test_bad_checkpoints_exit_2_naming_the_file_and_write_nothing(tf1, tmp_path, case, capsys):
    ckpt, message = _bad(case, tf1[0], tmp_path)
    mapping = tmp_path / "same.json"
    mapping.write_text(json.dumps({name: name for name in tf1[1]}))
    out = tmp_path / "out"
    for argv in (["inspect", str(ckpt)],
                 ["convert", str(ckpt), str(out), "--map", str(mapping)],
                 ["diff", str(tf1[0]), str(ckpt)]):
        assert main(["checkpoint", *argv]) == 2, argv
        captured = capsys.readouterr()
        assert message in captured.err, (argv, captured.err)
        assert captured.err.startswith(f"tapeshift checkpoint {argv[0]}: ")
        assert no_leftovers(tmp_path, out)
    if case == "truncated-data":
        assert "(truncated or corrupted?)" in captured.err


def test_a_map_of_another_model_and_bad_arguments_exit_2(tf1, tmp_path, capsys):
    directory, _ = tf1
    mapping = tmp_path / "other.json"
    mapping.write_text(json.dumps({"Critic/w": "w", "Critic/b": "b"}))
    out = tmp_path / "out"
    assert main(["checkpoint", "convert", str(directory), str(out), "--map", str(mapping)]) == 2
    assert (f"{directory}/model.ckpt-2: none of its 3 model variables matches the map {mapping} "
            "(a checkpoint of another model?); nothing written") in capsys.readouterr().err
    assert main(["checkpoint", "convert", str(directory), str(out)]) == 2
    assert "give --map FILE or --script MIGRATED.py" in capsys.readouterr().err
    assert main(["checkpoint", "convert", str(directory), str(out), "--map", str(tmp_path / "nope.json")]) == 2
    assert f"{tmp_path}/nope.json: cannot read the map" in capsys.readouterr().err
    assert main(["checkpoint", "convert", str(directory), str(tmp_path / "no" / "such" / "out"),
                 "--map", str(mapping)]) == 2
    assert f"{tmp_path}/no/such: no such directory (the parent of OUT)" in capsys.readouterr().err
    assert main(["checkpoint", "convert", str(directory), str(out), "--script", str(tmp_path / "gone.py")]) == 2
    assert f"{tmp_path}/gone.py: no such script" in capsys.readouterr().err
    assert no_leftovers(tmp_path, out)
    assert main(["checkpoint"]) == 2  # argparse: an action is required
