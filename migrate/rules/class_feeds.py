"""A class that builds a fed graph and runs it with ``self.sess`` -> methods of the fed values.

TF1 agents are written as classes: ``__init__`` (and the ``_build_*`` methods
it calls) makes placeholders, variables, the graph and train ops, keeps them
as attributes and opens ``self.sess``; ``choose_action`` and ``learn`` run
``self.sess.run(self.q_eval, feed_dict={self.s: obs})``. This rule gives such a
class the shape the feeds rule gives a script (docs/tf1-vs-tf2.md, section 1):

* variables, layers and optimizers stay where ``__init__`` made them, created
  once per object;
* each distinct set of fetches becomes a method, ``self._run_q_eval(s=obs)``,
  that recomputes exactly the graph statements those fetches need from the fed
  values (placeholders become its parameters; graph values kept as attributes,
  ``self.q_eval``, become its locals); train ops and ``tf.assign`` ops (a
  target network's soft update) run in it when fetched, not once;
* ``self.sess = tf.Session()``, running the initializer, and the placeholders
  go; ``tf.summary.FileWriter(logdir, self.sess.graph)`` becomes
  ``tf.summary.create_file_writer(logdir)`` (TF2 code has no graph to show).

The statements the once-run methods execute are read as one block, in the
order ``__init__`` runs them (:mod:`tapeshift.migrate.rules.model_code_classes`),
with ``self.x`` as a name of its own; the feeds rule's analysis does the rest
(:class:`~tapeshift.migrate.rules.feeds.FeedsToFunctions` with ``BASE = "self"``).
Which session the class runs, and every use of it, is read by
:mod:`tapeshift.migrate.rules.class_feeds_sessions`. Anything it cannot follow is
reported (TS106, TS107, TS108) and the file keeps its compat form.
"""

from __future__ import annotations

import builtins
from typing import Dict, List, Optional, Set, Tuple

import libcst as cst
import libcst.matchers as m

from tapeshift.migrate.engine.registry import register_rule
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.dataflow import names_of
from tapeshift.migrate.engine.toolkit.kinds import RETURNS_TENSOR, VARIABLE_MAKERS, variable_factory
from tapeshift.migrate.engine.toolkit.variable_store import VARIABLE_REFS
from tapeshift.migrate.engine.toolkit.tf_names import fresh_name, tf_module_alias
from tapeshift.migrate.engine.toolkit.walk import nodes
from tapeshift.migrate.engine.tf1_api import SESSIONS
from tapeshift.migrate.rules.class_feeds_driven import ClassDriven, driven_session
from tapeshift.migrate.rules.class_feeds_sessions import ClassSessions, DropArguments
from tapeshift.migrate.rules.feeds import TF_FUNCTION, FeedsToFunctions
from tapeshift.migrate.rules.feeds_datasets import hoist, hoisted_what
from tapeshift.migrate.rules.feeds_steps import Bail, RunReplacer, Step, described_feeds
from tapeshift.migrate.rules.model_code_slim import remove_slim_imports
from tapeshift.migrate.rules.model_code_classes import ClassContext, class_context, method_call
from tapeshift.migrate.rules.session import TS107


@register_rule
class ClassFeedsToMethods(ClassDriven, ClassSessions, FeedsToFunctions):
    DESCRIPTION = "Turn a class's fed graph and its self.sess.run calls into methods of the fed values."
    RULE = "class-feeds"
    #: after the module's feeds rule (which leaves classes alone)
    PHASE = "pre"
    ORDER = 35
    SCREEN_NAMES = SESSIONS
    OPTION = None  # the feeds rule's --tf-function applies here too
    BASE = "self"

    def visit_Module(self, node: cst.Module) -> bool:
        self._alias = tf_module_alias(node)
        self._replaced: Dict[cst.ClassDef, cst.ClassDef] = {}
        if self._alias is None:
            return False
        self._module_node = node
        self._dropped_args: Dict[cst.Call, int] = {}  # constructions -> the session argument
        self._module_blocks: Dict[cst.CSTNode, cst.CSTNode] = {}  # a driving session block -> new
        driven = driven_session(node, self.tf_api_name)
        for stmt in node.body:
            if isinstance(stmt, cst.ClassDef):
                self._driven = driven if driven is not None and driven.cls is stmt else None
                self._constructions = {}
                try:
                    new = self._convert(stmt)
                except Bail:
                    continue
                if new is not None:
                    self._replaced[stmt] = new
                    self._dropped_args.update(self._constructions)
        return False

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if not self._replaced:
            return updated_node
        new = updated_node.with_changes(body=[self._replaced.get(s, s) for s in updated_node.body])
        for block, replacement in self._module_blocks.items():  # (in main() or the guard too)
            new = new.deep_replace(block, replacement)
        if self._dropped_args:
            new = new.with_changes(body=[s.visit(DropArguments(self._dropped_args))
                                         for s in new.body])
        # the object's tf-slim layers are tf-keras ones now: tf-slim imports nothing
        # reads any more go (LibCST keeps those still used)
        remove_slim_imports(self.context, original_node)
        return new

    # ------------------------------------------------------------------
    # reading the class
    # ------------------------------------------------------------------
    def _flatten(self, ctx: ClassContext, name: str, out: List[Tuple[str, cst.BaseStatement]],
                 seen: Set[str]) -> None:
        """The statements the once-run methods execute, in order, with ``self.m()``
        calls of once-run methods replaced by their bodies."""
        seen.add(name)
        for stmt in ctx.methods[name].body.body:
            called = method_call(stmt, ctx)
            if called is not None and called not in seen:
                self._flatten(ctx, called, out, seen)
                continue
            out.append((name, stmt))

    def _convert(self, cls: cst.ClassDef) -> Optional[cst.ClassDef]:
        ctx = class_context(cls)
        if ctx is None:
            return None
        session = self._session_of(cls, ctx)
        self._passed = None
        flat: List[Tuple[str, cst.BaseStatement]] = []
        self._flatten(ctx, "__init__", flat, set())
        if session is None and self._driven is not None:
            # module code runs the graph (class_feeds_driven.py): its session block is
            # read as if opened after __init__
            block = self._driven_block(self._driven)
            self._session_ref = block.items[0].asname.name.value
            start = len(flat)
            flat = flat + [("", block)]
        elif session is None:
            passed = self._passed_session(ctx)
            if passed is None:
                return None
            # a session passed in: everything __init__ builds is graph, and the
            # session runs it in the other methods (as if opened after __init__)
            self._session_ref, kept, param = passed
            self._check_passed_session(cls, ctx, kept, param)
            self._passed = (kept, param)
            flat = [(m, stmt) for m, stmt in flat if stmt is not kept] + [("__init__", kept)]
            start = len(flat) - 1
        else:
            self._session_ref, session_call = session
            starts = [i for i, (_, stmt) in enumerate(flat)
                      if any(n is session_call for n in nodes(stmt))]
            if not starts or not isinstance(flat[starts[0]][1], cst.SimpleStatementLine):
                self._bail(TS107.code, session_call, "the Session is opened inside a block of "
                           f"`{cls.name.value}` the codemod cannot follow")
            start = self._session_moved(flat, starts[0])
        self._initializers = self._initializer_refs(flat, cls)
        if self._driven is not None:
            self._initializers |= self._module_initializers()
        others = [fn for name, fn in ctx.methods.items() if name not in ctx.once]
        body: List[cst.CSTNode] = [stmt for _, stmt in flat] + others
        self._tf_function = bool(self.shared.get(TF_FUNCTION))
        self._block = cls
        self._ctx = ctx
        self._kinds, self._elements = {}, {}
        self._shorts: Dict[str, str] = {}
        self._classify(body, start)
        self._kinds = self._ref_kinds(body, start)
        self._shorts = self._short_names(start)
        runs = self._runs(body, start, self._module_node)
        if not runs:
            return None
        steps = self._steps(runs, body, start)
        self._check_free_uses(self._module_node, body, start, runs)
        self._check_session_uses(body, start, runs)
        if self._driven is not None:
            self._check_driven_uses()
            self._check_driven_fetches(runs)
        self._copy_locals(steps, body, start, flat)
        return self._emit(cls, ctx, flat, body, start, runs, steps)

    def _factory(self, call: cst.Call) -> Optional[cst.Call]:
        """``self.init_weights(shape)`` of a method that only returns a new variable,
        as a module function's (feeds_graph.py): a variable made there."""
        if isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name) \
                and call.func.value.value == "self":
            fn = self._ctx.methods.get(call.func.attr.value)
            return variable_factory(fn, self.tf_api_name) if fn is not None else None
        return super()._factory(call)

    def _known_builders(self) -> Dict[str, cst.Call]:
        """``self.m`` for each method whose body makes a tf.Variable: a graph statement
        calling it, run again in a step method, would make new variables each time."""
        out: Dict[str, cst.Call] = {}
        for name, fn in self._ctx.methods.items():
            made = next((n for n in nodes(fn.body) if isinstance(n, cst.Call)
                         and self.tf_api_name(n.func) in VARIABLE_MAKERS), None)
            if made is not None and name != "__init__":
                out[f"self.{name}"] = made
        return out

    def _ref_kinds(self, body: List[cst.CSTNode], end: int) -> dict:
        kinds: dict = {}
        # self.forward(x) of a method returning tensors only (tf ops' results): a tensor
        for name, fn in self._ctx.methods.items():
            if name != "__init__" and self.returns_tensor(fn, {}):
                kinds[f"self.{name}"] = RETURNS_TENSOR
        for stmt in body[:end]:
            value, target = self._assignment(stmt)
            if target is not None and value is not None:
                kind = self.expr_kind(value, kinds)
                kinds[target] = kind if kinds.get(target, kind) == kind else "unknown"
        return kinds

    def expr_kind(self, expr, kinds):
        ref = self._ref(expr)
        if ref is not None and ref.startswith("self."):
            return kinds.get(ref, "unknown")
        return super().expr_kind(expr, kinds)

    def _read_after(self, k: int, flat, body, start: int) -> bool:
        """The local statement ``k`` binds is read by a statement its method keeps."""
        names = self._stmts[k].writes
        method = flat[k][0]
        for j in range(k + 1, len(flat)):
            if flat[j][0] != method:
                continue
            if j < start and (j in self._graph or self._placeholder_stmt(j)):
                continue
            if self._stmts[j].reads & names:
                return True
            if self._stmts[j].writes & names:
                return False
        return False

    def _copy_locals(self, steps: List[Step], body, start: int, flat) -> None:
        """A step method runs apart from the method that built its graph: a local the
        graph statements read (``t_params``, a list of variables) is computed again
        in it, from the statement that bound it, if that reads only the object and
        module names."""
        module_names = {n for s in self._module_node.body for n in _module_level_names(s)}
        self._copied: Set[int] = set()
        #: a parameter of __init__ the steps read (as self.<name>) -> the statement reading it
        self._kept_params: Dict[str, cst.CSTNode] = {}
        for step in steps:
            needed = set(step.statements)
            frontier = list(step.statements)
            while frontier:
                j = frontier.pop()
                for name in sorted(self._stmts[j].reads):  # (a set: the first reported is fixed)
                    if name.startswith("self.") or name in module_names or name in self._placeholders:
                        continue
                    defs = [k for k in range(j) if name in self._stmts[k].writes]
                    if not defs and j < start and name in _params(self._ctx.methods.get(flat[j][0])):
                        self._keep_param(name, flat[j][0], body[j])
                        continue
                    if not defs or defs[-1] in needed:
                        continue
                    k = defs[-1]
                    if k >= start:
                        continue
                    if k not in self._graph and isinstance(body[k], cst.SimpleStatementLine):
                        self._check_copyable(body, k, name, module_names)
                        needed.add(k)
                        frontier.append(k)
                        self._copied.add(k)
            step.statements = sorted(needed)

    def _keep_param(self, name: str, method: str, stmt: cst.CSTNode) -> None:
        """A parameter of ``__init__`` that graph code a step method runs reads
        (``tf.one_hot(self.state_in, s_size)``) is kept on the object, ``self.s_size``,
        where the step method reads it (``__init__`` already keeping it so: as it is)."""
        if name in self._kept_params:
            return
        if method != "__init__":
            self._bail(TS107.code, stmt, f"`{name}`, a parameter of `{method}`, is read by graph "
                       "code a step method runs, which does not have it: not converted")
        init = self._ctx.methods["__init__"]
        kept = [s for s in init.body.body if m.matches(s, m.SimpleStatementLine(body=[m.Assign(
            targets=[m.AssignTarget(target=m.Attribute(value=m.Name("self"), attr=m.Name(name)))],
            value=m.Name(name))]))]
        self_name = m.Attribute(value=m.Name("self"), attr=m.Name(name))
        bound = [n for n in nodes(self._block) if m.matches(n, m.AssignTarget(target=self_name))
                 or m.matches(n, m.AugAssign(target=self_name))]
        # (an object's attribute of that name set outside the class would change it)
        outside = [n for stmt in self._module_node.body if stmt is not self._block
                   for n in nodes(stmt) if m.matches(n, m.AssignTarget(target=m.Attribute(
                       attr=m.Name(name)))) or m.matches(n, m.AugAssign(
                           target=m.Attribute(attr=m.Name(name))))]
        if name in self._ctx.attrs and not (kept and len(bound) == 1) or outside:
            self._bail(TS107.code, stmt, f"`{name}`, a parameter of `__init__`, is read by graph "
                       f"code a step method runs, and `self.{name}` is taken (set "
                       f"{'outside the class' if outside else 'otherwise'}): not converted")
        self._kept_params[name] = stmt

    def _check_copyable(self, body, k: int, name: str, module_names: Set[str]) -> None:
        """Statement ``k``, which binds the local ``name``, may be run again in a step
        method: it makes no variable and changes no state (it would do so at every
        call), and what it reads exists there (not a parameter of ``__init__``)."""
        stmt = body[k]
        value = self._assignment(stmt)[0]
        api = self.tf_api_name(value.func) if isinstance(value, cst.Call) else None
        if api is not None and api.startswith("train.") and api.endswith("Optimizer"):
            self._bail(TS107.code, stmt, f"`{name}`, an optimizer in a local of the method that "
                       "builds the graph, would be made again at each call of a step method "
                       f"(its slots and step count lost): keep it as an attribute, `self.{name}`")
        if self._makes_variable(stmt) or self._changes_state(stmt):
            self._bail(TS107.code, stmt, f"`{name}`, a local of the method that builds the graph, "
                       "makes a variable or an update that a step method reads: run again there "
                       f"it would be made at each call (keep it as an attribute, `self.{name}`)")
        for read in sorted(self._stmts[k].reads):
            if read.startswith("self.") or read in module_names or read in _BUILTINS:
                continue
            if not any(read in self._stmts[j].writes for j in range(k)):
                self._bail(TS107.code, stmt, f"`{name}`, a local of the method that builds the "
                           f"graph, is read by a step method but computed from `{read}`, which "
                           "the step method does not have")

    # ------------------------------------------------------------------
    # names in the step methods
    # ------------------------------------------------------------------
    def _param(self, ref: str) -> str:
        return self._setting_param(ref, self._short(ref))

    def _expr_of(self, ref: str) -> str:
        if ref in self._settings:  # an attribute still: a variable
            return ref
        if ref in self._placeholders or ref in self._local_refs:
            return self._short(ref)
        return ref

    def _short(self, ref: str) -> str:
        """How a step method spells ``self.x``: ``x``, or ``self_x`` where a local ``x``
        is used after ``self.x`` is bound (the body of a build method read at its
        call binds its own ``a``): the step method runs both statements."""
        return self._shorts.get(ref, ref.rpartition(".")[2])

    def _short_names(self, start: int) -> Dict[str, str]:
        taken = {n for st in self._stmts[:start] for n in st.reads | st.writes}
        out: Dict[str, str] = {}
        decided: Set[str] = set()  # at the first statement binding each attribute
        for k in range(start):
            for ref in sorted(self._stmts[k].writes - decided):
                decided.add(ref)
                short = ref.rpartition(".")[2]
                if ref.startswith("self.") and ref not in self._settings and any(short in self._stmts[j].reads or short in self._stmts[j].writes
                       for j in range(k + 1, start)):
                    out[ref] = _fresh(f"self_{short}", taken)
        return out

    def _localize(self, node: cst.CSTNode) -> cst.CSTNode:
        return node.visit(_Localizer(self))

    # ------------------------------------------------------------------
    # writing the class
    # ------------------------------------------------------------------
    def _emit(self, cls: cst.ClassDef, ctx: ClassContext, flat, body, start: int, runs,
              steps: List[Step]) -> cst.ClassDef:
        # graph values computed in the step methods: locals there, not attributes
        self._local_refs = {w for j in self._graph for w in self._stmts[j].writes
                            if w.startswith("self.")}
        taken = set(ctx.attrs) | set(ctx.methods)
        hoisted: Dict[int, cst.SimpleStatementLine] = {}
        for i, (base, expr, call) in sorted(self._hoist.items()):
            name = _fresh(base, taken)
            hoisted[i], self._rewrites[i] = hoist(body[i], self._rewrites.get(i, body[i]), expr,
                                                  cst.parse_expression(f"self.{name}"))
            self.record_change(body[i], f"{hoisted_what(expr)} `{code_of(expr)}` created once, "
                               f"as `self.{name}`")
        by_key: Dict[str, str] = {}
        for step in steps:
            names = [n.rpartition(".")[2].lstrip("_") for n in dict.fromkeys(step.names)]
            given = "".join(f"_given_{v.rpartition('.')[2].lstrip('_')}" for v in step.fed_values)
            prefix = "run_" if self._driven is not None else "_run_"  # (called from outside)
            step.name = _fresh((prefix + "_".join(names))[:60] + given, taken)
            by_key[step.key] = step.name
        for run in runs:
            run.function = by_key[run.function]
        self.shared.setdefault("step_functions", set()).update(s.name for s in steps)
        self.shared.setdefault(VARIABLE_REFS, set()).update(
            v for v in self._variables if v.startswith("self.") and v not in self._layers)
        run_calls = {run.call: run for run in runs}
        named = [d for run in runs if run.feed_name for d in self._feed_dicts[run.feed_name]]

        def session_code(stmt: cst.CSTNode) -> Optional[cst.CSTNode]:
            """A statement after the session opened: runs replaced, the session gone."""
            return stmt.visit(_SessionCode(self, run_calls, named))

        index = {id(stmt): i for i, (_, stmt) in enumerate(flat)}
        in_steps = {j for step in steps for j in step.statements}
        new_methods: Dict[str, cst.FunctionDef] = {}
        for name, fn in ctx.methods.items():
            out: List[cst.BaseStatement] = []
            carried: List[cst.EmptyLine] = []  # the comments of statements that went
            for stmt in fn.body.body:
                i = index.get(id(stmt))
                if i is None:  # a call of a build method, or a method run after __init__
                    new = session_code(stmt) if name not in ctx.once else stmt
                elif i < start:
                    if i in hoisted:
                        out.append(hoisted[i])
                    if self._assignment(stmt)[1] in self._initializers:
                        self.record_change(stmt, f"`{code_of(stmt).strip()}` removed: eager "
                                           "variables start initialised")
                        carried += [ln for ln in stmt.leading_lines if ln.comment is not None]
                        continue
                    if i in self._graph or self._placeholder_stmt(i) or (
                            i in self._copied and not self._read_after(i, flat, body, start)):
                        said = [ln for ln in stmt.leading_lines if ln.comment is not None]
                        if i in in_steps:
                            continue  # its comments go with it, into the step methods
                        heads = i + 1  # (`# training part of graph`: its placeholders,
                        while heads < start and heads not in self._graph \
                                and self._placeholder_stmt(heads):  # then graph code)
                            heads += 1
                        if said and self._placeholder_stmt(i) and heads in in_steps \
                                and flat[heads][0] == name:
                            nxt = self._rewrites.get(heads, body[heads])
                            self._rewrites[heads] = nxt.with_changes(
                                leading_lines=[*said, *nxt.leading_lines])
                            continue
                        carried += said
                        continue
                    new = self._setting_variable(i) or self._rewrites.get(i, stmt)
                    if self._builds.get(i):
                        out.append(new)
                        *built, new = self._builds[i]
                        out.extend(built)
                elif i == start:
                    self.record_change(stmt, f"`{code_of(stmt.body[0]).strip()}` removed: eager "
                                       "code runs as it is written" if self._passed else
                                       f"`{self._session_ref} = tf.Session()` removed: "
                                       "eager code runs as it is written")
                    carried += [ln for ln in stmt.leading_lines if ln.comment is not None]
                    continue
                else:
                    new = session_code(stmt)
                if isinstance(new, cst.RemovalSentinel) or new is None:
                    carried += [ln for ln in stmt.leading_lines if ln.comment is not None]
                    continue
                if carried:  # after the statement's blank lines, before its comments
                    lines = list(new.leading_lines)
                    blank = next((k for k, ln in enumerate(lines) if ln.comment is not None),
                                 len(lines))
                    new = new.with_changes(leading_lines=[*lines[:blank], *carried, *lines[blank:]])
                    carried = []
                out.append(new)
            if not out:
                out = [cst.SimpleStatementLine([cst.Pass()])]
            new_methods[name] = self._without_passed_sessions(
                fn.with_changes(body=fn.body.with_changes(body=out)))
        defs = []
        for step in steps:
            d = self._function(step, body)
            d = d.with_changes(params=d.params.with_changes(
                params=[cst.Param(cst.Name("self")), *d.params.params]),
                leading_lines=[cst.EmptyLine(indent=False)])
            defs.append(d)
        read = {self._ref(n) for d in defs for n in nodes(d) if isinstance(n, cst.Attribute)}
        kept = [name for name in _params(ctx.methods["__init__"]) if name in self._kept_params
                and f"self.{name}" in read
                and not any(m.matches(st, m.SimpleStatementLine(body=[m.Assign(value=m.Name(name))]))
                            and self._assignment(st)[1] == f"self.{name}"
                            for st in ctx.methods["__init__"].body.body)]
        for name in kept:
            self.record_change(self._kept_params[name], f"`{name}`, a parameter of `__init__` "
                               f"that graph code reads, kept on the object as `self.{name}` "
                               "for the step methods")
        if kept:  # parameters the step methods read, kept first thing
            init = new_methods["__init__"]
            lines = list(init.body.body)
            at = 1 if lines and m.matches(lines[0], m.SimpleStatementLine(
                body=[m.Expr(m.SimpleString() | m.ConcatenatedString())])) else 0
            lines[at:at] = [cst.parse_statement(f"self.{name} = {name}") for name in kept]
            new_methods["__init__"] = init.with_changes(body=init.body.with_changes(body=lines))
        if self._passed is not None:  # the session parameter goes from __init__
            param = self._passed[1]
            init = new_methods["__init__"]
            params = [p for p in init.params.params if p.name.value != param]
            params[-1] = params[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            new_methods["__init__"] = init.with_changes(
                params=init.params.with_changes(params=params))
            self.record_change(ctx.methods["__init__"], f"`{cls.name.value}` no longer takes "
                               f"`{param}`: eager code has no session")
        members: List[cst.BaseStatement] = []
        last_once = max(k for k, s in enumerate(cls.body.body)
                        if isinstance(s, cst.FunctionDef) and s.name.value in ctx.once)
        for k, s in enumerate(cls.body.body):
            members.append(new_methods.get(s.name.value, s) if isinstance(s, cst.FunctionDef) else s)
            if k == last_once:
                members.extend(defs)
        for p, call in self._placeholders.items():
            if p not in self._settings:
                self.record_change(call, f"placeholder `{p}` -> a parameter of the step methods")
        owner = "self"
        if self._driven is not None:  # the module's session block, its runs replaced
            owner = self._driven.instance
            self._module_blocks[self._driven.session] = self._spelled_back(
                self._without_passed_sessions(session_code(flat[start][1])))
            for method, (param, _) in getattr(self, "_helpers", {}).items():
                self.record_change(ctx.methods[method], f"`{method}` no longer takes the "
                                   f"session `{param}`: its runs call the step methods")
        for run in runs:
            fed = described_feeds(run, self._param)
            self.record_change(run.call, f"`{' '.join(code_of(run.call.func).split())}(...)` -> "
                               f"`{owner}.{run.function}({fed})`")
        return cls.with_changes(body=cls.body.with_changes(body=members))


_BUILTINS = frozenset(dir(builtins))


class _Localizer(cst.CSTTransformer):
    """In a step method: a placeholder attribute -> its parameter, a graph value
    kept as an attribute -> a local of the method."""

    def __init__(self, rule: ClassFeedsToMethods) -> None:
        super().__init__()
        self.rule = rule
        self._labels: Set[int] = set()  # names that are an attribute's or a keyword

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._labels.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._labels.add(id(node.keyword))

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name):
        # a parameter of __init__ the object keeps (ClassFeedsToMethods._keep_param)
        if original_node.value in self.rule._kept_params and id(original_node) not in self._labels:
            return cst.Attribute(cst.Name("self"), cst.Name(original_node.value))
        return updated_node

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute):
        ref = self.rule._ref(original_node)
        if ref is not None and ref.startswith("self.") and ref not in self.rule._settings and (
                ref in self.rule._placeholders or ref in self.rule._local_refs):
            return cst.Name(self.rule._short(ref))
        return updated_node


class _SessionCode(RunReplacer):
    """Code after the session opened: ``self.sess.run(fetches, ...)`` ->
    ``self._run_<fetches>(...)``; ``self.sess.run(tf.global_variables_initializer())``
    goes; ``tf.summary.FileWriter(logdir, self.sess.graph)`` ->
    ``tf.summary.create_file_writer(logdir)``. (One pass: each decision is made
    on the original node, whose TensorFlow names are known.)"""

    def __init__(self, rule: ClassFeedsToMethods, runs, feed_dicts) -> None:
        super().__init__(runs, None, feed_dicts, rule._param, "self",
                         drop=list(rule._key_lists.values()), values=rule._value_runs)
        self.rule = rule

    def leave_SimpleStatementLine(self, original_node, updated_node):
        rule = self.rule
        small = original_node.body[0] if len(original_node.body) == 1 else None
        call = small.value if isinstance(small, cst.Expr) else None
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) \
                and call.func.attr.value == "run" and rule._ref(call.func.value) == \
                rule._session_ref and rule._initializer_run(call):
            rule.record_change(original_node, "running the initializer removed: eager variables "
                               "start initialised")
            return cst.RemoveFromParent()
        return super().leave_SimpleStatementLine(original_node, updated_node)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        rule = self.rule
        if original_node in self._runs or original_node in self._values:
            return super().leave_Call(original_node, updated_node)
        if rule.tf_api_name(original_node.func) == "summary.FileWriter" \
                and len(original_node.args) == 2:
            rule.record_change(original_node, "tf.summary.FileWriter(logdir, sess.graph) -> "
                               "tf.summary.create_file_writer(logdir): TF2 code has no graph to "
                               "write")
            return cst.Call(func=cst.parse_expression(f"{rule._alias}.summary.create_file_writer"),
                            args=[updated_node.args[0].with_changes(comma=cst.MaybeSentinel.DEFAULT)])
        return updated_node


def _params(fn: Optional[cst.FunctionDef]) -> Dict[str, None]:
    """The names of ``fn``'s parameters, in their order."""
    if fn is None:
        return {}
    p = fn.params
    star = [q for q in (p.star_arg, p.star_kwarg) if isinstance(q, cst.Param)]
    return dict.fromkeys(q.name.value for q in [*p.posonly_params, *p.params, *star,
                                                 *p.kwonly_params])


def _module_level_names(stmt: cst.CSTNode) -> Set[str]:
    """What a module-level statement binds (a class or function: its name only)."""
    if isinstance(stmt, (cst.ClassDef, cst.FunctionDef)):
        return {stmt.name.value}
    return names_of(stmt)[1]


def _fresh(base: str, taken: Set[str]) -> str:
    name = fresh_name(base, taken)
    taken.add(name)
    return name
