"""The feeds rule's step functions: one function of the fed values per distinct set of fetches.

The runs they are made from, and their rewrite into calls, are feeds_runs.py (imported here).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst
import libcst.matchers as m

from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.walk import nodes, visit
from tapeshift.migrate.engine.toolkit.tf_names import fresh_name
from tapeshift.migrate.engine.toolkit.dataflow import Stmt, backward_slice, last_def, names_of
from tapeshift.migrate.rules.session import TS107, TS108, TS116
# the run records and their rewrite; Bail and the others are imported from here by the feeds rules
from tapeshift.migrate.rules.feeds_datasets import hoist, hoisted_what
from tapeshift.migrate.rules.feeds_runs import (DICT_OF_ZIP, Bail, Run, RunReplacer, Step,  # noqa: F401
                                                described_feeds, given)


#: Python literal -> the dtype TensorFlow gives it.
_LITERAL_DTYPES = {cst.Float: "float32", cst.Integer: "int32"}


class StepFunctions:
    """Part of ``FeedsToFunctions``: the step functions, and the session region calling them."""

    def _steps(self, runs: List[Run], body: List[cst.CSTNode], end: int) -> List[Step]:
        steps: Dict[str, Step] = {}
        order = self._graph_order(end)  # (the statements a step may be sliced from)
        for run in runs:
            # a graph value fed in place of its computation (a critic trained on the
            # stored actions, `feed_dict={self.a: actions}`) makes another function
            values = sorted(name for name, _ in run.feeds if name not in self._placeholders)
            # fed by some values of a named feed dict only: computed when not given
            maybe = sorted(name for name in run.optional if name not in self._placeholders)
            fetched = set(run.names) - self._var_names
            limit = self._slice_limit(run, order)
            needed = {order[k].index for k in backward_slice(order, fetched, limit, set(values))}
            # the bindings of a graph name bound again after the session that it reads
            rebound = sorted(i for i in needed & self._after if self._stmts[i].writes & self._rebound)
            # (graph code before the session reads the bindings before it, whatever comes later)
            for name in sorted((fetched | {r for j in needed & self._after
                                           for r in self._stmts[j].reads})
                               & set(self._unfollowed)):
                at = self._unfollowed[name]
                # (`cost = sess.run(cost)`: the run reads the name before its statement binds it)
                if run.at is None or run.at > at or run.at == at and not isinstance(
                        body[at], cst.SimpleStatementLine):
                    self._bail(TS107.code, run.call, f"`{name}` is bound again after the session "
                               "by code that is not graph code (in a loop, a condition or from "
                               "a call): not converted")
            if rebound and run.at is None:
                self._bail(TS107.code, run.call, f"`{sorted(self._rebound)[0]}` is bound again "
                           "after the session, and this run is in a function: which binding it "
                           "reads is known only when it is called: not converted")
            key = " ".join(code_of(run.fetch).split()) + "".join(f" | {v}" for v in values) \
                + "".join(f" | {v}?" for v in maybe) + "".join(f" @{i}" for i in rebound)
            step = steps.get(key)
            if step is None:
                step = Step(name="", fetch=run.fetch, names=run.names, key=key, fed_values=values,
                            maybe_fed=maybe)
                if fetched & set(values + maybe):
                    self._bail(TS107.code, run.call, f"`{sorted(fetched & set(values + maybe))[0]}` "
                               "is fed and fetched by one run: not converted")
                step.statements = sorted(needed & self._graph)
                self._check_rebound_before_updates(step, run.call)
                self._note_fetched_together(step, run.call)
                if values or maybe:  # (feeds_fed_values.py)
                    # (what the run computes when every value it may feed is given)
                    cut = needed if not maybe else {
                        order[k].index for k in backward_slice(order, fetched, limit,
                                                               set(values + maybe))}
                    self._check_fed_training(step, order, limit, fetched, cut, run.call)
                used = set()
                for j in step.statements:
                    used |= self._stmts[j].reads
                used |= fetched
                used |= self._settings_of(used)  # an optimizer's fed learning rate
                step.params = [p for p in self._placeholders if p in used] + values
                step.used = set(step.params)
                step.required = {p for p in step.params if p in values
                                 or self.tf_api_name(self._placeholders[p].func) == "placeholder"}
                steps[key] = step
            fed = {name for name, _ in run.feeds}
            missing = sorted(step.required - fed)
            for name in run.optional:
                if name in step.required:
                    self._bail(TS107.code, run.call, f"placeholder `{name}` is needed by these "
                               f"fetches but not every value of `{run.feed_name}` feeds it")
            if missing:
                # (the slice is read per statement: `l1, W1 = add_layer(xs, ...)` binds W1 in
                # a statement computing from xs, though TF1 would not need xs for W1)
                self._bail(TS107.code, run.call, f"placeholder `{missing[0]}` is not fed, and "
                           "the statements computing these fetches read it (TF1 raises here "
                           "unless a fetch bound beside a value of it does not depend on it)")
            for name in [*fed, *run.optional]:
                if name not in step.params:
                    step.params.append(name)  # fed but unused: still evaluated, as in TF1
            run.function = key
        order = list(self._placeholders) + sorted({v for step in steps.values()
                                                   for v in step.fed_values + step.maybe_fed})
        # a Saver lists the variables of the layers it saves when it is made: they
        # must exist by then (a Saver made in the session block too)
        self._need_build: Set[str] = self._saver_reads | self._average_reads \
            | self._outside_layer_reads()
        for stmt in body[end:]:
            for n in _calls_in(stmt):
                if self.tf_api_name(n.func) == "train.Saver":
                    self._need_build |= self._layer_reads(n)
        for key, step in steps.items():
            # (parameters without a default first: the calls pass them all by keyword)
            step.params.sort(key=lambda p: (p not in step.required, order.index(p)))
            self._order_positional(step, [run for run in runs if run.function == key])
            self._check_batch_norm(step, body, [run for run in runs if run.function == key])
            if self._layers:
                self._note_unbuilt(step, body)
        self._builds = self._layer_builds(body) if self._need_build else {}
        for assign in self._key_lists.values():
            self.record_change(assign, f"`{code_of(assign).strip()}` removed: the step function "
                               "takes these placeholders' values in this order")
        return list(steps.values())

    def _check_rebound_before_updates(self, step: Step, call: cst.Call) -> None:
        """A train op or update runs last in its step function: a name it reads must
        not be bound again by a later statement of the function (`loss` rebuilt after
        the session, fetched beside a train op built on the first `loss`)."""
        for j in step.statements:
            if j not in self._train and j not in self._assigns:
                continue
            later = {name for k in step.statements if k > j for name in self._stmts[k].writes}
            clash = sorted(self._stmts[j].reads & later)
            if clash:
                self._bail(TS107.code, call, f"`{clash[0]}` is bound again after the update that "
                           "reads it, and this run computes both bindings: not converted")

    def _slice_limit(self, run: Run, order: List[Stmt]) -> int:
        """How many statements of ``order`` a run's slice may read: all, unless a
        graph name is bound again after the session (then those before the run)."""
        if not self._rebound or run.at is None:
            return len(order)
        return sum(1 for st in order if st.index < run.at)

    def _order_positional(self, step: Step, runs: List[Run]) -> None:
        """``run_f(*values)`` for ``feed_dict=dict(zip(keys, values))``: the function
        takes ``keys`` first, in their order (the others have defaults and follow)."""
        orders = {tuple(name for name, _ in run.feeds): run for run in runs
                  if run.positional is not None}
        if not orders:
            return
        if len(orders) > 1:
            run = list(orders.values())[1]
            self._bail(TS107.code, run.call, "these fetches are fed by `dict(zip(...))` with the "
                       "placeholders in two orders: not converted")
        keys, run = next(iter(orders.items()))
        params = [*keys, *(p for p in step.params if p not in keys)]
        with_default = [p not in step.required for p in params]
        if any(d and not later for k, d in enumerate(with_default) for later in with_default[k + 1:]):
            self._bail(TS107.code, run.call, "`dict(zip(...))` feeds a placeholder with a default "
                       "before one without: the values cannot be passed in that order")
        step.params = params

    def _check_batch_norm(self, step: Step, body: List[cst.CSTNode], runs: List[Run]) -> None:
        """A Keras batch normalization called with ``training`` updates its moving
        statistics at that call; TF1's only when its UPDATE_OPS run, which the
        model-code rule saw guarding a train op. So a sess.run that computes a
        training batch norm must run such a train op (or feed ``training`` False)."""
        facts = self._layer_facts
        if facts is None or not facts.batch_norm:
            return
        guarded = any(self._stmts[j].writes & facts.update_guarded
                      for j in step.statements if j in self._train)
        if guarded:
            return
        for j in step.statements:
            for call in _calls_in(body[j]):
                if not (isinstance(call.func, cst.Name) and call.func.value in facts.batch_norm):
                    continue
                training = next((a.value for a in call.args if a.keyword is not None
                                 and a.keyword.value == "training"), None)
                if training is None or _is_false(training) or (
                        isinstance(training, cst.Name) and training.value in self._placeholders
                        and runs and all(_fed_false(run, training.value) for run in runs)):
                    continue
                self._bail(TS108.code, call, f"batch normalization `{call.func.value}` with "
                           f"training={code_of(training)} in sess.run({code_of(step.fetch)}), "
                           "which runs no train op under control_dependencies(UPDATE_OPS): TF1 "
                           "leaves its moving statistics there, a Keras layer would update them")

    def _check_free_uses(self, module: cst.Module, body: List[cst.CSTNode], start: int,
                         runs: List[Run]) -> None:
        """Names that leave module level (placeholders, graph values) may be read
        only where a run fetches or feeds them."""
        moved = self._names_of_graph() | set(self._placeholders) - set(self._settings)
        allowed: Set[int] = set()
        for run in runs:
            for n, _ in loaded_refs(run.fetch, self.BASE):
                allowed.add(id(n))
            for arg in run.call.args:
                if isinstance(arg.value, cst.Dict):
                    for el in arg.value.elements:
                        if isinstance(el, cst.DictElement):
                            allowed.add(id(el.key))
            if isinstance(run.call.func, cst.Attribute) and self._ref(run.call.func.value):
                allowed.add(id(run.call.func.value))
            if run.positional is not None:  # dict(zip(KEYS, VALUES)): KEYS
                for arg in run.call.args:
                    if m.matches(arg.value, DICT_OF_ZIP):
                        allowed |= {id(n) for n in nodes(arg.value.args[0].value)}
        for assign in self._key_lists.values():
            allowed |= {id(n) for n in nodes(assign)}
        for call in self._value_runs:  # their feeds go
            allowed |= {id(n) for arg in call.args for n in nodes(arg.value)}
        for i in self._early_functions:
            # `global prediction` in a function that only reads it: the declaration goes
            written = names_of(body[i].body, self.BASE)[1]
            allowed |= {id(item.name) for g in nodes(body[i]) if isinstance(g, cst.Global)
                        for item in g.names if item.name.value not in written}
        for dicts in self._feed_dicts.values():
            for d in dicts:
                for el in d.elements:
                    allowed.add(id(el.key))
        stores: Set[str] = set()
        for i, stmt in enumerate(body[start:], start):
            if i not in self._after:
                stores |= names_of(stmt, self.BASE)[1]
        for i, stmt in enumerate(body):
            if i in self._after or i < start and (i in self._graph or self._placeholder_stmt(i)):
                continue
            for node, name in loaded_refs(stmt, self.BASE):
                if name in self._graph_params.get(i, ()):
                    continue  # a parameter now (feeds_graph_functions.py)
                if i < start and name in moved and self._bound_before(name, i):
                    continue  # `a = tf.constant(2)` read before `a = tf.placeholder(...)`
                if name in moved and id(node) not in allowed and name not in stores:
                    where = "after the graph is run" if i >= start else "outside the graph code"
                    self._bail(TS107.code, node, f"`{name}` is a graph value used {where} "
                               "other than by sess.run: not converted")

    def _placeholder_stmt(self, i: int) -> bool:
        """Whether statement ``i`` makes placeholders only (the statement that makes
        one: the name may be bound to something else elsewhere)."""
        st = self._stmts[i]
        if not st.writes or st.writes - set(self._placeholders) or i in self._settings.values():
            return False
        made = {id(n) for n in nodes(st.node)}
        return all(id(self._placeholders[name]) in made for name in st.writes)

    # -- rewriting ---------------------------------------------------------
    def _rewrite(self, body: List[cst.CSTNode], start: int, runs: List[Run],
                 steps: List[Step], taken: Set[str]) -> List[cst.CSTNode]:
        taken = set(taken)
        hoisted: Dict[int, cst.CSTNode] = {}
        for i, (base, expr, call) in sorted(self._hoist.items()):
            name = fresh_name(base, taken)
            taken.add(name)
            hoisted[i], self._rewrites[i] = hoist(body[i], self._rewrites.get(i, body[i]), expr,
                                                  cst.Name(name))
            self.record_change(body[i], f"{hoisted_what(expr)} `{code_of(expr)}` created once, "
                               f"as `{name}`")
        by_key: Dict[str, str] = {}
        for step in steps:
            base = ("run_" + "_".join(dict.fromkeys(step.names)))[:60] + "".join(
                f"_given_{v}" for v in step.fed_values)
            step.name = fresh_name(base, taken)
            taken.add(step.name)
            by_key[step.key] = step.name
        for run in runs:
            run.function = by_key[run.function]
        self._run_calls = {run.call: run for run in runs}

        named = [d for run in runs if run.feed_name for d in self._feed_dicts[run.feed_name]]
        replacer = RunReplacer(self._run_calls, None, named, self._param,
                               drop=list(self._key_lists.values()), values=self._value_runs)
        out: List[cst.CSTNode] = []
        gap = 0  # a removed statement's blank lines (up to 2) go to the next one kept
        comments: List[cst.EmptyLine] = []  # and a removed placeholder's comments
        out.extend(self._builds.get(-1, []))  # layers made before the block runs
        in_steps = {j for step in steps for j in step.statements}
        for i in range(start):
            gap = max(gap, i == self._gap_at)  # (feeds_sessions.py: a session opened early)
            if i in hoisted:
                stmt = hoisted[i]
                if gap and out and not stmt.leading_lines:
                    stmt = stmt.with_changes(leading_lines=[cst.EmptyLine(indent=False)] * gap)
                gap = 0
                out.append(stmt)
            if i in self._moving_averages:  # its first eager call makes the averages
                self.record_change(body[i], f"`{code_of(body[i]).strip()}` kept here, where its "
                                   "first call makes the averages, and run again by each sess.run "
                                   "that fetched it (in its step functions)")
                body[i] = self._rewrites.get(i, body[i])  # (out of its control_dependencies)
            elif i in self._graph or self._placeholder_stmt(i):
                # (a hoisted statement took its blank lines)
                if not gap and i not in hoisted:
                    gap = min(2, sum(ln.comment is None for ln in body[i].leading_lines))
                if self._placeholder_stmt(i) and i not in self._graph:
                    said = [ln for ln in body[i].leading_lines if ln.comment is not None]
                    if said and i + 1 in in_steps and i + 1 not in self._moving_averages and any(
                            j not in self._graph and not self._placeholder_stmt(j)
                            for j in range(i + 1, start)):
                        # (`# Building the encoder` heads graph code, which moved: not the
                        # unrelated code kept next; above the step functions it would stay)
                        nxt = self._rewrites.get(i + 1, body[i + 1])
                        self._rewrites[i + 1] = nxt.with_changes(
                            leading_lines=[*said, *nxt.leading_lines])
                    else:
                        comments += said
                continue
            stmt = self._setting_variable(i) or body[i]
            if i in self._kept_rewrites:  # it = ds.make_one_shot_iterator() -> iter(ds)
                small = stmt.body[0]
                stmt = stmt.with_changes(body=[small.with_changes(value=self._kept_rewrites[i])])
            if i in self._graph_params:  # it reads graph values: they are passed to it
                stmt = self._with_passed(i, stmt)
            if i in self._early_functions:  # it runs the session once it is open
                stmt = _without_globals(stmt.visit(replacer),
                                        self._names_of_graph() | set(self._placeholders))
            if gap and out and (not stmt.leading_lines or stmt.leading_lines[0].comment is not None):
                # (before its comments: `import ...`, blank, `# the learning rate`, `lr = ...`)
                stmt = stmt.with_changes(leading_lines=[cst.EmptyLine(indent=False)] * gap
                                         + list(stmt.leading_lines))
            if comments:
                lines = list(stmt.leading_lines)
                at = next((k for k, ln in enumerate(lines) if ln.comment is not None), len(lines))
                stmt = stmt.with_changes(leading_lines=lines[:at] + comments + lines[at:])
                comments = []
            gap = 0
            out.append(stmt)
            out.extend(self._builds.get(i, []))
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value in self._templates:
                name = stmt.name.value
                out.append(cst.parse_statement(
                    f'{name} = {self._alias}.compat.v1.make_template("{name}", {name})'))
                self.record_change(stmt, f"`{name}` wrapped in tf.compat.v1.make_template: its "
                                   "variables are created at the first call and reused after "
                                   "(docs/tf1-vs-tf2.md, section 4); needs tf-slim (pip install tf-slim)")
        defs = [self._function(step, body) for step in steps]
        wrap = None
        if self._tf_function and defs:
            wrap = fresh_name("numpy_values", taken)
            taken.add(wrap)
            defs.insert(0, cst.parse_statement(
                f"def {wrap}(fetched):\n"
                f'    """What sess.run returned: NumPy values, None for an op."""\n'
                f"    return {self._alias}.nest.map_structure("
                f"lambda t: None if t is None else t.numpy(), fetched)\n"))
        for k, d in enumerate(defs):
            lines = [cst.EmptyLine(indent=False)] * (2 if k or start else 0) if self._block_is_module() \
                else [cst.EmptyLine(indent=False)] if k or start else []
            if k == 0:  # the comments of placeholders made just before the session
                lines, comments = lines + comments, []
            out.append(d.with_changes(leading_lines=lines))
        replacer = RunReplacer(self._run_calls, wrap, named, self._param,
                               drop=list(self._key_lists.values()), values=self._value_runs)
        visited = [(i, stmt.visit(replacer)) for i, stmt in self._without_after(body, start)]
        rest = self._renested([(i, stmt) for i, stmt in visited
                               if not isinstance(stmt, cst.RemovalSentinel)], start)
        if rest and defs:
            first = rest[0]
            blank = 2 if self._block_is_module() else 1
            rest[0] = first.with_changes(leading_lines=[
                *([cst.EmptyLine(indent=False)] * blank),
                *[ln for ln in first.leading_lines if ln.comment is not None]])
        out.extend(rest)
        for i in sorted(self._graph | {j for j in range(start) if self._placeholder_stmt(j)}):
            if not any(i in s.statements for s in steps) and not self._placeholder_stmt(i):
                self.record_change(body[i], "graph code no sess.run fetches: removed")
        for i in self._randoms:
            for call in self._randoms[i]:
                self.report(TS116.code, call, "random op recomputed at each step: the legacy run "
                            "and the migrated run draw different numbers", changes_numbers=True)
        for p, call in self._placeholders.items():
            if p not in self._settings:
                self.record_change(call, f"placeholder `{p}` -> a parameter of the step functions")
        for run in runs:
            fed = described_feeds(run, self._param)
            self.record_change(run.call, f"`{' '.join(code_of(run.call.func).split())}(...)` -> "
                               f"`{run.function}({fed})`")
        return out

    def _bound_before(self, name: str, i: int) -> bool:
        """Whether ``name`` read at statement ``i`` (before the session) is a binding
        that stays: made by a statement that is neither graph code nor a placeholder."""
        j = last_def(self._stmts, name, i)
        return j >= 0 and j not in self._graph and not self._placeholder_stmt(j)

    def _block_is_module(self) -> bool:
        return isinstance(self._block, cst.Module)

    # -- names in the step functions (the class rule renames them) ----------
    def _param(self, ref: str) -> str:
        """The step function's parameter for the placeholder ``ref``."""
        return self._setting_param(ref, ref)

    def _expr_of(self, ref: str) -> str:
        """How a step function spells what ``ref`` names."""
        return ref

    def _localize(self, node: cst.CSTNode) -> cst.CSTNode:
        """A statement copied into a step function, with its names as the function spells them."""
        return node

    def _function(self, step: Step, body: List[cst.CSTNode]) -> cst.FunctionDef:
        params = []
        for p in step.params:
            default = None if p in step.required else cst.Name("None")
            params.append(cst.Param(cst.Name(self._param(p)), default=default,
                                    equal=cst.AssignEqual(cst.SimpleWhitespace(""),
                                                          cst.SimpleWhitespace(""))
                                    if default is not None else cst.MaybeSentinel.DEFAULT))
        lines: List[cst.BaseStatement] = []
        lines.append(cst.SimpleStatementLine([cst.Expr(cst.SimpleString(
            f'"""sess.run({" ".join(code_of(step.fetch).split())}){given(step.fed_values)} as a function '
            'of the fed values."""'))]))
        for p in step.params:
            if p not in step.used:  # a placeholder fed but never read stays as passed
                continue
            if p in self._settings:  # lr.assign(lr_value)
                lines.append(self._setting_assignment(p))
            elif p in step.maybe_fed:  # converted where it would be computed (below)
                continue
            elif p in step.fed_values:  # (only float32 values are fed: feeds_fed_values.py)
                lines.append(cst.parse_statement(f"{self._param(p)} = {self._alias}.convert_to_"
                                                 f"tensor({self._param(p)}, {self._alias}.float32)"))
            else:
                lines.extend(self._conversion(self._param(p), self._placeholders[p]))
        # (a `with tf.control_dependencies([...]): op = tf.no_op()` only orders what it
        # depends on, which the function runs anyway: it is not written)
        plain = [j for j in step.statements if j not in self._train]
        train = [j for j in step.statements if j in self._train and j not in self._groupings]
        read_later: Set[str] = set()
        for j in train:  # (as written in the function: a rewrite may read less)
            read_later |= names_of(self._rewrites[j], self.BASE)[0] if j in self._rewrites \
                else self._stmts[j].reads
        self._snapshots = {}
        for n, j in enumerate(plain + train):
            if j == (train[0] if train else None):
                # a tensor fetched with the train op is its value before the update
                for name in dict.fromkeys(step.names):
                    if name in self._schedules:
                        spelled = self._expr_of(name)
                        snapshot = f"{spelled.rpartition('.')[2]}_value"
                        self._snapshots[name] = snapshot
                        lines.append(cst.parse_statement(f"{snapshot} = {spelled}()"))
            node = self._localize(self._rewrites.get(j, body[j]).deep_clone())
            fed = [v for v in step.maybe_fed if v in self._stmts[j].writes]
            if fed:  # (feeds_fed_values.py: made by one statement of its own)
                node = self._computed_unless_given(self._param(fed[0]), node)
            if j in self._train and not (self._stmts[j].writes & (read_later | (
                    set(step.names) if j in self._assigns else set()))):
                small = node.body[0]
                node = node.with_changes(body=[cst.Expr(small.value)])  # its value is never read
            # (the comments of a moving average's statement stay where it is kept)
            keep = [ln for ln in node.leading_lines if ln.comment is not None
                    and j not in self._moving_averages and j not in self._after]
            if n and any(ln.comment is None for ln in node.leading_lines) and not keep:
                keep = [cst.EmptyLine(indent=False)]
            lines.append(node.with_changes(leading_lines=keep))
        lines.append(cst.SimpleStatementLine([cst.Return(self._returned(step.fetch))]))
        decorators = [cst.Decorator(cst.parse_expression(f"{self._alias}.function"))] \
            if self._tf_function else []
        return cst.FunctionDef(
            name=cst.Name(step.name),
            params=cst.Parameters(params=params),
            body=cst.IndentedBlock(body=lines),
            decorators=decorators,
        )

    def _conversion(self, p: str, call: cst.Call) -> List[cst.BaseStatement]:
        tf = self._alias
        api = self.tf_api_name(call.func)
        if api == "placeholder":
            dtype = call_argument(call, 0, "dtype")
            conv = f"{p} = {tf}.convert_to_tensor({p}, {code_of(dtype)})" if dtype is not None \
                else f"{p} = {tf}.convert_to_tensor({p})"
            return [cst.parse_statement(conv)]
        default = call_argument(call, 0, "input")
        dtype = _literal_dtype(default)
        if dtype is not None:
            return [cst.parse_statement(
                f"{p} = {tf}.convert_to_tensor({code_of(default)} if {p} is None else {p}, "
                f"{tf}.{dtype})")]
        return [cst.parse_statement(f"{p}_default = {tf}.convert_to_tensor({code_of(default)})"),
                cst.parse_statement(f"{p} = {p}_default if {p} is None else "
                                    f"{tf}.convert_to_tensor({p}, {p}_default.dtype)")]

    def _returned(self, fetch: cst.BaseExpression) -> cst.BaseExpression:
        if self._ref(fetch) is not None:
            return self._value_of(self._ref(fetch))
        if isinstance(fetch, (cst.List, cst.Tuple)):
            return fetch.with_changes(elements=[
                el.with_changes(value=self._returned(el.value)) for el in fetch.elements])
        if isinstance(fetch, cst.Dict):
            return fetch.with_changes(elements=[
                el.with_changes(value=self._returned(el.value)) for el in fetch.elements])
        # an expression built in the fetch (feeds.py, _computed_fetch): a tensor
        value = self._localize(fetch.deep_clone())
        if self._tf_function:
            return value
        if not isinstance(value, (cst.Call, cst.Subscript, cst.Attribute, cst.Name)):
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return cst.Call(func=cst.Attribute(value=value, attr=cst.Name("numpy")))

    def _value_of(self, ref: str) -> cst.BaseExpression:
        tf = self._alias
        n = self._expr_of(ref)
        defs = [j for j in self._graph if ref in self._stmts[j].writes]
        if defs and max(defs) in self._assigns:  # the variable's value after the assignment
            depth = self._assign_lists.get(max(defs))
            if depth is not None and not self._tf_function:
                return cst.parse_expression(f"[v.numpy() for v in {n}]" if depth == 1 else
                                            f"[[v.numpy() for v in row] for row in {n}]")
            return cst.parse_expression(n if self._tf_function else f"{n}.numpy()")
        if defs and max(defs) in self._train:
            return cst.Name("None")
        if n in self._snapshots:
            snap = self._snapshots[n]
            return cst.parse_expression(snap if self._tf_function else f"{snap}.numpy()")
        if self._tf_function:
            # a tf.function returns tensors; the caller takes their NumPy values
            if ref in self._schedules:
                return cst.parse_expression(f"{n}()")
            if ref in self._var_names:
                return cst.parse_expression(f"{tf}.identity({n})")  # the value now
            return cst.parse_expression(n)
        if ref in self._schedules:
            return cst.parse_expression(f"{n}().numpy()")
        kind = self._kinds.get(ref, "unknown")
        if ref in self._placeholders or ref in self._var_names or kind in ("tensor", "variable"):
            return cst.parse_expression(f"{n}.numpy()")
        return cst.parse_expression(f"{tf}.nest.map_structure(lambda t: t.numpy(), {n})")


def _without_globals(fn: cst.FunctionDef, gone: Set[str]) -> cst.FunctionDef:
    """``fn`` without the names of ``gone`` in its ``global`` statements (and without
    a statement left empty): they are no longer module names."""

    class _Drop(cst.CSTTransformer):
        def leave_Global(self, original: cst.Global, updated: cst.Global):
            kept = [item for item in updated.names if item.name.value not in gone]
            if len(kept) == len(updated.names):
                return updated
            if not kept:
                return cst.RemoveFromParent()
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return updated.with_changes(names=kept)

    return fn.visit(_Drop())


def call_argument(call: cst.Call, index: int, keyword: str) -> Optional[cst.BaseExpression]:
    """The argument of ``call`` given as ``keyword`` or at position ``index``."""
    for k, arg in enumerate(call.args):
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
        if arg.keyword is None and k == index:
            return arg.value
    return None


def _literal_dtype(expr: Optional[cst.BaseExpression]) -> Optional[str]:
    if expr is None:
        return None
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        expr = expr.expression
    for kind, dtype in _LITERAL_DTYPES.items():
        if isinstance(expr, kind):
            return dtype
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return "bool"
    return None


def _is_false(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "False"


def _fed_false(run: Run, placeholder: str) -> bool:
    """``run`` feeds ``placeholder`` a literal False."""
    return any(name == placeholder and value is not None and _is_false(value)
               for name, value in run.feeds)



def _calls_in(node: cst.CSTNode) -> List[cst.Call]:
    found: List[cst.Call] = []

    class _V(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> None:
            found.append(n)

    visit(node, _V())
    return found


def loaded_refs(node: cst.CSTNode, base: Optional[str] = None) -> List[Tuple[cst.CSTNode, str]]:
    """(node, name) of every name read in ``node`` (:func:`loaded_names`), and with
    ``base``, of every ``base.attr`` read (name ``"base.attr"``; a function's own
    ``base`` parameter included)."""
    out: List[Tuple[cst.CSTNode, str]] = []
    for n in loaded_names(node, keep_attributes=base is not None):
        if isinstance(n, cst.Attribute):
            out.append((n, f"{base}.{n.attr.value}"))
        elif not (base is not None and n.value == base):
            out.append((n, n.value))
    return out


def loaded_names(node: cst.CSTNode, keep_attributes: bool = False) -> List[cst.Name]:
    """Names read in ``node`` (not assignment targets, attributes or keywords); with
    ``keep_attributes``, ``self.x`` reads (an attribute of a name called ``self``)
    are listed as the Attribute node instead."""
    found: List = []

    class _V(cst.CSTVisitor):
        def visit_AssignTarget(self, n: cst.AssignTarget) -> bool:
            if not isinstance(n.target, cst.Name):
                visit(n.target, self)
            return False

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            if keep_attributes and isinstance(n.value, cst.Name) and n.value.value == "self":
                found.append(n)
                return False
            visit(n.value, self)
            return False

        def visit_Arg(self, n: cst.Arg) -> bool:
            visit(n.value, self)
            return False

        def visit_Param(self, n: cst.Param) -> bool:
            if n.default is not None:
                visit(n.default, self)
            return False

        def visit_Name(self, n: cst.Name) -> None:
            found.append(n)

        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            # a function's parameters and locals are its own, not the module's
            params = (*n.params.params, *n.params.posonly_params, *n.params.kwonly_params)
            local = {p.name.value for p in params}
            for star in (n.params.star_arg, n.params.star_kwarg):
                if isinstance(star, cst.Param):
                    local.add(star.name.value)
            local |= names_of(n.body)[1] - _declared_global(n.body)
            for p in params:
                if p.default is not None:
                    visit(p.default, self)
            for d in n.decorators:
                visit(d, self)
            found.extend(m for m in loaded_names(n.body, keep_attributes)
                         if isinstance(m, cst.Attribute) or m.value not in local)
            return False

    visit(node, _V())
    return found


def _declared_global(body: cst.CSTNode) -> Set[str]:
    out: Set[str] = set()

    class _V(cst.CSTVisitor):
        def visit_Global(self, n: cst.Global) -> None:
            out.update(item.name.value for item in n.names)

    visit(body, _V())
    return out
