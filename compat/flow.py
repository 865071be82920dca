"""Gradient-flow inspection of a ``GradientResult``: a table, marks and a chart.

    from tapeshift.compat.flow import flow_report, plot_flow

    r = split_gradient(model, params, inputs, cuts=["h1", "h2"], backend="tape")
    report = flow_report(r)
    print(report.to_text())          # one row per stage (forward order), then per gradient
    report.records()                 # the same rows as dicts; report.to_json() as JSON
    report.marked()                  # rows marked vanishing / exploding / nonfinite
    plot_flow({"graph": r_graph, "tape": r_tape}, "flow.png")   # needs tapeshift[plot]

Rows: each cut's stage gradient (the gradient arriving at the cut, before its
transform), cuts in forward order, then each final gradient (``result.grads``).
Row names are those of ``GradientResult.norms()``: ``stage:<cut>`` and the
source name, and the table's L2 norms equal ``result.norms()``.

Marks (``Thresholds``, all configurable):

- ``vanishing``: L2 norm below ``vanishing_norm`` (1e-6), or a stage whose norm
  is below ``vanishing_ratio`` (1e-2) times the norm passed on by the stage
  above it (the next cut towards the target, after that cut's transform).
- ``exploding``: L2 norm above ``exploding_norm`` (1e3), or a stage above
  ``exploding_ratio`` (1e2) times the norm passed on by the stage above it.
- ``nonfinite``: any NaN or Inf.

Why these numbers: with a learning rate of 1e-3, a gradient of norm 1e-6 moves
a weight of size 1 by less than float32 resolution (1.2e-7), and one of norm
1e3 moves it by more than its own size in one step. A factor of 100 between two
consecutive cuts is far outside what a well-initialised layer does (a sigmoid
scales a gradient by at most 1/4, a tanh or ReLU by at most 1, a
variance-preserving matrix by about 1). The ratio compares with what the stage
above passed on, so a deliberate clip or scale at a cut is not itself a mark.

matplotlib is imported only by ``plot_flow`` (extra ``plot``); the chart is drawn
with the Agg canvas and never touches pyplot's global state.
"""

from __future__ import annotations

import io
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from tapeshift.compat.result import GradientResult

PLOT_HINT = (
    "the gradient-flow chart needs matplotlib. Install it with\n"
    "    pip install 'tapeshift[plot]'"
)

STAGE = "stage"
GRADIENT = "gradient"

VANISHING = "vanishing"
EXPLODING = "exploding"
NONFINITE = "nonfinite"
UNCONNECTED = "unconnected"


class MatplotlibMissingError(ImportError):
    """matplotlib is not installed; the message says how to install it."""


@dataclass(frozen=True)
class Thresholds:
    """When a row is marked vanishing or exploding (see the module docstring)."""

    vanishing_norm: float = 1e-6
    exploding_norm: float = 1e3
    vanishing_ratio: float = 1e-2
    exploding_ratio: float = 1e2

    def __post_init__(self):
        if not 0 <= self.vanishing_norm < self.exploding_norm:
            raise ValueError(f"thresholds: need 0 <= vanishing_norm < exploding_norm, got "
                             f"{self.vanishing_norm:g} and {self.exploding_norm:g}")
        if not 0 <= self.vanishing_ratio < 1 < self.exploding_ratio:
            raise ValueError(f"thresholds: need 0 <= vanishing_ratio < 1 < exploding_ratio, got "
                             f"{self.vanishing_ratio:g} and {self.exploding_ratio:g}")

    def describe(self) -> str:
        return (
            f"vanishing: L2 < {self.vanishing_norm:.0e} or < {self.vanishing_ratio:.0e} x the "
            f"stage above; exploding: L2 > {self.exploding_norm:.0e} or > "
            f"{self.exploding_ratio:.0e} x the stage above; nonfinite: any NaN/Inf"
        )


DEFAULT_THRESHOLDS = Thresholds()


@dataclass(frozen=True)
class FlowRow:
    """Statistics of one gradient tensor. Numbers are None for an unconnected source."""

    name: str  # "stage:<cut>" or the source name, as in GradientResult.norms()
    kind: str  # "stage" or "gradient"
    shape: tuple[int, ...] | None
    norm: float | None  # L2 norm of the whole tensor (float64)
    max_abs: float | None
    zero_fraction: float | None  # exact zeros / size
    nan: int
    inf: int
    transform: str | None = None  # stage rows: the transform applied at the cut
    passed_norm: float | None = None  # stage rows with a transform: norm passed on
    marks: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # why each mark was set

    def record(self) -> dict[str, Any]:
        d = asdict(self)
        d["shape"] = None if self.shape is None else list(self.shape)
        d["marks"] = list(self.marks)
        d["notes"] = list(self.notes)
        return d

    @classmethod
    def from_record(cls, d: Mapping[str, Any]) -> "FlowRow":
        d = dict(d)
        d["shape"] = None if d["shape"] is None else tuple(d["shape"])
        d["marks"] = tuple(d.get("marks", ()))
        d["notes"] = tuple(d.get("notes", ()))
        return cls(**d)


@dataclass(frozen=True)
class FlowReport:
    backend: str
    mode: str
    target_name: str
    rows: tuple[FlowRow, ...]
    thresholds: Thresholds = field(default=DEFAULT_THRESHOLDS)

    def row(self, name: str) -> FlowRow:
        for r in self.rows:
            if r.name == name:
                return r
        raise KeyError(f"no row {name!r}; rows: {[r.name for r in self.rows]}")

    def norms(self) -> dict[str, float]:
        """Row name -> L2 norm, in table order (unconnected sources left out)."""
        return {r.name: r.norm for r in self.rows if r.norm is not None}

    def marked(self, mark: str | None = None) -> list[FlowRow]:
        """Rows with any mark, or with ``mark`` ("vanishing", "exploding", ...)."""
        return [r for r in self.rows if (r.marks if mark is None else mark in r.marks)]

    def records(self) -> list[dict[str, Any]]:
        return [r.record() for r in self.rows]

    def as_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "mode": self.mode,
            "target_name": self.target_name,
            "thresholds": asdict(self.thresholds),
            "rows": self.records(),
        }

    def to_json(self, **kwargs) -> str:
        """JSON text; a NaN or Inf norm is written as Python's json writes it (NaN, Infinity)."""
        return json.dumps(self.as_dict(), **kwargs)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "FlowReport":
        return cls(
            backend=d["backend"],
            mode=d["mode"],
            target_name=d["target_name"],
            rows=tuple(FlowRow.from_record(r) for r in d["rows"]),
            thresholds=Thresholds(**d.get("thresholds", {})),
        )

    @classmethod
    def from_json(cls, text: str) -> "FlowReport":
        return cls.from_dict(json.loads(text))

    def to_text(self) -> str:
        header = ("tensor", "shape", "L2 norm", "max|g|", "zeros", "NaN", "Inf", "passed on",
                  "marks")
        rows = [header]
        for r in self.rows:
            passed = "" if r.transform is None else f"{_num(r.passed_norm)} {r.transform}"
            rows.append((
                r.name,
                "-" if r.shape is None else str(tuple(r.shape)),
                _num(r.norm),
                _num(r.max_abs),
                "-" if r.zero_fraction is None else f"{100 * r.zero_fraction:.1f}%",
                str(r.nan),
                str(r.inf),
                passed,
                ", ".join(r.marks),
            ))
        widths = [max(len(row[c]) for row in rows) for c in range(len(header))]
        lines = [f"gradient flow: {self.mode}, backend {self.backend}, target {self.target_name!r}"]
        lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
        lines.insert(2, "  ".join("-" * w for w in widths))
        notes = [f"{r.name}: {n}" for r in self.rows for n in r.notes]
        if notes:
            lines += [""] + notes
        lines += ["", "thresholds: " + self.thresholds.describe()]
        return "\n".join(lines)


def flow_report(result: GradientResult, thresholds: Thresholds | None = None) -> FlowReport:
    """The per-tensor table of a split or direct ``GradientResult``, with marks."""
    th = DEFAULT_THRESHOLDS if thresholds is None else thresholds
    rows: list[FlowRow] = []
    # result.stages runs from the target down; the table runs in forward order
    backward = list(result.stages)
    above: dict[str, Any] = {}
    for k, s in enumerate(backward):
        above[s.name] = backward[k - 1] if k > 0 else None
    for s in reversed(backward):
        stats = _stats(s.gradient)
        marks, notes = _absolute_marks(stats, th)
        up = above[s.name]
        if up is not None and stats["norm"] is not None and math.isfinite(stats["norm"]):
            ref = up.passed_norm
            if ref > 0 and math.isfinite(ref):
                ratio = stats["norm"] / ref
                what = f"stage:{up.name}" + (f" after {up.transform}" if up.transform else "")
                for mark, hit, sign, limit in (
                    (VANISHING, ratio < th.vanishing_ratio, "<", th.vanishing_ratio),
                    (EXPLODING, ratio > th.exploding_ratio, ">", th.exploding_ratio),
                ):
                    if hit:
                        if mark not in marks:
                            marks.append(mark)
                        notes.append(f"{ratio:.1e} x the norm passed on by {what} "
                                     f"({sign} {limit:.0e})")
        rows.append(FlowRow(
            name=f"stage:{s.name}", kind=STAGE, **stats,
            transform=s.transform,
            passed_norm=None if s.transform is None else s.passed_norm,
            marks=tuple(marks), notes=tuple(notes),
        ))
    for name, g in result.grads.items():
        if g is None:
            rows.append(FlowRow(name, GRADIENT, None, None, None, None, 0, 0,
                                marks=(UNCONNECTED,),
                                notes=("no gradient: the target does not depend on it",)))
            continue
        stats = _stats(g)
        marks, notes = _absolute_marks(stats, th)
        rows.append(FlowRow(name=name, kind=GRADIENT, **stats, marks=tuple(marks),
                            notes=tuple(notes)))
    return FlowReport(result.backend, result.mode, result.target_name, tuple(rows), th)


def flow_reports(results: Iterable[GradientResult], thresholds: Thresholds | None = None):
    """``flow_report`` of each result, keyed by backend."""
    return {r.backend: flow_report(r, thresholds) for r in results}


def _stats(a) -> dict[str, Any]:
    a = np.asarray(a)
    a64 = a.astype(np.float64)
    size = a.size
    finite = np.isfinite(a64)
    return {
        "shape": tuple(int(d) for d in a.shape),
        # the same number as Stage.norm and GradientResult.norms()
        "norm": float(np.sqrt(np.sum(np.square(a64)))),
        "max_abs": float(np.max(np.abs(a64))) if size else 0.0,
        "zero_fraction": float(np.count_nonzero(a64 == 0) / size) if size else 0.0,
        "nan": int(np.isnan(a64).sum()),
        "inf": int((~finite & ~np.isnan(a64)).sum()),
    }


def _absolute_marks(stats, th: Thresholds) -> tuple[list[str], list[str]]:
    marks: list[str] = []
    notes: list[str] = []
    if stats["nan"] or stats["inf"]:
        marks.append(NONFINITE)
        notes.append(f"{stats['nan']} NaN and {stats['inf']} Inf")
        return marks, notes
    if not np.prod(stats["shape"], dtype=int):
        return marks, notes  # an empty tensor has no flow to judge
    norm = stats["norm"]
    if norm < th.vanishing_norm:
        marks.append(VANISHING)
        notes.append(f"L2 norm {norm:.1e} < {th.vanishing_norm:.0e}")
    elif norm > th.exploding_norm:
        marks.append(EXPLODING)
        notes.append(f"L2 norm {norm:.1e} > {th.exploding_norm:.0e}")
    return marks, notes


def _num(v) -> str:
    return "-" if v is None else f"{v:.3e}"


# -- the chart -------------------------------------------------------------------


@dataclass
class FlowChart:
    """What ``plot_flow`` drew: ``values[panel][series][row name] = L2 norm``."""

    path: str | None
    values: dict[str, dict[str, dict[str, float]]]
    figure: Any  # the matplotlib Figure (Agg canvas), for reading the Line2D data back


def plot_flow(
    results: GradientResult | Sequence[GradientResult] | Mapping[str, GradientResult],
    path: Any = None,
    *,
    title: str | None = None,
    thresholds: Thresholds | None = None,
) -> FlowChart:
    """Chart of the L2 norm per stage (forward order) and per final gradient.

    One series per backend (``result.backend``, or the mapping's keys), log-scale
    y. Points marked vanishing, exploding or nonfinite are circled in red.
    Written as PNG to ``path`` when given.
    """
    return plot_flow_panels({title or "": results}, path, thresholds=thresholds)


def plot_flow_panels(
    panels: Mapping[str, Any],
    path: Any = None,
    *,
    thresholds: Thresholds | None = None,
) -> FlowChart:
    """Like ``plot_flow``, one panel per entry of ``panels`` (title -> results), side by side."""
    Figure, FigureCanvasAgg = require_matplotlib()
    if not panels:
        raise ValueError("plot_flow_panels: no panels to draw")
    n = len(panels)
    fig = Figure(figsize=(6.4 * n, 4.8), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, n, squeeze=False)[0]
    values: dict[str, dict[str, dict[str, float]]] = {}
    for ax, (title, results) in zip(axes, panels.items()):
        values[title] = _draw(ax, title, _series(results), thresholds)
    if path is not None:
        # render first, then write: a failed drawing leaves no empty or partial file
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100)
        Path(path).write_bytes(buf.getvalue())
    return FlowChart(None if path is None else str(path), values, fig)


def _series(results) -> dict[str, GradientResult]:
    if isinstance(results, GradientResult):
        return {results.backend: results}
    if isinstance(results, Mapping):
        return dict(results)
    out: dict[str, GradientResult] = {}
    for r in results:
        if r.backend in out:
            raise ValueError(f"plot_flow: two results for backend {r.backend!r}; "
                             "pass a mapping {series name: result} to name them")
        out[r.backend] = r
    return out


_STYLES = [("o", "-"), ("s", "--"), ("^", ":"), ("D", "-."), ("v", "-")]


def _draw(ax, title, series: Mapping[str, GradientResult], thresholds):
    reports = {name: flow_report(r, thresholds) for name, r in series.items()}
    labels: list[str] = []
    for rep in reports.values():
        labels += [n for n in rep.norms() if n not in labels]
    xpos = {n: k for k, n in enumerate(labels)}
    out: dict[str, dict[str, float]] = {}
    flagged_x, flagged_y = [], []
    for k, (name, rep) in enumerate(reports.items()):
        norms = rep.norms()
        marker, style = _STYLES[k % len(_STYLES)]
        xs = [xpos[n] for n in norms]
        ys = list(norms.values())
        ax.plot(xs, ys, marker=marker, linestyle=style, label=name,
                markersize=max(3.0, 8 - 1.5 * k), alpha=0.85)
        out[name] = dict(norms)
        for r in rep.rows:
            if r.norm is not None and r.marks:
                flagged_x.append(xpos[r.name])
                flagged_y.append(r.norm)
    if flagged_x:
        ax.scatter(flagged_x, flagged_y, s=220, facecolors="none", edgecolors="red",
                   linewidths=1.5, label="marked (vanishing / exploding / nonfinite)", zorder=3)
    ax.set_yscale("log")
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=30, ha="right")
    stages = sum(1 for n in labels if n.startswith("stage:"))
    if 0 < stages < len(labels):
        ax.axvline(stages - 0.5, color="grey", linewidth=0.8, linestyle=":")
    ax.set_ylabel("L2 norm of the gradient")
    ax.set_xlabel("stages in forward order | final gradients")
    if title:
        ax.set_title(title)
    ax.grid(True, which="both", axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    return out


def require_matplotlib():
    """matplotlib's Figure and Agg canvas, or ``MatplotlibMissingError`` naming the extra."""
    try:
        import matplotlib  # noqa: F401
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise MatplotlibMissingError(PLOT_HINT) from exc
    return Figure, FigureCanvasAgg

