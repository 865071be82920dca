"""The records ``tapeshift verify`` produces (compared value, script run, report) and their text and JSON."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from tapeshift.migrate.engine.exit_codes import ExitCode
from tapeshift.migrate.legacy import align_report

STDERR_TAIL_LINES = 25

MODE_TEXT = {"graph": "in a TF1 graph", "eager": "eagerly", "function": "in a tf.function"}

# unseeded random sources the child records (tapeshift.migrate.legacy.watchers.RandomnessWatcher)
UNSEEDED_LABELS = {
    "numpy": "unseeded numpy",
    "python": "unseeded Python random",
    "numpy default_rng": "numpy default_rng() without a seed",
}
UNSEEDED_NOTES = {
    "numpy": "numpy's global generator was drawn from without a seed, so each run drew different "
             "numbers; rerun with --seed N (both runs then start numpy, Python random and "
             "TensorFlow from seed N)",
    "python": "Python's random module was drawn from without a seed, so each run drew different "
              "numbers; rerun with --seed N",
    "numpy default_rng": "a Generator made without a seed draws from the OS entropy in each run, "
                         "which --seed cannot reach; give it a seed (np.random.default_rng(0)) "
                         "in both scripts",
}

RANDOM_NOTE = (
    "values drawn from TF random ops cannot match draw for draw: a graph-level seed "
    "(tf.set_random_seed) and an eager seed (tf.random.set_seed) produce different streams "
    "(docs/verify.md, 'Random ops'). "
)
RANDOM_FIX = (
    "To align the runs, rerun with --align-random (both runs then draw from one stateless "
    "stream, docs/verify.md '--align-random'), carry the legacy initial values over (save them "
    "with np.save and assign them in the new script) or make the random ops stateless with "
    "fixed seeds (tf.random.stateless_normal(shape, seed=[1, 2]))."
)
RANDOM_NOTE += RANDOM_FIX

#: the status of a report whose values agree only within the legacy runs' own spread (exit 0)
WITHIN_SPREAD = "ok-within-spread"
#: the likely cause named when a value differs between the legacy runs themselves
LEGACY_NONDETERMINISM = "legacy nondeterminism"
#: on a mismatch nothing explains, with a single legacy run
LEGACY_RUNS_HINT = (
    "nothing named explains the mismatch. If the legacy program is not deterministic by itself "
    "(a sess.run that fetches several train ops runs them concurrently, and one update may land "
    "before the other reads the variable), its own runs differ too: rerun with --legacy-runs 3 "
    "to run it three times and judge the new values against their spread "
    "(docs/verify.md, '--legacy-runs'). If its runs agree but a train op applies gradients "
    "to TF1's ref variables, an update may land before a backward op of the same run reads "
    "the variable, the same way each time: --legacy-resource-variables runs it with resource "
    "variables, which a graph reads once (docs/verify.md). If the values agree to about 1e-5 "
    "at first and drift apart over many training steps, the graph's oneDNN rewrite rounds "
    "differently from eager kernels: with TF_ENABLE_ONEDNN_OPTS=0 in the environment of "
    "`tapeshift verify` both runs compute bitwise alike (docs/tf1-vs-tf2.md). If they differ "
    "by about 1 ulp (a relative 1e-7) from the first step or training step on and drift "
    "apart from there, Grappler, TensorFlow's graph optimizer, may have rewritten the legacy "
    "graph (the MatMul + BiasAdd of a one-unit dense layer fused into one kernel, a chain of "
    "constants folded): --legacy-no-graph-rewrites runs it with Grappler off, its ops as "
    "written, as eager code runs them (docs/verify.md).")


@dataclass
class ValueRow:
    """One compared value (``kind`` ``value``) or one print (``kind`` ``printed``).

    ``status`` is ``ok``, ``mismatch``, ``elided`` (an array print numpy
    summarised with ``...``: not comparable) or ``not-comparable``.
    """

    name: str
    kind: str
    shape: str
    dtype: str
    max_abs: float | None
    max_rel: float | None
    status: str
    note: str = ""
    rtol: float | None = None
    atol: float | None = None
    random: bool = False
    causes: list = field(default_factory=list)   # the report's random_causes, on a mismatch
    # --legacy-runs N: the legacy runs differ here, so the row was judged against their range
    # (tapeshift.migrate.legacy.spread); max_abs/max_rel are then the distance from that range
    spread: bool = False
    spread_abs: float | None = None   # how far the legacy runs differ from each other
    spread_rel: float | None = None

    @property
    def compared(self) -> bool:
        return self.status in ("ok", "mismatch")

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        for key in ("max_abs", "max_rel", "spread_abs", "spread_rel"):
            v = d[key]
            if v is not None and not math.isfinite(v):
                d[key] = str(v)
        return d


@dataclass
class ScriptRun:
    """One script run in a subprocess and what it left behind."""

    role: str                      # "legacy" or "new"
    path: Path
    command: list[str]
    returncode: int | None
    stdout: str
    stderr: str
    duration: float
    timed_out: bool = False
    timeout: float | None = None
    error: str | None = None       # why the run counts as failed, if it does
    values: dict[str, Any] = field(default_factory=dict)   # name -> ndarray
    dtypes: dict[str, str] = field(default_factory=dict)   # name -> dtype label
    skipped: dict[str, str] = field(default_factory=dict)  # name -> why it has no value
    random_ops: dict[str, int] = field(default_factory=dict)
    unseeded: dict[str, dict] = field(default_factory=dict)  # source -> {"calls", "first", "call"}
    random_modes: dict[str, int] = field(default_factory=dict)  # graph/function/eager -> random ops
    seed: int | None = None
    align: dict = field(default_factory=dict)   # --align-random: the child's record (align.py)
    which: str = ""                # --legacy-runs: "run 2 of 3" (empty for a single run)
    legacy: bool | None = None     # --after's training run: through run-legacy, or under TF2
    resource_variables: bool = False  # --legacy-resource-variables: the legacy run's variables
    no_graph_rewrites: bool = False   # --legacy-no-graph-rewrites: the legacy run without Grappler

    @property
    def failed(self) -> bool:
        return self.error is not None

    def stderr_tail(self, lines: int = STDERR_TAIL_LINES) -> str:
        return "\n".join(self.stderr.rstrip().splitlines()[-lines:])

    def to_dict(self) -> dict:
        return {
            "role": self.role, "path": str(self.path), "returncode": self.returncode,
            "duration": round(self.duration, 3), "timed_out": self.timed_out,
            "error": self.error, "stderr_tail": self.stderr_tail() if self.failed else "",
            "captured": sorted(self.values), "skipped": self.skipped,
            "random_ops": self.random_ops, "random_modes": self.random_modes,
            "unseeded": self.unseeded, "seed": self.seed, "align": self.align,
            **({"which": self.which} if self.which else {}),
            **({"resource_variables": True} if self.resource_variables else {}),
            **({"no_graph_rewrites": True} if self.no_graph_rewrites else {}),
        }


@dataclass
class VerifyReport:
    """The outcome of comparing a legacy run with a new run."""

    legacy: ScriptRun
    new: ScriptRun
    rows: list[ValueRow] = field(default_factory=list)
    only_legacy: list[str] = field(default_factory=list)
    only_new: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rtol: float | None = None
    atol: float | None = None
    #: --legacy-runs N: every legacy run, ``legacy`` first (empty for a single run)
    legacy_runs: list[ScriptRun] = field(default_factory=list)
    #: name -> (max abs diff, max rel diff) between the legacy runs, where they differ
    legacy_spread: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: --after / --after-migrated: the training run both read what it wrote
    before: ScriptRun | None = None

    @property
    def failures(self) -> list[ScriptRun]:
        runs = (*([self.before] if self.before is not None else []), self.legacy,
                *self.legacy_runs[1:], self.new)
        return [r for r in runs if r.failed]

    @property
    def n_legacy_runs(self) -> int:
        return max(1, len(self.legacy_runs))

    @property
    def within_spread(self) -> list[ValueRow]:
        """Rows that agree only by the legacy runs' spread (they differ between legacy runs)."""
        return [r for r in self.rows if r.spread and r.status == "ok"]

    @property
    def likely_causes(self) -> list[str]:
        """What may explain a mismatch: :attr:`random_causes`, then legacy nondeterminism
        when a value that differs between the legacy runs lies outside their spread."""
        causes = list(self.random_causes)
        if any(r.spread for r in self.mismatches):
            causes.append(LEGACY_NONDETERMINISM)
        return causes

    @property
    def compared(self) -> int:
        return sum(r.compared for r in self.rows)

    @property
    def mismatches(self) -> list[ValueRow]:
        return [r for r in self.rows if r.status == "mismatch"]

    @property
    def random_ops_used(self) -> bool:
        return bool(self.legacy.random_ops or self.new.random_ops)

    @property
    def random_causes(self) -> list[str]:
        """Sources of nondeterminism the runs showed: unseeded numpy / Python random, then TF random ops."""
        causes = []
        for source in UNSEEDED_LABELS:
            if source in self.legacy.unseeded or source in self.new.unseeded:
                causes.append(UNSEEDED_LABELS[source])
        if self.random_ops_differ:
            causes.append("random ops")
        if self.align_random:
            causes.extend(self.align_causes)
        return causes

    @property
    def align_random(self) -> bool:
        """Whether both runs drew TF random numbers from the ``--align-random`` stream."""
        return bool(self.legacy.align) and bool(self.new.align)

    @property
    def align_causes(self) -> dict[str, str]:
        """What ``--align-random`` could not align in these runs: cause -> explanation."""
        if not self.align_random:
            return {}
        return align_report.causes(self.legacy.align, self.new.align)

    @property
    def random_ops_differ(self) -> bool:
        """Whether the TF random ops the runs used can draw different numbers.

        Always without ``--seed``. With it, only when both runs drew in the
        same way, all in TF1 graphs or all eagerly (same seed, same stream);
        a TF1 graph against eager code or a tf.function draws another stream.
        With ``--align-random`` never: what it could not align is named by
        :attr:`align_causes` instead.
        """
        if not self.random_ops_used or self.align_random:
            return False
        if self.seed is None:
            return True
        legacy = {m for m, n in self.legacy.random_modes.items() if n}
        new = {m for m, n in self.new.random_modes.items() if n}
        return not (legacy == new and len(legacy) == 1 and legacy <= {"graph", "eager"})

    @property
    def seed(self) -> int | None:
        return self.legacy.seed if self.legacy.seed is not None else self.new.seed

    @property
    def status(self) -> str:
        """``failed`` (exit 2), ``mismatch`` or ``nothing-compared`` (exit 1), ``ok`` or,
        with ``--legacy-runs``, ``ok-within-spread`` when some value agrees only within the
        legacy runs' own spread (exit 0)."""
        if self.failures:
            return "failed"
        if self.mismatches:
            return "mismatch"
        if not self.compared:
            return "nothing-compared"
        if self.within_spread:
            return WITHIN_SPREAD
        return "ok"

    @property
    def exit_code(self) -> int:
        return int({"ok": ExitCode.OK, WITHIN_SPREAD: ExitCode.OK,
                    "failed": ExitCode.ERROR}.get(self.status, ExitCode.FOUND))

    @property
    def ok(self) -> bool:
        """Exit 0: ``ok``, or ``ok-within-spread`` (see :attr:`status`)."""
        return self.status in ("ok", WITHIN_SPREAD)

    def summary(self) -> str:
        """One line: the verdict."""
        status = self.status
        if status == "failed":
            return "; ".join(_failure_line(r) for r in self.failures)
        n_val = sum(r.compared and r.kind == "value" for r in self.rows)
        n_pr = sum(r.compared and r.kind == "printed" for r in self.rows)
        counted = f"{n_val} module value{'s' * (n_val != 1)}, {n_pr} print{'s' * (n_pr != 1)}"
        if status == "mismatch":
            names = _names([r.name for r in self.mismatches], limit=10)
            causes = self.likely_causes
            named = ", ".join(_cause_text(c) for c in causes)
            extra = f" (likely cause: {named}: see below)" if causes else ""
            if self.suggests_legacy_runs:
                extra = (" (nothing named explains it; --legacy-runs 3 checks whether the legacy "
                         "program is deterministic: see below)")
            return f"MISMATCH: {len(self.mismatches)} of {self.compared} differ: {names}{extra}"
        if status == "nothing-compared":
            return ("NOTHING COMPARED: no module value or printed number in common "
                    "(keep results in module-level variables, or print them)")
        if status == WITHIN_SPREAD:
            spread = self.within_spread
            return (f"OK within the legacy program's own run-to-run spread: all {self.compared} "
                    f"compared agree ({counted}), {len(spread)} of them only within the spread "
                    f"of its {self.n_legacy_runs} runs: {_names([r.name for r in spread], limit=10)}")
        return f"OK: all {self.compared} compared agree ({counted})"

    @property
    def suggests_legacy_runs(self) -> bool:
        """A mismatch with a single legacy run and no likely cause: suggest ``--legacy-runs 3``."""
        return bool(self.mismatches) and self.n_legacy_runs == 1 and not self.likely_causes

    def _legacy_runs_lines(self) -> list[str]:
        """What the legacy runs said about each other (``--legacy-runs N``)."""
        if self.n_legacy_runs == 1:
            return [LEGACY_RUNS_HINT] if self.suggests_legacy_runs else []
        n = self.n_legacy_runs
        if not self.legacy_spread:
            return [f"legacy runs: {n}, identical in every value and printed number compared"]
        compared = {r.name for r in self.rows} | {"stdout"}  # stdout: the prints as a whole
        names = [name for name in self.legacy_spread if name in compared]
        others = [name for name in self.legacy_spread if name not in compared]
        sized = [self.legacy_spread[name] for name in names or others
                 if math.isfinite(self.legacy_spread[name][0])]
        how = ""
        if sized:
            how = f", up to {_fmt(max(a for a, _ in sized))} (rel {_fmt(max(r for _, r in sized))}),"
            if len(sized) < len(names or others):
                how = how[:-1] + " where they have the same shape and count,"
        where = _names(names or others, limit=10)
        if names and others:
            where += f" (and in {_names(others, limit=10)}, not compared)"
        elif others:
            where += " (not compared)"
        line = (f"the legacy program is not deterministic: its own {n} runs differ{how} in "
                f"{where}")
        if any(r.spread for r in self.rows):
            line += ("; where they differ, the new value was judged against their range widened "
                     "by the tolerance (docs/verify.md, '--legacy-runs')")
        outside = [r.name for r in self.mismatches if r.spread]
        if outside:
            line += (f". Outside that spread: {_names(outside, limit=10)}. {n} runs sample the "
                     "spread; more (--legacy-runs 10) sample it better, and a value far outside "
                     "it is a real difference")
        return [line]

    def to_dict(self) -> dict:
        return {
            "legacy": str(self.legacy.path), "new": str(self.new.path),
            "status": self.status, "exit_code": self.exit_code, "summary": self.summary(),
            "compared": self.compared, "rows": [r.to_dict() for r in self.rows],
            "only_legacy": self.only_legacy, "only_new": self.only_new, "notes": self.notes,
            "rtol": self.rtol, "atol": self.atol, "seed": self.seed,
            "align_random": self.legacy.align.get("seed") if self.align_random else None,
            "random_causes": self.random_causes,
            "legacy_runs": self.n_legacy_runs,
            "legacy_spread": {name: {"max_abs": _json_number(a), "max_rel": _json_number(r)}
                              for name, (a, r) in self.legacy_spread.items()},
            "runs": {"legacy": self.legacy.to_dict(), "new": self.new.to_dict(),
                     **({"legacy_more": [r.to_dict() for r in self.legacy_runs[1:]]}
                        if self.legacy_runs[1:] else {}),
                     **({"training": {**self.before.to_dict(), "legacy": self.before.legacy}}
                        if self.before is not None else {})},
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def _randomness_lines(self) -> list[str]:
        """Why the values may differ when the runs drew random numbers (on a mismatch)."""
        lines = []
        for source, label in UNSEEDED_LABELS.items():
            sites = []
            for run in (self.legacy, self.new):
                entry = run.unseeded.get(source)
                if entry:
                    where = f" at {_site(entry['first'])}" if entry.get("first") else ""
                    calls = entry.get("calls", 1)
                    sites.append(f"{run.role}: {entry['call']}{where}"
                                 f"{f' ({calls} calls)' if calls > 1 else ''}")
            if sites:
                lines.append(f"{label} ({'; '.join(sites)}): {UNSEEDED_NOTES[source]}")
        if self.random_ops_differ:
            used = []
            for run in (self.legacy, self.new):
                if run.random_ops:
                    modes = [MODE_TEXT.get(m, m) for m, n in sorted(run.random_modes.items()) if n]
                    how = f" ({', '.join(modes)})" if modes else ""
                    used.append(f"{run.role}: " + ", ".join(sorted(run.random_ops)) + how)
            if self.seed is None:
                note = RANDOM_NOTE
            else:
                note = (f"--seed {self.seed} set TensorFlow's graph seed and eager seed to {self.seed}, "
                        "but TF random ops in a TF1 graph and in TF2 eager code draw different "
                        "streams from the same seed, so they cannot match draw for draw "
                        "(docs/verify.md, 'Random ops'). " + RANDOM_FIX)
            lines.append(f"random ops used ({'; '.join(used)}): {note}")
        lines.extend(self.align_causes.values())
        return lines

    def to_text(self) -> str:
        out = [f"tapeshift verify: legacy {self.legacy.path} (run-legacy) vs new {self.new.path} (TF2)"]
        if self.before is not None:
            how = "run-legacy" if self.before.legacy else "TF2"
            out.append(f"after the training script {self.before.path} ({how}" + (
                ")" if self.before.failed else f": exit {self.before.returncode}, "
                f"{self.before.duration:.1f} s); both read what it wrote"))
        if self.failures:
            for run in self.failures:
                out.append(f"FAILED: {_failure_line(run)}")
                tail = run.stderr_tail()
                if tail:
                    out.append(f"--- last lines of the {run.role} script's stderr ---")
                    out.append(tail)
                    out.append("---")
            out.append(f"exit {self.exit_code}")
            return "\n".join(out)
        if self.rows:
            out.append(_table(self.rows))
        out.append(self.summary())
        tol = "dtype defaults (see tapeshift verify --help)"
        if self.rtol is not None or self.atol is not None:
            tol = f"rtol={self.rtol if self.rtol is not None else 'default'}, " \
                  f"atol={self.atol if self.atol is not None else 'default'}"
        out.append(f"tolerances: {tol}")
        if self.legacy.resource_variables:
            out.append("legacy variables: resource variables (--legacy-resource-variables: read "
                       "once per run, as TF2 reads them), not TF1's default ref variables")
        if self.legacy.no_graph_rewrites:
            out.append("legacy graph rewrites: off (--legacy-no-graph-rewrites: Grappler, "
                       "TensorFlow's graph optimizer, did not run; the sessions ran the graph's "
                       "ops as written, as eager code does)")
        if self.align_random:
            out.append(align_report.summary_line(self.legacy.align, self.new.align))
        out.extend(self._legacy_runs_lines())
        if self.mismatches or (self.legacy_spread and self.random_causes):
            out.extend(self._randomness_lines())
        for note in self.notes:
            out.append(note)
        if self.only_legacy:
            out.append("not compared (only in legacy): " + _names(self.only_legacy))
        if self.only_new:
            out.append("not compared (only in new): " + _names(self.only_new))
        by_reason: dict[str, list[str]] = {}
        for name, reason in self.legacy.skipped.items():
            by_reason.setdefault(reason, []).append(name)
        for reason, names in by_reason.items():
            out.append(f"no value in legacy ({reason}): {_names(names)}")
        out.append(f"exit {self.exit_code}")
        return "\n".join(out)


def _cause_text(cause: str) -> str:
    return "TF random ops" if cause == "random ops" else cause


def _site(first: str) -> str:
    """``file:line`` with the file relative to the current directory when under it."""
    path, sep, line = first.rpartition(":")
    if not sep or not line.isdigit():
        return first
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return first
    return f"{path if rel.startswith('..') else rel}:{line}"


def _names(names: Sequence[str], limit: int = 20) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


def _failure_line(run: ScriptRun) -> str:
    which = f" ({run.which})" if run.which else ""
    after = " (the prediction scripts were not run)" if run.role == "training" else ""
    return f"the {run.role} script {run.path}{which} {run.error}{after}"


def _json_number(x: float) -> float | str:
    return x if math.isfinite(x) else str(x)


def _fmt(x: float | None) -> str:
    if x is None:
        return "-"
    if x == 0:
        return "0"
    return f"{x:.3g}"


def _table(rows: Sequence[ValueRow]) -> str:
    header = ("name", "shape", "dtype", "max abs diff", "max rel diff", "status")
    body = []
    for r in rows:
        status = r.status.upper() if r.status == "mismatch" else r.status
        tags = []
        if r.spread and r.compared:
            tags.append("within legacy spread" if r.status == "ok" else "outside legacy spread")
        if r.status == "mismatch" and r.random:
            tags.append(", ".join(r.causes) or "random ops")
        if tags:
            status += f" ({'; '.join(tags)})"
        if r.note:
            status += f"  {r.note}"
        body.append((r.name, r.shape, r.dtype, _fmt(r.max_abs), _fmt(r.max_rel), status))
    widths = [max(len(str(row[i])) for row in [header, *body]) for i in range(5)]
    lines = []
    for row in [header, *body]:
        cells = [str(c).ljust(w) for c, w in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[5]]).rstrip())
    return "\n".join(lines)
