"""Part of the gradients rule (gradients.py): where the tapes go.

For the ``tf.gradients`` calls of one block, ``TapePlans._plan`` finds the
forward statements each gradient needs, gives each order of gradient a tape
(nested, outer for the higher orders) and its region of statements, decides
which tapes are persistent, what is watched and where each tape is deleted,
and records the call rewrites; the rule applies the plan when it leaves the
block (``GradientsToTape._apply``).

The codes reported here (TS103, TS105, TS110, TS111) are documented in
gradients.py, beside the rule, and spelled here by their names: importing
them from there would make an import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.tf_names import fresh_name
from tapeshift.migrate.engine.toolkit.dataflow import (
    backward_slice,
    block_info,
    forward_dependents,
    last_def,
    mutated_names,
    names_of,
)
from tapeshift.migrate.engine.toolkit.gradient_helpers import TAPE_PARAM, GradientHelper
from tapeshift.migrate.engine.toolkit.variable_store import VARIABLE_REFS
from tapeshift.migrate.engine.toolkit.walk import nodes
from tapeshift.migrate.rules.gradients_codes import TS103, TS105, TS110, TS111

#: Arguments that only steer graph construction; dropped (TS110).
GRAPH_ONLY_PARAMS = frozenset({
    "name", "colocate_gradients_with_ops", "gate_gradients", "aggregation_method",
})


@dataclass
class _GradCall:
    call: cst.Call
    parent: cst.CSTNode
    grand: Optional[cst.CSTNode]
    stmt_index: int
    args: Dict[str, cst.BaseExpression] = field(default_factory=dict)
    ys: List[str] = field(default_factory=list)
    xs: List[str] = field(default_factory=list)
    xs_is_list: bool = False
    slice: Set[int] = field(default_factory=set)
    defs: Dict[str, int] = field(default_factory=dict)
    level: int = 0
    base: Optional[str] = None  # "self": sources are attributes of self (block_info's base)
    #: a call of a gradient helper (toolkit/gradient_helpers.py), not of tf.gradients
    helper: Optional[GradientHelper] = None
    #: the if/for/with statements around the call, inner first (the last is the
    #: block's statement ``stmt_index``)
    enclosing: List[cst.BaseCompoundStatement] = field(default_factory=list)


@dataclass
class _Plan:
    regions: List[Tuple[int, int]]
    tapes: List[str]
    persistent: List[bool]
    pre_watch: List[List[str]]
    post_watch: Dict[int, List[Tuple[str, str]]]
    delete_after: Dict[int, List[str]]
    moved: Dict[int, List[int]] = field(default_factory=dict)


class TapePlans:
    """Part of :class:`tapeshift.migrate.rules.gradients.GradientsToTape`: the
    plan of a block's tapes (state on the rule: the calls' rewrites, the
    module functions' reads, the variables' owners)."""

    def _one_pass(self, stmts, gc: _GradCall) -> bool:
        """A tape in each pass of a loop records that pass only: the path from the
        sources to the target must not go through a value an earlier pass computed
        from the sources (``h = f(h, w)`` carried from pass to pass)."""
        carried = set()  # read in a pass before that pass writes them
        for k, st in enumerate(stmts):
            carried |= {name for name in st.reads if any(name in later.writes for later in stmts[k:])}
        # what holds a value computed from the sources when a pass starts: run the
        # passes until that set is stable
        outside = {x for x, d in gc.defs.items() if d < 0}
        at_start: Set[str] = set()
        while True:
            tainted = outside | at_start
            for j, st in enumerate(stmts):
                if st.reads & tainted:
                    tainted |= st.writes
                else:
                    tainted -= st.writes
                tainted |= {x for x, d in gc.defs.items() if d == j}
            after = at_start | (carried & tainted)
            if after == at_start:
                break
            at_start = after
        back = backward_slice(stmts, set(gc.ys), gc.stmt_index) | {gc.stmt_index}
        for name in sorted(at_start - set(gc.xs)):
            if any(name in stmts[j].reads and last_def(stmts, name, j) < 0 for j in back):
                self.report(TS103.code, gc.call, f"tf.gradients in a loop whose target depends on "
                            f"`{name}`, which an earlier pass computed from the sources (one "
                            "tape around the whole loop would be needed): not converted")
                return False
        return True

    def _plan(self, block, calls: List[_GradCall], kinds: dict, taken: Set[str]) -> Optional[_Plan]:
        body = list(block.body)
        stmts = block_info(body, "self" if any(gc.base for gc in calls) else None)
        for st in stmts:  # (`states.append(h)` in a loop makes what `states` holds)
            st.writes = st.writes | mutated_names(st.node)
        # a call of a module function reads what the function reads from the module
        # (a model function computing with the variables made before its first call)
        for st in stmts:
            for name in st.reads & set(self._closures):
                st.reads = st.reads | self._closures[name]
        ok = True
        calls.sort(key=lambda c: c.stmt_index)
        for gc in calls:
            if gc.enclosing:
                inside = names_of(gc.enclosing[-1])[1]
                computed = set(gc.ys) & inside - {n.value for c in gc.enclosing
                                                  if isinstance(c, cst.For)
                                                  for n in nodes(c.target) if isinstance(n, cst.Name)}
                if computed:
                    kind = type(gc.enclosing[-1]).__name__.lower()
                    self.report(TS103.code, gc.call, f"tf.gradients inside a `{kind}` block that "
                                f"also computes its target `{sorted(computed)[0]}` (a tape around "
                                "each pass would be needed): not converted")
                    ok = False
        if not ok:
            return None
        for gc in calls:
            gi = gc.stmt_index
            ys = set(gc.ys)
            for c in gc.enclosing:  # `for l in losses: tf.gradients(l, w)`: what l runs over
                if isinstance(c, cst.For):
                    bound = {n.value for n in nodes(c.target) if isinstance(n, cst.Name)}
                    if ys & bound:
                        ys = (ys - bound) | names_of(c.iter)[0]
            back = backward_slice(stmts, ys, gi)
            gc.defs = {x: last_def(stmts, x, gi) for x in gc.xs}
            fwd = forward_dependents(stmts, gc.defs, gi)
            gc.slice = back & fwd
            if block in self._loop_bodies and not self._one_pass(stmts, gc):
                ok = False
            if not gc.slice:
                self.report(TS111.code, gc.call, f"no computation from `{', '.join(gc.xs)}` to "
                            f"`{', '.join(gc.ys)}` was found in this block")
                ok = False
        if not ok:
            return None
        for gc in calls:
            for other in calls:
                if other.stmt_index in gc.slice:
                    gc.level = max(gc.level, other.level + 1)
        top = max(gc.level for gc in calls)
        regions: List[Tuple[int, int]] = []
        moved: Dict[int, Set[int]] = {}
        for level in range(top + 1):
            members = [gc for gc in calls if gc.level == level]
            start = min(min(gc.slice) for gc in members)
            end = max(max(gc.slice) for gc in members)
            if regions:
                start = min(start, regions[-1][0])
                end = max(end, regions[-1][1])
            for gc in members:
                if gc.stmt_index <= end:
                    if self._movable(stmts, gc.stmt_index, end):
                        moved.setdefault(level, set()).add(gc.stmt_index)
                        continue
                    line, _ = self.position(body[end])
                    self.report(TS105.code, gc.call, "this gradient is taken inside the forward "
                                f"computation of its tape (which ends at line {line})")
                    ok = False
            regions.append((start, end))
        if not ok:
            return None
        tapes: List[str] = []
        used = set(taken)
        for level in range(top + 1):
            base = "tape" if level == 0 else ("outer_tape" if level == 1 else f"outer{level}_tape")
            if block in self._loop_bodies and self._planned_tapes:
                base = "inner_" + base  # inside the region of a tape around the loop
            name = fresh_name(base, used)
            used.add(name)
            tapes.append(name)
        # (a gradient in a loop is taken once per pass: a persistent tape too)
        persistent = [sum(1 for gc in calls if gc.level == lv) > 1 or any(
            gc.level == lv and any(isinstance(c, (cst.For, cst.While)) for c in gc.enclosing)
            for gc in calls)
            for lv in range(top + 1)]

        # tape.watch for sources that are not variables
        variables = {n for n, k in kinds.items() if k == "variable"} | self._variable_owners \
            | set(self.shared.get(VARIABLE_REFS, ()))
        pre_watch: List[List[str]] = []
        post_watch: Dict[int, List[Tuple[str, str]]] = {}
        for level in range(top + 1):
            start, end = regions[level]
            tape = tapes[level]
            sources: Dict[str, int] = {}
            for gc in calls:
                if gc.level == level:
                    for x in gc.xs:
                        sources.setdefault(x, gc.defs[x])
            pre = [x for x, d in sources.items() if x not in variables and d < start]
            inside = {d: x for x, d in sources.items() if x not in variables and d >= start}
            tainted = {v for v in variables if last_def(stmts, v, start) >= -1} | set(pre)
            # a variable defined inside the region is watched from its definition on
            tainted -= {v for v in variables if start <= last_def(stmts, v, end + 1) <= end}
            for j in range(start, end + 1):
                st = stmts[j]
                recorded = bool(st.reads & tainted)
                if recorded:
                    tainted |= st.writes
                tainted |= st.writes & variables
                if j in inside:
                    x = inside[j]
                    if not recorded:
                        post_watch.setdefault(j, []).append((tape, x))
                    tainted.add(x)
            pre_watch.append(pre)

        delete_after: Dict[int, List[str]] = {}
        for level in range(top + 1):
            if persistent[level]:
                last = max(gc.stmt_index for gc in calls if gc.level == level)
                if isinstance(body[last], cst.SimpleStatementLine) \
                        and any(isinstance(s, cst.Return) for s in body[last].body):
                    continue
                # keep a visual group together: delete after the statements that
                # directly follow the last gradient without a blank line
                results: Set[str] = set()
                for gc in calls:
                    if gc.level == level:
                        results |= stmts[gc.stmt_index].writes
                while (last + 1 < len(body)
                       and isinstance(body[last + 1], cst.SimpleStatementLine)
                       and not body[last + 1].leading_lines
                       and all(isinstance(s, (cst.Assign, cst.AugAssign, cst.AnnAssign))
                               for s in body[last + 1].body)
                       and stmts[last + 1].reads & results):
                    results |= stmts[last + 1].writes
                    last += 1
                delete_after.setdefault(last, []).append(tapes[level])

        # record the call rewrites
        for gc in calls:
            tape = tapes[gc.level]
            if gc.helper is not None:
                self._call_mode[gc.call] = (tape, "helper")
                self.record_change(gc.call, f"`{code_of(gc.call.func)}(...)` is passed "
                                   f"`{TAPE_PARAM}={tape}`, the tape that recorded "
                                   f"`{code_of(gc.args['ys'])}`")
                continue
            dropped = sorted(k for k in gc.args if k in GRAPH_ONLY_PARAMS)
            if dropped:
                self.report(TS110.code, gc.call, "dropped tf.gradients argument(s) with no meaning "
                            f"in eager mode: {', '.join(dropped)}")
            new_call = code_of(self._tape_call(gc.call, tape))
            old = code_of(gc.call)
            if gc.xs_is_list:
                self._call_mode[gc.call] = (tape, "bare")
                shown = new_call
            elif (isinstance(gc.parent, cst.Subscript) and gc.parent.value is gc.call
                  and len(gc.parent.slice) == 1
                  and isinstance(gc.parent.slice[0].slice, cst.Index)
                  and isinstance(gc.parent.slice[0].slice.value, cst.Integer)
                  and gc.parent.slice[0].slice.value.value in ("0", "-1")):
                self._call_mode[gc.call] = (tape, "bare")
                self._subscripts.add(gc.parent)
                old = code_of(gc.parent)
                shown = new_call
            elif (isinstance(gc.parent, cst.Assign) and len(gc.parent.targets) == 1
                  and isinstance(gc.parent.targets[0].target, (cst.Tuple, cst.List))
                  and len(gc.parent.targets[0].target.elements) == 1
                  and isinstance(gc.parent.targets[0].target.elements[0].value, cst.Name)):
                self._call_mode[gc.call] = (tape, "bare")
                self._unpacks.add(gc.parent)
                old = f"{code_of(gc.parent.targets[0].target)} = {old}"
                shown = f"{code_of(gc.parent.targets[0].target.elements[0].value)} = {new_call}"
            else:
                self._call_mode[gc.call] = (tape, "list")
                shown = f"[{new_call}]"
            self.record_change(gc.call, f"{' '.join(old.split())} -> {' '.join(shown.split())}")
        for level, (start, end) in enumerate(regions):
            # no line numbers in the text: a pre-rule may have moved these lines
            # (the change's own position is mapped back to the original file)
            count = end - start + 1
            args = "persistent=True" if persistent[level] else ""
            self.record_change(body[start], f"{count} statement{'s' if count > 1 else ''} from "
                               f"here recorded by `with GradientTape({args}) as {tapes[level]}:`")
        for level, indices in moved.items():
            for j in sorted(indices):
                self.record_change(body[j], f"gradient moved after the `with` block of "
                                   f"{tapes[level]} (nothing in the block reads it)")
        return _Plan(regions, tapes, persistent, pre_watch, post_watch, delete_after,
                     {lv: sorted(ix) for lv, ix in moved.items()})

    @staticmethod
    def _movable(stmts, g: int, end: int) -> bool:
        """A gradient assignment inside its tape's block can go after the block
        when nothing after it in the block reads what it binds or rebinds what
        it reads or binds."""
        node = stmts[g].node
        if not (isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1
                and isinstance(node.body[0], cst.Assign)):
            return False
        writes, reads = stmts[g].writes, stmts[g].reads
        for j in range(g + 1, end + 1):
            if stmts[j].reads & writes or stmts[j].writes & (writes | reads):
                return False
        return True
