"""The comparison of two runs: their values and printed numbers (one value: :mod:`.values`)."""

from __future__ import annotations

import math
from typing import Sequence

from tapeshift.migrate.legacy import spread
from tapeshift.migrate.legacy.printed import parse_printed
from tapeshift.migrate.legacy.report import ScriptRun, ValueRow, VerifyReport
from tapeshift.migrate.legacy.values import (
    compare_values,
)


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


def printed_across_runs(items, others) -> tuple[dict | None, str]:
    """The numbers each legacy run printed, per number the first run printed.

    ``items``: the first legacy run's :func:`parse_printed` items; ``others``:
    the other runs'. Returns ``({id(item): [value in run 1, run 2, ...]}, "")``
    when every run printed the same sequence (same count, same places for
    True/False, elided arrays and graph objects), else ``(None, why)``.
    """
    values = {id(x): [x.value] for x in items if x.kind in ("int", "float", "bool")}
    count = sum(x.kind != "symbolic" for x in items)
    for k, other in enumerate(others, start=2):
        pairs, aside, rest, other_rest = align_printed(items, other)
        clean = not rest and not other_rest and all(
            it.kind == "symbolic" for old, new in aside for it in (*old, *new))
        clean = clean and all((x.kind == "elided") == (y.kind == "elided")
                              and (x.kind == "bool") == (y.kind == "bool") for x, y in pairs)
        if not clean:
            n_other = sum(y.kind != "symbolic" for y in other)
            return None, (f"the legacy runs did not print alike (run 1 printed {count} numbers, "
                          f"run {k} {n_other}, not in the same places): printed numbers were "
                          "compared with the first legacy run only")
        for x, y in pairs:
            if id(x) in values:
                values[id(x)].append(y.value)
    return values, ""


def compare_printed(legacy_out: str, new_out: str, *, rtol: float | None = None,
                    atol: float | None = None,
                    legacy_others: Sequence[str] = ()) -> tuple[list[ValueRow], list[str]]:
    """Rows comparing the numbers two stdouts printed, in order, one row per legacy print.

    A symbolic TensorFlow object printed by one script (a graph tensor or
    variable, an op dump) and what the other printed in its place (say the
    eager tensor's value) are set aside, in a ``symbolic`` row that is not a
    comparison, and the prints after it stay aligned.

    ``legacy_others``: the stdout of more runs of the legacy script
    (``--legacy-runs``). A print whose numbers differ between the legacy runs
    is judged by the envelope rule (:mod:`tapeshift.migrate.legacy.spread`);
    the others exactly as without them.
    """
    rows, notes, _ = _compare_printed(legacy_out, new_out, rtol=rtol, atol=atol,
                                      legacy_others=legacy_others)
    return rows, notes


def _compare_printed(legacy_out: str, new_out: str, *, rtol: float | None, atol: float | None,
                     legacy_others: Sequence[str]) -> tuple[list[ValueRow], list[str], str]:
    """:func:`compare_printed`, and why the legacy runs' prints could not be lined up ("" if they could)."""
    import numpy as np

    a_items, b_items = parse_printed(legacy_out), parse_printed(new_out)
    pairs, aside, a_rest, b_rest = align_printed(a_items, b_items)
    rows: list[ValueRow] = []
    notes: list[str] = []
    across, legacy_problem = None, ""
    if legacy_others:
        across, legacy_problem = printed_across_runs(a_items,
                                                     [parse_printed(o) for o in legacy_others])
        if legacy_problem:
            notes.append(legacy_problem)
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
            return rows, notes, legacy_problem
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
        runs = None if across is None else \
            np.array([across[id(x)] for x, _ in pairs_here], dtype=np.float64).T
        if runs is not None and not spread.identical(list(runs)):
            # the legacy runs printed different numbers here: judge by their spread
            row = spread.compare_with_spread(
                name, list(runs), b, ["printed"] * len(runs), "printed", rtol=rtol, atol=atol,
                kind="printed", exact=exact_mask if rtol is None and atol is None else None)
        else:
            row = compare_values(name, a, b, "printed", "printed", rtol=rtol, atol=atol,
                                 kind="printed")
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
    return rows, notes, legacy_problem



def compare_runs(legacy: ScriptRun, new: ScriptRun, *, rtol: float | None = None,
                 atol: float | None = None, printed: bool = True,
                 legacy_others: Sequence[ScriptRun] = ()) -> VerifyReport:
    """Compare two finished runs (no subprocess here).

    ``legacy_others``: more runs of the legacy script (``--legacy-runs N``).
    The legacy runs are compared with each other first; a value or print that
    differs between them is judged against their spread by the envelope rule
    (:mod:`tapeshift.migrate.legacy.spread`), every other one exactly as
    without them.
    """
    legacy_runs = [legacy, *legacy_others] if legacy_others else []
    report = VerifyReport(legacy, new, rtol=rtol, atol=atol, legacy_runs=legacy_runs)
    if report.failures:
        return report
    for name in legacy.values:
        label = legacy.dtypes.get(name, "float32")
        new_label = new.dtypes.get(name, "float32")
        having = [r for r in legacy_runs if name in r.values]
        varies = len(having) < len(legacy_runs) or (
            len(having) > 1 and not spread.identical([r.values[name] for r in having]))
        if varies:
            report.legacy_spread[name] = spread.run_spread([r.values[name] for r in having]) \
                if len(having) == len(legacy_runs) else (math.inf, math.inf)
        if name not in new.values:
            continue
        if not varies:
            row = compare_values(name, legacy.values[name], new.values[name], label, new_label,
                                 rtol=rtol, atol=atol)
        else:
            row = spread.compare_with_spread(
                name, [r.values[name] for r in having], new.values[name],
                [r.dtypes.get(name, label) for r in having], new_label, rtol=rtol, atol=atol)
            row.spread = True
            if len(having) < len(legacy_runs):
                row.spread_abs = row.spread_rel = math.inf
                row.note = "; ".join(filter(None, [
                    f"only {len(having)} of the {len(legacy_runs)} legacy runs left it", row.note]))
        report.rows.append(row)
    report.only_legacy = [n for n in legacy.values if n not in new.values]
    report.only_new = [n for n in new.values if n not in legacy.values]
    if printed:
        rows, notes, legacy_problem = _compare_printed(
            legacy.stdout, new.stdout, rtol=rtol, atol=atol,
            legacy_others=[r.stdout for r in legacy_others])
        report.rows.extend(rows)
        report.notes.extend(notes)
        if legacy_problem:
            report.legacy_spread["stdout"] = (math.inf, math.inf)
        for row in rows:
            if row.spread:
                report.legacy_spread[row.name] = (row.spread_abs, row.spread_rel)
    causes = report.random_causes
    if causes:
        for row in report.mismatches:
            row.random = True
            row.causes = list(causes)
    return report
