"""``tapeshift verify``: prove a migrated script computes what the legacy one did.

The legacy script runs through ``run-legacy`` (TF1 semantics on TF2) and the
new one under plain TF2, each in its own subprocess with a timeout. Their
final module-level numeric values are compared by name, and the numbers each
printed are compared in order, with dtype-aware tolerances.

Public API (no TensorFlow is imported in this process)::

    report = verify_scripts(Path("old.py"), Path("new.py"))   # two files
    report = verify_sources(old_text, new_text, Path("train.py"))  # two versions in memory
    report.exit_code      # 0 agree, 1 mismatch or nothing compared, 2 a script failed
    report.status         # "ok" | "mismatch" | "nothing-compared" | "failed"
    print(report.to_text())
    report.to_json()

Library code returns records; only :func:`run` prints.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from tapeshift.migrate.legacy.printed import parse_printed
from tapeshift.migrate.engine.exit_codes import ExitCode, standalone_main
from tapeshift.migrate.legacy.run_legacy import runner_command

HELP = "run a legacy script (via run-legacy) and its migrated version and compare their numbers"

DEFAULT_TIMEOUT = 600.0
STDERR_TAIL_LINES = 25

# dtype label -> (rtol, atol). A value agrees when |new - legacy| <= atol + rtol * |legacy|.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-9, 1e-12),
    "complex128": (1e-9, 1e-12),
    "float32": (1e-5, 1e-6),
    "complex64": (1e-5, 1e-6),
    "py:float": (1e-5, 1e-6),    # Python floats usually come from float32 tensors
    "py:complex": (1e-5, 1e-6),
    "printed": (1e-5, 1e-6),     # printed numbers carry no dtype
    "float16": (1e-3, 1e-3),
    "bfloat16": (1e-2, 1e-2),
}
EXACT = (0.0, 0.0)  # integers, booleans, printed integers and True/False

MODE_TEXT = {"graph": "in a TF1 graph", "eager": "eagerly", "function": "in a tf.function"}

# unseeded random sources the child records (tapeshift.migrate.legacy.capture.RandomnessWatcher)
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
    "To align the runs, carry the legacy initial values over (save them "
    "with np.save and assign them in the new script) or make the random ops stateless with "
    "fixed seeds (tf.random.stateless_normal(shape, seed=[1, 2]))."
)
RANDOM_NOTE += RANDOM_FIX

TOLERANCE_HELP = """\
default tolerances (a value agrees when |new - legacy| <= atol + rtol * |legacy|):
  dtype                                       rtol    atol
  float64, complex128                         1e-9    1e-12
  float32, complex64, Python float, printed   1e-5    1e-6
  float16                                     1e-3    1e-3
  bfloat16                                    1e-2    1e-2
  int*, uint*, bool, printed integers/bools   exact   exact
Two values of different dtypes use the looser of the two. --rtol/--atol replace
that parameter for every dtype (booleans stay exact).

exit codes: 0 every common value agrees and at least one was compared;
            1 a mismatch, or nothing could be compared; 2 a script failed or timed out."""


def _is_exact_label(label: str) -> bool:
    return label in ("py:int", "py:bool", "bool", "printed-int", "printed-bool") or label.startswith(
        ("int", "uint"))


def default_tolerance(label: str) -> tuple[float, float]:
    """``(rtol, atol)`` for a dtype label (``float32``, ``py:float``, ``int64``...)."""
    if _is_exact_label(label):
        return EXACT
    return TOLERANCES.get(label, TOLERANCES["float32"])


def tolerance_for(labels: Sequence[str], rtol: float | None = None,
                  atol: float | None = None) -> tuple[float, float]:
    """The tolerance for comparing values with these dtype labels (the loosest wins)."""
    pairs = [default_tolerance(lb) for lb in labels]
    r = max(p[0] for p in pairs)
    a = max(p[1] for p in pairs)
    if all(lb in ("bool", "py:bool", "printed-bool") for lb in labels):
        return EXACT
    return (r if rtol is None else rtol, a if atol is None else atol)


# -- records ----------------------------------------------------------------

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

    @property
    def compared(self) -> bool:
        return self.status in ("ok", "mismatch")

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        for key in ("max_abs", "max_rel"):
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
            "unseeded": self.unseeded, "seed": self.seed,
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

    @property
    def failures(self) -> list[ScriptRun]:
        return [r for r in (self.legacy, self.new) if r.failed]

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
        return causes

    @property
    def random_ops_differ(self) -> bool:
        """Whether the TF random ops the runs used can draw different numbers.

        Always without ``--seed``. With it, only when both runs drew in the
        same way, all in TF1 graphs or all eagerly (same seed, same stream);
        a TF1 graph against eager code or a tf.function draws another stream.
        """
        if not self.random_ops_used:
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
        if self.failures:
            return "failed"
        if self.mismatches:
            return "mismatch"
        if not self.compared:
            return "nothing-compared"
        return "ok"

    @property
    def exit_code(self) -> int:
        return int({"ok": ExitCode.OK, "failed": ExitCode.ERROR}.get(self.status, ExitCode.FOUND))

    @property
    def ok(self) -> bool:
        return self.status == "ok"

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
            causes = self.random_causes
            named = ", ".join(_cause_text(c) for c in causes)
            extra = f" (likely cause: {named}: see below)" if causes else ""
            return f"MISMATCH: {len(self.mismatches)} of {self.compared} differ: {names}{extra}"
        if status == "nothing-compared":
            return ("NOTHING COMPARED: no module value or printed number in common "
                    "(keep results in module-level variables, or print them)")
        return f"OK: all {self.compared} compared agree ({counted})"

    def to_dict(self) -> dict:
        return {
            "legacy": str(self.legacy.path), "new": str(self.new.path),
            "status": self.status, "exit_code": self.exit_code, "summary": self.summary(),
            "compared": self.compared, "rows": [r.to_dict() for r in self.rows],
            "only_legacy": self.only_legacy, "only_new": self.only_new, "notes": self.notes,
            "rtol": self.rtol, "atol": self.atol, "seed": self.seed,
            "random_causes": self.random_causes,
            "runs": {"legacy": self.legacy.to_dict(), "new": self.new.to_dict()},
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
        return lines

    def to_text(self) -> str:
        out = [f"tapeshift verify: legacy {self.legacy.path} (run-legacy) vs new {self.new.path} (TF2)"]
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
        if self.mismatches:
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
    return f"the {run.role} script {run.path} {run.error}"


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
        if r.status == "mismatch" and r.random:
            status += f" ({', '.join(r.causes) or 'random ops'})"
        if r.note:
            status += f"  {r.note}"
        body.append((r.name, r.shape, r.dtype, _fmt(r.max_abs), _fmt(r.max_rel), status))
    widths = [max(len(str(row[i])) for row in [header, *body]) for i in range(5)]
    lines = []
    for row in [header, *body]:
        cells = [str(c).ljust(w) for c, w in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[5]]).rstrip())
    return "\n".join(lines)


# -- comparing --------------------------------------------------------------

def _shape(arr) -> str:
    return str(tuple(arr.shape))


def _dtype_text(a: str, b: str) -> str:
    def show(label: str) -> str:
        return label[3:] + "(py)" if label.startswith("py:") else label
    return show(a) if a == b else f"{show(a)}/{show(b)}"


def diff_stats(legacy, new):
    """``(max abs diff, max rel diff, elementwise |new - legacy|, nan/inf pattern equal)``."""
    import numpy as np

    a = np.asarray(legacy)
    b = np.asarray(new)
    ctype = np.complex128 if (a.dtype.kind == "c" or b.dtype.kind == "c") else np.float64
    a = a.astype(ctype)
    b = b.astype(ctype)
    a_nan, b_nan = np.isnan(a), np.isnan(b)
    a_inf, b_inf = np.isinf(a), np.isinf(b)
    special_equal = bool(np.array_equal(a_nan, b_nan)
                         and np.array_equal(a_inf, b_inf) and np.all(a[a_inf] == b[b_inf]))
    finite = ~(a_nan | b_nan | a_inf | b_inf)
    diff = np.zeros(a.shape, dtype=np.float64)
    diff[finite] = np.abs(b[finite] - a[finite])
    diff[~finite & ~((a_nan & b_nan) | ((a_inf & b_inf) & (a == b)))] = np.inf
    if diff.size == 0:
        return 0.0, 0.0, diff, special_equal
    ref = np.abs(a)
    rel = np.zeros(a.shape, dtype=np.float64)
    moved = diff > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        rel[moved] = np.where(np.isfinite(ref[moved]) & (ref[moved] > 0),
                              diff[moved] / np.where(ref[moved] > 0, ref[moved], 1.0), np.inf)
    return float(diff.max()), float(rel.max()), diff, special_equal


def _num(x) -> str:
    """A number as its own dtype prints it (shortest repr: float32 0.6 stays 0.6)."""
    import numpy as np

    if isinstance(x, np.ndarray):
        x = x[()]
    if isinstance(x, np.generic):
        return str(x)
    return repr(x)


def compare_values(name: str, legacy, new, legacy_dtype: str, new_dtype: str, *,
                   rtol: float | None = None, atol: float | None = None,
                   kind: str = "value") -> ValueRow:
    """Compare one legacy value with the new value of the same name."""
    import numpy as np

    a, b = np.asarray(legacy), np.asarray(new)
    dtype = _dtype_text(legacy_dtype, new_dtype)
    if a.shape != b.shape:
        return ValueRow(name, kind, f"{_shape(a)}/{_shape(b)}", dtype, None, None, "mismatch",
                        note=f"shape {_shape(a)} in legacy, {_shape(b)} in new")
    r, t = tolerance_for([legacy_dtype, new_dtype], rtol, atol)
    max_abs, max_rel, diff, special_equal = diff_stats(a, b)
    if (r, t) == EXACT or (a.dtype.kind in "biu" and b.dtype.kind in "biu" and r == 0 and t == 0):
        ok = bool(np.array_equal(a, b))
    else:
        ref = np.abs(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64))
        finite = np.isfinite(diff)
        within = np.zeros(a.shape, dtype=bool)
        within[finite] = diff[finite] <= t + r * ref[finite]
        ok = bool(special_equal and np.all(within | (diff == 0)))
    note = ""
    if not ok:
        idx = np.unravel_index(int(np.argmax(np.where(np.isnan(diff), np.inf, diff))), a.shape) \
            if a.size else ()
        if a.size > 1:
            note = f"at {tuple(int(i) for i in idx)}: {_num(a[idx])} vs {_num(b[idx])}"
        elif a.size == 1:
            note = f"{_num(a.reshape(()))} vs {_num(b.reshape(()))}"
    return ValueRow(name, kind, _shape(a), dtype, max_abs, max_rel, "ok" if ok else "mismatch",
                    note=note, rtol=r, atol=t)


def _describe(items) -> str:
    """What one side printed where the other printed a symbolic tensor."""
    if len(items) == 1 and items[0].kind == "symbolic":
        text = items[0].text.strip()
        return f"the graph object {text if len(text) <= 70 else text[:67] + '...'}"
    values = ", ".join(it.text for it in items[:4]) + (", ..." if len(items) > 4 else "")
    return f"the value {values}"


def align_printed(a_items, b_items):
    """Pair two sequences of :class:`~tapeshift.migrate.legacy.printed.Printed` items.

    Returns ``(pairs, aside, a_rest, b_rest)``: ``pairs`` of numbers (or
    elided prints) compared in order; ``aside``, ``(legacy items, new items)``
    set aside because one side printed a symbolic TensorFlow object there (a
    graph tensor has no value; the other side's whole eager repr, or the rest
    of its print, is its counterpart); and what is left over on each side.
    """
    pairs, aside = [], []
    i = j = 0

    def counterpart(items, k, symbolic_items, s):
        """End index of what ``items[k]`` stands for against the symbolic ``symbolic_items[s]``."""
        item = items[k]
        if item.kind == "symbolic":
            return k + 1
        if item.unit is not None:
            end = k
            while end < len(items) and items[end].unit == item.unit:
                end += 1
            return end
        ends_its_print = (s + 1 == len(symbolic_items)
                          or symbolic_items[s + 1].record != symbolic_items[s].record)
        if not ends_its_print:
            return k + 1
        end = k
        while (end < len(items) and items[end].record == item.record and items[end].unit is None
               and items[end].kind != "symbolic"):
            end += 1
        return end

    while i < len(a_items) and j < len(b_items):
        x, y = a_items[i], b_items[j]
        if x.kind == "symbolic":
            jj = counterpart(b_items, j, a_items, i)
            aside.append((a_items[i:i + 1], b_items[j:jj]))
            i, j = i + 1, jj
        elif y.kind == "symbolic":
            ii = counterpart(a_items, i, b_items, j)
            aside.append((a_items[i:ii], b_items[j:j + 1]))
            i, j = ii, j + 1
        else:
            pairs.append((x, y))
            i, j = i + 1, j + 1
    a_rest = [x for x in a_items[i:] if x.kind != "symbolic"]
    b_rest = [y for y in b_items[j:] if y.kind != "symbolic"]
    return pairs, aside, a_rest, b_rest


def compare_printed(legacy_out: str, new_out: str, *, rtol: float | None = None,
                    atol: float | None = None) -> tuple[list[ValueRow], list[str]]:
    """Rows comparing the numbers two stdouts printed, in order, one row per legacy print.

    A symbolic TensorFlow object printed by one script (a graph tensor or
    variable, an op dump) and what the other printed in its place (say the
    eager tensor's value) are set aside, in a ``symbolic`` row that is not a
    comparison, and the prints after it stay aligned.
    """
    import numpy as np

    a_items, b_items = parse_printed(legacy_out), parse_printed(new_out)
    pairs, aside, a_rest, b_rest = align_printed(a_items, b_items)
    rows: list[ValueRow] = []
    notes: list[str] = []
    # group the pairs by legacy print; a print not wholly paired is counted below
    groups: list[list] = []
    for x, y in pairs:
        if groups and groups[-1][-1][0].record == x.record:
            groups[-1].append((x, y))
        else:
            groups.append([(x, y)])
    if groups and a_rest and a_rest[0].record == groups[-1][-1][0].record:
        groups.pop()
    events = [(g[0][0], "pairs", g) for g in groups]
    for legacy_items, new_items in aside:
        if all(it.kind == "symbolic" for it in (*legacy_items, *new_items)):
            continue  # both printed a tensor object: nothing to compare, nothing lost
        first = legacy_items[0] if legacy_items else new_items[0]
        events.append((first, "aside", (legacy_items, new_items)))
    order = {id(it): k for k, it in enumerate(a_items)}
    events.sort(key=lambda e: order.get(id(e[0]), len(a_items)))
    for first, what, payload in events:
        name = f"stdout:{first.line}"
        if what == "aside":
            legacy_items, new_items = payload
            rows.append(ValueRow(
                name, "printed", "-", "printed", None, None, "symbolic",
                note=f"legacy printed {_describe(legacy_items)}, new printed {_describe(new_items)}"
                     f" (new line {new_items[0].line}): a graph object has no value, not compared"))
            continue
        pairs_here = payload
        elided = [(x.kind == "elided", y.kind == "elided") for x, y in pairs_here]
        if any(ea or eb for ea, eb in elided):
            if all(ea and eb for ea, eb in elided):
                rows.append(ValueRow(name, "printed", "-", "printed", None, None, "elided",
                                     note="numpy elided this array print (...): not comparable"))
                continue
            rows.append(ValueRow(name, "printed", "-", "printed", None, None, "not-comparable",
                                 note="one script printed an elided (...) array here; "
                                      "later prints are not aligned and were not compared"))
            notes.append("printed numbers after stdout line "
                         f"{first.line} were not compared: an elided array print broke the alignment")
            return rows, notes
        kinds_a = [x.kind for x, _ in pairs_here]
        kinds_b = [y.kind for _, y in pairs_here]
        line_note = "" if pairs_here[0][1].line == first.line else f"new line {pairs_here[0][1].line}"
        if [k == "bool" for k in kinds_a] != [k == "bool" for k in kinds_b]:
            rows.append(ValueRow(name, "printed", f"({len(pairs_here)},)", "printed", None, None,
                                 "mismatch", note="True/False printed where the other printed a number"))
            continue
        a = np.array([x.value for x, _ in pairs_here], dtype=np.float64)
        b = np.array([y.value for _, y in pairs_here], dtype=np.float64)
        # floats meet the printed tolerance; integers and True/False must be equal
        exact_mask = np.array([x.kind in ("int", "bool") and y.kind == x.kind for x, y in pairs_here])
        row = compare_values(name, a, b, "printed", "printed", rtol=rtol, atol=atol, kind="printed")
        if exact_mask.any() and rtol is None and atol is None:
            exact_ok = bool(np.array_equal(a[exact_mask], b[exact_mask]))
            if not exact_ok and row.status == "ok":
                row.status = "mismatch"
                row.note = "integers or True/False differ"
        row.dtype = "printed"
        if line_note and not row.note:
            row.note = line_note
        rows.append(row)
    if a_rest or b_rest:
        n_a, n_b = len(pairs) + len(a_rest), len(pairs) + len(b_rest)
        where = (a_rest[0].line if a_rest else None, b_rest[0].line if b_rest else None)
        set_aside = sum(len(new) for _, new in aside if any(it.kind != "symbolic" for it in new)) + \
            sum(len(old) for old, _ in aside if any(it.kind != "symbolic" for it in old))
        besides = f"; {set_aside} set aside against symbolic tensors" if set_aside else ""
        rows.append(ValueRow("stdout", "printed", "-", "printed", None, None, "mismatch",
                             note=f"legacy printed {n_a} numbers, new printed {n_b} "
                                  f"(first unmatched: legacy line {where[0]}, new line {where[1]}"
                                  f"{besides})"))
    return rows, notes


def compare_runs(legacy: ScriptRun, new: ScriptRun, *, rtol: float | None = None,
                 atol: float | None = None, printed: bool = True) -> VerifyReport:
    """Compare two finished runs (no subprocess here)."""
    report = VerifyReport(legacy, new, rtol=rtol, atol=atol)
    if report.failures:
        return report
    for name in legacy.values:
        if name in new.values:
            row = compare_values(name, legacy.values[name], new.values[name],
                                 legacy.dtypes.get(name, "float32"), new.dtypes.get(name, "float32"),
                                 rtol=rtol, atol=atol)
            report.rows.append(row)
    report.only_legacy = [n for n in legacy.values if n not in new.values]
    report.only_new = [n for n in new.values if n not in legacy.values]
    if printed:
        rows, notes = compare_printed(legacy.stdout, new.stdout, rtol=rtol, atol=atol)
        report.rows.extend(rows)
        report.notes.extend(notes)
    causes = report.random_causes
    if causes:
        for row in report.mismatches:
            row.random = True
            row.causes = list(causes)
    return report


# -- running ----------------------------------------------------------------

def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, AttributeError, OSError):
        proc.kill()


def _load_capture(run: ScriptRun, directory: str) -> None:
    import numpy as np

    meta_path = os.path.join(directory, "meta.json")
    if not os.path.exists(meta_path):
        run.error = "finished but left no captured values (did it replace sys.stdout or os._exit?)"
        return
    with open(meta_path, encoding="utf-8") as f:
        meta = json.load(f)
    with np.load(os.path.join(directory, "values.npz"), allow_pickle=False) as data:
        for i, name in enumerate(meta["names"]):
            run.values[name] = data[f"v{i}"]
            run.dtypes[name] = meta["dtypes"][i]
    run.skipped = dict(meta.get("skipped", {}))
    run.random_ops = dict(meta.get("random_ops", {}))
    run.unseeded = dict(meta.get("unseeded", {}))
    run.random_modes = dict(meta.get("random_modes", {}))


OutputCallback = Callable[[str, str, str], None]  # (role, "stdout" | "stderr", text)


def _pump(pipe, chunks: list, role: str, stream: str, on_output: OutputCallback | None) -> None:
    """Read one pipe to its end, keeping every line and passing it on (the tee)."""
    try:
        for line in iter(pipe.readline, b""):
            chunks.append(line)
            if on_output is not None:
                try:
                    on_output(role, stream, line.decode("utf-8", errors="replace"))
                except Exception:  # a broken echo must not lose the recording
                    pass
    finally:
        pipe.close()


def run_captured(script: str | os.PathLike, args: Sequence[str] = (), *, legacy: bool,
                 timeout: float | None = DEFAULT_TIMEOUT, cwd: str | os.PathLike | None = None,
                 env: dict | None = None, user_paths: Sequence[str | os.PathLike] = (),
                 on_output: OutputCallback | None = None, seed: int | None = None) -> ScriptRun:
    """Run ``script`` in a subprocess (through run-legacy when ``legacy``) and capture its values.

    stdout and stderr are recorded in the returned :class:`ScriptRun`; when
    ``on_output`` is given, each line is also handed to it as it arrives
    (``on_output(role, "stdout" | "stderr", line)``). ``user_paths``: more
    directories whose modules get the legacy ``tf`` (besides the script's
    own), as ``run-legacy --user-path``. ``seed``: Python's ``random``,
    numpy's global generator and TensorFlow's seeds start from it.
    """
    script = Path(script)
    role = "legacy" if legacy else "new"
    tmp = tempfile.mkdtemp(prefix=f"tapeshift-{role}-")
    cmd = runner_command(script, args, legacy=legacy, capture_dir=tmp,
                         user_paths=user_paths if legacy else ())
    if seed is not None:  # a runner option, before the "--" that ends them (tapeshift.migrate.legacy.capture)
        end = cmd.index("--", 3)
        cmd[end:end] = ["--seed", str(seed)]
    if on_output is not None:  # line by line as printed, not in 8 KiB blocks
        env = {**(os.environ if env is None else env), "PYTHONUNBUFFERED": "1"}
    start = time.monotonic()
    run = ScriptRun(role, script, cmd, None, "", "", 0.0, timeout=timeout, seed=seed)
    try:
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, cwd=cwd, env=env, start_new_session=True)
        except OSError as exc:
            run.error = f"could not be started: {exc}"
            return run
        out: list[bytes] = []
        err: list[bytes] = []
        pumps = [threading.Thread(target=_pump, args=(proc.stdout, out, role, "stdout", on_output),
                                  daemon=True),
                 threading.Thread(target=_pump, args=(proc.stderr, err, role, "stderr", on_output),
                                  daemon=True)]
        for t in pumps:
            t.start()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.wait()
            run.timed_out = True
        except BaseException:
            _kill_group(proc)
            proc.wait()
            raise
        for t in pumps:
            t.join(timeout=10)  # a leftover grandchild may hold a pipe open
        run.returncode = proc.returncode
        run.stdout = b"".join(out).decode("utf-8", errors="replace")
        run.stderr = b"".join(err).decode("utf-8", errors="replace")
        run.duration = time.monotonic() - start
        if run.timed_out:
            run.error = f"did not finish within the {timeout:g} s timeout (killed)"
        elif run.returncode != 0:
            how = " (through run-legacy)" if legacy else ""
            run.error = f"exited with code {run.returncode}{how}"
        else:
            _load_capture(run, tmp)
        return run
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def verify_scripts(legacy: str | os.PathLike, new: str | os.PathLike, *,
                   rtol: float | None = None, atol: float | None = None,
                   timeout: float | None = DEFAULT_TIMEOUT, args: Sequence[str] = (),
                   cwd: str | os.PathLike | None = None, printed: bool = True,
                   user_paths: Sequence[str | os.PathLike] = (),
                   on_output: OutputCallback | None = None,
                   seed: int | None = None) -> VerifyReport:
    """Run ``legacy`` through run-legacy and ``new`` under TF2, one after the other, and compare.

    ``rtol``/``atol`` replace the dtype defaults (:data:`TOLERANCES`) for
    every dtype; ``timeout`` is per script, in seconds (``None``: no limit);
    ``args`` are passed to both scripts; ``cwd`` is where both run (default:
    this process's); ``printed=False`` skips comparing printed numbers;
    ``user_paths`` are more directories whose TensorFlow imports run-legacy
    redirects for the legacy script; ``on_output`` receives each line the
    scripts print, as they print it (see :func:`run_captured`); ``seed``
    starts both runs with Python's ``random``, numpy's global generator and
    TensorFlow's seeds set to it (``--seed``).
    """
    legacy_run = run_captured(legacy, args, legacy=True, timeout=timeout, cwd=cwd,
                              user_paths=user_paths, on_output=on_output, seed=seed)
    new_run = run_captured(new, args, legacy=False, timeout=timeout, cwd=cwd, on_output=on_output,
                           seed=seed)
    return compare_runs(legacy_run, new_run, rtol=rtol, atol=atol, printed=printed)


def verify_sources(legacy_source: str, new_source: str, path: str | os.PathLike, *,
                   rtol: float | None = None, atol: float | None = None,
                   timeout: float | None = DEFAULT_TIMEOUT, args: Sequence[str] = (),
                   cwd: str | os.PathLike | None = None, printed: bool = True,
                   user_paths: Sequence[str | os.PathLike] = (),
                   on_output: OutputCallback | None = None,
                   seed: int | None = None) -> VerifyReport:
    """:func:`verify_scripts` for two versions of the file ``path`` held in memory.

    For ``migrate --verify`` in check or diff mode, where the migrated text is
    not written: both versions are written to hidden temporary files *next to*
    ``path`` (so imports of sibling modules and paths relative to ``__file__``
    work), verified, and removed. The report names ``path`` for both runs.
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    written: list[Path] = []
    try:
        for role, source in (("legacy", legacy_source), ("new", new_source)):
            fd, name = tempfile.mkstemp(prefix=f".{path.stem}.tapeshift-{role}-", suffix=".py",
                                        dir=directory)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(source)
            written.append(Path(name))
        report = verify_scripts(written[0], written[1], rtol=rtol, atol=atol, timeout=timeout,
                                args=args, cwd=cwd, printed=printed, user_paths=user_paths,
                                on_output=on_output, seed=seed)
    finally:
        for tmp in written:
            try:
                tmp.unlink()
            except OSError:
                pass
    for run, tmp in ((report.legacy, written[0]), (report.new, written[1])):
        run.stderr = run.stderr.replace(str(tmp), str(path))
        run.stdout = run.stdout.replace(str(tmp), str(path))
        for entry in run.unseeded.values():
            first = entry.get("first") or ""
            if first.startswith(str(tmp.resolve())) or first.startswith(str(tmp)):
                entry["first"] = str(path) + first[first.rindex(":"):]
        run.path = path
    return report


# -- the subcommand ---------------------------------------------------------

def _non_negative(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text!r}")
    return value


SEED_MAX = 2**32 - 1  # numpy's global generator takes seeds in [0, 2**32)


def seed_value(text: str) -> int:
    """``--seed``'s type: an integer in [0, 2**32)."""
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"must be between 0 and {SEED_MAX}, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = TOLERANCE_HELP
    parser.add_argument("legacy", metavar="LEGACY", help="the TF1 script (run through run-legacy)")
    parser.add_argument("new", metavar="NEW", help="the migrated TF2 script")
    parser.add_argument("--rtol", type=_non_negative, default=None, metavar="R",
                        help="relative tolerance for every dtype (default: by dtype, see below)")
    parser.add_argument("--atol", type=_non_negative, default=None, metavar="A",
                        help="absolute tolerance for every dtype (default: by dtype, see below)")
    parser.add_argument("--timeout", type=_non_negative, default=DEFAULT_TIMEOUT, metavar="S",
                        help=f"seconds each script may run (default {DEFAULT_TIMEOUT:g}; 0: no limit)")
    parser.add_argument("--seed", type=seed_value, default=None, metavar="N",
                        help="start both runs with Python's random, numpy's global generator and "
                             "TensorFlow's seeds set to N (numpy/Python draws then agree; TF random "
                             "ops in a TF1 graph and in TF2 eager still draw different streams)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--no-printed", dest="printed", action="store_false",
                        help="do not compare the numbers the scripts print")
    parser.add_argument("--user-path", action="append", default=[], metavar="DIR",
                        help="as run-legacy --user-path, for the legacy script (repeatable)")
    parser.add_argument("--show-output", action="store_true",
                        help="show both scripts' stdout and stderr as they run (to stderr with --json)")
    parser.add_argument("--args", dest="script_args", type=shlex.split, default=[],
                        metavar="'ARG ...'",
                        help="arguments for both scripts, as one shell-quoted string "
                             "(write --args='--flag' when it has no space)")


def run(args: argparse.Namespace) -> int:
    for path in (args.legacy, args.new):
        if not Path(path).is_file():
            print(f"tapeshift verify: no such script: {path}", file=sys.stderr)
            return ExitCode.ERROR
    on_output = None
    if args.show_output:
        def on_output(role: str, stream: str, text: str) -> None:
            target = sys.stderr if (args.json or stream == "stderr") else sys.stdout
            target.write(f"[{role}] {text}" if text.endswith("\n") else f"[{role}] {text}\n")
            target.flush()

    report = verify_scripts(Path(args.legacy), Path(args.new), rtol=args.rtol, atol=args.atol,
                            timeout=args.timeout or None, args=args.script_args,
                            printed=args.printed, user_paths=args.user_path, on_output=on_output,
                            seed=args.seed)
    if args.json:
        print(report.to_json())
    else:
        print(report.to_text())
    return report.exit_code


def main(argv: Sequence[str] | None = None) -> int:
    """``tapeshift verify ARGS``: the command line's own parsing and exit codes."""
    return standalone_main("verify", HELP, add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
