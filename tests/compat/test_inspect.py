"""Gradient-flow inspection (tapeshift.compat.flow): the table against numpy, JSON, the
vanishing/exploding marks, and the chart's plotted numbers against the table."""

import json
import sys

import numpy as np
import pytest
import tensorflow as tf

import tapeshift.compat.demo
from tapeshift.compat import BACKENDS, cut, gradient, reference, split_gradient
from tapeshift.compat.flow import (
    DEFAULT_THRESHOLDS,
    FlowReport,
    MatplotlibMissingError,
    Thresholds,
    flow_report,
    plot_flow,
)
from tapeshift.migrate.commands.cli import main

pytestmark = pytest.mark.tf

PNG = b"\x89PNG\r\n\x1a\n"
P, I = reference.params(), reference.inputs()


@pytest.fixture(scope="module")
def reference_results():
    return {b: split_gradient(reference.model, P, I, cuts=["h"], backend=b, target_name="loss")
            for b in BACKENDS}


def numpy_stats(a):
    a = np.asarray(a, np.float64)
    return {"shape": a.shape, "norm": np.linalg.norm(a.ravel()), "max_abs": np.abs(a).max(),
            "zero_fraction": np.mean(a == 0), "nan": 0, "inf": 0}


def test_reference_table_matches_numpy(tf_backend, reference_results):
    r = reference_results[tf_backend.name]
    report = flow_report(r)
    assert [row.name for row in report.rows] == ["stage:h", "W", "b"]
    assert [row.kind for row in report.rows] == ["stage", "gradient", "gradient"]
    tensors = {"stage:h": r.stage("h").gradient, "W": r.grads["W"], "b": r.grads["b"]}
    for name, t in tensors.items():
        row, expected = report.row(name), numpy_stats(t)
        assert row.shape == expected["shape"]
        assert row.norm == pytest.approx(expected["norm"], rel=1e-12)
        assert row.max_abs == pytest.approx(expected["max_abs"], rel=1e-12)
        assert row.zero_fraction == expected["zero_fraction"]
        assert (row.nan, row.inf) == (0, 0)
    # and against dloss/dh from numpy, independent of the backend
    p64, i64 = reference.params(np.float64), reference.inputs(np.float64)
    h = i64["x"] @ p64["W"] + p64["b"]
    dl_dh = 2.0 * (np.tanh(h) - i64["y0"]) * (1 - np.tanh(h) ** 2) / h.size
    assert report.row("stage:h").norm == pytest.approx(np.linalg.norm(dl_dh), rel=1e-5)
    assert report.row("W").norm == pytest.approx(np.linalg.norm(i64["x"].T @ dl_dh), rel=1e-5)
    assert report.norms() == r.norms()
    assert report.marked() == []  # nothing vanishes or explodes in the reference


def test_json_round_trip_text_and_direct_results(reference_results):
    report = flow_report(reference_results["graph"])
    text = report.to_json()
    assert FlowReport.from_json(text) == report
    data = json.loads(text)
    assert data["thresholds"] == {"vanishing_norm": 1e-6, "exploding_norm": 1e3,
                                  "vanishing_ratio": 1e-2, "exploding_ratio": 1e2}
    assert [row["name"] for row in data["rows"]] == ["stage:h", "W", "b"]
    assert data["rows"][0]["shape"] == [2, 2] and data["rows"][0]["marks"] == []
    table = report.to_text().splitlines()
    assert table[1].split() == ["tensor", "shape", "L2", "norm", "max|g|", "zeros", "NaN", "Inf",
                                "passed", "on", "marks"]
    assert [line.split()[0] for line in table[3:6]] == ["stage:h", "W", "b"]
    assert f"{report.row('W').norm:.3e}" in table[4]

    direct = flow_report(gradient(reference.model, P, I, wrt=["W", "x"], backend="tape"))
    assert [row.name for row in direct.rows] == ["W", "x"] and direct.mode == "direct"


# -- marks -----------------------------------------------------------------------

rng = np.random.default_rng(5)
WIDTH = 8
X = {"x": rng.normal(size=(4, WIDTH)).astype(np.float32)}
SIGMOID = {f"W{k}": (rng.normal(size=(WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(np.float32)
           for k in range(12)}
# orthogonal matrices times 4: each layer multiplies the gradient's norm by exactly 4
LINEAR = {f"W{k}": (4.0 * np.linalg.qr(rng.normal(size=(WIDTH, WIDTH)))[0]).astype(np.float32)
          for k in range(8)}


def chain(activation, layers):
    def model(p, i):
        h = i["x"]
        for k in range(layers):
            h = activation(tf.matmul(h, p[f"W{k}"]))
            if k % 4 == 3:
                h = cut(f"h{k + 1}", h)
        return tf.reduce_sum(h)

    return model


def expected_marks(result, th=DEFAULT_THRESHOLDS):
    """The rule of the docstring, recomputed from the result's own arrays."""
    out = {}
    stages = list(result.stages)  # from the target down
    for k, s in enumerate(stages):
        n = np.linalg.norm(s.gradient.astype(np.float64))
        ratio = n / stages[k - 1].passed_norm if k else 1.0
        out[f"stage:{s.name}"] = (n < th.vanishing_norm or ratio < th.vanishing_ratio,
                                  n > th.exploding_norm or ratio > th.exploding_ratio)
    for name, g in result.grads.items():
        n = np.linalg.norm(g.astype(np.float64))
        out[name] = (n < th.vanishing_norm, n > th.exploding_norm)
    return out


def test_deep_sigmoid_chain_is_marked_vanishing():
    r = split_gradient(chain(tf.sigmoid, 12), SIGMOID, X, cuts=["h4", "h8", "h12"],
                       backend="tape")
    report = flow_report(r)
    marks = {row.name: ("vanishing" in row.marks, "exploding" in row.marks)
             for row in report.rows}
    assert marks == expected_marks(r)
    assert [row.name for row in report.rows[:3]] == ["stage:h4", "stage:h8", "stage:h12"]
    assert report.marked("exploding") == []
    vanishing = {row.name for row in report.marked("vanishing")}
    assert {"stage:h4", "stage:h8", "W0"} <= vanishing  # deep end: by ratio and by norm
    assert "stage:h12" not in vanishing and "W11" not in vanishing  # next to the loss: fine
    assert "x the norm passed on by stage:h8" in " ".join(report.row("stage:h4").notes)
    assert "< 1e-06" in " ".join(report.row("W0").notes)


def test_deep_linear_chain_with_large_weights_is_marked_exploding():
    r = split_gradient(chain(tf.identity, 8), LINEAR, X, cuts=["h4", "h8"], backend="graph")
    report = flow_report(r)
    marks = {row.name: ("vanishing" in row.marks, "exploding" in row.marks)
             for row in report.rows}
    assert marks == expected_marks(r)
    # d sum(h8)/dh4 is the all-ones matrix times (W4..W7)^T: 4^4 times its norm
    assert report.row("stage:h4").norm == pytest.approx(256 * np.sqrt(4 * WIDTH), rel=1e-4)
    assert report.marked("vanishing") == []
    assert {row.name for row in report.marked("exploding")} == {"stage:h4"} | set(LINEAR)
    # with thresholds raised above these numbers, nothing is marked
    loose = flow_report(r, Thresholds(exploding_norm=1e6, exploding_ratio=1e3))
    assert loose.marked() == []


def test_nonfinite_and_unconnected_rows():
    mask = np.array([[1.0, 1.0], [1.0, 0.0]], np.float32)

    def model(p, i):
        h = cut("h", tf.matmul(i["x"], p["W"]))  # = W
        return tf.reduce_sum(tf.sqrt(h) * mask)  # d/dh = mask * 0.5 / sqrt(h)

    params = {"W": np.array([[0.0, 4.0], [-1.0, 1.0]], np.float32),
              "unused": np.ones(3, np.float32)}
    r = split_gradient(model, params, {"x": np.eye(2, dtype=np.float32)}, cuts=["h"],
                       backend="tape")
    report = flow_report(r)
    stage = report.row("stage:h")  # [[inf, 0.25], [nan, 0]]
    assert (stage.inf, stage.nan, stage.zero_fraction) == (1, 1, 0.25)
    assert stage.marks == ("nonfinite",) and stage.notes == ("1 NaN and 1 Inf",)
    assert report.row("unused").marks == ("unconnected",) and report.row("unused").norm is None
    assert FlowReport.from_json(report.to_json()).row("unused") == report.row("unused")


# -- the chart -------------------------------------------------------------------


def test_chart_plots_the_table_norms(tmp_path, reference_results):
    path = tmp_path / "flow.png"
    chart = plot_flow(reference_results, path, title="reference")
    data = path.read_bytes()
    assert data.startswith(PNG) and len(data) > 5000
    ax = chart.figure.axes[0]
    assert ax.get_yscale() == "log" and ax.get_title() == "reference"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["stage:h", "W", "b"]
    lines = {line.get_label(): line for line in ax.get_lines() if not line.get_label().startswith("_")}
    assert set(lines) == set(BACKENDS)
    for backend, r in reference_results.items():
        table = flow_report(r).norms()
        assert chart.values["reference"][backend] == table
        np.testing.assert_array_equal(lines[backend].get_ydata(), list(table.values()))
        np.testing.assert_array_equal(lines[backend].get_xdata(), [0, 1, 2])


def test_chart_without_matplotlib_names_the_extra(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MatplotlibMissingError, match=r"pip install 'tapeshift\[plot\]'"):
        plot_flow([], tmp_path / "x.png")
    assert main(["demo", "--plot", str(tmp_path / "x.png")]) == 2
    assert "pip install 'tapeshift[plot]'" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_demo_plot_writes_both_panels(tmp_path, capsys, monkeypatch):
    charts = []
    real_plot = tapeshift.compat.demo.plot
    monkeypatch.setattr(tapeshift.compat.demo, "plot", lambda path: charts.append(real_plot(path)) or charts[-1])
    path = tmp_path / "flow.png"
    assert main(["demo", "--plot", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "split matches direct:   yes" in out and str(path) in err
    assert path.read_bytes().startswith(PNG)
    (chart,) = charts
    assert len(chart.figure.axes) == 2
    reference_panel, multistage_panel = chart.values.values()
    assert list(reference_panel["graph"]) == ["stage:h", "W", "b"]
    assert list(multistage_panel["tape"]) == ["stage:h1", "stage:h2", "stage:out", "W1", "W2", "W3"]
    # the numbers examples/multistage.py prints for the clipped split
    assert round(multistage_panel["function"]["stage:h2"], 5) == 0.25158
    assert round(multistage_panel["graph"]["stage:h1"], 5) == 0.03470
