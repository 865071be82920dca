"""Two checkpoints compared tensor by tensor.

Entries are paired by key (an object-based checkpoint's variables by their
object path) when both checkpoints have the same format, by name
(a TF2 checkpoint's recorded original names) when one is name-based and the
other object-based, so a TF1 checkpoint compares with its conversion.
``tf.train.Checkpoint``'s save counter is bookkeeping of the program that
saved, not model state, and is left out.

Tolerances are ``tapeshift verify``'s (:mod:`tapeshift.migrate.legacy.compare`):
a value agrees when ``|b - a| <= atol + rtol * |a|`` elementwise, with rtol
and atol by dtype, exact for integers and booleans; ``rtol``/``atol`` replace
them for every dtype. Strings must be equal.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tapeshift.migrate.checkpoints import CheckpointError
from tapeshift.migrate.checkpoints.reader import CheckpointInfo
from tapeshift.migrate.checkpoints.roles import SAVE_COUNTER, VARIABLE_VALUE, Entry
from tapeshift.migrate.engine.exit_codes import ExitCode
from tapeshift.migrate.legacy.values import compare_values

EQUAL, DIFFERENT, SHAPE, DTYPE = "equal", "different", "shape", "dtype"


@dataclass
class DiffRow:
    name: str
    shape: str
    dtype: str
    status: str
    max_abs: float | None = None
    max_rel: float | None = None
    rtol: float | None = None
    atol: float | None = None
    note: str = ""

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("name", "shape", "dtype", "status", "max_abs",
                                              "max_rel", "rtol", "atol", "note")}


@dataclass
class DiffReport:
    a: CheckpointInfo
    b: CheckpointInfo
    by: str
    rows: list[DiffRow] = field(default_factory=list)
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)

    @property
    def differences(self) -> list[DiffRow]:
        return [r for r in self.rows if r.status != EQUAL]

    @property
    def exit_code(self) -> int:
        return ExitCode.FOUND if (self.differences or self.only_a or self.only_b) else ExitCode.OK

    def to_dict(self) -> dict:
        return {"a": self.a.prefix, "b": self.b.prefix, "a_format": self.a.format,
                "b_format": self.b.format, "matched_by": self.by,
                "equal": self.exit_code == ExitCode.OK,
                "variables": [r.to_dict() for r in self.rows],
                "only_in_a": self.only_a, "only_in_b": self.only_b}


def _index(info: CheckpointInfo, by: str) -> dict[str, Entry]:
    out: dict[str, Entry] = {}
    for e in info.entries:
        if e.role == SAVE_COUNTER:
            continue
        if by == "name":
            label = e.name
        else:  # an object-based checkpoint's variables by object path, as inspect shows them
            label = e.path if e.path is not None and e.attribute == VARIABLE_VALUE else e.key
        if label in out:
            raise CheckpointError(f"{info.located.index}: two entries are named {label!r} "
                                  f"({out[label].key}, {e.key}); compare with --by key")
        out[label] = e
    return out


def _compare_strings(name: str, a, b, shape: str) -> DiffRow:
    import numpy as np

    same = bool(np.array_equal(a.astype(object), b.astype(object)))
    return DiffRow(name, shape, "string", EQUAL if same else DIFFERENT,
                   note="" if same else "the strings differ")


def diff_checkpoints(a: CheckpointInfo, b: CheckpointInfo, *, rtol: float | None = None,
                     atol: float | None = None, by: str = "auto") -> DiffReport:
    """Compare ``a`` and ``b``; reading a value that fails raises :class:`CheckpointError`."""
    if by == "auto":
        by = "key" if a.format == b.format else "name"
    report = DiffReport(a, b, by)
    ia, ib = _index(a, by), _index(b, by)
    report.only_a = [n for n in ia if n not in ib]
    report.only_b = [n for n in ib if n not in ia]
    for name in (n for n in ia if n in ib):
        ea, eb = ia[name], ib[name]
        va, vb = a.read(ea), b.read(eb)
        dtype = ea.dtype if ea.dtype == eb.dtype else f"{ea.dtype}/{eb.dtype}"
        if ea.shape != eb.shape:
            report.rows.append(DiffRow(name, f"{ea.shape_text}/{eb.shape_text}", dtype, SHAPE,
                                       note=f"shape {ea.shape_text} in A, {eb.shape_text} in B"))
            continue
        if "string" in (ea.dtype, eb.dtype) or va.dtype.kind in "OSU" or vb.dtype.kind in "OSU":
            row = (_compare_strings(name, va, vb, ea.shape_text) if ea.dtype == eb.dtype else
                   DiffRow(name, ea.shape_text, dtype, DTYPE, note=f"dtype {ea.dtype} in A, {eb.dtype} in B"))
            report.rows.append(row)
            continue
        value = compare_values(name, va, vb, ea.dtype, eb.dtype, rtol=rtol, atol=atol)
        status = EQUAL if value.status == "ok" else DIFFERENT
        note = value.note
        if ea.dtype != eb.dtype:
            status = DTYPE
            note = f"dtype {ea.dtype} in A, {eb.dtype} in B" + (f"; {note}" if note else "")
        report.rows.append(DiffRow(name, ea.shape_text, dtype, status, value.max_abs, value.max_rel,
                                   value.rtol, value.atol, note))
    return report
