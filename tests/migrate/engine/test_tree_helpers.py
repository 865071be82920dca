"""Gradient helpers across the files of a tree (engine/tree_helpers.py).

A helper (``def flat_grad(f, params): ... tf.gradients(f, params)``) defined in
one file and called from others takes the caller's tape in every file, or stays
TF1 in every file: the plan reads the helpers and the imports, then migrates the
files involved until no file leaves a helper or a call of it unconverted.
"""

import json
import textwrap
from pathlib import Path

import pytest

from tapeshift.migrate.commands.cli import main
from tapeshift.migrate.engine.pipeline import migrate_source
from tapeshift.migrate.engine.settings import Settings
from tapeshift.migrate.engine.tree_helpers import exported_helpers, imported_helpers, plan

TIMEOUT = 300  # seconds per TensorFlow run (the machine is shared and slow)

UTILS = """
import tensorflow as tf


def flat_grad(f, params):
    \"\"\"The gradient of f with respect to params, as one flat vector.\"\"\"
    return tf.concat([tf.reshape(g, [-1]) for g in tf.gradients(f, params)], axis=0)


def norm(x):
    return tf.norm(x)
"""

TRAIN = """
import numpy as np
import tensorflow as tf

IMPORT

x = tf.placeholder(tf.float32, [None, 2])
W = tf.Variable([[0.5], [-0.25]])
b = tf.Variable([0.1])
loss = tf.reduce_mean(tf.square(tf.matmul(x, W) + b))
g = CALL(loss, [W, b])

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run(g, feed_dict={x: np.ones((3, 2), np.float32)}))
"""


def _write(root: Path, files: dict) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


def _train(import_line: str, call: str) -> str:
    return TRAIN.replace("IMPORT", import_line).replace("CALL", call)


def _migrate(path, source, facts):
    r = migrate_source(source, path, settings=Settings(tree_helpers=facts))
    return r.output if r.mode == "tape" else None


def _plan(root: Path) -> dict:
    files = {str(p): p.read_text(encoding="utf-8") for p in sorted(root.rglob("*.py"))}
    return {Path(p).relative_to(root).as_posix(): f for p, f in plan(files, root, _migrate).items()}


def test_a_module_function_whose_gradient_takes_two_parameters_is_a_helper():
    assert exported_helpers(textwrap.dedent(UTILS)) == {"flat_grad": (("f", 0), ("params", 1))}
    # a helper passed around as a value is not one: its uses are not all calls
    assert exported_helpers(textwrap.dedent(UTILS) + "\nHELPERS = [flat_grad]\n") == {}


@pytest.mark.parametrize("import_line, call", [
    ("from utils import flat_grad", "flat_grad"),
    ("from utils import flat_grad as fg", "fg"),
    ("import utils", "utils.flat_grad"),
    ("import utils as U", "U.flat_grad"),
    ("from utils import *", "flat_grad"),
])
def test_each_import_form_reaches_the_helper(tmp_path, import_line, call):
    _write(tmp_path, {"utils.py": UTILS, "train.py": _train(import_line, call)})
    facts = _plan(tmp_path)
    spec = (("f", 0), ("params", 1))
    assert facts == {"utils.py": (("def", "flat_grad", *spec),),
                     "train.py": (("call", call, *spec),)}


def test_packages_and_relative_imports(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/ops/__init__.py": "",
        "pkg/ops/grads.py": UTILS,
        "pkg/train.py": _train("from .ops.grads import flat_grad", "flat_grad"),
        "scripts/run.py": _train("from pkg.ops import grads", "grads.flat_grad"),
    })
    facts = _plan(tmp_path)
    assert set(facts) == {"pkg/ops/grads.py", "pkg/train.py", "scripts/run.py"}
    assert facts["scripts/run.py"][0][:2] == ("call", "grads.flat_grad")


def test_the_importing_files_folder_comes_first(tmp_path):
    # scripts/utils.py is what `import utils` finds from scripts/train.py
    _write(tmp_path, {"utils.py": UTILS, "scripts/utils.py": "def flat_grad(f, p):\n    return f\n",
                      "scripts/train.py": _train("from utils import flat_grad", "flat_grad")})
    assert _plan(tmp_path) == {}


def test_one_call_that_cannot_take_a_tape_keeps_the_helper_tf1_everywhere(tmp_path):
    _write(tmp_path, {
        "utils.py": UTILS,
        "train.py": _train("from utils import flat_grad", "flat_grad"),
        # the sources are a name whose kind is unknown: TS104, no tape passed
        "other.py": _train("from utils import flat_grad", "flat_grad").replace(
            "[W, b])", "params)").replace("loss = ", "params = get_params()\nloss = "),
    })
    assert _plan(tmp_path) == {}


def test_imported_helpers_names_what_the_file_imports_from_the_tree(tmp_path):
    _write(tmp_path, {"utils.py": UTILS})
    source = "import utils as U\nfrom utils import norm, flat_grad as fg\nimport os\n"
    found = imported_helpers(source, tmp_path / "train.py", tmp_path,
                             lambda dotted, folder: dotted if dotted == "utils" else None)
    assert found == {"U.*": ("utils", "*"), "norm": ("utils", "norm"),
                     "fg": ("utils", "flat_grad")}


def _run(tree: Path, out: Path, *extra: str) -> dict:
    report = out.parent / f"{out.name}.json"
    main(["migrate", "--out", str(out), "--jobs", "1", "--format", "json", "--report",
          str(report), *extra, str(tree)])
    return {Path(r["path"]).name: r for r in json.loads(report.read_text())["files"]}


def test_tree_mode_gives_the_helper_and_its_callers_the_tape(tmp_path):
    tree = tmp_path / "tree"
    _write(tree, {"utils.py": UTILS, "train.py": _train("import utils", "utils.flat_grad")})
    records = _run(tree, tmp_path / "out")
    assert {name: r["mode"] for name, r in records.items()} == {"utils.py": "tape",
                                                                "train.py": "tape"}
    utils = (tmp_path / "out" / "utils.py").read_text()
    train = (tmp_path / "out" / "train.py").read_text()
    assert "def flat_grad(f, params, tape):" in utils
    assert "tape.gradient(f, params)" in utils
    assert "    with tf.GradientTape() as tape:\n" in train
    assert "g = utils.flat_grad(loss, [W, b], tape=tape)" in train
    # the migrated tree is a tree the plan leaves alone
    again = _run(tmp_path / "out", tmp_path / "again")
    assert all(r["mode"] == "unchanged" for r in again.values()), again


def test_shards_plan_on_the_whole_tree(tmp_path):
    tree = tmp_path / "tree"
    _write(tree, {"utils.py": UTILS, **{f"train_{i}.py": _train("from utils import flat_grad",
                                                                   "flat_grad") for i in range(4)}})
    _run(tree, tmp_path / "whole")
    for k in (1, 2):
        _run(tree, tmp_path / "shards", "--shard", f"{k}/2")
    whole = {p.name: p.read_text() for p in (tmp_path / "whole").glob("*.py")}
    shards = {p.name: p.read_text() for p in (tmp_path / "shards").glob("*.py")}
    assert shards == whole
    assert all("tape=tape" in text for name, text in whole.items() if name != "utils.py")


@pytest.mark.tf
@pytest.mark.slow
def test_the_migrated_tree_computes_the_legacy_numbers(tmp_path):
    from tapeshift.migrate.legacy.verify import verify_scripts

    tree = tmp_path / "tree"
    _write(tree, {"utils.py": UTILS, "train.py": _train("from utils import flat_grad as fg",
                                                        "fg")})
    _run(tree, tmp_path / "out")
    report = verify_scripts(tree / "train.py", tmp_path / "out" / "train.py", timeout=TIMEOUT)
    assert report.status == "ok", report.to_text()
    assert any(row.name == "stdout:1" and row.compared for row in report.rows), report.to_text()
