"""TF1 towers (one per device, gradients averaged) -> one tower over the batch, then replicas.

TF1 trained on several devices by hand::

    x_splits = tf.split(x, NUM_GPUS)
    tower_grads = []
    for i in range(NUM_GPUS):
        with tf.device("/gpu:%d" % i), tf.name_scope("tower_%d" % i):
            loss = tower_loss(x_splits[i], y_splits[i])      # variables shared (AUTO_REUSE ...)
            tf.get_variable_scope().reuse_variables()        # (or another reuse form)
            grads = opt.compute_gradients(loss)
            tower_grads.append(grads)
    grads = average_gradients(tower_grads)                  # each variable's mean across towers
    train_op = opt.apply_gradients(grads, global_step=global_step)

TF2 does this with ``tf.distribute``: a strategy with one replica per visible
device, each replica computing the same step on its share of the batch. This
rule (a ``pre`` rule, before the model-code and feeds rules) first turns the
towers into the one-device program they stand for::

    replica_loss = tower_loss(x, y)                        # the tower over the whole batch
    grads = opt.compute_gradients(replica_loss)
    loss = replica_loss              # if `loss` is read after the loop (see below)
    train_op = opt.apply_gradients(grads, global_step=global_step)

so that the model-code and feeds rules convert it as any program (variables
made once under their TF1 names, a step function per ``sess.run``); then
:mod:`tapeshift.migrate.rules.towers_strategy` runs that step's gradient on the
replicas of a ``tf.distribute.MirroredStrategy``, and computes a loss read after
the loop, which in TF1 is the last tower's, on the last tower's split
(``tower_loss(tf.split(x, NUM_GPUS)[NUM_GPUS - 1], ...)``) where the step runs. It
stands as ``loss = replica_loss`` until then: a second call of the tower here would
be a second tower to the model-code rule, which checks that a function called
again reuses its variables, a check this rule has made already (below). The devices go:
``tf.device`` strings, ``tf.name_scope`` per tower, ``allow_soft_placement``
(TF2 places ops softly by default; the strategy places the replicas).

What is equal. With ``T`` towers on equal splits of a batch of ``B`` rows and a
tower loss that is a mean over its rows of terms each computed from one row
(plus, optionally, a term of the weights alone), TF1's average of the towers'
gradients is the gradient of the whole batch's mean loss, ``(1/T) Σ_t ∇L_t =
(1/B) Σ_i ∇l_i``, whatever ``T``; so is the mean of ``R`` replicas' gradients on
``R`` equal shards. For a tower loss that is a sum over its rows, TF1's average
is ``(1/T) ∇ Σ_i l_i``: the one tower is divided by ``T`` (``NUM_GPUS``), and
so is each replica's, which holds for any ``R``. :mod:`tapeshift.migrate.rules.
towers_rows` reads the tower function to show which of the two it is; where it
cannot (batch statistics, dropout, an op it does not know), the towers stay.
``tf.split`` into ``T`` parts raises unless ``T`` divides ``B``, as splitting
among the replicas does unless ``R`` divides ``B``: unequal splits never run.

Anything of the pattern this rule cannot read exactly is reported (TS130) and
the file keeps its compat form: the towers are never guessed at.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set

import libcst as cst

from tapeshift.migrate.engine.findings import COMPAT_SAFETY, CodeInfo, Severity
from tapeshift.migrate.engine.registry import register_rule
from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.tf_names import all_names, fresh_name, tf_module_alias
from tapeshift.migrate.engine.toolkit.statements import is_main_guard
from tapeshift.migrate.engine.toolkit.walk import nodes
from tapeshift.migrate.rules.towers_loop import (
    Loop, LoopReader, NotTowers, clean_args, is_call_of, reads, unwrapped)
from tapeshift.migrate.rules.towers_rows import MEAN, NotDistributive

TS130 = CodeInfo(
    code="TS130",
    name="towers-not-converted",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="TF1 multi-tower training the towers rule cannot turn into a tf.distribute step "
            "without risking a number",
    what="Reports a loop of towers (`for i in range(num_gpus):` with `tf.device`, a tower "
         "function on `tf.split` parts of the batch, `compute_gradients` per tower, an "
         "`average_gradients` helper and one `apply_gradients`) where some part is not the "
         "pattern the rule converts: another statement in the loop, a split into sizes, a "
         "helper that is not a mean across towers, a tower loss that is not a mean or a sum "
         "over its rows (batch statistics, dropout, an op the rule does not know), "
         "variables the towers do not share, or a train op no session step runs.",
    why="The towers become one tower over the whole batch and then the replicas of a "
        "`tf.distribute.MirroredStrategy` over whatever devices are visible. That keeps "
        "TF1's numbers only when the average of the towers' gradients is the whole batch's "
        "gradient: a tower loss that mixes the rows of its split, or draws random numbers, "
        "gives other numbers for another split.",
    example="for i in range(NUM_GPUS):\n    with tf.device('/gpu:%d' % i):\n"
            "        loss = tower_loss(x_splits[i], y_splits[i])\n"
            "        tf.summary.scalar('loss', loss)   # a statement the rule does not read\n"
            "        tower_grads.append(opt.compute_gradients(loss))",
    use_instead="strategy = tf.distribute.MirroredStrategy()\n"
                "# a replica's gradient under a tape in strategy.run, an all-reduce of the "
                "gradients, one apply",
    fix_safety=COMPAT_SAFETY,
)

TS131 = CodeInfo(
    code="TS131",
    name="towers-to-strategy",
    severity=Severity.INFO,
    summary="TF1 towers became a tf.distribute.MirroredStrategy step over the visible devices",
    what="Reports where the towers of a multi-device loop became one replica per visible "
         "device: the variables made under `strategy.scope()` with their TF1 names, each "
         "replica's loss and gradient under a tape in `strategy.run` on its rows of the batch, "
         "the optimizer's all-reduce (a sum of gradients each divided by the number of "
         "replicas: their mean) in place of `average_gradients`, one update.",
    why="TF2 has no graph to place by hand: `tf.distribute` replicates the step on the devices "
        "it finds, so the program runs on one CPU, two GPUs or eight without a `tf.device` "
        "string. The numbers are TF1's for a tower loss that is a mean (or a sum) over its "
        "rows, which the rule checked, on any number of replicas that divides the batch.",
    example="for i in range(NUM_GPUS):\n    with tf.device('/gpu:%d' % i):\n"
            "        ...\n        tower_grads.append(opt.compute_gradients(loss))\n"
            "train_op = opt.apply_gradients(average_gradients(tower_grads))",
    use_instead="strategy.run(replica_step, args=(replica_rows(x), replica_rows(y)))",
    fix_safety="Keeps numbers within float32 rounding (the sum across devices is reassociated), "
               "on one device or several; the value of a tower's loss read after the loop "
               "(the last tower's, in TF1) is computed on that tower's split.",
)

#: where this rule leaves what the strategy rule needs (``shared[TOWERS]``: a dict)
TOWERS = "towers"


@register_rule
class Towers(LoopReader, TapeshiftCodemod):
    DESCRIPTION = ("TF1 towers (one per device, compute_gradients each, gradients averaged) -> "
                   "one tower over the whole batch, distributed by the towers-strategy rule.")
    RULE = "towers"
    #: before the model-code rule (which reads the one tower's variables) and the feeds rule
    PHASE = "pre"
    ORDER = 23
    CODES = (TS130, TS131)
    SCREEN_NAMES = frozenset({"compute_gradients"})

    def visit_Module(self, node: cst.Module) -> bool:
        self._alias = tf_module_alias(node)
        self._module = node
        self._taken = all_names(node)
        self._functions: Dict[str, cst.FunctionDef] = {}
        counts: Dict[str, int] = {}
        for stmt in node.body:
            if isinstance(stmt, cst.FunctionDef):
                counts[stmt.name.value] = counts.get(stmt.name.value, 0) + 1
                self._functions[stmt.name.value] = stmt
        for name, count in counts.items():
            if count > 1:
                del self._functions[name]
        self._done = False  # a tower loop was found (converted or reported)
        self._average = ""
        self._converted = False
        return False

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if self._alias is None:
            return updated_node
        body = list(updated_node.body)
        for k, stmt in enumerate(body):
            if isinstance(stmt, cst.If) and is_main_guard(stmt) \
                    and isinstance(stmt.body, cst.IndentedBlock):
                inner = self._block(list(stmt.body.body), body[:k])
                if inner is not None:
                    body[k] = stmt.with_changes(body=stmt.body.with_changes(body=inner))
                    break
        else:
            new = self._block(body, [])
            if new is not None:
                body = new
        if not self._done:
            self._report_elsewhere(updated_node)
        if not self._converted:
            return updated_node
        return updated_node.with_changes(body=self._drop_unused_helpers(body))

    # -- finding the loop ----------------------------------------------------
    def _is_tower_loop(self, stmt: cst.CSTNode) -> bool:
        """A ``for`` loop that computes gradients and appends them to a list: towers."""
        if not isinstance(stmt, cst.For):
            return False
        attrs = {n.attr.value for n in nodes(stmt) if isinstance(n, cst.Attribute)}
        return "compute_gradients" in attrs and "append" in attrs

    def _report_elsewhere(self, module: cst.Module) -> None:
        """A tower loop nowhere this rule reads (in a function, a class, a branch)."""
        for n in nodes(module):
            if self._is_tower_loop(n):
                self.report(TS130.code, n, "a loop of towers (compute_gradients in a `for`) "
                            "that is not at module level or in the `__main__` guard: not "
                            "converted")
                return

    def _block(self, body: List[cst.BaseStatement],
               before: Sequence[cst.BaseStatement]) -> Optional[List[cst.BaseStatement]]:
        loops = [k for k, stmt in enumerate(body) if self._is_tower_loop(unwrapped(stmt))]
        if not loops:
            return None
        if len(loops) > 1:
            self.report(TS130.code, body[loops[1]], "a second loop of towers in the program: "
                        "only one is converted, and the file keeps its compat form")
            self._done = True
            return None
        self._done = True
        try:
            out = self._convert(body, loops[0], [*before, *body])
            self._converted = True
            return out
        except NotTowers as exc:
            self.report(TS130.code, exc.node, exc.reason)
        except NotDistributive as exc:
            self.report(TS130.code, exc.node, f"{exc.reason}; the towers are not converted")
        return None

    # -- recognising -------------------------------------------------------------
    def _convert(self, body: List[cst.BaseStatement], index: int,
                 program: Sequence[cst.BaseStatement]) -> List[cst.BaseStatement]:
        loop = self._read_loop(body, index)
        after = body[index + 1:]
        average_at, apply_at, average_name = self._read_average(after, loop)
        tower_grads_at = self._read_init(body[:index], loop.tower_grads)
        self._check_later_uses(after, loop, average_at)
        reading = self._read_tower(loop, program)
        config = self._soft_placement(body)

        loss_name = fresh_name("replica_loss", self._taken)  # names are the original's
        grads_name = average_name or (  # the towers' name for their gradients, if it is free
            loop.per_tower_grads if loop.per_tower_grads is not None
            and not self._spelled_at_module_level(loop.per_tower_grads, loop.statement)
            else fresh_name("grads", self._names_outside(self._average)))
        first = self._tower_call(loop)
        if reading.kind != MEAN:
            first = cst.BinaryOperation(first, cst.Divide(), loop.count)
        grads_call = loop.grads_call.with_changes(
            args=_with_first(loop.grads_call.args, cst.Name(loss_name)))
        new: List[cst.BaseStatement] = [
            _assign(loss_name, first).with_changes(leading_lines=body[index].leading_lines),
            _assign(grads_name, grads_call),
        ]
        if loop.reuse_at_root:  # TF1's root scope reuses from here on (after the first tower)
            new.append(cst.parse_statement(f"{self._alias}.get_variable_scope()"
                                           ".reuse_variables()\n"))
        last = None
        if self._read_elsewhere(loop.loss, self._module, loop.loop):
            # the last tower's loss, read after the loop: the strategy rule computes it on that
            # tower's split where the step runs (a second call of the tower here would be read
            # as a second tower by the model-code rule)
            last = loop.loss
            new.append(_assign(loop.loss, cst.Name(loss_name)))

        dropped = {tower_grads_at, *config}
        if average_name is not None:
            dropped.add(index + 1 + average_at)
        out: List[cst.BaseStatement] = []
        carried: List[cst.EmptyLine] = []  # blank lines and comments of a dropped statement
        for k, stmt in enumerate(body):
            if k in dropped:
                carried.extend(stmt.leading_lines)
                continue
            if k == index:
                stmts = new
            else:
                if k == index + 1 + (apply_at or 0) and average_name is None:
                    stmt = stmt.visit(_Replace(self._average, cst.Name(grads_name)))
                stmts = [stmt]
            if carried:
                own = list(stmts[0].leading_lines)
                if any(line.comment is None for line in own):  # one blank gap, not two
                    carried = [line for line in carried if line.comment is not None]
                stmts = [stmts[0].with_changes(leading_lines=[*carried, *own]), *stmts[1:]]
                carried = []
            out.extend(stmts)
        if config:
            out = [s.visit(_DropConfig(set(config.values()))) for s in out]

        names = {"loss": loss_name, "strategy": fresh_name("strategy", self._taken),
                 "rows": fresh_name("replica_rows", self._taken),
                 "step": fresh_name("replica_step", self._taken)}
        self._record(loop, reading, names, grads_name, config, body, last is not None)
        split_args = [[k, a.keyword.value if a.keyword is not None else None]
                      for k, a in enumerate(loop.tower_call.args)
                      if isinstance(a.value, cst.Subscript) and isinstance(a.value.value, cst.Name)
                      and a.value.value.value in loop.splits]
        self.shared[TOWERS] = {
            "names": names, "grads": grads_name, "optimizer": loop.optimizer, "last": last,
            "split_args": split_args,
            "sources": list(dict.fromkeys(loop.splits.values())),
            "count": code_of(loop.count), "reduction": reading.kind,
            "loop": f"for {loop.var} in range({code_of(loop.count)})", "average": self._average,
        }
        return out

    def _tower_call(self, loop: Loop) -> cst.Call:
        """The tower's call on the whole batch (each split's source instead of the split)."""
        args = []
        for arg in loop.tower_call.args:
            value = arg.value
            if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name) \
                    and value.value.value in loop.splits:
                value = cst.Name(loop.splits[value.value.value])
            args.append(arg.with_changes(value=value))
        return loop.tower_call.with_changes(args=args)

    def _record(self, loop: Loop, reading, names: Dict[str, str], grads_name: str,
                config: Dict[int, str], body: Sequence[cst.BaseStatement],
                recomputed: bool) -> None:
        tower = code_of(loop.tower_call.func)
        whole = code_of(self._tower_call(loop))
        count = code_of(loop.count)
        how = "a mean over its rows" if reading.kind == MEAN else \
            f"a sum over its rows, divided by {count} as TF1's average did"
        self.record_change(loop.statement, f"the towers of `for {loop.var} in range({count})` "
                           f"-> one tower over the whole batch, `{names['loss']} = {whole}` "
                           f"({tower}'s loss is {how}; the towers share "
                           f"{', '.join(reading.shared) or 'no variables of their own'}), run on "
                           "each replica of a tf.distribute.MirroredStrategy")
        for device in loop.devices:
            self.record_change(loop.statement, f"`{device}` removed: the strategy places its "
                               "replicas on the visible devices")
        if loop.statement is not loop.loop:
            self.record_change(loop.statement, "`with tf.variable_scope(tf.get_variable_scope()):`"
                               " around the towers dissolved (the towers' reuse ended with it)")
        if loop.dropped:
            self.record_change(loop.statement, f"compute_gradients' {', '.join(loop.dropped)} "
                               "dropped (graph placement; eager code computes every gradient "
                               "before the update)")
        self.record_change(loop.statement, f"`{self._average}({loop.tower_grads})` -> the "
                           f"gradient of the one tower, `{grads_name}`; on several replicas "
                           "the optimizer's all-reduce takes their mean")
        for k, name in config.items():
            self.record_change(body[k], f"`{code_of(body[k]).strip()}` removed: TF2 places ops "
                               "softly by default (no op is pinned to a missing device), and "
                               "the strategy places the replicas; the sessions' "
                               f"`config={name}` goes with it")
        per_replica = ("each replica's loss (a mean over its rows) is divided by the number of "
                       "replicas R" if reading.kind == MEAN else
                       f"the loss (a sum over its rows) is divided by {count}, as TF1's average "
                       "of the towers did")
        last = (f" `{loop.loss}`, the last tower's loss in TF1, is computed on the last of the "
                f"{count} splits, before the update, as TF1 fetched it." if recomputed else "")
        strategy = names["strategy"]
        self.report(TS131.code, loop.statement, (
            f"the towers of `for {loop.var} in range({count})` became a "
            f"tf.distribute.MirroredStrategy step (`{strategy}`, one replica per visible "
            "device; device strings and allow_soft_placement removed): the variables made in "
            f"`{strategy}.scope()` with their TF1 names, each replica's loss and gradient under "
            f"a tape in `{strategy}.run({names['step']}, ...)` on its rows of the batch, the "
            f"optimizer's all-reduce in place of `{self._average}`, one update. TF1's numbers up "
            f"to float rounding on any number of replicas R that divides the batch: "
            f"{per_replica}.{last}"))

    def _names_outside(self, helper: str) -> Set[str]:
        """The names spelled in the module but for the averaging helper (which goes)."""
        return all_names(self._module.with_changes(body=[
            s for s in self._module.body
            if not (isinstance(s, cst.FunctionDef) and s.name.value == helper)]))

    def _spelled_at_module_level(self, name: str, skip: cst.CSTNode) -> bool:
        """``name`` is spelled in a statement of the module (or of its ``__main__`` guard)
        other than ``skip``, outside the bodies of functions and classes (their own names)."""
        statements = list(self._module.body)
        while statements:
            stmt = statements.pop()
            if stmt is skip or isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                continue
            if isinstance(stmt, cst.If) and is_main_guard(stmt) \
                    and isinstance(stmt.body, cst.IndentedBlock):
                statements.extend(stmt.body.body)
                continue
            if any(isinstance(n, cst.Name) and n.value == name for n in nodes(stmt)):
                return True
        return False

    def _drop_unused_helpers(self, body: List[cst.BaseStatement]) -> List[cst.BaseStatement]:
        """The averaging helper, once nothing calls it."""
        name = self._average
        rest = [s for s in body if not (isinstance(s, cst.FunctionDef) and s.name.value == name)]
        if not name or any(reads(s, name) for s in rest):
            return body
        return rest


def _assign(name: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], value)])


def _with_first(args: Sequence[cst.Arg], value: cst.BaseExpression) -> List[cst.Arg]:
    return [args[0].with_changes(value=value), *args[1:]]


class _Replace(cst.CSTTransformer):
    """A call of the function ``name`` -> ``replacement``."""

    def __init__(self, name: str, replacement: cst.BaseExpression) -> None:
        super().__init__()
        self._name = name
        self._replacement = replacement

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        return self._replacement if is_call_of(original_node, self._name) else updated_node


class _DropConfig(cst.CSTTransformer):
    """``tf.Session(config=config)`` -> ``tf.Session()`` for a removed config."""

    def __init__(self, names: Set[str]) -> None:
        super().__init__()
        self._names = names

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        args = [a for a in updated_node.args if not (
            a.keyword is not None and a.keyword.value == "config"
            and isinstance(a.value, cst.Name) and a.value.value in self._names)]
        if len(args) == len(updated_node.args):
            return updated_node
        return updated_node.with_changes(args=clean_args(args))
