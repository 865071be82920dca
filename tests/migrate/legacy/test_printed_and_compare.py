"""Unit tests for verify's printed-number parser, tolerances and comparisons (no subprocess)."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from tapeshift.migrate.legacy.printed import parse_printed, printed_numbers
from tapeshift.migrate.legacy.compare import compare_printed, compare_runs
from tapeshift.migrate.legacy.values import (
    EXACT,
    TOLERANCES,
    compare_values,
    default_tolerance,
    tolerance_for,
)
from tapeshift.migrate.legacy.report import ScriptRun


# -- the printed-number parser ----------------------------------------------

def test_numpy_array_print_multiline():
    text = "[[0.00331133 0.00109661]\n [0.00475729 0.00149316]]\nFalse\n"
    items = parse_printed(text)
    assert [i.value for i in items] == [0.00331133, 0.00109661, 0.00475729, 0.00149316, False]
    assert [i.line for i in items] == [1, 1, 2, 2, 3]
    assert items[0].record == items[3].record != items[4].record
    assert items[4].kind == "bool"


def test_eager_tensor_and_variable_decoration_is_not_a_number():
    eager = "tf.Tensor(\n[[1. 2.]\n [3. 4.]], shape=(2, 2), dtype=float32)"
    assert printed_numbers(eager) == [1.0, 2.0, 3.0, 4.0]
    variable = ("<tf.Variable 'dense_1/kernel:0' shape=(2, 2) dtype=float32, numpy=\n"
                "array([[1., 2.],\n       [3., 4.]], dtype=float32)>")
    assert printed_numbers(variable) == [1.0, 2.0, 3.0, 4.0]
    assert printed_numbers("<tf.Tensor: shape=(), dtype=int64, numpy=7>") == [7.0]
    assert printed_numbers('Tensor("add_1:0", shape=(2, 2), dtype=float32)') == []
    assert printed_numbers("<tf.Variable 'v2:0' shape=(3,) dtype=float32_ref>") == []


def test_scientific_nan_inf_and_signs():
    values = printed_numbers("1e-05 -2.5E+03 3.5e2 nan -inf inf .5 1. -0.25 +4")
    assert values[:3] == [1e-05, -2500.0, 350.0]
    assert math.isnan(values[3])
    assert values[4:] == [-math.inf, math.inf, 0.5, 1.0, -0.25, 4.0]


def test_digits_inside_words_versions_and_units_are_not_numbers():
    text = "conv2d float32 epoch3 took 5ms, tf 2.21.0, layer_2, x1 loss=0.5. step 10: done"
    assert printed_numbers(text) == [0.5, 10.0]


def test_int_float_and_bool_kinds():
    kinds = [i.kind for i in parse_printed("3 3.0 True [ True False] 1e3")]
    assert kinds == ["int", "float", "bool", "bool", "bool", "float"]


def test_elided_array_prints_are_one_not_comparable_item():
    text = "[0. 1. 2. ... 7. 8. 9.]\nafter 3\n[[0 1 2]\n ...\n [7 8 9]]\n"
    items = parse_printed(text)
    assert [i.kind for i in items] == ["elided", "int", "elided"]
    assert items[1].value == 3.0 and items[1].line == 2
    # an ellipsis in plain text is not an elision
    assert printed_numbers("Loading... 5 items") == [5.0]


def test_dict_keys_and_quoted_names_do_not_leak_digits():
    assert printed_numbers("{'a1': 3, 'b': 2.5}") == [3.0, 2.5]
    assert printed_numbers("<tf.Variable 'layer_7/w:0' shape=(1,) dtype=float32, numpy="
                           "array([0.5], dtype=float32)>") == [0.5]


# -- tolerances ---------------------------------------------------------------

def test_default_tolerances_are_dtype_aware():
    assert default_tolerance("float32") == TOLERANCES["float32"] == (1e-5, 1e-6)
    assert default_tolerance("float64")[0] < default_tolerance("float32")[0]
    assert default_tolerance("float16")[0] > default_tolerance("float32")[0]
    assert default_tolerance("bfloat16")[0] > default_tolerance("float16")[0]
    for label in ("int32", "int64", "uint8", "bool", "py:int", "py:bool"):
        assert default_tolerance(label) == EXACT
    assert default_tolerance("py:float") == default_tolerance("printed") == TOLERANCES["float32"]
    # the looser dtype wins; user values override; booleans stay exact
    assert tolerance_for(["float64", "float32"]) == TOLERANCES["float32"]
    assert tolerance_for(["int64", "int64"], rtol=0.1) == (0.1, 0.0)
    assert tolerance_for(["bool", "bool"], rtol=0.1, atol=1.0) == EXACT


def test_graph_vs_eager_float32_difference_passes_default_tolerance():
    # measured on the reference program (docs/tf1-vs-tf2.md, section 6)
    row = compare_values("g", np.float32([0.00109662, 0.00210021]),
                         np.float32([0.00109661, 0.00210019]), "float32", "float32")
    assert row.status == "ok", row
    assert 0 < row.max_abs < 1e-7
    tight = compare_values("g", np.float64([0.00109662]), np.float64([0.00109661]),
                           "float64", "float64")
    assert tight.status == "mismatch"


def test_compare_values_shape_nan_int_and_override():
    shape = compare_values("s", np.zeros((2, 2)), np.zeros(4), "float32", "float32")
    assert shape.status == "mismatch" and "shape (2, 2)" in shape.note
    nan = compare_values("n", np.array([1.0, np.nan]), np.array([1.0, np.nan]), "float32", "float32")
    assert nan.status == "ok"
    nan_vs_num = compare_values("n", np.array([np.nan]), np.array([1.0]), "float32", "float32")
    assert nan_vs_num.status == "mismatch"
    ints = compare_values("i", np.array([3]), np.array([4]), "int64", "int64")
    assert ints.status == "mismatch" and ints.max_abs == 1.0
    loose = compare_values("i", np.array([3]), np.array([4]), "int64", "int64", atol=1.0)
    assert loose.status == "ok"
    rel = compare_values("r", np.array([0.0]), np.array([1e-3]), "float32", "float32")
    assert rel.status == "mismatch" and rel.max_rel == math.inf


# -- printed comparison and reports --------------------------------------------

def test_compare_printed_rows_per_legacy_print():
    legacy = "[[1. 2.]\n [3. 4.]]\nloss 0.25\n"
    new = "tf.Tensor(\n[[1. 2.]\n [3. 4.]], shape=(2, 2), dtype=float32)\nloss 0.2500001\n"
    rows, notes = compare_printed(legacy, new)
    assert [(r.name, r.status) for r in rows] == [("stdout:1", "ok"), ("stdout:3", "ok")]
    assert notes == []
    rows, _ = compare_printed("step 1000000 loss 0.5\n", "step 1000001 loss 0.5\n")
    assert rows[0].status == "mismatch" and "integers" in rows[0].note
    rows, _ = compare_printed("1 2 3\n", "1 2\n")
    assert rows[-1].name == "stdout" and rows[-1].status == "mismatch"
    assert "legacy printed 3 numbers, new printed 2" in rows[-1].note
    rows, _ = compare_printed("True\n", "1.0\n")
    assert rows[0].status == "mismatch"


def test_compare_printed_elided():
    rows, notes = compare_printed("[0 1 ... 8 9]\n5\n", "[0 1 ... 8 9]\n5\n")
    assert [r.status for r in rows] == ["elided", "ok"]
    rows, notes = compare_printed("[0 1 ... 8 9]\n5\n", "[0 1 2 3 4 5 6 7 8 9]\n5\n")
    assert rows[0].status == "not-comparable" and notes


def _run(role, values, stdout="", random_ops=None, dtypes=None, error=None):
    run = ScriptRun(role, Path(f"{role}.py"), [], 0 if error is None else 1, stdout,
                    "Traceback...\nValueError: boom\n" if error else "", 0.1, error=error)
    run.values = {k: np.asarray(v) for k, v in values.items()}
    run.dtypes = dtypes or {k: run.values[k].dtype.name for k in values}
    run.random_ops = random_ops or {}
    return run


def test_compare_runs_exit_codes_and_text():
    ok = compare_runs(_run("legacy", {"w": np.float32([1, 2]), "g": 1}),
                      _run("new", {"w": np.float32([1, 2]), "g": 1, "extra": 3.0}))
    assert (ok.status, ok.exit_code, ok.compared) == ("ok", 0, 2)
    assert ok.only_new == ["extra"]
    text = ok.to_text()
    assert "max abs diff" in text and "OK: all 2 compared agree" in text
    data = json.loads(ok.to_json())
    assert data["exit_code"] == 0 and {r["name"] for r in data["rows"]} == {"w", "g"}

    nothing = compare_runs(_run("legacy", {"a": 1}), _run("new", {"b": 1}))
    assert (nothing.status, nothing.exit_code) == ("nothing-compared", 1)

    bad = compare_runs(_run("legacy", {"w": np.float32([1, 2])}),
                       _run("new", {"w": np.float32([1, 2.5])}))
    assert (bad.status, bad.exit_code) == ("mismatch", 1)
    assert "MISMATCH" in bad.to_text() and "w" in bad.summary()
    assert "random" not in bad.to_text()

    failed = compare_runs(_run("legacy", {}), _run("new", {}, error="exited with code 1"))
    assert (failed.status, failed.exit_code) == ("failed", 2)
    text = failed.to_text()
    assert "the new script new.py exited with code 1" in text and "ValueError: boom" in text


def test_random_op_mismatch_is_reported_as_such():
    report = compare_runs(
        _run("legacy", {"w": np.float32([0.3, -1.2])}, random_ops={"RandomStandardNormal": 1}),
        _run("new", {"w": np.float32([1.1, 0.4])}, random_ops={"RandomStandardNormal": 1}))
    assert report.exit_code == 1
    assert report.rows[0].random
    text = report.to_text()
    assert "MISMATCH (random ops)" in text
    assert "graph-level seed" in text and "stateless" in text
    assert json.loads(report.to_json())["rows"][0]["random"] is True


def _seeded(run, seed, modes=None, unseeded=None):
    run.seed = seed
    run.random_modes = modes or {}
    run.unseeded = unseeded or {}
    return run


def test_random_causes_with_and_without_seed():
    ops = {"RandomUniform": 1}
    w_a, w_b = {"w": np.float32([0.3])}, {"w": np.float32([0.9])}
    # no seed: TF random ops are a cause in any mode
    report = compare_runs(_seeded(_run("legacy", w_a, random_ops=ops), None, {"graph": 1}),
                          _seeded(_run("new", w_b, random_ops=ops), None, {"graph": 1}))
    assert report.random_causes == ["random ops"]
    # --seed, TF1 graph against eager: still a cause, and the text says the seed does not help
    report = compare_runs(_seeded(_run("legacy", w_a, random_ops=ops), 7, {"graph": 1}),
                          _seeded(_run("new", w_b, random_ops=ops), 7, {"eager": 1}))
    assert report.random_causes == ["random ops"]
    text = report.to_text()
    assert "--seed 7 set TensorFlow's graph seed and eager seed to 7" in text
    assert "(in a TF1 graph)" in text and "(eagerly)" in text
    # --seed, both TF1 graphs (a compat-mode migration): same stream, so a mismatch is a real one
    report = compare_runs(_seeded(_run("legacy", w_a, random_ops=ops), 7, {"graph": 1}),
                          _seeded(_run("new", w_b, random_ops=ops), 7, {"graph": 1}))
    assert report.random_causes == [] and not report.rows[0].random
    assert "random ops used" not in report.to_text() and "likely cause" not in report.summary()
    # unseeded numpy named with its first site, before TF random ops
    site = {"numpy": {"calls": 3, "call": "np.random.rand", "first": "/x/train.py:5"}}
    report = compare_runs(_seeded(_run("legacy", w_a, random_ops=ops), None, {"graph": 1}, site),
                          _seeded(_run("new", w_b), None))
    assert report.random_causes == ["unseeded numpy", "random ops"]
    assert report.rows[0].causes == ["unseeded numpy", "random ops"]
    text = report.to_text()
    assert "MISMATCH (unseeded numpy, random ops)" in text
    assert "unseeded numpy (legacy: np.random.rand at /x/train.py:5 (3 calls))" in text
    assert "likely cause: unseeded numpy, TF random ops" in report.summary()
    assert json.loads(report.to_json())["random_causes"] == ["unseeded numpy", "random ops"]


def test_json_has_no_bare_infinity():
    report = compare_runs(_run("legacy", {"x": np.float32([0.0])}),
                          _run("new", {"x": np.float32([1.0])}))
    assert "Infinity" not in report.to_json()
    assert json.loads(report.to_json())["rows"][0]["max_rel"] == "inf"


# -- symbolic TensorFlow objects (issue #24) --------------------------------------

# what TF 2.21 prints for these objects in a TF1 graph (legacy) and eagerly (new)
GRAPH_OP_DUMP = """name: "x"
op: "Const"
attr {
  key: "value"
  value {
    tensor {
      dtype: DT_FLOAT
      tensor_shape {
        dim {
          size: 2
        }
      }
      tensor_content: "\\000\\000\\200?\\000\\000\\000@"
    }
  }
}
"""


def test_symbolic_reprs_are_one_item_without_numbers():
    for text in ["[<tf.Tensor 'gradients/Mul_1_grad/Mul_1:0' shape=() dtype=float32>]",
                 'Tensor("add_12:0", shape=(3, 4), dtype=float32)',
                 "<tf.Variable 'layer_2/w:0' shape=(2,) dtype=float32_ref>",
                 "<tf.Operation 'init_1' type=NoOp>",
                 GRAPH_OP_DUMP,
                 'node {\n  name: "a_1"\n  op: "Const"\n}\nversions {\n  producer: 1882\n}\n']:
        items = parse_printed(text)
        assert [i.kind for i in items] == ["symbolic"], (text, items)
        assert printed_numbers(text) == []


def test_an_op_dump_ends_where_its_fields_end():
    items = parse_printed(GRAPH_OP_DUMP + "size: 3\nloss: 0.5\n")
    assert [(i.kind, i.value, i.line) for i in items] == [
        ("symbolic", None, 1), ("int", 3.0, 17), ("float", 0.5, 18)]
    two = parse_printed('name: "init"\nop: "NoOp"\nname: "b"\nop: "NoOp"\n\n4\n')
    assert [i.kind for i in two] == ["symbolic", "symbolic", "int"]


def test_eager_reprs_are_their_values_and_one_unit():
    items = parse_printed("grad [<tf.Tensor: shape=(2,), dtype=float32, numpy=array([1.5, 2.], "
                          "dtype=float32)>, <tf.Tensor: shape=(), dtype=int32, numpy=7>] step 3")
    assert [(i.value, i.kind) for i in items] == [(1.5, "float"), (2.0, "float"), (7.0, "int"),
                                                   (3.0, "int")]
    assert items[0].unit == items[1].unit != items[2].unit and items[3].unit is None
    multi = parse_printed("<tf.Tensor: shape=(2, 2), dtype=float32, numpy=\narray([[1., 2.],\n"
                          "       [3., 4.]], dtype=float32)>\nnext 5\n")
    assert [i.value for i in multi] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert len({i.record for i in multi[:4]}) == 1 and multi[4].record != multi[0].record


def _statuses(legacy, new):
    rows, _ = compare_printed(legacy, new)
    return [(r.name, r.status) for r in rows], rows


def test_printed_graph_tensor_against_its_eager_value_is_set_aside_and_alignment_holds():
    # the case: print(gradients) before running it, then the values
    legacy = ("[<tf.Tensor 'gradients/Mul_1_grad/Mul_1:0' shape=() dtype=float32>]\n"
              'Tensor("mul_2:0", shape=(), dtype=float32)\n[np.float32(6.0)]\ny: 9.0\n')
    new = ("[<tf.Tensor: shape=(), dtype=float32, numpy=6.0>]\n"
           "tf.Tensor(9.0, shape=(), dtype=float32)\n[np.float32(6.0)]\ny: 9.0\n")
    got, rows = _statuses(legacy, new)
    assert got == [("stdout:1", "symbolic"), ("stdout:2", "symbolic"),
                   ("stdout:3", "ok"), ("stdout:4", "ok")]
    assert "gradients/Mul_1_grad/Mul_1:0" in rows[0].note and "6.0" in rows[0].note
    assert not any(r.compared for r in rows[:2])
    # one number changed after the tensor prints is still found, on its own line
    got, rows = _statuses(legacy, new.replace("y: 9.0", "y: 9.5"))
    assert got[-1] == ("stdout:4", "mismatch") and rows[-1].note == "9.0 vs 9.5"
    assert [n for n, s in got if s == "mismatch"] == ["stdout:4"]


def test_symbolic_against_plain_numbers_and_against_nothing():
    # legacy print(x) of a graph tensor, new print(x.numpy()): the rest of that print
    got, _ = _statuses('x = Tensor("x:0", shape=(2,), dtype=float32)\n1 2\n',
                       "x = [1. 2.]\n1 2\n")
    assert got == [("stdout:1", "symbolic"), ("stdout:2", "ok")]
    # both print a tensor object: nothing compared, nothing lost
    got, _ = _statuses("<tf.Variable 'w:0' shape=(2,) dtype=float32_ref>\n0.5\n",
                       'Tensor("w:0", shape=(2,), dtype=float32)\n0.5\n')
    assert got == [("stdout:2", "ok")]
    # a symbolic object on the new side (a print while tracing a tf.function)
    got, _ = _statuses("[6.]\n7\n", 'Tensor("g:0", shape=(1,), dtype=float32)\n7\n')
    assert got == [("stdout:1", "symbolic"), ("stdout:2", "ok")]
    # a value printed only by the new script, with no symbolic object opposite, is still counted
    got, rows = _statuses("0.5\n", "0.5\n0.25\n")
    assert got[-1] == ("stdout", "mismatch") and "legacy printed 1 numbers, new printed 2" in rows[-1].note


# -- property: whatever numpy prints (unelided) reads back as its numbers ------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

_shapes = hnp.array_shapes(min_dims=0, max_dims=3, max_side=4)
_arrays = st.one_of(
    hnp.arrays(np.float32, _shapes, elements=st.floats(-1e6, 1e6, width=32)),
    hnp.arrays(np.float64, _shapes, elements=st.floats(allow_nan=True, allow_infinity=True)),
    hnp.arrays(np.int64, _shapes, elements=st.integers(-10**12, 10**12)),
    hnp.arrays(np.bool_, _shapes),
)


@settings(max_examples=200, deadline=None)
@given(arr=_arrays, as_repr=st.booleans())
def test_numpy_prints_read_back(arr, as_repr):
    text = repr(arr) if as_repr else str(arr)
    values = printed_numbers(text)
    flat = arr.ravel().tolist()
    assert len(values) == len(flat), text
    for got, want in zip(values, flat, strict=True):
        if isinstance(want, bool):
            assert got is want
        elif isinstance(want, float) and math.isnan(want):
            assert math.isnan(got)
        else:
            # numpy prints at most 8 fractional (or significant) digits
            assert got == pytest.approx(want, rel=1e-7, abs=1e-8), text
