"""The session rule's reading of an initializer run again: the variables put back.

Tutorials train twice from scratch on one graph, each time in a new session::

    with tf.Session() as session:
        session.run(init)
        ...
    with tf.Session() as session:
        session.run(init)          # every variable back to its initial value
        for i in range(1000):
            session.run(train, feed_dict={x: coefficients})

Eager variables get their value once, where they are made. So the first run of the
initializer keeps the values it gives (``w_initial = w.numpy()``: what TF1's
initializer computed, Python's part of it, a NumPy array or ``np.random.rand(3)``,
kept as a constant at graph time) and each later run, the first statement of a new
session, becomes ``w.assign(w_initial)`` per variable. Only for the global
initializer; only when every variable of the file is a ``tf.Variable`` bound to a
name at module level before the first run, none drawn by a TF random op (TF1 draws it
again), and nothing else holds state TF1's initializer would start again too
(optimizer slots, layers, a global step, moving averages, variables an imported
function makes).
"""

from __future__ import annotations

import builtins
from typing import FrozenSet, List, Optional, Set, Union

import libcst as cst
import libcst.matchers as m

from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.kinds import VARIABLE_MAKERS
from tapeshift.migrate.engine.toolkit.tf_names import all_names, fresh_name
from tapeshift.migrate.engine.toolkit.walk import nodes
from tapeshift.migrate.engine.toolkit.walk import walk as in_order
from tapeshift.migrate.engine.tf1_api import SESSIONS

#: variable makers (``tf.compat.v1.Variable`` too: the model-code rule writes it)
_MAKERS = VARIABLE_MAKERS | {"compat.v1.Variable"}
#: the initializers of every (global) variable
_GLOBAL_INITIALIZERS = frozenset({"global_variables_initializer", "initialize_all_variables",
                                  "initializers.global_variables"})
#: modules whose calls make no TensorFlow variables (TensorFlow's own calls are read by
#: name): NumPy and Python's own (plotting and timing are common beside a training loop)
_KNOWN_MODULES = frozenset({"tensorflow", "numpy", "math", "random", "matplotlib", "time",
                            "os", "sys"})
#: the one optimizer whose update keeps no state of its own
_STATELESS_OPTIMIZERS = frozenset({"train.GradientDescentOptimizer",
                                   "compat.v1.train.GradientDescentOptimizer"})


class VariableResets:
    """Part of :class:`tapeshift.migrate.rules.session.SessionToEager`: the statements
    that keep the variables' initial values and put them back (state on the rule)."""

    def _plan_resets(self, module: cst.Module, first: cst.Call, again: cst.Call,
                     random_ops: FrozenSet[str]) -> Optional[str]:
        """Plan ``again``, a later run of the initializer, as the variables put back to
        what ``first``, its first run, gave them (``self._resets``: each run's call ->
        its new statements); or say why it cannot be (``random_ops``: TF names)."""
        why = self._why_not_reset(module, first, again, random_ops)
        if why is not None:
            return why
        if first not in self._resets:
            taken = all_names(module)
            kept = []
            for name in self._reset_variables:
                kept.append((name, fresh_name(f"{name}_initial", taken)))
                taken.add(kept[-1][1])
            self._kept = kept
            self._resets[first] = [_line(f"{k} = {v}.numpy()") for v, k in kept]
            self._resets[first][0] = self._resets[first][0].with_changes(leading_lines=[
                cst.EmptyLine(comment=cst.Comment(
                    "# the variables' initial values, which TF1's initializer gives them again"))])
        self._resets[again] = [_line(f"{v}.assign({k})") for v, k in self._kept]
        self._resets[again][0] = self._resets[again][0].with_changes(leading_lines=[
            cst.EmptyLine(comment=cst.Comment("# a new Session: TF1's initializer started the "
                                              "variables again"))])
        return None

    def _why_not_reset(self, module: cst.Module, first: cst.Call, again: cst.Call,
                       random_ops: FrozenSet[str]) -> Optional[str]:
        for run in (first, again):
            fetch = run.args[0].value if run.args else run.func.value
            if not self._global_initializer(module, fetch):
                return f"`{code_of(fetch)}` is not the initializer of every variable"
        if not _opens_session(module, again, self.tf_api_name):
            return "not at the start of a new Session"
        order = {id(n): k for k, (n, _) in enumerate(in_order(module))}  # (document order)
        made = [n for n in nodes(module) if isinstance(n, cst.Call) and self.tf_api_name(n.func) in _MAKERS]
        self._reset_variables: List[str] = []
        for stmt in _module_statements(module.body):
            value, target = _assignment(stmt)
            if isinstance(value, cst.Call) and any(value is c for c in made) and target is not None \
                    and self.tf_api_name(value.func) in ("Variable", "compat.v1.Variable") \
                    and order[id(value)] < order[id(first)]:
                self._reset_variables.append(target)
                for n in nodes(value):
                    api = self.tf_api_name(n.func) if isinstance(n, cst.Call) else None
                    if _draws(api, random_ops):
                        return f"the initial value of `{target}` is random: TF1 draws it again"
        if not made or len(self._reset_variables) != len(made):
            return "a variable other than `name = tf.Variable(value)` at module level, before " \
                "the first run of the initializer"
        unknown = self._unknown_call(module, set(self._reset_variables))
        if unknown is not None:
            return f"`{code_of(unknown.func)}(...)` may make variables the codemod does not see"
        for n in nodes(module):
            api = self.tf_api_name(n.func) if isinstance(n, cst.Call) else None
            if api is not None and api.endswith("Optimizer") and api not in _STATELESS_OPTIMIZERS:
                return f"tf.{api} keeps slots, which TF1's initializer starts again too"
            if api is not None and (api.startswith(("layers.", "keras.")) or "global_step" in api
                                    or "ExponentialMovingAverage" in api):
                return f"tf.{api} makes variables, which TF1's initializer starts again too"
            if _draws(api, random_ops):
                # (a seeded op draws the same numbers again in each new TF1 session, an
                # eager one goes on)
                return f"tf.{api}: a new TF1 session draws its numbers again from the start"
        return None

    def _global_initializer(self, module: cst.Module, fetch: cst.BaseExpression) -> bool:
        """``fetch`` is ``tf.global_variables_initializer()``, or a name bound only to one."""
        if isinstance(fetch, cst.Call):
            return self.tf_api_name(fetch.func) in _GLOBAL_INITIALIZERS
        values = [a.value for a in nodes(module) if isinstance(a, cst.Assign) and isinstance(fetch, cst.Name)
                  and any(m.matches(t.target, m.Name(fetch.value)) for t in a.targets)]
        return bool(values) and all(isinstance(v, cst.Call) and self.tf_api_name(v.func)
                                    in _GLOBAL_INITIALIZERS for v in values)

    def _unknown_call(self, module: cst.Module, variables: Set[str]) -> Optional[cst.Call]:
        """A call of something other than TensorFlow, the modules of ``_KNOWN_MODULES``,
        a builtin, a session, a step function, or a name bound only to what such calls
        give (``variables`` among them): it might make variables (a model built by an
        imported function) that TF1's initializer would start again too."""
        known = set(dir(builtins)) | set(self._sessions) | variables | set(
            self.shared.get("step_functions", set()))
        for n in nodes(module):
            if isinstance(n, (cst.Import, cst.ImportFrom)) and not isinstance(n.names, cst.ImportStar):
                top = code_of(n.module).split(".")[0] if isinstance(n, cst.ImportFrom) and n.module else None
                for alias in n.names:
                    if (top or code_of(alias.name).split(".")[0]) in _KNOWN_MODULES:
                        known.add(code_of(alias.asname.name if alias.asname else alias.name).split(".")[0])
        bindings = [(n.targets[0].target, n.value) for n in nodes(module)
                    if isinstance(n, cst.Assign) and len(n.targets) == 1] + [
            (item.asname.name, item.item) for n in nodes(module) if isinstance(n, cst.With)
            for item in n.items if item.asname is not None]
        changed = True
        while changed:  # (names bound to what known calls give: a tensor, an optimizer, a tape)
            changed = False
            for target, value in bindings:
                names = {t.value for t in nodes(target) if isinstance(t, cst.Name)} - known
                if names and all(_root(c) in known for c in nodes(value) if isinstance(c, cst.Call)):
                    known |= names
                    changed = True
        return next((c for c in nodes(module) if isinstance(c, cst.Call) and _root(c) not in known), None)


def _draws(api: Optional[str], random_ops: FrozenSet[str]) -> bool:
    """The TF call ``api`` (None: not TensorFlow's) draws random numbers."""
    return api is not None and (api in random_ops or api.startswith("random"))


def _opens_session(module: cst.Module, run: cst.Call, tf_api_name) -> bool:
    """``run`` is the first statement of a ``with tf.Session() as s:`` block, or the
    statement just after ``s = tf.Session()``."""
    for n in nodes(module):
        body = n.body if isinstance(n, (cst.Module, cst.IndentedBlock)) else None
        for k, stmt in enumerate(body or ()):
            if not _is_run_statement(stmt, run):
                continue
            if k == 0 and isinstance(n, cst.IndentedBlock):
                owner = next((w for w in nodes(module) if isinstance(w, cst.With) and w.body is n), None)
                return owner is not None and isinstance(owner.items[0].item, cst.Call) \
                    and tf_api_name(owner.items[0].item.func) in SESSIONS
            value, _ = _assignment(body[k - 1]) if k else (None, None)
            return isinstance(value, cst.Call) and tf_api_name(value.func) in SESSIONS
    return False


def _is_run_statement(stmt: cst.CSTNode, run: cst.Call) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 \
        and isinstance(stmt.body[0], cst.Expr) and stmt.body[0].value is run


def _module_statements(body) -> List[cst.CSTNode]:
    """The statements of the module, those of its ``with`` blocks included (a
    ``tf.name_scope``), in order."""
    out: List[cst.CSTNode] = []
    for stmt in body:
        if isinstance(stmt, cst.With) and isinstance(stmt.body, cst.IndentedBlock):
            out.extend(_module_statements(stmt.body.body))
        else:
            out.append(stmt)
    return out


def _assignment(stmt: cst.CSTNode):
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 \
            and isinstance(stmt.body[0], cst.Assign) and len(stmt.body[0].targets) == 1 \
            and isinstance(stmt.body[0].targets[0].target, cst.Name):
        return stmt.body[0].value, stmt.body[0].targets[0].target.value
    return None, None


def _root(call: cst.Call) -> Optional[str]:
    """The name a call's function is reached from: ``np`` for ``np.random.rand(...)``,
    ``w`` for ``w.numpy()``, ``tf`` for ``tf.zeros(...).numpy()``."""
    node: cst.CSTNode = call.func
    while isinstance(node, (cst.Attribute, cst.Subscript, cst.Call)):
        node = node.func if isinstance(node, cst.Call) else node.value
    return node.value if isinstance(node, cst.Name) else None


def _line(code: str) -> cst.SimpleStatementLine:
    return cst.parse_statement(code)  # type: ignore[return-value]


def reset_statements(resets, run: cst.Call, leading) -> Union[cst.FlattenSentinel, None]:
    """The statements planned for the initializer run ``run`` (``leading``: the lines
    before the statement it was), or None."""
    lines = resets.get(run)
    if lines is None:
        return None
    first = lines[0].with_changes(leading_lines=[*leading, *lines[0].leading_lines])
    return cst.FlattenSentinel([first, *lines[1:]])
