"""The feeds rule's update ops: what changes variables when a sess.run fetches it.

A TF1 update op runs only when a sess.run fetches it (or something that depends
on it); eager code would run it where the line runs. So each one runs in the
step functions of the sess.run calls that fetch it, after what else they
compute: ``opt.minimize(loss)`` and ``opt.apply_gradients(...)`` (a tape step),
``u = W.assign(value)`` of a variable of this file, ``averages_op =
ema.apply([W, b])`` of a ``tf.train.ExponentialMovingAverage`` (kept where it is
written too: its first eager call makes the averages), and the groups that only
run what they depend on (``tf.group``, ``with tf.control_dependencies([...]):
op = tf.no_op()``). Two updates TF1 started together are reported (TS132).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from tapeshift.migrate.engine.findings import CodeInfo, Severity
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.dataflow import backward_slice, names_of
from tapeshift.migrate.engine.toolkit.walk import nodes
from tapeshift.migrate.rules.session import VARIABLE_UPDATES, TS108

TS132 = CodeInfo(
    code="TS132",
    name="unordered-updates",
    severity=Severity.INFO,
    summary="TF1 ran these update ops at the same time; the migrated step runs them in order",
    what="Notes `with tf.control_dependencies([train_step, averages_op]): train_op = "
         "tf.no_op()` (or `tf.group(...)`) over two or more ops that change variables, none "
         "of which waits for another; and a sess.run that fetches an update of a variable "
         "(`u = W.assign(...)`, `tf.group(W.assign(...))`) beside a value that reads `W` or "
         "another update, which the update does not wait for. The file is converted.",
    why="TF1 starts such ops together, in no fixed order: one may read a variable before "
        "or after another updates it (a moving average of the weights before or after the "
        "optimizer's step), and two runs of the legacy program can differ. The step "
        "function runs them in the order they are written, which is one of TF1's "
        "possible outcomes; `tapeshift verify --legacy-runs 3` shows the legacy spread.",
    example="with tf.control_dependencies([train_step, averages_op]):\n"
            "    train_op = tf.no_op(name=\"train\")",
    use_instead="Say the order TF1 should have had: `with tf.control_dependencies([train_step]):"
                " averages_op = ema.apply(var_list)`, which the migrated step then keeps.",
    fix_safety="The step runs the updates one after the other, in the order written.",
)


#: a layer's lists of its variables that a moving average may keep
_LAYER_VARIABLES = frozenset({"trainable_variables", "variables"})

class UpdateOps:
    """Part of :class:`tapeshift.migrate.rules.feeds.FeedsToFunctions`: reading the
    update ops of a fed graph (state on the rule)."""

    def _train_call(self, i: int, node, small, call: cst.Call, stack) -> None:
        attr = call.func.attr.value
        receiver = call.func.value
        if not (isinstance(small, cst.Assign) and small.value is call):
            self._bail(TS108.code, call, f"`.{attr}(...)` is converted only as the whole "
                       "right-hand side of an assignment")
        if self._ref(receiver) is not None and self._ref(receiver) in self._optimizers:
            opt: cst.BaseExpression = receiver
        elif isinstance(receiver, cst.Call) and (self.tf_api_name(receiver.func) or "") \
                .startswith("train.") and (self.tf_api_name(receiver.func) or "").endswith("Optimizer"):
            fed = names_of(receiver, self.BASE)[0] & (set(self._placeholders) | self._names_of_graph())
            if fed:  # tf.train.AdamOptimizer(lr).minimize(loss), lr = tf.placeholder(...)
                self._accept_settings(fed, i, receiver, "an optimizer")
            target = small.targets[0].target
            base = "optimizer"
            if self._ref(target) is not None:
                stem = self._ref(target).rpartition(".")[2]
                for suffix in ("train_op", "_op", "_train", "train_step", "_step"):
                    stem = stem[: -len(suffix)] if stem.endswith(suffix) else stem
                base = f"{stem.rstrip('_')}_optimizer" if stem.rstrip("_") else "optimizer"
                if stem.endswith("optimizer"):
                    # `optimizer = tf.train.AdamOptimizer(lr).minimize(cost)`: the train op
                    # keeps that name; the optimizer is named after its class
                    cls = (self.tf_api_name(receiver.func) or "").rpartition(".")[2]
                    base = "".join(f"_{c.lower()}" if c.isupper() else c for c in cls).lstrip("_")
            opt = cst.Name(base)  # the final fresh name is chosen in _rewrite
            self._hoist[i] = (base, receiver, call)
        else:
            self._bail(TS108.code, call, f"`{code_of(call.func)}(...)`: the optimizer is not a "
                       "tf.train optimizer created once in this block")
        args = self._call_args(call, attr)
        if attr == "apply_gradients":
            if i in self._hoist:
                self._rewrites[i] = node.with_changes(body=[small.with_changes(
                    value=call.with_changes(func=call.func.with_changes(value=opt)))])
            self._train.add(i)
            return
        loss = args.pop("loss", None)
        if loss is None:
            self._bail(TS108.code, call, f"`.{attr}(...)` without a loss")
        var_list = self._var_list(args.pop("var_list", None), call, i)
        grad_loss = args.pop("grad_loss", None)
        grads_args = [cst.Arg(loss), cst.Arg(var_list)]
        if grad_loss is not None:
            grads_args.append(cst.Arg(grad_loss))
        grads = cst.Call(func=cst.parse_expression(f"{self._alias}.gradients"), args=grads_args)
        pairs = cst.Call(func=cst.Name("zip"), args=[cst.Arg(grads), cst.Arg(var_list)])
        dropped = sorted(k for k in args if k in ("gate_gradients", "aggregation_method",
                                                   "colocate_gradients_with_ops"))
        unknown = sorted(k for k in args if k not in dropped and k not in ("global_step", "name"))
        if unknown:
            self._bail(TS108.code, call, f"`.{attr}(...)` with {', '.join(unknown)} is not converted")
        if attr == "minimize":
            keep = [cst.Arg(args[k], keyword=cst.Name(k),
                            equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
                    for k in ("global_step", "name") if k in args]
            new = cst.Call(func=cst.Attribute(value=opt, attr=cst.Name("apply_gradients")),
                           args=[cst.Arg(pairs), *keep])
            self._train.add(i)
        else:
            if "global_step" in args or "name" in args:
                self._bail(TS108.code, call, "compute_gradients(global_step=/name=) is not converted")
            new = cst.Call(func=cst.Name("list"), args=[cst.Arg(pairs)])
        self._rewrites[i] = node.with_changes(body=[small.with_changes(value=new)])
        line, _ = self.position(call)
        self.record_change(call, f"`.{attr}(...)` -> " + (
            "`apply_gradients` of the tape's gradients" if attr == "minimize"
            else "the tape's (gradient, variable) pairs") + (
            f"; dropped {', '.join(dropped)} (no meaning in eager mode)" if dropped else ""))

    def _moving_average_op(self, i: int, node, small_value) -> bool:
        """``averages_op = ema.apply([W, b])`` of a ``tf.train.ExponentialMovingAverage``:
        an op that updates the averages when a sess.run fetches it. It runs in the step
        functions of those sess.run calls, after what else they compute (as train ops
        do); the statement also stays where it is, where its first eager call makes
        the averages (TF1 made them with the graph; that call leaves each average equal
        to its variable, as TF1's initializer does)."""
        inner = _ordered_average(node, self.tf_api_name)
        if inner is not None:
            # with tf.control_dependencies([train_step]): averages_op = ema.apply(...):
            # the step runs it after train_step anyway (train ops run in written order)
            small_value = inner.body[0].value
            self._rewrites[i] = inner
        if not (isinstance(small_value, cst.Call) and small_value in self._ema_calls):
            for n in nodes(node):
                if isinstance(n, cst.Call) and n in self._ema_calls:
                    self._bail(TS108.code, n, "ExponentialMovingAverage.apply is converted only "
                               "as the whole right-hand side of an assignment")
            return False
        var_list = next((a.value for k, a in enumerate(small_value.args)
                         if (a.keyword is None and k == 0)
                         or (a.keyword is not None and a.keyword.value == "var_list")), None)
        if isinstance(var_list, cst.Call) and not var_list.args \
                and self.tf_api_name(var_list.func) == "trainable_variables":
            # ema.apply(tf.trainable_variables()): the variables made before it, written
            # out as a default var_list is (or the reason they cannot be)
            var_list = self._var_list(var_list, small_value, i)
            small_value = small_value.with_changes(args=[cst.Arg(var_list)])
            stmt = self._rewrites.get(i, node)  # (out of its control_dependencies)
            self._rewrites[i] = stmt.with_changes(body=[stmt.body[0].with_changes(value=small_value)])
        # the variables, or a layer's (``*fc.trainable_variables``, as the model-code
        # rule writes tf.trainable_variables() out): a layer is then built where it is
        # made, so that the statement's first eager call averages its variables
        layers = [self._ref(e.value.value) for e in getattr(var_list, "elements", ())
                  if isinstance(e, cst.StarredElement) and isinstance(e.value, cst.Attribute)
                  and e.value.attr.value in _LAYER_VARIABLES]
        if not (isinstance(var_list, (cst.List, cst.Tuple)) and var_list.elements and all(
                isinstance(e, cst.Element) and self._ref(e.value) in self._var_names
                or isinstance(e, cst.StarredElement) for e in var_list.elements)
                and all(layer in self._layers for layer in layers)
                and len(layers) == sum(isinstance(e, cst.StarredElement)
                                       for e in var_list.elements)):
            self._bail(TS108.code, small_value, "ExponentialMovingAverage.apply of "
                       f"`{code_of(var_list) if var_list is not None else ''}`: converted only "
                       "for a list of this file's variables and layers' variables written out")
        self._average_reads.update(layer for layer in layers if layer is not None)
        self._train.add(i)
        self._moving_averages.add(i)
        self._ema_converted.add(small_value.func.value.value)
        return True

    def _assign_op(self, i: int, node, small, call: cst.Call, api: Optional[str]) -> bool:
        """``u = W.assign(value)`` / ``u = tf.assign(W, value)`` (``_add``/``_sub``) of a
        variable of this file, as the whole right-hand side: an op that changes
        ``W`` when a sess.run fetches it. It runs in the step functions of those
        sess.run calls, after what else they compute (as train ops do), and its
        value is the variable's new value, as TF1 returns it."""
        comp = small.value if isinstance(small, cst.Assign) else None
        # [[tf.assign(ta, ...), tf.assign(tc, ...)] for ta, ea, tc, ec in zip(...)]: one
        # update per element of each row (the actor's and the critic's target networks)
        row = comp.elt if isinstance(comp, cst.ListComp) \
            and isinstance(comp.elt, (cst.List, cst.Tuple)) \
            and any(e.value is call for e in comp.elt.elements) else None
        if row is not None and not all(isinstance(e, cst.Element) and isinstance(e.value, cst.Call)
                                       for e in row.elements):
            return False
        if isinstance(comp, cst.ListComp) and (comp.elt is call or row is not None):
            # [tf.assign(t, (1 - tau) * t + tau * e) for t, e in zip(t_params, e_params)]
            looped = {n.value for n in nodes(comp.for_in.target) if isinstance(n, cst.Name)} \
                if comp.for_in.inner_for_in is None and not comp.for_in.ifs else set()
        elif not (isinstance(small, cst.Assign) and small.value is call):
            return False
        else:
            looped = set()
        if any(a.star for a in call.args):
            return False
        method = api if api is not None else call.func.attr.value
        if method not in VARIABLE_UPDATES:
            return False
        if api is None:
            ref, rest = call.func.value, list(call.args)
        else:
            if not call.args or call.args[0].keyword is not None:
                return False
            ref, rest = call.args[0].value, list(call.args[1:])
        if self._ref(ref) not in self._var_names and not (
                isinstance(ref, cst.Name) and ref.value in looped):
            return False
        keep = []
        for k, arg in enumerate(rest):
            key = arg.keyword.value if arg.keyword is not None else ("value", "use_locking",
                                                                     "name")[min(k, 2)]
            if key == "validate_shape" and not (isinstance(arg.value, cst.Name)
                                                and arg.value.value in ("None", "True")):
                return False
            if key != "validate_shape":
                keep.append(arg.with_changes(comma=cst.MaybeSentinel.DEFAULT))
        new = cst.Call(func=cst.Attribute(value=ref, attr=cst.Name(method)), args=keep)
        if row is not None:  # this element of the row, in the rewrite the others made
            done = self._rewrites[i].body[0].value if i in self._assign_lists else comp
            at = next(k for k, e in enumerate(row.elements) if e.value is call)
            elements = list(done.elt.elements)
            elements[at] = elements[at].with_changes(value=new)
            new = done.with_changes(elt=done.elt.with_changes(elements=elements))
            self._assign_lists[i] = 2
        elif isinstance(comp, cst.ListComp) and comp.elt is call:
            new = comp.with_changes(elt=new)
            self._assign_lists[i] = 1
        self._rewrites[i] = node.with_changes(body=[small.with_changes(value=new)])
        self._assigns.add(i)
        self._train.add(i)
        if api is not None:
            self.record_change(call, f"tf.{api}({code_of(ref)}, ...) -> `{code_of(ref)}.{method}(...)`, "
                               "run when fetched")
        return True

    def _grouped_assign(self, i: int, node, small, call: cst.Call) -> Optional[cst.Call]:
        """``step = tf.group(W.assign(value))``: one update in a group, the whole
        right-hand side. It runs when a sess.run fetches ``step``, as ``u =
        W.assign(value)`` does, and it fetches None, as a group does. Returns the
        update (None when the group is anything else)."""
        if not (isinstance(small, cst.Assign) and small.value is call and len(call.args) == 1
                and call.args[0].keyword is None and not call.args[0].star
                and isinstance(call.args[0].value, cst.Call)):
            return None
        inner = call.args[0].value
        api = self.tf_api_name(inner.func)
        if api not in VARIABLE_UPDATES:
            api = None
            if not (isinstance(inner.func, cst.Attribute)
                    and inner.func.attr.value in VARIABLE_UPDATES):
                return None
        if not self._assign_op(i, node, small.with_changes(value=inner), inner, api):
            return None
        self._assigns.discard(i)  # its value is the group's, None: not the variable's
        self._grouped_updates.add(i)
        self.record_change(call, f"`{code_of(call.func)}(...)` of one update -> the update, "
                           "run when fetched")
        return inner

    def _note_fetched_together(self, step, call: cst.Call) -> None:
        """TS132 when one run fetches an update of a variable (``u = W.assign(...)``, a
        group of one) beside graph code that reads the variable and that the update does
        not wait for: TF1 runs both at the same time; the step function computes that
        code first, from the value before the update."""
        updates = self._assigns | self._grouped_updates
        for j in step.statements:
            if j not in updates:
                continue
            node = self._rewrites.get(j, self._stmts[j].node)
            updated = {self._ref(n.func.value) for n in nodes(node) if isinstance(n, cst.Call)
                       and isinstance(n.func, cst.Attribute)
                       and n.func.attr.value in VARIABLE_UPDATES} - {None}
            waits = backward_slice(self._stmts, self._stmts[j].reads, j)
            for k in step.statements:
                read = self._stmts[k].reads & updated
                if k == j or k in waits or not read or k in self._train and k not in updates:
                    continue
                update = ", ".join(sorted(self._stmts[j].writes)) or code_of(node).strip()
                value = ", ".join(sorted(self._stmts[k].writes)) or code_of(
                    self._stmts[k].node).strip()
                order = "runs them in the order they are written" if k in updates else \
                    f"computes `{value}` first, from `{sorted(read)[0]}` before the update"
                self.report(TS132.code, call, f"TF1 runs `{update}` and `{value}` of one sess.run "
                            f"at the same time, in no fixed order; the step function {order} "
                            "(tapeshift verify --legacy-runs 3 shows whether the legacy runs "
                            "differ)", changes_numbers=True)
                return

    def _note_unordered(self, node: cst.CSTNode, grouped: cst.CSTNode, i: int) -> None:
        """TS132 when ``grouped`` (a group's or control_dependencies' ops) holds two
        updates (train ops, assign ops, moving averages) neither of which waits for the
        other: TF1 runs them at the same time."""
        defs = {}
        for name in sorted(names_of(grouped, self.BASE)[0]):
            made = [j for j in self._train if j < i and name in self._stmts[j].writes]
            if made:
                defs[name] = max(made)
        unordered = [(a, b) for a in defs for b in defs if a < b
                     and a not in self._stmts[defs[b]].reads
                     and b not in self._stmts[defs[a]].reads]
        if unordered:
            a, b = unordered[0]
            self.report(TS132.code, node, f"TF1 runs `{a}` and `{b}` at the same time, in no fixed "
                        "order; the step function runs them in the order they are written "
                        "(tapeshift verify --legacy-runs 3 shows whether the legacy runs differ)",
                        changes_numbers=True)


def _ordered_average(node: cst.CSTNode, api_name) -> Optional[cst.SimpleStatementLine]:
    """``with tf.control_dependencies([...]): averages_op = ema.apply(...)``: the
    assignment inside (None for anything else)."""
    if not (isinstance(node, cst.With) and len(node.items) == 1
            and isinstance(node.items[0].item, cst.Call)
            and api_name(node.items[0].item.func) == "control_dependencies"
            and node.items[0].asname is None and len(node.body.body) == 1):
        return None
    stmt = node.body.body[0]
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 \
            and isinstance(stmt.body[0], cst.Assign) and isinstance(stmt.body[0].value, cst.Call) \
            and isinstance(stmt.body[0].value.func, cst.Attribute) \
            and stmt.body[0].value.func.attr.value == "apply":
        return stmt.with_changes(leading_lines=node.leading_lines)
    return None


def groups_only(node: cst.With, api_name) -> bool:
    """``with tf.control_dependencies([...]): name = tf.no_op(...)`` (or ``tf.group``):
    the statement only makes an op that runs its dependencies."""
    body = node.body.body
    if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine) \
            or len(body[0].body) != 1 or not isinstance(body[0].body[0], cst.Assign):
        return False
    value = body[0].body[0].value
    return isinstance(value, cst.Call) and api_name(value.func) in ("no_op", "group") and all(
        isinstance(item.item, cst.Call) and api_name(item.item.func) == "control_dependencies"
        for item in node.items)
