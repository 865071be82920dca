"""The session rule's reading of an initializer run again: the variables put back.

Tutorials train twice from scratch on one graph, each time in a new session::

    with tf.Session() as session:
        session.run(init)
        ...
    with tf.Session() as session:
        session.run(init)          # every variable back to its initial value
        for i in range(1000):
            session.run(train, feed_dict={x: coefficients})

Eager variables get their value once, where they are made; so the second run of the
initializer becomes ``w.assign(<its initial value>)`` for each variable, in creation
order. Only when that gives TF1's values: every variable of the file a
``tf.Variable(value)`` bound to a name, its value computed again to the same numbers
(no random op, no other variable, names bound once), and no optimizer slots, moving
averages or layers whose variables TF1's initializer would start again too.
"""

from __future__ import annotations

import builtins
from typing import FrozenSet, List, Optional, Set, Tuple, Union

import libcst as cst

from tapeshift.migrate.engine.toolkit.builders import code_of

from tapeshift.migrate.engine.toolkit.walk import nodes

#: variable makers (the session rule's VARIABLE_MAKERS, and tf.Variable's TF2 names)
_MAKERS = frozenset({"Variable", "get_variable", "VariableV1", "compat.v1.Variable"})
#: modules whose calls make no TensorFlow variables (TensorFlow's own are read by name)
_KNOWN_MODULES = frozenset({"tensorflow", "numpy", "math", "random", "matplotlib", "time",
                            "os", "sys"})
#: calls that give the same value again (the initial value is computed twice)
_SAME_AGAIN = frozenset({"float", "int", "list", "tuple", "range", "len", "abs", "round"})
_NUMPY_SAME_AGAIN = frozenset({"array", "asarray", "zeros", "ones", "full", "eye", "identity",
                               "arange", "linspace", "zeros_like", "ones_like", "full_like",
                               "float32", "float64", "int32", "int64", "reshape", "sqrt"})
#: the one optimizer whose update keeps no state of its own
_STATELESS_OPTIMIZERS = frozenset({"train.GradientDescentOptimizer",
                                   "compat.v1.train.GradientDescentOptimizer"})


class VariableResets:
    """Part of :class:`tapeshift.migrate.rules.session.SessionToEager`: the statements
    that put the variables back to their initial values (state on the rule)."""

    def _variable_resets(self, module: cst.Module, random_ops: FrozenSet[str]
                         ) -> Union[str, List[Tuple[str, cst.BaseExpression]]]:
        """Each variable of ``module`` and the expression of its initial value, in
        creation order; or why the variables cannot be put back so (``random_ops``:
        the TF names of random ops)."""
        made = {id(n) for n in nodes(module) if isinstance(n, cst.Call)
                and self.tf_api_name(n.func) in _MAKERS}
        found: List[Tuple[str, cst.BaseExpression]] = []
        for stmt in _module_statements(module.body):
            value, target = _assignment(stmt)
            if isinstance(value, cst.Call) and id(value) in made and target is not None:
                init = next((a.value for k, a in enumerate(value.args)
                             if (a.keyword is None and k == 0) or (
                                 a.keyword is not None and a.keyword.value == "initial_value")), None)
                if init is None or self.tf_api_name(value.func) not in ("Variable", "compat.v1.Variable"):
                    break
                found.append((target, init))
        if not found or len(found) != len(made):
            return "a variable other than `name = tf.Variable(value)` at module level"
        unknown = self._unknown_call(module, {name for name, _ in found})
        if unknown is not None:
            return f"`{code_of(unknown.func)}(...)` may make variables the codemod does not see"
        names = {name for name, _ in found}
        bound = _bindings(module)
        for name, init in found:
            for n in nodes(init):
                api = self.tf_api_name(n.func) if isinstance(n, cst.Call) else None
                if api is not None and (api in random_ops or api.startswith("random")):
                    return f"the initial value of `{name}` is random: TF1 draws it again"
                if isinstance(n, cst.Call) and api is None and not _same_again(n):
                    # (TF1 kept what Python computed, once, as a constant: `np.random.rand(3)`
                    # computed again would draw other numbers)
                    return (f"the initial value of `{name}` calls `{code_of(n.func)}`, which may "
                            "give other values when called again")
                if isinstance(n, cst.Name) and (n.value in names or bound.get(n.value, 0) > 1):
                    return f"the initial value of `{name}` reads `{n.value}`, which may have changed"
        for n in nodes(module):
            api = self.tf_api_name(n.func) if isinstance(n, cst.Call) else None
            if api is not None and api.endswith("Optimizer") and api not in _STATELESS_OPTIMIZERS:
                return f"tf.{api} keeps slots, which TF1's initializer starts again too"
            if api is not None and (api.startswith(("layers.", "keras.")) or "global_step" in api
                                    or "ExponentialMovingAverage" in api):
                return f"tf.{api} makes variables, which TF1's initializer starts again too"
            if isinstance(n, cst.Name) and n.value == "tf_keras":
                return "the layers' variables, which TF1's initializer starts again too"
        return found


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
        calls = [n for n in nodes(module) if isinstance(n, cst.Call)]
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
        return next((c for c in calls if _root(c) not in known), None)


def _same_again(call: cst.Call) -> bool:
    """A call that gives the same value again: a NumPy array maker (``np.array``,
    ``np.zeros``, ...) or a builtin conversion, of arguments checked on their own."""
    func = code_of(call.func)
    return func in _SAME_AGAIN or func.split(".")[-1] in _NUMPY_SAME_AGAIN and "random" not in func


def _root(call: cst.Call) -> Optional[str]:
    """The name a call's function is reached from: ``np`` for ``np.random.rand(...)``,
    ``w`` for ``w.numpy()``, ``tf`` for ``tf.zeros(...).numpy()``."""
    node: cst.CSTNode = call.func
    while isinstance(node, (cst.Attribute, cst.Subscript, cst.Call)):
        node = node.func if isinstance(node, cst.Call) else node.value
    return node.value if isinstance(node, cst.Name) else None


def reset_lines(resets: List[Tuple[str, cst.BaseExpression]],
                leading: List[cst.EmptyLine]) -> List[cst.SimpleStatementLine]:
    """``name.assign(value)`` for each variable, the first with ``leading`` lines and
    a comment saying why."""
    lines = [cst.SimpleStatementLine([cst.Expr(cst.Call(
        cst.Attribute(cst.Name(name), cst.Name("assign")), [cst.Arg(init)]))]) for name, init in resets]
    note = cst.EmptyLine(comment=cst.Comment("# a new Session: TF1's initializer started the "
                                             "variables again"))
    lines[0] = lines[0].with_changes(leading_lines=[*leading, note])
    return lines


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


def _bindings(module: cst.Module) -> dict:
    """How many places bind each name (assignments, augmented ones, loops, ``as``)."""
    count: dict = {}
    for n in nodes(module):
        target = n.target if isinstance(n, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For,
                                            cst.CompFor)) else n.name if isinstance(n, cst.AsName) else None
        for name in nodes(target) if target is not None else ():
            if isinstance(name, cst.Name):
                count[name.value] = count.get(name.value, 0) + 1
    return count
