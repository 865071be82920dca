"""The one tower the towers rule left -> a ``tf.distribute.MirroredStrategy`` training step.

The towers rule (:mod:`tapeshift.migrate.rules.towers`) turned TF1's towers into
one tower over the whole batch; the model-code and feeds rules then made its
variables once and its ``sess.run`` a step function::

    def run_train_op_loss(x, y):
        ...
        replica_loss = tower_loss(x, y)
        grads = list(zip(tf.gradients(replica_loss, VL), VL))
        opt.apply_gradients(grads, global_step=global_step)
        return ...

This rule runs that gradient on the replicas of a strategy::

    strategy = tf.distribute.MirroredStrategy()   # one replica per visible device
    with strategy.scope():                        # the variables, mirrored on each
        model_w1 = tf.Variable(..., name="model/w1")
        ...

    def replica_rows(value):                      # replica r of R: rows r*B/R to (r+1)*B/R
        ...

    def replica_step(x, y):                       # on each replica, its rows
        replica_loss = tower_loss(x, y) / tf.distribute.get_replica_context().num_replicas_in_sync
        grads = list(zip(tf.gradients(replica_loss, VL), VL))   # a tape, by the gradients rule
        opt.apply_gradients(grads, global_step=global_step)

    def run_train_op_loss(x, y):
        ...
        with strategy.scope():
            ...                                   # what else the step computes, as before
            strategy.run(replica_step, args=(replica_rows(x), replica_rows(y)))
        return ...

A v1 optimizer called in a replica (``strategy.run``) sums the replicas'
gradients with an all-reduce and updates each mirrored variable once, with the
sum: so each replica's loss is divided by the number of replicas (their mean,
as ``average_gradients`` took it across towers; a tower loss that is a sum was
already divided by the number of towers). Called outside ``strategy.run`` it is
wrong: in the strategy's scope it raises (``apply_gradients()`` in a
cross-replica context), outside it it updates the first replica's copy alone,
and the copies drift apart (measured: docs/distributed.md). The step's other
values (the last tower's loss, which TF1 fetched) are computed before the update,
in the strategy's scope, where a layer called for the first time makes mirrored
variables.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from tapeshift.migrate.engine.registry import register_rule
from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.tf_names import all_names, tf_module_alias
from tapeshift.migrate.engine.toolkit.walk import nodes
from tapeshift.migrate.rules.towers import TOWERS, TS130
from tapeshift.migrate.rules.towers_loop import binds, reads
from tapeshift.migrate.rules.towers_rows import MEAN

#: calls that make variables at module level (after the model-code rule)
_VARIABLE_MAKERS = frozenset({"Variable", "compat.v1.Variable", "train.get_or_create_global_step",
                              "train.create_global_step", "compat.v1.train.get_or_create_global_step",
                              "compat.v1.train.create_global_step", "get_variable"})


class _Refused(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@register_rule
class TowersStrategy(TapeshiftCodemod):
    DESCRIPTION = ("The one tower the towers rule made, in the feeds rule's step functions -> "
                   "a tf.distribute.MirroredStrategy step (strategy.run on each replica's rows).")
    RULE = "towers-strategy"
    #: after the feeds and class-feeds rules, whose step functions it distributes
    PHASE = "pre"
    ORDER = 38
    #: the towers rule's apply_gradients stays (its compute_gradients went to the feeds rule)
    SCREEN_NAMES = frozenset({"apply_gradients"})

    def visit_Module(self, node: cst.Module) -> bool:
        return False

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        facts = self.shared.get(TOWERS)
        if not facts:
            return updated_node
        self._where: cst.CSTNode = original_node  # where records go (below)
        try:
            return self._distribute(original_node, facts)
        except _Refused as exc:
            self.report(TS130.code, self._where, f"{exc.reason}; the towers of `{facts['loop']}` "
                        "are not converted")
            return updated_node

    # -- the rewrite ---------------------------------------------------------------
    def _distribute(self, module: cst.Module, facts: dict) -> cst.Module:
        alias = tf_module_alias(module)
        if alias is None:
            raise _Refused("the module has no `import tensorflow as ...` to name tf.distribute by")
        names = facts["names"]
        loss = names["loss"]
        steps = self.shared.get("step_functions", set())
        body = list(module.body)
        found = [k for k, s in enumerate(body) if isinstance(s, cst.FunctionDef)
                 and s.name.value in steps and any(binds(t, loss) for t in _statements(s))]
        holders = [k for k, s in enumerate(body) if any(
            isinstance(n, cst.Name) and n.value == loss for n in nodes(s))]
        for k in found:  # records go to the update (the train op), else the tower's loss
            statements = _statements(body[k])  # type: ignore[arg-type]
            self._where = next((t for t in statements if reads(t, facts["grads"])
                                and f"{facts['optimizer']}.apply_gradients" in code_of(t)),
                               next(t for t in statements if binds(t, loss)))
            break
        if not found:
            self._where = next((s for s in body if binds(s, loss)), module)
            raise _Refused(f"no step function computes `{loss}` (the one tower): the train op "
                           "is not run by a `sess.run` the feeds rule converted")
        if set(holders) != set(found):
            raise _Refused(f"`{loss}` is computed outside the step functions too")
        taken = all_names(module)
        clash = [names[k] for k in ("strategy", "rows", "step") if names[k] in taken]
        if clash:
            raise _Refused(f"the rules before this one made names it needs ({', '.join(clash)})")

        replica: Optional[Tuple[List[str], List[cst.BaseStatement]]] = None
        new_steps: Dict[int, cst.FunctionDef] = {}
        loss_only: List[str] = []
        for k in found:
            fn = body[k]
            assert isinstance(fn, cst.FunctionDef)
            params, statements, rewritten = self._split_step(fn, facts, names, alias)
            new_steps[k] = rewritten
            if params is None or statements is None:
                loss_only.append(fn.name.value)
                continue  # a step that reads the last tower's loss but does not update
            if replica is None:
                replica = (params, statements)
            elif [code_of(s) for s in statements] != [code_of(s) for s in replica[1]] \
                    or params != replica[0]:
                raise _Refused(f"the step functions `{body[found[0]].name.value}` and "  # type: ignore[attr-defined]
                               f"`{fn.name.value}` compute the train op differently")
        if replica is None:
            raise _Refused("no step function runs the train op")
        span = self._variable_span(body, found[0])
        helpers = self._helpers(names, alias, facts, *replica)
        strategy_stmt = cst.parse_statement(
            f"{names['strategy']} = {alias}.distribute.MirroredStrategy()  "
            f"# the towers' devices: one replica per visible GPU, else the CPU\n")

        out: List[cst.BaseStatement] = []
        for k, stmt in enumerate(body):
            if span is not None and k == span[0]:
                first = body[k]
                out.append(strategy_stmt.with_changes(leading_lines=first.leading_lines))
                block = [body[j] for j in range(span[0], span[1] + 1)]
                block[0] = block[0].with_changes(leading_lines=[])
                out.append(cst.With(
                    items=[cst.WithItem(cst.parse_expression(f"{names['strategy']}.scope()"))],
                    body=cst.IndentedBlock(body=block)))
                continue
            if span is not None and span[0] < k <= span[1]:
                continue
            if k == found[0]:
                if span is None:
                    out.append(strategy_stmt)
                out.extend(helpers)
            out.append(new_steps.get(k, stmt))
        self.shared.setdefault("step_functions", set()).update({names["step"], names["rows"]})
        self._record(facts, names, [body[k].name.value for k in found  # type: ignore[attr-defined]
                                    if body[k].name.value not in loss_only], loss_only, span)
        return module.with_changes(body=out)

    def _split_step(self, fn: cst.FunctionDef, facts: dict, names: Dict[str, str], alias: str):
        """(replica parameters, replica statements, the step rewritten around strategy.run)."""
        if not isinstance(fn.body, cst.IndentedBlock):
            raise _Refused(f"`{fn.name.value}` is not an indented block")
        loss, grads, optimizer = facts["names"]["loss"], facts["grads"], facts["optimizer"]
        body = list(fn.body.body)
        head: List[cst.BaseStatement] = []  # the docstring and the feeds' conversions
        params = {p.name.value for p in fn.params.params}
        while body and isinstance(body[0], cst.SimpleStatementLine) and (
                _is_docstring(body[0]) or _converts_parameter(body[0], params)):
            head.append(body.pop(0))
        tail: List[cst.BaseStatement] = []
        if body and isinstance(body[-1], cst.SimpleStatementLine) \
                and isinstance(body[-1].body[0], cst.Return):
            tail.append(body.pop())
        at_loss = [k for k, s in enumerate(body) if binds(s, loss)]
        if len(at_loss) != 1:
            raise _Refused(f"`{fn.name.value}` computes the tower's loss more than once")
        # a loss read after the loop (TF1's last tower's): on the last tower's split
        last = facts.get("last")
        whole = body[at_loss[0]].body[0].value  # type: ignore[attr-defined]
        call = whole.left if isinstance(whole, cst.BinaryOperation) else whole
        if not isinstance(call, cst.Call):
            raise _Refused(f"`{code_of(body[at_loss[0]]).strip()}` is not the tower's call")
        for k, s in enumerate(body):
            if last is not None and _is_alias(s, last, loss):
                body[k] = s.with_changes(body=[s.body[0].with_changes(  # type: ignore[attr-defined]
                    value=self._last_tower(call, facts, alias))])
        at_grads = [k for k, s in enumerate(body) if reads(s, loss)]
        if not at_grads:  # no update in this step: the tower over the batch is not needed
            body.pop(at_loss[0])
            return None, None, self._scoped(fn, head, body, [], tail, names)
        at_apply = [k for k, s in enumerate(body) if reads(s, grads) and k not in at_grads]
        if len(at_grads) != 1 or not binds(body[at_grads[0]], grads) or len(at_apply) != 1:
            raise _Refused(f"`{fn.name.value}` does not compute the tower's loss, its gradients "
                           "and one apply_gradients of them as the rule expects")
        apply_stmt = body[at_apply[0]]
        if not (isinstance(apply_stmt, cst.SimpleStatementLine) and len(apply_stmt.body) == 1
                and isinstance(apply_stmt.body[0], cst.Expr)
                and isinstance(apply_stmt.body[0].value, cst.Call)
                and code_of(apply_stmt.body[0].value.func) == f"{optimizer}.apply_gradients"):
            raise _Refused(f"`{code_of(apply_stmt).strip()}` is not `{optimizer}.apply_gradients"
                           f"({grads}, ...)` run for its effect")
        replica_at = [at_loss[0], at_grads[0], at_apply[0]]
        others = [s for k, s in enumerate(body) if k not in replica_at]
        for s in others:
            if reads(s, loss) or reads(s, grads) or binds(s, loss) or binds(s, grads):
                raise _Refused(f"`{code_of(s).strip()}` in `{fn.name.value}` uses the tower's "
                               "loss or gradients beside the update")
        if any(isinstance(n, cst.Return) for s in others for n in nodes(s)):
            raise _Refused(f"`{fn.name.value}` returns before its end")
        replica_statements = [body[k].with_changes(leading_lines=[]) for k in sorted(replica_at)]
        # the loss of one replica: divided by their number (a sum was divided by the towers')
        loss_stmt = replica_statements[0]
        if facts["reduction"] == MEAN:
            small = loss_stmt.body[0]  # type: ignore[attr-defined]
            divided = cst.BinaryOperation(small.value, cst.Divide(), cst.parse_expression(
                f"{alias}.distribute.get_replica_context().num_replicas_in_sync"))
            replica_statements[0] = loss_stmt.with_changes(body=[small.with_changes(value=divided)])
        # what the replica reads of the step: the batch sources (split) and other locals
        local = set(params) | {n for s in head + others for n in _bound(s)}
        assigned = {n for s in replica_statements for n in _bound(s)}
        read = []
        for s in replica_statements:
            for n in nodes(s):
                if isinstance(n, cst.Name) and n.value not in assigned and n.value not in read:
                    read.append(n.value)
        sources = list(facts["sources"])
        missing = [src for src in sources if src not in read]
        if missing:
            raise _Refused(f"the replica's loss does not read the batch source "
                           f"{', '.join(missing)}")
        passed = sources + [n for n in read if n in local and n not in sources]
        args = ", ".join(f"{names['rows']}({n})" if n in sources else n for n in passed)
        run = cst.parse_statement(f"{names['strategy']}.run({names['step']}, "
                                  f"args=({args}{',' if len(passed) == 1 else ''}))\n")
        return passed, replica_statements, self._scoped(fn, head, others, [run], tail, names)

    def _scoped(self, fn: cst.FunctionDef, head, others, run, tail,
                names: Dict[str, str]) -> cst.FunctionDef:
        """The step: its head, then the rest in the strategy's scope (a layer called there
        for the first time makes mirrored variables), then its return."""
        inner = [*(s.with_changes(leading_lines=[]) if k == 0 else s
                   for k, s in enumerate(others)), *run]
        if not inner:
            return fn.with_changes(body=fn.body.with_changes(body=[*head, *tail]))
        scoped = cst.With(items=[cst.WithItem(cst.parse_expression(f"{names['strategy']}.scope()"))],
                          body=cst.IndentedBlock(body=inner),
                          leading_lines=others[0].leading_lines if others else [])
        return fn.with_changes(body=fn.body.with_changes(body=[*head, scoped, *tail]))

    def _last_tower(self, call: cst.Call, facts: dict, alias: str) -> cst.Call:
        """``call`` with each split argument on the last tower's part of it."""
        count = facts["count"]
        args = list(call.args)
        for index, keyword in facts["split_args"]:
            k = index if keyword is None else next(
                (j for j, a in enumerate(args) if a.keyword is not None
                 and a.keyword.value == keyword), None)
            if k is None or k >= len(args):
                raise _Refused("the tower's call in the step does not match the loop's")
            part = cst.parse_expression(f"{alias}.split({code_of(args[k].value)}, {count})"
                                        f"[{count} - 1]")
            args[k] = args[k].with_changes(value=part)
        return call.with_changes(args=args)

    def _variable_span(self, body: List[cst.BaseStatement], first_step: int):
        """(first, last) index of the module statements that make variables before the first
        step function (None: none does); they are to run in the strategy's scope."""
        makers = [k for k, s in enumerate(body) if self._makes_variables(s)]
        late = [k for k in makers if k > first_step]
        if late:
            raise _Refused(f"`{code_of(body[late[0]]).strip().splitlines()[0]}` makes variables "
                           "after the step functions, outside the strategy's scope")
        if not makers:
            return None
        span = (makers[0], makers[-1])
        for k in range(span[0], span[1] + 1):
            if not isinstance(body[k], cst.SimpleStatementLine):
                raise _Refused(f"`{code_of(body[k]).strip().splitlines()[0]}` stands among the "
                               "statements that make the variables (only simple statements are "
                               "moved into `strategy.scope()`)")
        return span

    def _makes_variables(self, stmt: cst.CSTNode) -> bool:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            return False
        for n in nodes(stmt):
            if isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return False  # made when called, not here
            if isinstance(n, cst.Call):
                if self.tf_api_name(n.func) in _VARIABLE_MAKERS:
                    return True
                if code_of(n.func).startswith("tf_keras.layers."):
                    return True
        return False

    def _helpers(self, names: Dict[str, str], alias: str, facts: dict, params: List[str],
                 statements: List[cst.BaseStatement]) -> List[cst.BaseStatement]:
        sources = ", ".join(f"`{s}`" for s in facts["sources"])
        rows = cst.parse_statement(
            f"def {names['rows']}(value):\n"
            f"    \"\"\"`value` split along its first axis among the replicas of "
            f"`{names['strategy']}`: replica r\n"
            f"    of R gets rows r*B/R to (r+1)*B/R (tf.split: B must be a multiple of R).\"\"\"\n"
            f"    return {names['strategy']}.experimental_distribute_values_from_function(\n"
            f"        lambda context: {alias}.split(value, context.num_replicas_in_sync)"
            f"[context.replica_id_in_sync_group])\n")
        if facts["reduction"] == MEAN:
            divided = "Its loss, a mean over its rows, is divided by the number of replicas"
        else:
            divided = (f"Its loss, a sum over its rows, was divided by {facts['count']} (the "
                       "towers) already")
        doc = (f"    \"\"\"One replica's part of the training step (the towers of "
               f"`{facts['loop']}`).\n\n"
               f"    `{names['strategy']}.run` gives each replica its rows of {sources}.\n"
               f"    {divided}:\n"
               "    the optimizer sums the replicas' gradients (an all-reduce) and applies the "
               "sum once,\n"
               f"    the mean `{facts['average']}` took across the towers.\n    \"\"\"\n")
        header = cst.parse_statement(f"def {names['step']}({', '.join(params)}):\n{doc}    pass\n")
        assert isinstance(header, cst.FunctionDef) and isinstance(header.body, cst.IndentedBlock)
        step = header.with_changes(body=header.body.with_changes(
            body=[header.body.body[0], *statements]))
        blank = [cst.EmptyLine(), cst.EmptyLine()]
        return [rows.with_changes(leading_lines=blank), step.with_changes(leading_lines=blank)]

    def _record(self, facts: dict, names: Dict[str, str], steps: List[str],
                loss_only: List[str], span) -> None:
        strategy = names["strategy"]
        sources = ", ".join(f"`{s}`" for s in facts["sources"])
        for step in steps:
            self.record_change(self._where, f"`{step}`: the tower's loss and gradient run on "
                               f"each replica, `{strategy}.run({names['step']}, ...)` on its "
                               f"rows of {sources} (`{names['rows']}`), the update once by the "
                               f"optimizer's all-reduce; the rest of the step in "
                               f"`{strategy}.scope()`")
        for step in loss_only:
            self.record_change(self._where, f"`{step}`: `{facts['last']}`, the last tower's loss "
                               f"in TF1, is computed on the last of the {facts['count']} splits, "
                               f"in `{strategy}.scope()`")
        if span is not None:
            self.record_change(self._where, f"the variables are made in `with {strategy}.scope():`"
                               " (mirrored on every replica, TF1 names kept)")


def _statements(fn: cst.FunctionDef) -> List[cst.BaseStatement]:
    return list(fn.body.body) if isinstance(fn.body, cst.IndentedBlock) else []


def _bound(stmt: cst.CSTNode) -> Set[str]:
    out: Set[str] = set()
    for n in nodes(stmt):
        if isinstance(n, (cst.AssignTarget, cst.For, cst.WithItem)):
            target = n.target if not isinstance(n, cst.WithItem) else \
                (n.asname.name if n.asname is not None else None)
            if target is not None:
                out.update(x.value for x in nodes(target) if isinstance(x, cst.Name))
    return out


def _is_alias(stmt: cst.CSTNode, name: str, value: str) -> bool:
    """``name = value`` (the towers rule's stand-in for the last tower's loss)."""
    return isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 \
        and isinstance(stmt.body[0], cst.Assign) and len(stmt.body[0].targets) == 1 \
        and isinstance(stmt.body[0].targets[0].target, cst.Name) \
        and stmt.body[0].targets[0].target.value == name \
        and isinstance(stmt.body[0].value, cst.Name) and stmt.body[0].value.value == value


def _is_docstring(stmt: cst.SimpleStatementLine) -> bool:
    return len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr) \
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))


def _converts_parameter(stmt: cst.SimpleStatementLine, params: Set[str]) -> bool:
    """``x = tf.convert_to_tensor(x, ...)`` (the feeds rule's, for a fed value)."""
    if len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Assign):
        return False
    small = stmt.body[0]
    value = small.value
    return len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) \
        and small.targets[0].target.value in params and isinstance(value, cst.Call) \
        and code_of(value.func).endswith("convert_to_tensor") and bool(value.args) \
        and code_of(value.args[0].value) == small.targets[0].target.value
