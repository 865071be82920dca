"""What ``verify --align-random`` says: the aligned draws of each run, and why values may still differ.

Reads the ``align`` records the two child processes wrote
(:meth:`tapeshift.migrate.legacy.align.RandomAligner.record`); no TensorFlow here.
"""

from __future__ import annotations

PER_STEP = "per-step random ops"
DRAW_COUNT = "random draw counts"
LAYER_DRAWS = "layer draw counts"
UNALIGNED = "unaligned random ops"
STATELESS = "stateless random ops"
WEIGHT_NAMES = "unmatched weight names"

#: the order in which the causes are named
CAUSES = (PER_STEP, DRAW_COUNT, LAYER_DRAWS, UNALIGNED, STATELESS, WEIGHT_NAMES)

_LIMIT = 5


def _names(names, limit: int = _LIMIT) -> str:
    names = list(names)
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


def _ops(table: dict) -> str:
    return ", ".join(f"{op} x{n}" if n > 1 else op for op, n in sorted(table.items()))


def summary_line(legacy: dict, new: dict) -> str:
    """One line: what each run drew from the stream."""
    def side(record: dict, role: str) -> str:
        total = record.get("order_draws", 0)
        runs, functions = record.get("run_draws", 0), record.get("function_created", 0)
        bits = [f"{runs} in session runs"] * bool(runs) \
            + [f"{functions} created in function graphs"] * bool(functions)
        if bits and total > runs + functions:
            bits.append(f"{total - runs - functions} run")
        how = f" ({', '.join(bits)})" if bits else " (run)" if total else ""
        text = (f"{role}: {total} keyed by order{how}, "
                f"{sum(record.get('weights', {}).values())} by layer weight name")
        layers = record.get("layer_draws") or {}
        if layers:
            text += (f", {sum(layers.values())} in layer calls, keyed by layer and execution "
                     f"({_names(f'{site} x{n}' for site, n in layers.items())})")
        if record.get("traced"):
            text += f", {record['traced']} inside tf.function (keyed as they run)"
        if record.get("unaligned"):
            text += f"; not aligned: {_ops(record['unaligned'])}"
        if record.get("stateless"):
            text += f"; left stateless: {_ops(record['stateless'])}"
        return text

    return (f"aligned random draws (--align-random, stream seed {legacy.get('seed', new.get('seed'))}): "
            f"{side(legacy, 'legacy')}; {side(new, 'new')}")


def causes(legacy: dict, new: dict) -> dict[str, str]:
    """Cause -> the line that explains it, for what alignment could not cover in these two runs."""
    out: dict[str, str] = {}
    n_legacy, n_new = legacy.get("order_draws", 0), new.get("order_draws", 0)
    per_step = []
    for record, role in ((legacy, "legacy"), (new, "new")):
        if record.get("in_loops"):
            per_step.append(f"{role} has random ops in a while_loop: {_names(record['in_loops'])}")
        if record.get("in_functions"):
            per_step.append(f"{role} created random ops in function graphs (tf.data, "
                            f"tf.function), keyed once: {_names(record['in_functions'])}")
    if per_step:
        out[PER_STEP] = (
            f"{PER_STEP} ({'; '.join(per_step)}): --align-random keys a TF1 graph's random ops "
            "by the session runs that execute them, in the order they were created; a draw that "
            "runs again within one run (a while_loop) takes the next count as it runs, and one "
            "in a function graph run from the graph (a tf.data map) is keyed once, when created, "
            "so it draws the same numbers at every element or call: where the TF2 program draws "
            "these in another order the runs differ. Compare with such ops off (keep_prob 1, "
            "noise 0), or draw them in a Keras layer's call (tf.layers.dropout, tf_keras "
            "Dropout), keyed by layer and execution (docs/verify.md, '--align-random').")
    if n_new != n_legacy:
        drew = "; ".join(f"{role} drew by order more than once at "
                         + _names(f"{line} ({n} draws)" for line, n in record["drew_at"].items())
                         for record, role in ((legacy, "legacy"), (new, "new"))
                         if record.get("drew_at"))
        out[DRAW_COUNT] = (
            f"{DRAW_COUNT} (the legacy run drew {n_legacy} keyed by order, the new run {n_new}"
            f"{'; ' + drew if drew else ''}): draws are keyed by their position in the order they "
            "run (a session run's random ops in the order they were created), so from the first "
            "draw one run makes and the other does not, the runs draw from different keys; make "
            "both draw their random values in the same order.")
    layers = _layer_differences(legacy, new)
    if layers:
        out[LAYER_DRAWS] = (
            f"{LAYER_DRAWS} ({'; '.join(layers)}): a draw in a Keras layer's call is keyed by the "
            "layer's full name (a tf.layers layer's variable scope, net/dropout; a TF2 layer's "
            "name), the draw's index in the call (#0) and how many times it ran before, so the "
            "runs draw alike only where each such draw runs as often under the same name; name "
            "the TF2 layer as the TF1 scope (tf_keras.layers.Dropout(0.5, name='net/dropout')).")
    unaligned = []
    for record, role in ((legacy, "legacy"), (new, "new")):
        if record.get("unaligned"):
            why = "".join(f" ({op}: {msg})" for op, msg in (record.get("failed") or {}).items())
            unaligned.append(f"{role}: {_ops(record['unaligned'])}{why}")
    if unaligned:
        out[UNALIGNED] = (
            f"{UNALIGNED} ({'; '.join(unaligned)}): --align-random cannot make these draw from "
            "its stream (tf.random.Generator, candidate samplers, tf.data shuffle, "
            "sample_distorted_bounding_box, fractional pooling), so each run drew its own numbers.")
    if (legacy.get("stateless") or {}) != (new.get("stateless") or {}):
        sides = "; ".join(f"{role}: {_ops(r.get('stateless') or {}) or 'none'}"
                          for r, role in ((legacy, "legacy"), (new, "new")))
        out[STATELESS] = (
            f"{STATELESS} ({sides}): stateless ops called by the script or a library (Keras 3 "
            "draws this way) keep their own seeds and are not aligned; the two runs did not "
            "make the same such draws.")
    weights_legacy, weights_new = set(legacy.get("weights") or {}), set(new.get("weights") or {})
    renamed = [f"{role} keyed {a} but named the variable {b}"
               for record, role in ((legacy, "legacy"), (new, "new"))
               for a, b in record.get("renamed") or ()]
    if weights_legacy != weights_new or renamed:
        parts = []
        if weights_legacy - weights_new:
            parts.append("only in legacy: " + _names(sorted(weights_legacy - weights_new)))
        if weights_new - weights_legacy:
            parts.append("only in new: " + _names(sorted(weights_new - weights_legacy)))
        parts.extend(renamed[:_LIMIT])
        out[WEIGHT_NAMES] = (
            f"{WEIGHT_NAMES} ({'; '.join(parts)}): a layer weight's draws are keyed by its full "
            "variable name, so a weight named differently in the two scripts gets different "
            "initial values; name the TF2 layer as the TF1 variable scope "
            "(tf_keras.layers.Dense(..., name='Net/l1') for Net/l1/kernel).")
    return out


def _layer_differences(legacy: dict, new: dict) -> list[str]:
    """What differs between the runs' draws in layer calls: executions, names, shared names."""
    a, b = legacy.get("layer_draws") or {}, new.get("layer_draws") or {}
    parts = []
    counts = [f"{site} ran {a[site]} times in legacy, {b[site]} in new"
              for site in a if site in b and a[site] != b[site]]
    if counts:
        parts.append(_names(counts))
    if set(a) - set(b):
        parts.append("only in legacy: " + _names(sorted(set(a) - set(b))))
    if set(b) - set(a):
        parts.append("only in new: " + _names(sorted(set(b) - set(a))))
    shared = legacy.get("layer_shared") or {}
    if shared:
        parts.append("legacy graph ops sharing a layer's name (a reused scope), counted in the "
                     "order TensorFlow runs them: "
                     + _names(f"{site} ({n} ops)" for site, n in shared.items()))
    return parts
