"""The feeds rule's reading of a session passed to a helper function.

Scripts hand their session to helpers that run part of the graph::

    def evaluate(session, data):
        return session.run(accuracy, {x: data})
    ...
    with tf.Session() as sess:
        ...
        print(evaluate(sess, test_x))

Eager code has no session to hand over: the helper's runs become calls of the step
functions like the session's own runs, the parameter goes from the helper and the
argument from each call (``evaluate(data)``, ``evaluate(test_x)``). Only for a
function of the block, called only with the session, that uses the parameter only
to run it; and only when every run of it becomes a step call.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst
import libcst.matchers as m

from tapeshift.migrate.engine.toolkit.walk import nodes
from tapeshift.migrate.rules.session import TS107


class PassedSessions:
    """Part of :class:`tapeshift.migrate.rules.feeds.FeedsToFunctions`: functions of the
    block the session is passed to (state on the rule)."""

    #: each helper's name -> (its session parameter, that parameter's position)
    _helpers: Dict[str, Tuple[str, int]] = {}

    def _session_helpers(self, module: cst.Module, body: List[cst.CSTNode],
                         session: Optional[str]) -> Dict[str, Tuple[str, int]]:
        """The functions of ``body`` taking ``session`` as a parameter that only runs it,
        called only with it: name -> (parameter, position)."""
        if self.BASE is not None or session is None:
            return {}
        defined: Dict[str, List[cst.FunctionDef]] = {}
        for n in nodes(module):
            if isinstance(n, cst.FunctionDef):
                defined.setdefault(n.name.value, []).append(n)
        found = {}
        for stmt in body:
            if not isinstance(stmt, cst.FunctionDef) or len(defined[stmt.name.value]) != 1:
                continue
            for at, param in enumerate(stmt.params.params):
                name = param.name.value
                if param.default is None and _only_runs(stmt.body, name) \
                        and _called_with(module, stmt.name.value, name, at, session):
                    found[stmt.name.value] = (name, at)
                    break
        return found

    def _check_helpers_converted(self, body: List[cst.CSTNode], converted: Set[int]) -> None:
        """Every run of a helper's session parameter became a step call (or a value's
        ``.numpy()``): with the parameter gone, one left would have no session."""
        for stmt in body:
            if not isinstance(stmt, cst.FunctionDef) or stmt.name.value not in self._helpers:
                continue
            param = self._helpers[stmt.name.value][0]
            for call in _runs_of(stmt.body, param):
                if id(call) not in converted:
                    self._bail(TS107.code, call, f"`{param}`, the session passed to "
                               f"`{stmt.name.value}`, runs what no step function computes: "
                               "not converted")

    def _without_session_params(self, body: List[cst.CSTNode]) -> List[cst.CSTNode]:
        """``body`` with each helper's session parameter gone, and the session
        argument from each call of it."""
        if not self._helpers:
            return body
        for name, (param, _) in self._helpers.items():
            self.record_change(next(s for s in body if isinstance(s, cst.FunctionDef)
                                    and s.name.value == name),
                               f"`{name}` no longer takes the session `{param}`: its runs "
                               "call the step functions")
        dropper = _DropSession(self._helpers)
        return [stmt.visit(dropper) for stmt in body]


def _runs_of(body: cst.CSTNode, name: str) -> List[cst.Call]:
    return [n for n in nodes(body) if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
            and isinstance(n.func.value, cst.Name) and n.func.value.value == name
            and n.func.attr.value == "run"]


def _only_runs(body: cst.CSTNode, name: str) -> bool:
    """``name`` is read in ``body`` only as ``name.run(...)``, and bound nowhere."""
    receivers = {id(call.func.value) for call in _runs_of(body, name)}
    uses = [n for n in nodes(body) if isinstance(n, cst.Name) and n.value == name]
    return bool(receivers) and all(id(n) in receivers for n in uses)


def _called_with(module: cst.CSTNode, function: str, param: str, at: int, session: str,
                 method: bool = False, passing: Optional[Dict[str, str]] = None) -> bool:
    """Every read of ``function`` in ``module`` is a call passing ``session`` (a name)
    as ``param``, at position ``at`` or by keyword, with no ``*``/``**`` arguments.
    ``method``: ``function`` is a method, read as ``self.function`` (``module``: the
    class and the code that calls its methods, spelling the object ``self``).
    ``passing``: functions that pass on the session they are given -> the parameter
    it is in there (a call in such a function may pass that name instead)."""
    passing = passing or {}
    owner: Dict[int, str] = {}  # a call -> the function of ``passing`` it is in
    for fn in nodes(module):
        if isinstance(fn, cst.FunctionDef) and fn.name.value in passing:
            owner.update((id(n), fn.name.value) for n in nodes(fn.body))
    if method:
        calls = [n for n in nodes(module) if isinstance(n, cst.Call) and m.matches(
            n.func, m.Attribute(value=m.Name("self"), attr=m.Name(function)))]
        reads = sum(1 for n in nodes(module) if m.matches(
            n, m.Attribute(value=m.Name("self"), attr=m.Name(function))))
        if not calls or reads != len(calls):
            return False
    else:
        calls = [n for n in nodes(module) if isinstance(n, cst.Call)
                 and isinstance(n.func, cst.Name) and n.func.value == function]
        reads = sum(1 for n in nodes(module) if isinstance(n, cst.Name) and n.value == function)
        if not calls or reads != len(calls) + 1:  # (and the def's own name)
            return False
    for call in calls:
        if any(a.star for a in call.args):
            return False
        passed = [a for k, a in enumerate(call.args) if (a.keyword is None and k == at)
                  or (a.keyword is not None and a.keyword.value == param)]
        name = passing.get(owner.get(id(call), ""), session)
        if len(passed) != 1 or not (isinstance(passed[0].value, cst.Name)
                                    and passed[0].value.value == name):
            return False
    return True


class _DropSession(cst.CSTTransformer):
    """The session parameter of each helper, and the argument of each call, go."""

    def __init__(self, helpers: Dict[str, Tuple[str, int]], receiver: str = "") -> None:
        super().__init__()
        self._helpers = helpers
        self._receiver = receiver  # methods: the object whose calls of them drop it too

    def leave_FunctionDef(self, original_node: cst.FunctionDef,
                          updated_node: cst.FunctionDef) -> cst.FunctionDef:
        helper = self._helpers.get(updated_node.name.value)
        if helper is None:
            return updated_node
        if self._receiver and updated_node.params.params and \
                updated_node.params.params[0].name.value != "self":
            return updated_node  # (a method's helpers: only methods)
        params = [p for p in updated_node.params.params if p.name.value != helper[0]]
        if params:
            params[-1] = params[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated_node.with_changes(params=updated_node.params.with_changes(params=params))

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        func = updated_node.func
        if m.matches(func, m.Attribute(value=m.Name(self._receiver))):
            func = func.attr  # (a method's call: ``self.predict(sess, x)``)
        if not isinstance(func, cst.Name) or func.value not in self._helpers:
            return updated_node
        param, at = self._helpers[func.value]
        args = [a for k, a in enumerate(updated_node.args)
                if not ((a.keyword is None and k == at)
                        or (a.keyword is not None and a.keyword.value == param))]
        if args:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated_node.with_changes(args=args)
