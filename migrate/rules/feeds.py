"""Placeholders, ``feed_dict`` and training ops -> functions of the fed values.

A fed TF1 graph is a program that ``sess.run`` evaluates again at every call,
with the feeds of that call and the variables' values of that moment. Eager
code computes a tensor once, when its line runs (docs/tf1-vs-tf2.md, section 1). So, for a
file that builds a graph and then runs it in a session:

* variables, optimizers and learning-rate schedules stay where they are:
  created once (an optimizer created inline, ``tf.train.AdamOptimizer(lr)
  .minimize(loss)``, is hoisted into a name of its own: its slots and Adam's
  step counters must outlive one step);
* each distinct set of fetches becomes a function, placed just before the
  session, that recomputes exactly the graph statements those fetches depend
  on, from the fed values (its parameters are the placeholders it needs, each
  converted to the placeholder's dtype as a feed is; a
  ``placeholder_with_default`` parameter defaults to None and then to its
  default), and returns the fetched structure with NumPy values (``None``
  for a train op, as ``sess.run`` returns);
* ``opt.minimize(loss, var_list=VL)`` becomes
  ``opt.apply_gradients(zip(tf.gradients(loss, VL), VL))`` and
  ``opt.compute_gradients(loss, VL)`` becomes
  ``list(zip(tf.gradients(loss, VL), VL))``, with ``VL`` the explicit list
  (TF1's default: every trainable variable created before that line); the
  gradients rule then puts the tape around the forward statements. Train ops
  run after everything else the function computes, so a loss fetched with its
  train op is the loss before the update, as in TF1;
* ``sess.run(fetches, feed_dict={x: a})`` (and ``t.eval(feed_dict=...)``,
  ``op.run(feed_dict=...)``) becomes ``run_<fetches>(x=a)``.

The session itself, the initializer and fetches of plain variables are left
to the session rule. Anything the rule cannot follow is reported (TS107 for
feeds, TS108 for state changes) and the file keeps its compat form.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst
import libcst.matchers as m

from tapeshift.migrate.engine.registry import RuleOption, register_rule
from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.kinds import KindMixin
from tapeshift.migrate.engine.toolkit.tf_names import all_names, tf_module_alias
from tapeshift.migrate.engine.toolkit.walk import children, instance_test, nodes, release, visit
from tapeshift.migrate.engine.tf1_api import PLACEHOLDERS, SEEDING, SESSIONS
from tapeshift.migrate.rules.class_feeds_driven import driven_or_why
from tapeshift.migrate.rules.contrib_slim import TS118, spells
from tapeshift.migrate.rules.session import (MOVING_AVERAGES, TS107, inline_update,
                                             moving_average_applies)
from tapeshift.migrate.rules.feeds_after import GraphAfterSession
from tapeshift.migrate.rules.feeds_blocks import GraphBlocks
from tapeshift.migrate.rules.feeds_datasets import DatasetIterators
from tapeshift.migrate.rules.feeds_fed_values import FedValues
from tapeshift.migrate.rules.feeds_fetches import Fetches, fetched, local_bindings
from tapeshift.migrate.rules.feeds_main import SessionInMain
from tapeshift.migrate.rules.feeds_passed_sessions import PassedSessions
from tapeshift.migrate.rules.feeds_sessions import SessionSections
from tapeshift.migrate.rules.feeds_graph import TRAIN_METHODS, FedGraph
from tapeshift.migrate.rules.feeds_graph_functions import GraphFunctions
from tapeshift.migrate.rules.feeds_settings import FedSettings
from tapeshift.migrate.rules.feeds_layers import LayerBuilds
from tapeshift.migrate.rules.feeds_updates import TS132, UpdateOps
from tapeshift.migrate.rules.feeds_runs import dominating_bindings
from tapeshift.migrate.rules.feeds_steps import (DICT_OF_ZIP, Bail, Run, StepFunctions,
                                                 loaded_names, loaded_refs)

#: the option (in the shared scratch of one migration) that makes each step
#: function a ``tf.function``: it returns tensors, ``numpy_values`` converts them
TF_FUNCTION = "tf_function"
# the analysis walk's per-node test (memoized isinstance: node classes are ABCs)
_is_call = instance_test(cst.Call)


def _called_only_from(name: str, body: List[cst.CSTNode], start: int) -> bool:
    """``name`` is called, and only by statements from ``start`` on (read only as
    the function called there: not passed, not bound again)."""
    uses = [(i, n) for i, stmt in enumerate(body) for n in nodes(stmt)
            if isinstance(n, cst.Name) and n.value == name]
    calls = {id(n.func) for stmt in body for n in nodes(stmt)
             if isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == name}
    defined = {id(stmt.name) for stmt in body if isinstance(stmt, cst.FunctionDef)}
    rest = [(i, n) for i, n in uses if id(n) not in defined]
    return bool(rest) and all(id(n) in calls and i >= start for i, n in rest)


@register_rule
class FeedsToFunctions(FedGraph, FedSettings, FedValues, Fetches, GraphBlocks, GraphAfterSession,
                       GraphFunctions, SessionSections, SessionInMain, PassedSessions, DatasetIterators,
                       UpdateOps, StepFunctions, LayerBuilds, KindMixin, TapeshiftCodemod):
    DESCRIPTION = "Turn fed graphs and training ops into functions of the fed values."
    RULE = "feeds"
    #: before the session rule, which would block on the fed graphs it turns into functions
    PHASE = "pre"
    ORDER = 30
    #: nothing without a TensorFlow Session
    SCREEN_NAMES = SESSIONS
    CODES = (TS132,)
    OPTION = RuleOption(TF_FUNCTION, "--tf-function",
                        "make each step function the feeds rule writes for a "
                        "sess.run a tf.function (default: plain eager functions)")

    #: None: the graph is module (or function) code and its names are names;
    #: "self" (the class rule): attributes of ``self`` are names of their own
    BASE: Optional[str] = None

    def __init__(self, context) -> None:
        super().__init__(context)
        self._block: Optional[cst.CSTNode] = None
        self._block_owner: Optional[cst.CSTNode] = None  # the function whose body it is
        #: each block converted -> its new body
        self._new_bodies: List[Tuple[cst.CSTNode, List[cst.CSTNode]]] = []
        #: statements opening sessions left to the session rule (one block's unfed ones)
        self._other_sessions: Set[int] = set()
        self._early_functions: Set[int] = set()  # functions before the session that run it
        #: the function whose runs are read: each local -> the values bound to it (None:
        #: bound otherwise than by `name = value`), its parameters -> []
        self._locals_here: Dict[str, List[Optional[cst.BaseExpression]]] = {}
        #: sess.run(v, feed_dict=...) of eager values -> what replaces it (v.numpy())
        self._value_runs: Dict[cst.Call, cst.BaseExpression] = {}
        self._ema_calls: Set[cst.Call] = set()  # ema.apply(...) of a moving average
        self._ema_converted: Set[str] = set()  # the moving averages those calls apply
        self._after: Set[int] = set()  # graph code after the session (feeds_after.py)
        self._graph_params: Dict[int, List[str]] = {}  # functions given graph values (feeds_graph_functions.py)
        self._rebound: Set[str] = set()  # graph names bound again after the session (feeds_after.py)
        self._unfollowed: Dict[str, int] = {}  # ... by code that is not graph code: from where
        self._with_session = None  # a `with` session read flat (feeds_sessions.py)
        self._gap_at: Optional[int] = None  # a blank line goes before statement i (the output's)

    def _known_builders(self) -> Dict[str, cst.Call]:
        """Functions known to make a tf.Variable at each call before the block is read
        (the class rule's methods), each with such a call."""
        return {}

    def _ref(self, expr: Optional[cst.CSTNode]) -> Optional[str]:
        """The name ``expr`` stands for: ``x`` for a name, ``self.x`` for an
        attribute of the base object (the class rule); None for anything else."""
        if isinstance(expr, cst.Name):
            return expr.value
        if self.BASE is not None and isinstance(expr, cst.Attribute) \
                and isinstance(expr.value, cst.Name) and expr.value.value == self.BASE:
            return f"{self.BASE}.{expr.attr.value}"
        return None
    # ------------------------------------------------------------------
    def visit_Module(self, node: cst.Module) -> bool:
        try:
            self._analyse(node)
        except Bail:
            self._new_bodies = []
        return False

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        bodies = {id(block): body for block, body in self._new_bodies}
        if id(original_node) in bodies:
            return updated_node.with_changes(body=bodies[id(original_node)])
        if not bodies:
            return updated_node
        return updated_node.visit(_NewBodies(bodies))

    # ------------------------------------------------------------------
    # analysis
    # ------------------------------------------------------------------
    def _bail(self, code: str, node: cst.CSTNode, message: str) -> None:
        self.report(code, node, message)
        raise Bail()

    def _analyse(self, module: cst.Module) -> None:
        sessions: List[Tuple[cst.Call, List[cst.CSTNode]]] = []
        fed = False
        seeded = False

        def walk(n: cst.CSTNode, stack: List[cst.CSTNode]) -> None:
            nonlocal fed, seeded
            if isinstance(n, cst.ClassDef):
                return  # a class that runs its own graph: the class rule's
            if _is_call(n):
                name = self.tf_api_name(n.func)
                if name in SESSIONS:
                    sessions.append((n, list(stack)))
                elif name in PLACEHOLDERS:
                    fed = True
                elif name in SEEDING:
                    seeded = True
                elif isinstance(n.func, cst.Attribute) and n.func.attr.value in TRAIN_METHODS:
                    fed = True
                for arg in n.args:
                    if arg.keyword is not None and arg.keyword.value == "feed_dict":
                        fed = True
            stack.append(n)
            for child in children(n):
                walk(child, stack)
            stack.pop()

        try:
            walk(module, [])
        finally:
            release(walk)
        # ema.apply(var_list): an update op of the averages, run when fetched, as a train op
        self._ema_calls = set(moving_average_applies(module, self.tf_api_name))
        if sessions and self.BASE is None:
            driven = driven_or_why(module, self.tf_api_name)
            if isinstance(driven, str):  # another shape than the class rule reads: why
                self._bail(TS107.code, sessions[0][0], driven)
            if driven is not None:
                return  # the graph of a class the session runs: the class rule's
        if not sessions or not (fed or self._ema_calls):
            return  # nothing fed or trained: the session rule's business
        self._seeded = seeded
        self._tf_function = bool(self.shared.get(TF_FUNCTION))
        self._alias = tf_module_alias(module)
        if self._alias is None:
            self._bail(TS107.code, sessions[0][0], "fed graphs are converted only in files that "
                       "`import tensorflow as <name>`")
        self._block_owners: Dict[int, Optional[cst.FunctionDef]] = {}
        blocks = [(call, *self._session_block(call, stack)) for call, stack in sessions]
        if len(sessions) > 1:
            blocks = self._fed_sessions_only(module, blocks)
        blocks = self._sessions_started_again(blocks)
        if len(blocks) > 1:
            # one graph and its session per function body (save() and reload(), each
            # after tf.reset_default_graph()): each body is converted on its own
            if len({id(b) for _, b, _ in blocks}) < len(blocks) or any(
                    self._block_owners.get(id(b)) is None for _, b, _ in blocks):
                self._bail(TS107.code, sessions[1][0], "more than one Session, not each in a "
                           "function of its own: the codemod converts the fed graph of one "
                           "session per function (or per module)")
        blocks = self._lifted(module, blocks)
        outside = [b for _, b, _ in blocks if b is not module]
        if outside and self._placeholders_outside(module, outside):
            why = f" ({self._not_lifted})" if self._not_lifted else ""
            self._bail(TS107.code, blocks[0][0], "the graph is built outside the block that "
                       "opens the Session (module level vs a function or the `__main__` "
                       f"guard){why}: not converted")
        self._kinds, self._elements = self.infer_kinds(module)
        self._module_node = module
        taken = all_names(module)
        converted = []
        self._wrapped: Set[int] = set()  # model functions wrapped in make_template
        for call, block, index in blocks:
            converted.append((block, self._analyse_block(module, block, index, taken)))
            self._wrapped |= {id(self._builders[t]) for t in self._templates}
        self._new_bodies = converted
        # the moving averages whose apply ops the step functions run (the session rule
        # leaves their calls alone)
        if self._ema_converted:
            self.shared.setdefault(MOVING_AVERAGES, set()).update(self._ema_converted)
        if self._slim_only_in_templates(module) and not spells(self.context, module, "batch_norm"):
            # (tf-slim 1.1.0's batch_norm fails on TF >= 2.16 in any mode: TS118 says how)
            # the contrib rule's TS118 (slim keeps graph mode) no longer applies
            self.shared.setdefault("resolved", set()).add(TS118.code)

    def _analyse_block(self, module: cst.Module, block: cst.CSTNode, index: int,
                       taken: Set[str]) -> List[cst.CSTNode]:
        """The new body of ``block``, whose statement ``index`` opens the session;
        ``taken``: the names in use (the step functions' names are added)."""
        self._block = block
        self._block_owner = self._block_owners.get(id(block))
        self._with_session = None
        self._gap_at = None
        body, index = self._with_session_opened(list(block.body), index)
        if self._with_session is None:
            body, index = self._opened_early(body, index)
        self._classify(body, index)
        self._graph_after(body, index)
        runs = self._runs(body, index, module)
        self._graph_functions(body, index)
        steps = self._steps(runs, body, index)
        self._check_free_uses(module, body, index, runs)
        new_body = self._without_session_params(self._rewrite(body, index, runs, steps, taken))
        taken.update(s.name for s in steps)
        self.shared.setdefault("step_functions", set()).update(s.name for s in steps)
        return new_body

    # ------------------------------------------------------------------
    # the session's runs and their fetches
    # ------------------------------------------------------------------
    # -- the session region -----------------------------------------------
    def _runs(self, body: List[cst.CSTNode], start: int, module: cst.Module) -> List[Run]:
        graph_names = self._names_of_graph() | set(self._placeholders) | self._schedules
        session = self._session_name(self._opening or body[start])
        self._helpers = self._session_helpers(module, body, session)
        receivers = {session, *self._again}  # (in a helper, its session parameter too)
        runs: List[Run] = []
        self._feed_dicts = self._named_feed_dicts(body[start:], graph_names)
        self._feeds_seen = dominating_bindings(body[start:], set(self._feed_dicts))
        self._key_lists = self._key_lists_of(body)

        def walk(n: cst.CSTNode) -> None:
            nonlocal receivers
            if isinstance(n, cst.FunctionDef):  # its runs may fetch its own locals
                saved = self._locals_here, receivers
                self._locals_here = local_bindings(n)
                if n.name.value in self._helpers:
                    receivers = receivers | {self._helpers[n.name.value][0]}
                try:
                    for child in children(n):
                        walk(child)
                finally:
                    self._locals_here, receivers = saved
                return
            if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute):
                recv, attr = n.func.value, n.func.attr.value
                if attr == "run" and self._ref(recv) is not None and self._ref(recv) in receivers:
                    if inline_update(n, self.tf_api_name) is not None:
                        # sess.run(tf.assign(v, x)), fed nothing: TF1 makes the op at that line
                        # and runs it there, as eager code does: the session rule's
                        return
                    run = self._run_of(n, n.args, ("fetches", "feed_dict", "options",
                                                   "run_metadata"), None)
                    if run is not None and (run.feeds or set(run.names) & graph_names):
                        runs.append(run)
                    elif run is not None and self.BASE is not None and self._variables_only(run):
                        # self.sess.run(self.W): the variable's value now (in a script,
                        # the session rule's)
                        self._value_runs[n] = _numpy_of(run.fetch)
                        self.record_change(n, "sess.run of variables: their NumPy values")
                    return
                if attr in ("eval", "run") and self._ref(recv) in graph_names:
                    run = self._run_of(n, n.args, ("feed_dict", "session"), recv)
                    if run is not None:
                        runs.append(run)
                    return
            for child in children(n):
                walk(child)

        # a function defined before the session opens that runs it, called only after
        # (MorvanZhou's ``compute_accuracy``): its runs are the session's
        self._early_functions = {
            i for i, stmt in enumerate(body[:start])
            if isinstance(stmt, cst.FunctionDef) and id(stmt) not in self._other_sessions
            and (self._collect_session_runs(stmt, session, self._ref) or stmt.name.value in self._helpers)
            and _called_only_from(stmt.name.value, body, start)}
        try:
            for i in sorted(self._early_functions):
                walk(body[i])
            for at, stmt in enumerate(body[start:], start):
                if id(stmt) not in self._other_sessions:
                    first = len(runs)
                    walk(stmt)
                    for run in runs[first:]:
                        run.at = at
        finally:
            release(walk)
        for i, stmt in enumerate(body[:start]):
            if id(stmt) in self._other_sessions or i in self._early_functions:
                continue
            for run in self._collect_session_runs(stmt, session, self._ref):
                self._bail(TS107.code, run, "sess.run before the session is opened (in a function "
                           "called before it is, or not a function) is not converted")
        self._check_helpers_converted(body, {id(r.call) for r in runs} | set(map(id, self._value_runs)))
        return runs

    def _variables_only(self, run: Run) -> bool:
        """``run`` fetches variables, by name or in a list, and feeds nothing."""
        fetch = run.fetch
        refs = [e.value for e in fetch.elements] if isinstance(fetch, (cst.List, cst.Tuple)) \
            else [fetch]
        return not run.feeds and bool(refs) and all(
            self._ref(r) is not None and self._ref(r) in self._variables for r in refs)

    @staticmethod
    def _collect_session_runs(stmt: cst.CSTNode, session: Optional[str], ref) -> List[cst.Call]:
        found: List[cst.Call] = []

        class _V(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                f = call.func
                if isinstance(f, cst.Attribute) and f.attr.value == "run" \
                        and ref(f.value) is not None and ref(f.value) == session:
                    found.append(call)

        if session:
            visit(stmt, _V())
        return found

    def _session_name(self, stmt: cst.CSTNode) -> Optional[str]:
        if isinstance(stmt, cst.With):
            item = stmt.items[0]
            if item.asname is not None and isinstance(item.asname.name, cst.Name):
                return item.asname.name.value
            return None
        value, target = self._assignment(stmt)
        return target

    def _run_of(self, call: cst.Call, args: Sequence[cst.Arg], params: Tuple[str, ...],
                receiver: Optional[cst.BaseExpression]) -> Optional[Run]:
        fetch: Optional[cst.BaseExpression] = receiver
        feed: Optional[cst.BaseExpression] = None
        for k, arg in enumerate(args):
            key = arg.keyword.value if arg.keyword is not None else (
                params[k] if k < len(params) and not arg.star else None)
            if key == "fetches":
                fetch = arg.value
            elif key == "feed_dict":
                feed = arg.value
            elif key == "session":
                continue
            else:
                self._bail(TS107.code, call, f"`{code_of(call.func)}(...)` with "
                           f"`{code_of(arg)}` is not converted")
        if fetch is None:
            self._bail(TS107.code, call, "sess.run without fetches")
        if feed is None and receiver is None and self._of_values_only(fetch):
            return None  # sess.run(tf.argmax(a, 1)) of NumPy values: the session rule's
        if receiver is None and self._eager_values(fetch, feed):
            # sess.run(accuracy, feed_dict={x: a}) of a tensor the function computed from
            # values: TF1 ran it whatever was fed; eager code has its value already
            numpy = [cst.Call(cst.Attribute(v, cst.Name("numpy"))) for v in fetched(fetch)]
            self._value_runs[call] = numpy[0] if not isinstance(fetch, (cst.List, cst.Tuple)) \
                else fetch.with_changes(elements=[e.with_changes(value=n) for e, n in
                                                  zip(fetch.elements, numpy)])
            self.record_change(call, f"`sess.run({code_of(fetch)}, ...)` of a value computed "
                               "eagerly: its NumPy value (feeds, if any, compute nothing it reads)")
            return None
        local = next((ref for _, ref in loaded_refs(
            fetch, self.BASE) if ref in self._locals_here), None)
        if local is not None:  # (a local may shadow a graph value: it is the local)
            self._bail(TS107.code, call, f"sess.run of `{local}`, a value of the function "
                       "the run is in, not computed from values alone (or fed by calls): "
                       "not converted")
        names = self._fetch_names(fetch, call)
        if names is None:
            return None
        feeds: List[Tuple[str, cst.BaseExpression]] = []
        if isinstance(feed, cst.Name) and feed.value in self._feed_dicts:
            # feed = {x: a, y: b} ... sess.run(f, feed_dict=feed) -> run_f(**feed)
            return self._named_feed_run(call, fetch, names, feed.value, [])
        base = None  # {**feed, v: p}: a named feed dict and more feeds
        if isinstance(feed, cst.Dict) and feed.elements \
                and isinstance(feed.elements[0], cst.StarredDictElement) \
                and isinstance(feed.elements[0].value, cst.Name) \
                and feed.elements[0].value.value in self._feed_dicts:
            base = feed.elements[0].value.value
            feed = feed.with_changes(elements=feed.elements[1:])
        keys = self._zipped_keys(feed)
        if keys is not None:  # dict(zip(KEYS, VALUES)) -> run_f(*VALUES)
            return Run(call, fetch, [(k, None) for k in keys], names,
                       positional=feed.args[0].value.args[1].value)
        if feed is not None:
            if not isinstance(feed, cst.Dict):
                self._bail(TS107.code, feed, f"feed_dict `{code_of(feed)}` is not a dict literal "
                           "(write the feeds at the call)")
            for el in feed.elements:
                if isinstance(el, cst.DictElement) and self._ref(el.key) is not None \
                        and self._ref(el.key) not in self._placeholders:
                    self._fed_value(self._ref(el.key), el.key)  # a graph value fed (or TS107)
                elif not isinstance(el, cst.DictElement) or self._ref(el.key) is None:
                    key = code_of(el.key) if isinstance(el, cst.DictElement) else "**"
                    self._bail(TS107.code, el, f"feeding `{key}`, which is not a placeholder of "
                               "this graph, is not converted")
                feeds.append((self._ref(el.key), el.value))
        if base is not None:
            return self._named_feed_run(call, fetch, names, base, feeds)
        return Run(call, fetch, feeds, names)

    def _named_feed_run(self, call: cst.Call, fetch: cst.BaseExpression, names: List[str],
                        base: str, extra: List[Tuple[str, cst.BaseExpression]]) -> Run:
        """A run fed by the named feed dict ``base`` (``**base``) and the feeds ``extra``
        beside it: the keys every binding of ``base`` holds are fed, the others optional."""
        seen = self._feeds_seen.get((id(call), base))
        bindings = [seen] if seen is not None else self._feed_dicts[base]
        every = [k for d in bindings for k in _dict_keys(d)]
        for name, value in extra:
            if name in every:  # run_f(**feed, x=...) would pass x twice
                self._bail(TS107.code, value, f"`{name}` is fed again beside `**{base}`, "
                           "which may feed it: not converted")
        for d in bindings:
            for el in d.elements:
                if self._ref(el.key) not in self._placeholders:
                    self._fed_value(self._ref(el.key), el.key)  # a graph value fed (or TS107)
        common = set.intersection(*(set(_dict_keys(d)) for d in bindings))
        run = Run(call, fetch, [(k, None) for k in dict.fromkeys(every) if k in common] + extra,
                  names, feed_name=base, extra=extra)
        run.optional = [k for k in dict.fromkeys(every) if k not in common]
        return run

    def _zipped_keys(self, feed: Optional[cst.BaseExpression]) -> Optional[List[str]]:
        """``dict(zip(KEYS, VALUES))``: the placeholders KEYS lists (a list or tuple
        literal, or a name bound once to one and read only there), in order."""
        if not (isinstance(feed, cst.Call) and m.matches(feed, DICT_OF_ZIP)):
            return None
        keys = feed.args[0].value.args[0].value
        if isinstance(keys, cst.Name) and keys.value in self._key_lists:
            keys = self._key_lists[keys.value].value
        refs = [self._ref(el.value) if isinstance(el, cst.Element) else None
                for el in getattr(keys, "elements", ())]
        if not isinstance(keys, (cst.List, cst.Tuple)) or not refs or any(
                r is None or r not in self._placeholders for r in refs) or len(set(refs)) < len(refs):
            self._bail(TS107.code, feed, f"feed_dict `{code_of(feed)}`: `{code_of(keys)}` is not "
                       "a list of this graph's placeholders written out (or a name bound once to "
                       "one): not converted")
        return refs

    def _key_lists_of(self, stmts: Sequence[cst.CSTNode]) -> Dict[str, cst.Assign]:
        """Names bound once to a list of placeholders and read only as the keys of
        ``dict(zip(name, values))`` feeds: the binding goes with the feeds."""
        bound: Dict[str, List[cst.Assign]] = {}
        keyed: Dict[str, int] = {}
        spelled: Dict[str, int] = {}  # every Name node, in methods too: the binding and reads
        for stmt in stmts:
            for node in nodes(stmt):
                if isinstance(node, cst.Name):
                    spelled[node.value] = spelled.get(node.value, 0) + 1
                elif isinstance(node, cst.Assign):
                    for t in node.targets:
                        for name in nodes(t.target):
                            if isinstance(name, cst.Name):
                                bound.setdefault(name.value, []).append(node)
                elif isinstance(node, cst.Call) and m.matches(node, DICT_OF_ZIP):
                    keys = node.args[0].value.args[0].value
                    if isinstance(keys, cst.Name):
                        keyed[keys.value] = keyed.get(keys.value, 0) + 1
        return {name: assigns[0] for name, assigns in bound.items()
                if name in keyed and len(assigns) == 1 and len(assigns[0].targets) == 1
                and isinstance(assigns[0].targets[0].target, cst.Name)
                and isinstance(assigns[0].value, (cst.List, cst.Tuple))
                and spelled[name] == keyed[name] + 1}

    def _named_feed_dicts(self, stmts: Sequence[cst.CSTNode],
                          graph_names: Set[str]) -> Dict[str, List[cst.Dict]]:
        """Names bound only to dict literals keyed by placeholders and used only
        as ``feed_dict=name``: they become keyword dicts, ``run_f(**name)``.
        ``graph_names``: the graph's values, whose ``.run(feed)`` (an op's, as
        ``step.run(feed, session=sess)``) takes the feeds first, where
        ``sess.run(fetches, feed)`` takes them second."""
        bindings: Dict[str, List[cst.Dict]] = {}
        other: Set[str] = set()
        uses: Dict[str, int] = {}
        placeholders = set(self._placeholders)
        feedable = placeholders | graph_names
        ref = self._ref

        class _V(cst.CSTVisitor):
            def visit_Assign(self, node: cst.Assign) -> None:
                for t in node.targets:
                    if isinstance(t.target, cst.Name):
                        value = node.value
                        # (keyed by placeholders, and graph values fed in place of their
                        # computation: an RNN's state, feeds_fed_values.py)
                        if isinstance(value, cst.Dict) and value.elements and all(
                                isinstance(e, cst.DictElement)
                                and ref(e.key) in feedable
                                for e in value.elements) and any(
                                ref(e.key) in placeholders for e in value.elements) \
                                and len(node.targets) == 1:
                            bindings.setdefault(t.target.value, []).append(value)
                        else:
                            other.add(t.target.value)

            def visit_Arg(self, node: cst.Arg) -> None:
                if node.keyword is not None and node.keyword.value == "feed_dict" \
                        and isinstance(node.value, cst.Name):
                    uses[node.value.value] = uses.get(node.value.value, 0) + 1

            def visit_Call(self, node: cst.Call) -> None:
                # the feeds passed by position: sess.run(fetches, feed), t.eval(feed);
                # and a feed dict that starts with one: {**feed, v: p}
                if not isinstance(node.func, cst.Attribute):
                    return
                at = {"run": 1, "eval": 0}.get(node.func.attr.value)
                if at is None:
                    return
                if ref(node.func.value) in graph_names:
                    at = 0  # op.run(feed, session=sess)
                value = next((a.value for a in node.args
                              if a.keyword is not None and a.keyword.value == "feed_dict"), None)
                if value is None and len(node.args) > at and node.args[at].keyword is None \
                        and not node.args[at].star:
                    value = node.args[at].value
                    if isinstance(value, cst.Name):
                        uses[value.value] = uses.get(value.value, 0) + 1
                if isinstance(value, cst.Dict) and value.elements \
                        and isinstance(value.elements[0], cst.StarredDictElement) \
                        and isinstance(value.elements[0].value, cst.Name):
                    name = value.elements[0].value.value
                    uses[name] = uses.get(name, 0) + 1

        for stmt in stmts:
            visit(stmt, _V())
        ref = None  # noqa: F841  # the class (a cycle) holds it: not the rule and its tree
        loads: Dict[str, int] = {}
        for stmt in stmts:
            # (a method's or function's own names too: `feed = {...}` in `learn`)
            for n in loaded_names(stmt.body if isinstance(stmt, cst.FunctionDef) else stmt):
                loads[n.value] = loads.get(n.value, 0) + 1
        return {name: dicts for name, dicts in bindings.items()
                if name not in other and loads.get(name, 0) == uses.get(name, 0)}


class _NewBodies(cst.CSTTransformer):
    """Each block converted (the bodies of functions) replaced by its new body, in one
    pass (a replacement rebuilds the nodes around it: the others are found by identity
    before it)."""

    def __init__(self, bodies: Dict[int, List[cst.CSTNode]]) -> None:
        super().__init__()
        self._bodies = bodies

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock,
                            updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        body = self._bodies.get(id(original_node))
        return updated_node if body is None else updated_node.with_changes(body=body)


def _numpy_of(fetch: cst.BaseExpression) -> cst.BaseExpression:
    """``w`` -> ``w.numpy()``; ``[w, b]`` -> ``[w.numpy(), b.numpy()]``."""
    if isinstance(fetch, (cst.List, cst.Tuple)):
        return fetch.with_changes(elements=[e.with_changes(value=_numpy_of(e.value))
                                            for e in fetch.elements])
    return cst.Call(cst.Attribute(fetch, cst.Name("numpy")))


def _dict_keys(d: cst.Dict) -> List[str]:
    return [code_of(el.key) for el in d.elements]
