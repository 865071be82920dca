"""``tf.Session`` and ``sess.run`` -> eager values.

``with tf.Session() as sess:`` is dissolved into its body; ``sess = tf.Session()``,
``tf.InteractiveSession()``, ``sess.close()``, running the initializer and
``tf.global_variables_initializer()`` / ``tf.initialize_all_variables()``
disappear; ``sess.run(fetch)`` becomes the value with the structure of the
fetches kept and NumPy values where the old code got NumPy values
(``t.numpy()``; ``[a.numpy(), b.numpy()]``; ``{"k": t.numpy()}``;
``tf.nest.map_structure(lambda t: t.numpy(), fetch)`` otherwise).

This is right only when every ``sess.run`` reads values that cannot have
changed since the tensors were built (docs/tf1-vs-tf2.md, section 1). So a file with
placeholders or ``feed_dict`` (TS107), an op that changes state when run
(TS108), a session the codemod cannot see whole (TS106), seeded random ops
(TS113) or a gradient override (TS112) is reported and left as it was.

The codes are documented in session_codes.py, which the rule's ``CODES`` registers.
The rewrite is session_rewrite.py (the ``SessionRewriting`` mixin), from the plan
``visit_Module`` and the ``_plan_*`` methods here make.
"""

from __future__ import annotations

from collections import Counter
from typing import Dict, List, Optional, Set

import libcst as cst

from tapeshift.migrate.engine.registry import register_rule
from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.dataflow import loop_body_ids
from tapeshift.migrate.engine.toolkit.kinds import KindMixin
from tapeshift.migrate.engine.toolkit.removal import CarriesLeadingLines
from tapeshift.migrate.engine.toolkit.tf_names import tf_module_alias
from tapeshift.migrate.engine.tf1_api import GRAPH_HOUSEKEEPING, INITIALIZERS, PLACEHOLDERS, SEEDING, SESSIONS
from tapeshift.migrate.engine.toolkit.walk import children, instance_test, nodes, nodes_of, release, untouched
from tapeshift.migrate.engine.toolkit.walk import walk as in_order
# the codes, documented in session_codes.py (the feeds rules report them too) and imported
# from here by those rules, as before
from tapeshift.migrate.rules.session_codes import TS106, TS107, TS108, TS112, TS113, TS115, TS116
from tapeshift.migrate.rules.session_resets import VariableResets
from tapeshift.migrate.rules.session_rewrite import (  # noqa: F401 - also imported from here
    NO_VALUE, SessionRewriting)


SEEDED_MESSAGE = ("seeded random ops: TF2 draws other numbers from the same seed than the TF1 "
                  "graph did (compare the two runs with `tapeshift verify --align-random`)")

#: TF functions whose result changes state (or prints) each time it runs.
STATEFUL = frozenset({
    "assign", "assign_add", "assign_sub", "scatter_update", "scatter_add", "scatter_sub",
    "scatter_nd_update", "scatter_nd_add", "count_up_to", "Print", "print", "py_func",
    "py_function", "numpy_function", "control_dependencies",
})
#: Methods that run an update step when a graph is run.
STATEFUL_METHODS = frozenset({
    "minimize", "apply_gradients", "compute_gradients", "assign", "assign_add",
    "assign_sub", "scatter_update", "load", "fit", "fit_generator", "train_on_batch",
    "get_next", "make_one_shot_iterator", "make_initializable_iterator",
})

#: absl's ``app.run(main)``: runs the program's main, not a graph
ABSL_RUN = frozenset({"app.run", "compat.v1.app.run"})

#: TF1's variable updates that an eager variable has as methods of the same name
#: (``tf.assign(v, x)`` -> ``v.assign(x)``)
VARIABLE_UPDATES = ("assign", "assign_add", "assign_sub")


def inline_update(run: cst.Call, api_name) -> Optional[cst.Call]:
    """The update ``run`` makes and runs at its line: its one argument, given by
    position, ``tf.assign(v, x)`` or ``v.assign(x)`` (``assign_add``, ``assign_sub``);
    None for any other run. (The session rule converts it when ``v`` is a variable
    the file makes; the feeds rule leaves such runs to it.)"""
    if len(run.args) != 1 or run.args[0].keyword is not None \
            or not isinstance(run.args[0].value, cst.Call):
        return None
    call = run.args[0].value
    api = api_name(call.func)
    if api in VARIABLE_UPDATES or api is None and isinstance(call.func, cst.Attribute) \
            and call.func.attr.value in VARIABLE_UPDATES:
        return call
    return None


#: the shared fact: names of the moving averages whose ``apply`` ops the feeds rule
#: runs in its step functions
MOVING_AVERAGES = "moving_averages"


def moving_average_applies(module: cst.Module, api_name) -> List[cst.Call]:
    """``ema.apply(var_list)`` calls of ``ema = tf.train.ExponentialMovingAverage(...)``:
    the update op of the averages, which runs when a sess.run fetches it (the feeds
    rule converts it; the first eager call makes the averages)."""
    emas = {t.target.value for n in nodes_of(module, cst.Assign)
            if isinstance(n.value, cst.Call)
            and api_name(n.value.func) == "train.ExponentialMovingAverage"
            for t in n.targets if isinstance(t.target, cst.Name)}
    if not emas:
        return []
    return [n for n in nodes_of(module, cst.Call)
            if isinstance(n.func, cst.Attribute) and n.func.attr.value == "apply"
            and isinstance(n.func.value, cst.Name) and n.func.value.value in emas]


RANDOM = frozenset({
    "random_normal", "random_uniform", "truncated_normal", "random_shuffle", "random_crop",
    "multinomial", "random_gamma", "random_poisson", "random.normal", "random.uniform",
    "random.truncated_normal", "random.shuffle", "random.categorical", "random.gamma",
    "random.poisson", "nn.dropout", "layers.dropout",
})
OVERRIDES = frozenset({"RegisterGradient"})
VARIABLE_MAKERS = frozenset({"Variable", "get_variable", "VariableV1"})

# per-node tests of the analysis walk (memoized isinstance: node classes are ABCs)
_is_call, _is_name, _is_function = (instance_test(cst.Call), instance_test(cst.Name),
                                    instance_test(cst.FunctionDef))


@register_rule
class SessionToEager(SessionRewriting, VariableResets, CarriesLeadingLines, KindMixin, TapeshiftCodemod):
    DESCRIPTION = "Dissolve tf.Session blocks: sess.run(fetch) becomes the fetched value."
    RULE = "session"
    PHASE = "tape"
    ORDER = 10
    CODES = (TS106, TS107, TS108, TS112, TS113, TS115, TS116)
    HANDLES = SESSIONS | INITIALIZERS | PLACEHOLDERS | GRAPH_HOUSEKEEPING

    def __init__(self, context) -> None:
        super().__init__(context)
        self._flatten: Set[cst.With] = set()
        self._remove: Set[cst.SimpleStatementLine] = set()
        self._runs: Dict[cst.Call, cst.Call] = {}
        self._evals: Set[cst.Call] = set()
        #: sess.run(tf.assign(v, x)): an update made and run at that line (-> v.assign(x))
        self._inline_updates: Dict[cst.Call, str] = {}
        self._discarded: Set[cst.Call] = set()  # sess.run(...) statements whose value goes
        self._alias = "tf"
        self._active = False
        self._sessions: Set[str] = set()
        #: sess.run(init) run again -> the variables and their initial values
        self._resets: Dict[cst.Call, list] = {}

    # ------------------------------------------------------------------
    def visit_Module(self, node: cst.Module) -> bool:
        self._alias = tf_module_alias(node) or "tf"
        self._module = node
        self._module_kinds: Optional[dict] = None  # (on demand: the ``_kinds`` property)
        self._variables_made: Optional[Set[str]] = None
        self._looped: Optional[Set[int]] = None  # ids of the nodes inside loops (on demand)
        self._initializer_runs = 0
        self._first_init: Optional[cst.Call] = None  # (its statement keeps the initial values)
        sessions: Set[str] = set()
        has_session = False
        runs: List[tuple] = []
        seeded = False
        seed_calls: List[cst.Call] = []
        randoms: List[cst.Call] = []
        uses: List[tuple] = []
        inits: Set[str] = set()
        evals: List[tuple] = []
        blocked = False

        steps = self.shared.get("step_functions", set())
        strategies = self._strategies(node)
        stateful: List[tuple] = []  # (node, message): they matter only if a graph is run
        # whitespace, operators, literals: no call, name or function under them
        bare = untouched(frozenset({cst.Call, cst.Name, cst.FunctionDef}))
        helper_uses: Dict[str, List[Optional[List[cst.CSTNode]]]] = {
            stmt.name.value: [] for stmt in node.body if _is_function(stmt)}

        def walk(n: cst.CSTNode, stack: List[cst.CSTNode]) -> None:
            nonlocal has_session, seeded, blocked
            if _is_function(n) and n.name.value in steps:
                # generated by the feeds rule: eager step code, run at each call
                return
            if _is_call(n):
                name = self.tf_api_name(n.func)
                if name in SESSIONS:
                    has_session = True
                    sess = self._session_binding(n, stack)
                    if sess is False:
                        blocked = True
                    elif sess:
                        sessions.add(sess)
                elif name in PLACEHOLDERS:
                    self.report(TS107.code, n, f"tf.{name}: a placeholder makes the graph a function "
                                "of fed values, and no Session in this file shows how it is fed")
                    blocked = True
                elif name in STATEFUL and not self._inline_update(n, name, stack, sessions):
                    stateful.append((n, f"tf.{name} changes state each time it runs; eager "
                                     "code would run it once"))
                elif name in RANDOM:
                    randoms.append((n, stack[:]))
                elif name in SEEDING:
                    seeded = True
                    seed_calls.append(n)
                elif name in OVERRIDES:
                    self.report(TS112.code, n, "tf.RegisterGradient overrides are ignored in eager mode")
                    blocked = True
                elif name in ("get_default_session", "Graph", "get_default_graph",
                              "keras.backend.get_session", "keras.backend.set_session"):
                    self.report(TS106.code, n, f"tf.{name}: the codemod cannot follow graphs and "
                                "sessions reached this way")
                    blocked = True
                elif name in GRAPH_HOUSEKEEPING:
                    if isinstance(stack[-1], cst.Expr):
                        self._remove.add(stack[-2])
                        self.record_change(stack[-2], f"tf.{name}() removed")
                elif name in INITIALIZERS:
                    parent = stack[-1]
                    if isinstance(parent, cst.Assign) and len(parent.targets) == 1 \
                            and isinstance(parent.targets[0].target, cst.Name):
                        inits.add(parent.targets[0].target.value)
                        self._remove.add(stack[-2])
                    elif isinstance(parent, cst.Expr):
                        self._remove.add(stack[-2])
                    elif (isinstance(parent, cst.Attribute) and parent.attr.value == "run"
                          and len(stack) > 3 and isinstance(stack[-2], cst.Call)
                          and isinstance(stack[-3], cst.Expr)):
                        self._remove.add(stack[-4])  # tf.global_variables_initializer().run()
                if isinstance(n.func, cst.Attribute) and name not in STATEFUL:
                    attr = n.func.attr.value
                    if attr == "gradient_override_map":
                        self.report(TS112.code, n, "gradient_override_map is silently ignored in "
                                    "eager mode (docs/tf1-vs-tf2.md, section 8)")
                        blocked = True
                    elif attr in STATEFUL_METHODS and not self._inline_update(
                            n, attr, stack, sessions):
                        stateful.append((n, f"`.{attr}(...)` builds an update op; eager code "
                                         "would apply it once, when the line runs, not at each "
                                         "sess.run"))
                    elif attr in ("eval", "run") and name not in ABSL_RUN \
                            and not self._is_strategy(n.func.value, strategies):
                        evals.append((n, stack[:]))
                for arg in n.args:
                    if arg.keyword is not None and arg.keyword.value == "seed":
                        seeded = True
            elif _is_name(n) and stack:
                if n.value in helper_uses and not (_is_function(stack[-1])
                                                   and stack[-1].name is n):
                    # a call of a module function, or another read of its name
                    called = _is_call(stack[-1]) and stack[-1].func is n
                    helper_uses[n.value].append(stack[:-1] if called else None)
                uses.append((n, stack[-1], stack[-2] if len(stack) > 1 else None,
                             stack[-3] if len(stack) > 2 else None,
                             stack[-4] if len(stack) > 3 else None))
            stack.append(n)
            for child in children(n):
                if type(child) not in bare:
                    walk(child, stack)
            stack.pop()

        try:
            walk(node, [])
        finally:
            release(walk)
        # (the feeds rule runs the ones it converted in its step functions)
        converted = self.shared.get(MOVING_AVERAGES, set())
        # (a file that never spells the class makes none: no look at every node for one)
        applies = moving_average_applies(node, self.tf_api_name) \
            if self.spelled("ExponentialMovingAverage") else []
        stateful += [(call, "ExponentialMovingAverage.apply builds the averages' update op, "
                      "which TF1 runs at each sess.run that fetches it; eager code would run "
                      "it once, when the line runs") for call in applies
                     if call.func.value.value not in converted]
        # without a session nothing runs the graph again: a state change in
        # eager code happens where it is written (a TF2 training loop), except
        # where TF1 alone gives it meaning (a tensor loss for minimize)
        for call, message in stateful:
            attr = call.func.attr.value if isinstance(call.func, cst.Attribute) else ""
            if has_session or evals or attr in ("minimize", "compute_gradients") \
                    and not (call.args and isinstance(call.args[0].value, cst.Lambda)):
                self.report(TS108.code, call, message)
                blocked = True

        def in_init(stack: List[cst.CSTNode]) -> bool:
            # inside tf.Variable(...) / tf.get_variable(...), or the initializer= of a
            # variable maker (tf.scan's initializer= is a value of every run)
            return any(isinstance(a, cst.Call) and self.is_tf(a.func, *VARIABLE_MAKERS)
                       for a in stack) or any(
                isinstance(a, cst.Arg) and a.keyword is not None
                and a.keyword.value == "initializer" and k > 0
                and isinstance(stack[k - 1], cst.Call)
                and (self.tf_api_name(stack[k - 1].func) or "").endswith("variable")
                for k, a in enumerate(stack))

        # def xavier(shape): return tf.random_normal(shape, ...), read by nothing but
        # tf.Variable(xavier(...)): its draws are initial values too
        helpers = {name for name, sites in helper_uses.items()
                   if sites and all(stack is not None and in_init(stack) for stack in sites)}
        # initial = tf.random_normal(shape); return tf.Variable(initial): initial values too
        def is_maker(c: cst.Call) -> bool:
            return self.is_tf(c.func, *VARIABLE_MAKERS)

        initial = {i for fn in {id(a): a for _, stack in randoms for a in stack
                                if _is_function(a)}.values()
                   for i in _initial_value_assigns(fn, is_maker)}
        for call, stack in randoms:
            inner = next((a for a in reversed(stack) if _is_function(a)), None)
            if not in_init(stack) and not (inner is not None and inner.name.value in helpers) \
                    and not any(id(a) in initial for a in stack):
                if has_session or evals:  # else nothing runs it again: one draw in both
                    self.report(TS108.code, call, "a random op outside a variable initialiser "
                                "draws new values at every sess.run, but once in eager code")
                    blocked = True
            elif seeded:
                continue  # reported once, at the seed, below
            else:
                self.report(TS116.code, call, "random initial value: the legacy run and the "
                            "migrated run draw different numbers (unseeded in both)",
                            changes_numbers=True)
        if seeded and (seed_calls or randoms):
            # initialisers of layers, keras, get_variable ... are seeded by it too
            self.report(TS113.code, (seed_calls or [randoms[0][0]])[0], SEEDED_MESSAGE,
                        changes_numbers=True)

        # every use of a session name must be .run(...) / .close() / its binding
        for name, parent, grand, great, line in uses:
            if name.value in inits and not isinstance(parent, cst.AssignTarget):
                # the initializer's statement goes: every use of its name must go too
                if isinstance(parent, cst.Attribute) and parent.value is name \
                        and parent.attr.value == "run" and isinstance(grand, cst.Call) \
                        and not grand.args and isinstance(great, cst.Expr):
                    self._remove.add(line)
                    self.record_change(line, f"{name.value}.run() removed")
                    continue
                if isinstance(parent, cst.Arg) and isinstance(grand, cst.Call) \
                        and isinstance(grand.func, cst.Attribute) \
                        and grand.func.attr.value == "run" and isinstance(great, cst.Expr) \
                        and isinstance(grand.func.value, cst.Name) \
                        and grand.func.value.value in sessions:
                    continue
                self.report(TS115.code, name, f"the initializer `{name.value}` is used in a way "
                            "the codemod cannot remove")
                blocked = True
                continue
            if name.value not in sessions:
                continue
            if isinstance(parent, (cst.AssignTarget, cst.AsName)):
                continue
            if isinstance(parent, cst.Attribute) and parent.value is name \
                    and isinstance(grand, cst.Call) and grand.func is parent:
                attr = parent.attr.value
                if attr == "run":
                    runs.append((grand, great))
                    continue
                if attr == "close" and isinstance(great, cst.Expr):
                    continue
            self.report(TS106.code, name, f"the session `{name.value}` is used in a way the "
                        f"codemod cannot follow: {_session_use(name, parent, grand)}")
            blocked = True

        # (a variable nothing changes and whose initial value is not drawn is the same
        # after an initializer runs again; the feeds rule's step functions may train)
        self._resets_matter = bool(stateful or randoms or self._inline_updates or steps)
        self._sessions = sessions
        for call, great in runs:
            if not self._plan_run(call, great, inits):
                blocked = True
        for call, stack in evals:
            if not self._plan_eval(call, stack, has_session, sessions):
                blocked = True
        self._active = (has_session or bool(self._remove)) and not blocked
        if self._active:
            self.note_siblings(node)
        return self._active  # inactive, every leave method keeps its node: no need to visit

    @property
    def _kinds(self) -> dict:
        """What each name of the module holds (``infer_kinds``), inferred when first
        read: only a fetch or an ``x.eval()`` to plan needs it, and most files have none."""
        if self._module_kinds is None:
            self._module_kinds, _ = self.infer_kinds(self._module)
        return self._module_kinds

    def _strategies(self, module: cst.Module) -> Set[str]:
        """Names bound to a ``tf.distribute`` call (a strategy, a replica context): their
        ``.run(fn)`` is a distributed call of a function, not a graph run."""
        names: Set[str] = set()
        if not self.spelled("distribute"):
            return names  # no tf.distribute name in the file
        for n, _ in in_order(module):  # assignments in the order they are written
            if isinstance(n, cst.Assign) and len(n.targets) == 1 \
                    and isinstance(n.targets[0].target, cst.Name):
                if self._is_strategy(n.value, names):
                    names.add(n.targets[0].target.value)
                else:
                    names.discard(n.targets[0].target.value)
        return names

    def _is_strategy(self, expr: cst.BaseExpression, strategies: Set[str]) -> bool:
        if isinstance(expr, cst.Name):
            return expr.value in strategies
        if isinstance(expr, cst.Call):
            name = self.tf_api_name(expr.func)
            return name is not None and name.startswith("distribute.")
        return False

    def _session_binding(self, call: cst.Call, stack: List[cst.CSTNode]):
        """The name a Session is bound to; "" when unnamed; False (reported) when unsupported."""
        for arg in call.args:
            if arg.keyword is None or arg.keyword.value != "config":
                self.report(TS106.code, call, f"Session({code_of(arg)}): a session on another graph "
                            "or target cannot be replaced by eager values")
                return False
        parent = stack[-1]
        if isinstance(parent, cst.WithItem):
            with_node = stack[-2]
            if len(with_node.items) != 1:
                self.report(TS106.code, call, "a Session opened together with other context managers")
                return False
            self._flatten.add(with_node)
            self.record_change(with_node, "`with Session() as ...:` block dissolved into its body")
            if parent.asname is None:
                return ""
            if not isinstance(parent.asname.name, cst.Name):
                self.report(TS106.code, call, "a Session bound to something other than a name")
                return False
            return parent.asname.name.value
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1 \
                and isinstance(parent.targets[0].target, cst.Name) \
                and isinstance(stack[-2], cst.SimpleStatementLine) and len(stack[-2].body) == 1:
            self._remove.add(stack[-2])
            self.record_change(stack[-2], "Session construction removed")
            return parent.targets[0].target.value
        if isinstance(parent, cst.Expr) and isinstance(stack[-2], cst.SimpleStatementLine):
            self._remove.add(stack[-2])
            self.record_change(stack[-2], "Session construction removed")
            return ""
        self.report(TS106.code, call, "a Session used in an expression the codemod cannot follow")
        return False

    def _plan_run(self, call: cst.Call, parent: Optional[cst.CSTNode], inits: Set[str]) -> bool:
        fetch = None
        for i, arg in enumerate(call.args):
            key = arg.keyword.value if arg.keyword is not None else ("fetches" if i == 0 else "feed_dict")
            if key == "fetches":
                fetch = arg.value
            elif key == "feed_dict":
                self.report(TS107.code, call, "sess.run(..., feed_dict=...): fed values need the graph "
                            "as a function, which the feeds rule did not build here")
                return False
            else:
                self.report(TS106.code, call, f"sess.run(..., {key}=...) is not modelled by the codemod")
                return False
        if fetch is None:
            self.report(TS115.code, call, "sess.run without fetches")
            return False
        is_init = (isinstance(fetch, cst.Name) and fetch.value in inits) or (
            isinstance(fetch, cst.Call) and self.is_tf(fetch.func, *INITIALIZERS))
        if is_init:
            # running it again puts the variables back to their initial values (drawn
            # again, when random); eager variables get theirs once, where they are made
            self._initializer_runs += 1
            if self._resets_matter and self._in_loop(call):
                self.report(TS115.code, call, "the initializer runs in a loop, resetting the "
                            "variables at each pass: not converted")
                return False
            if self._initializer_runs == 1:
                self._first_init = call if isinstance(parent, cst.Expr) else None
            elif self._resets_matter:
                why = "its value is used" if not isinstance(parent, cst.Expr) else \
                    "the first run's value is used" if self._first_init is None else \
                    self._plan_resets(self._module, self._first_init, call, RANDOM)
                if why is not None:
                    self.report(TS115.code, call, "the initializer runs again, resetting the "
                                f"variables to their initial values ({why}): not converted")
                    return False
                self.record_change(call, "the initializer run again in a new Session -> each "
                                   "variable assigned the initial value its first run gave")
                return True
            if isinstance(parent, cst.Expr):
                return True  # the statement is removed by leave_SimpleStatementLine
            self.report(TS115.code, call, "the initializer's result is used")
            return False
        if self._convert(fetch, fetch) is None:
            return False
        self._runs[call] = call
        self.record_change(call, f"sess.run({code_of(fetch)}) -> value")
        return True

    def _in_loop(self, node: cst.CSTNode) -> bool:
        """``node`` sits in the body of a ``for`` or ``while`` loop of this module."""
        if self._looped is None:
            self._looped = loop_body_ids(self._module)
        return id(node) in self._looped

    def _inline_update(self, call: cst.Call, method: str, stack, sessions: Set[str]) -> bool:
        """``sess.run(tf.assign(v, x))`` (``assign_add``, ``assign_sub``, or the method):
        TF1 makes the op at that line and runs it there, each time the line runs, as
        eager ``v.assign(x)`` does (:func:`inline_update`). Only for a variable this file
        makes, by name, with the value as the only other argument."""
        run = stack[-2] if len(stack) > 1 else None
        if not (isinstance(run, cst.Call) and isinstance(run.func, cst.Attribute)
                and run.func.attr.value == "run" and isinstance(run.func.value, cst.Name)
                and run.func.value.value in sessions
                and inline_update(run, self.tf_api_name) is call):
            return False
        if isinstance(call.func, cst.Attribute) and self.tf_api_name(call.func) is None:
            ref, rest = call.func.value, list(call.args)
        else:
            ref, rest = (call.args[0].value if call.args else None), list(call.args[1:])
        if self._variables_made is None:  # names bound to tf.Variable(...) in this file
            self._variables_made = {
                t.target.value for n in nodes(self._module) if isinstance(n, cst.Assign)
                and isinstance(n.value, cst.Call) and self.is_tf(n.value.func, *VARIABLE_MAKERS)
                for t in n.targets if isinstance(t.target, cst.Name)}
        if not (isinstance(ref, cst.Name) and ref.value in self._variables_made) or len(rest) != 1 \
                or rest[0].keyword is not None and rest[0].keyword.value != "value" or rest[0].star:
            return False
        self._inline_updates[call] = method
        if len(stack) > 2 and isinstance(stack[-3], cst.Expr):
            self._discarded.add(run)
        self.record_change(call, f"`{code_of(call)}` in sess.run -> `{ref.value}.{method}(...)`, "
                           "run where the line runs, as TF1 ran it")
        return True

    def _plan_eval(self, call: cst.Call, stack, has_session: bool, sessions: Set[str]) -> bool:
        recv = call.func.value
        attr = call.func.attr.value
        if isinstance(recv, cst.Name) and recv.value in sessions:
            return True  # sess.run is handled by _plan_run
        kind = self.expr_kind(recv, self._kinds)
        if kind not in ("tensor", "variable"):
            return True  # not a TensorFlow object we know: leave it
        if attr == "run":
            self.report(TS108.code, call, f"`{code_of(call.func)}()` runs an op for its effect")
            return False
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "feed_dict" or (
                    arg.keyword is None and call.args.index(arg) == 0):
                self.report(TS107.code, call, f"`{code_of(call.func)}(feed_dict=...)` feeds values")
                return False
        if not has_session:
            self.report(TS106.code, call, f"`{code_of(call.func)}()` with no Session in this file")
            return False
        self._evals.add(call)
        self.record_change(call, f"{code_of(call.func)}() -> .numpy()")
        return True


def _session_use(name: cst.Name, parent: cst.CSTNode, grand: cst.CSTNode) -> str:
    """How a session's name is used, said for TS106: ``passed to `w.eval(...)` as
    `session=` ``, ``stored``, ``returned``, or the code that reads it."""
    if isinstance(parent, cst.Arg) and isinstance(grand, cst.Call):
        keyword = f" as `{parent.keyword.value}=`" if parent.keyword is not None else ""
        return f"passed to `{' '.join(code_of(grand.func).split())}(...)`{keyword}"
    if isinstance(parent, cst.Return):
        return "returned"
    if isinstance(parent, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
        return "stored under another name"
    if isinstance(parent, cst.Attribute):
        return f"`{code_of(parent)}`"
    return f"`{name.value}` read by `{' '.join(code_of(parent).split())[:60]}`"


def _initial_value_assigns(fn: cst.FunctionDef, is_maker) -> Set[int]:
    """``initial = tf.random_normal(shape)`` in ``fn``, its name bound once and read
    only in the arguments of a variable maker there (``tf.Variable(initial)``): those
    Assign nodes (their draws are initial values)."""
    assigns = [n for n in nodes(fn.body) if isinstance(n, cst.Assign) and len(n.targets) == 1
               and isinstance(n.targets[0].target, cst.Name)]
    in_makers = {id(name) for call in nodes_of(fn.body, cst.Call) if is_maker(call)
                 for arg in call.args for name in nodes(arg.value) if isinstance(name, cst.Name)}
    targets = {id(a.targets[0].target) for a in assigns}
    reads: Dict[str, List[cst.Name]] = {}  # a name -> its reads in fn
    for n in nodes_of(fn.body, cst.Name):
        if id(n) not in targets:
            reads.setdefault(n.value, []).append(n)
    bound = Counter(a.targets[0].target.value for a in assigns)
    return {id(a) for a in assigns if bound[a.targets[0].target.value] == 1
            and reads.get(a.targets[0].target.value)
            and all(id(n) in in_makers for n in reads[a.targets[0].target.value])}
