"""Part of the class-feeds rule: a class whose graph module code runs in its session.

Public TF1 agents are often driven from outside: the class builds placeholders,
the graph and the train op in ``__init__`` and holds no session; module code makes
one object and runs it::

    my_agent = Agent(lr=0.001, s_size=3, a_size=4)
    init = tf.global_variables_initializer()
    with tf.Session() as sess:
        sess.run(init)
        ...
        action = sess.run(my_agent.chosen_action, feed_dict={my_agent.state_in: [s]})

The class gets the step methods it would get if it ran ``self.sess`` itself, public
ones since module code calls them (``my_agent.run_chosen_action(state_in=[s])``).
The session block is read as if a method of the class opened it after
``__init__``: in a copy of it, ``my_agent`` is spelled ``self``, so the class rule's
analysis reads its runs as it reads a method's; the runs it rewrites are spelled
back. The initializer's runs go; the session rule then dissolves the ``with``.

Only the plain shape is read (:func:`driven_session`): one object of one class that
makes placeholders, made by a statement before the one ``with tf.Session() as
sess:`` in the same body (the module's, a module-level function's such as
``main()``, or the ``if __name__ == "__main__":`` guard's), and no other session or
placeholder in the file. The module feeds rule leaves such a file to this one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst
import libcst.matchers as m

from tapeshift.migrate.engine.tf1_api import INITIALIZERS, PLACEHOLDERS, SESSIONS
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.dataflow import names_of
from tapeshift.migrate.engine.toolkit.statements import is_main_guard
from tapeshift.migrate.engine.toolkit.walk import nodes, nodes_of, remembered
from tapeshift.migrate.rules.feeds_passed_sessions import (_DropSession, _called_with, _only_runs,
                                                        _runs_of)
from tapeshift.migrate.rules.model_code_syntax import construction
from tapeshift.migrate.rules.session import RANDOM, TS107


@dataclass
class Driven:
    cls: cst.ClassDef
    instance: str                        # the object's name: my_agent
    construction: cst.SimpleStatementLine  # my_agent = Agent(...)
    session: cst.With                    # with tf.Session() as sess:
    #: the statements the two are among: the module's, a function's or the guard's
    body: Sequence[cst.BaseStatement]
    #: the function whose body that is (its names are locals the class cannot read)
    function: Optional[cst.FunctionDef] = None


def driven_session(module: cst.Module, tf_api_name: Callable) -> Optional[Driven]:
    """The module's class whose graph its session block runs, as described above."""
    driven = driven_or_why(module, tf_api_name)
    return driven if isinstance(driven, Driven) else None


def driven_or_why(module: cst.Module, tf_api_name: Callable) -> Union[Driven, str, None]:
    """:func:`driven_session`'s answer; or, for a module whose session runs what an
    object of its class holds (``sess.run(agent.x)``) in another shape, why it is not
    read so; None for a module of neither kind. (Read once per tree: three rules ask.)"""
    return remembered(module, "driven", lambda: _driven_or_why(module, tf_api_name))


def _driven_or_why(module: cst.Module, tf_api_name: Callable) -> Union[Driven, str, None]:
    calls = nodes_of(module, cst.Call)
    placeholders = {id(c) for c in calls if tf_api_name(c.func) in PLACEHOLDERS}
    builders = {stmt.name.value: stmt for stmt in module.body if isinstance(stmt, cst.ClassDef)
                and any(id(c) in placeholders for c in nodes_of(stmt, cst.Call))
                and not any(tf_api_name(c.func) in SESSIONS for c in nodes_of(stmt, cst.Call))}
    # name -> its class, for every `name = Class(...)` of those classes
    objects = dict(made for made in map(construction, nodes_of(module, cst.Assign))
                   if made is not None and made[1] in builders)
    # module code runs what an object holds, or passes a session to its methods
    sessions = {item.asname.name.value for w in nodes_of(module, cst.With) for item in w.items
                if isinstance(item.item, cst.Call) and tf_api_name(item.item.func) in SESSIONS
                and item.asname is not None and isinstance(item.asname.name, cst.Name)}
    runs_objects = any(
        isinstance(c.func, cst.Attribute) and c.func.attr.value == "run" and c.args
        and any(isinstance(a, cst.Attribute) and isinstance(a.value, cst.Name)
                and a.value.value in objects for a in nodes(c.args[0].value))
        or m.matches(c.func, m.Attribute(value=m.Name())) and c.func.value.value in objects
        and any(m.matches(a.value, m.Name()) and a.value.value in sessions for a in c.args)
        for c in calls)
    if not runs_objects:
        return None
    classes = sorted(set(objects.values()))
    shape = ("only one object of one class holding no session, made before the one "
             "`with tf.Session() as sess:` that runs its graph, in the same body (the "
             "module's, a function's or the `__main__` guard's), is converted")
    if sum(1 for c in calls if tf_api_name(c.func) in SESSIONS) != 1:
        return f"the graph of `{classes[0]}` is run by module code with more than one Session: {shape}"
    owner, body, at = next(((owner, body, i) for owner, body in _driver_bodies(module)
                            for i, stmt in enumerate(body) if _session_with(stmt, tf_api_name)),
                           (None, (), None))
    if at is None:
        return (f"the graph of `{classes[0]}` is run by a session opened other than by a "
                f"`with tf.Session() as sess:` of module code: {shape}")
    in_classes = {id(c) for cls in builders.values() for c in nodes_of(cls, cst.Call)}
    if len(builders) != 1 or placeholders - in_classes:
        return (f"placeholders are made outside `{classes[0]}` too (or by another class): "
                f"{shape}")
    (name, cls), = builders.items()
    made = [stmt for stmt in body[:at]
            if (built := construction(stmt)) is not None and built[1] == name]
    uses = [n for n in nodes_of(module, cst.Name) if n.value == name and n is not cls.name]
    objects_of = sorted(o for o, c in objects.items() if c == name)
    if not made:
        return (f"`{objects_of[0]} = {name}(...)` is not a statement before the session "
                f"block in its body: {shape}")
    if len(objects_of) > 1:
        return f"module code makes several objects of `{name}` ({', '.join(objects_of)}): {shape}"
    if len(made) != 1 or len(uses) != 1:
        return f"`{name}` is used other than by `{objects_of[0]} = {name}(...)`: {shape}"
    instance = construction(made[0])[0]
    bound = [n for n in nodes_of(module, cst.AssignTarget) if isinstance(n.target, cst.Name)
             and n.target.value == instance]
    if len(bound) != 1:
        return f"`{instance}` is bound more than once: {shape}"
    if any(n.value == "self" for n in nodes_of(body[at], cst.Name)):
        return f"the session block reads a name `self`: {shape}"
    return Driven(cls, instance, made[0], body[at], body,
                  owner if isinstance(owner, cst.FunctionDef) else None)


def _driver_bodies(module: cst.Module) -> List[Tuple[cst.CSTNode, Sequence[cst.BaseStatement]]]:
    """Where module code may make the object and open its session: the module's
    body, a module-level function's (``main()``), the ``__main__`` guard's; each
    with what holds it."""
    out: List[Tuple[cst.CSTNode, Sequence[cst.BaseStatement]]] = [(module, module.body)]
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef) and isinstance(stmt.body, cst.IndentedBlock) \
                or is_main_guard(stmt, without_else=True):
            out.append((stmt, stmt.body.body))
    return out


def _session_with(stmt: cst.CSTNode, tf_api_name: Callable) -> bool:
    return isinstance(stmt, cst.With) and len(stmt.items) == 1 \
        and isinstance(stmt.items[0].item, cst.Call) \
        and tf_api_name(stmt.items[0].item.func) in SESSIONS \
        and stmt.items[0].asname is not None and isinstance(stmt.items[0].asname.name, cst.Name)


class _Rename(cst.CSTTransformer):
    """Every name ``old`` -> ``new``."""

    def __init__(self, old: str, new: str) -> None:
        super().__init__()
        self.old, self.new = old, new

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        return updated_node.with_changes(value=self.new) if updated_node.value == self.old \
            else updated_node


def _only_runs_or_passes(body: cst.CSTNode, name: str, helpers: Dict[str, tuple]) -> bool:
    """``name`` is read in ``body`` only as ``name.run(...)`` or passed as the session
    of a method in ``helpers`` (``self.predict(sess, x)``), and bound nowhere."""
    if _only_runs(body, name):
        return True
    passed: Set[int] = set()
    for call in _self_calls(body):
        if call.func.attr.value in helpers:
            param, at = helpers[call.func.attr.value]
            passed |= {id(a.value) for k, a in enumerate(call.args)
                       if (a.keyword is None and k == at or a.keyword is not None
                           and a.keyword.value == param) and m.matches(a.value, m.Name(name))}
    return _read_only_at(body, name, _run_receivers(body, name) | passed)


def _runs_or_passed(body: cst.CSTNode, name: str) -> bool:
    """``name`` is read in ``body``, only as ``name.run(...)`` or as an argument of a
    method of ``self`` (``self.predict(name, x)``)."""
    passed = {id(a.value) for call in _self_calls(body) for a in call.args}
    return _read_only_at(body, name, _run_receivers(body, name) | passed)


def _self_calls(body: cst.CSTNode) -> List[cst.Call]:
    return [call for call in nodes_of(body, cst.Call)
            if m.matches(call.func, m.Attribute(value=m.Name("self")))]


def _run_receivers(body: cst.CSTNode, name: str) -> Set[int]:
    """The ``name`` of each ``name.run(...)``."""
    return {id(call.func.value) for call in _runs_of(body, name)}


def _read_only_at(body: cst.CSTNode, name: str, allowed: Set[int]) -> bool:
    """``name`` is read in ``body`` (a keyword spelled so aside), each read one of
    ``allowed``."""
    keywords = {id(a.keyword) for a in nodes_of(body, cst.Arg) if a.keyword is not None}
    uses = [n for n in nodes(body) if isinstance(n, cst.Name) and n.value == name
            and id(n) not in keywords]
    return bool(uses) and all(id(n) in allowed for n in uses)


class ClassDriven:
    """Part of ``ClassFeedsToMethods``: the session block of module code read as the
    class's own (its state: ``_driven``, ``_originals``)."""

    def _driven_block(self, driven: Driven) -> cst.With:
        """The session block with the object spelled ``self``; its nodes remember the
        original ones, for the positions the report gives."""
        copy = driven.session.visit(_Rename(driven.instance, "self"))
        self._driven_copy = copy
        self._originals: Dict[int, cst.CSTNode] = {
            id(new): old for new, old in zip(nodes(copy), nodes(driven.session))}  # (same shape)
        return copy

    def position(self, node: cst.CSTNode):
        return super().position(self._original(node))

    def tf_api_names(self, node: cst.CSTNode):
        return super().tf_api_names(self._original(node))

    def _bail(self, code: str, node: cst.CSTNode, message: str) -> None:
        # a reason found in the session block's copy names the object as written
        if getattr(self, "_driven", None) is not None and id(node) in getattr(self, "_originals", {}):
            message = message.replace("`self.", f"`{self._driven.instance}.")
        super()._bail(code, node, message)

    def _original(self, node: cst.CSTNode) -> cst.CSTNode:
        """The node of the module a node of the session block's copy stands for (the
        metadata, names and positions, are the module's)."""
        originals = getattr(self, "_originals", None)
        return originals.get(id(node), node) if originals else node

    def _spelled_back(self, block: cst.CSTNode) -> cst.CSTNode:
        return block.visit(_Rename("self", self._driven.instance))

    def _outside_layer_reads(self) -> Set[str]:
        """The object's layers whose variables module code reads (``weights =
        my_agent.fc.trainable_variables[0]``, before the session or in its block outside
        the runs): they are built where ``__init__`` makes them, as TF1 made their
        variables with the graph."""
        driven = getattr(self, "_driven", None)
        if driven is None:
            return set()
        out: Set[str] = set()
        for stmt in self._module_node.body:  # (the session block's own reads included)
            if stmt is not driven.cls:
                out |= self._layer_reads(stmt.visit(_Rename(driven.instance, "self")))
        return out

    def _session_helpers(self, module, body, session):
        """Methods the session is passed to (``agent.predict(sess, x)``, ``def
        predict(self, sess, x)``) that only run it: method -> (parameter, position
        among the call's arguments). The parameter and the arguments go."""
        if getattr(self, "_driven", None) is None or session is None:
            return super()._session_helpers(module, body, session)
        scope = self._driven_scope()
        outside = [n for n in self._outside_nodes() if isinstance(n, cst.Attribute)
                   and isinstance(n.value, cst.Name) and n.value.value == self._driven.instance]
        # every method whose parameter is only run or passed to methods may be one;
        # those that are not (called otherwise, passing it elsewhere) go, until none
        # does: a method passing it on to another under its own name (`train(self,
        # session)` calling `self.predict(session, x)`) stays with it
        methods = {name: fn for name, fn in self._ctx.methods.items()
                   if name not in self._ctx.once and not any(n.attr.value == name for n in outside)}
        found: dict = {}
        for name, fn in methods.items():
            at = next((k for k, p in enumerate(fn.params.params[1:])
                       if p.default is None and _runs_or_passed(fn.body, p.name.value)), None)
            if at is not None:
                found[name] = (fn.params.params[1 + at].name.value, at)
        while True:
            passing = {name: param for name, (param, _) in found.items()}
            gone = [name for name, (param, at) in found.items()
                    if not (_only_runs_or_passes(methods[name].body, param, found)
                            and _called_with(scope, name, param, at, session, method=True,
                                             passing=passing))]
            if not gone:
                return found
            for name in gone:
                del found[name]

    def _driven_scope(self) -> cst.IndentedBlock:
        """The class and its session block, one tree to walk (not a Module: the walks
        remember a module's nodes by its id, which a passing one would reuse)."""
        return cst.IndentedBlock(body=[self._block, self._driven_copy])

    def _session_passings(self) -> Set[int]:
        """The session's names a method helper's calls pass (they go with the parameter)."""
        out: Set[int] = set()
        helpers = getattr(self, "_helpers", {})
        if getattr(self, "_driven", None) is None or not helpers:
            return out
        for call in nodes_of(self._driven_scope(), cst.Call):
            if m.matches(call.func, m.Attribute(value=m.Name("self"))) \
                    and call.func.attr.value in helpers:
                param, at = helpers[call.func.attr.value]
                out |= {id(n) for k, a in enumerate(call.args)  # (`sess=sess`: both names)
                        if a.keyword is None and k == at
                        or a.keyword is not None and a.keyword.value == param
                        for n in (a.value, a.keyword) if n is not None}
        return out

    def _without_passed_sessions(self, node: cst.CSTNode) -> cst.CSTNode:
        """``node`` without the method helpers' session parameters and arguments."""
        helpers = getattr(self, "_helpers", {})
        return node.visit(_DropSession(helpers, "self")) if helpers else node

    def _outside_nodes(self) -> List[cst.CSTNode]:
        """The module's nodes outside the class and the session block."""
        driven = self._driven
        inside = {id(n) for block in (driven.session, self._block) for n in nodes(block)}
        return [n for n in nodes(self._module_node) if id(n) not in inside]

    def _module_initializers(self) -> Set[str]:
        """Names bound once, to an initializer, by module code beside the object, and
        read only as what the session runs: ``init = tf.global_variables_initializer()``."""
        out: Set[str] = set()
        for stmt in self._driven.body:
            if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 \
                    and isinstance(stmt.body[0], cst.Assign) and len(stmt.body[0].targets) == 1 \
                    and isinstance(stmt.body[0].targets[0].target, cst.Name) \
                    and isinstance(stmt.body[0].value, cst.Call) \
                    and self.tf_api_name(stmt.body[0].value.func) in INITIALIZERS:
                out.add(stmt.body[0].targets[0].target.value)
        return out

    def _check_driven_fetches(self, runs) -> None:
        """A name of module code a run fetches beside the object's values must hold
        what eager code reads as TF1 computed it at the run: a selection of variables
        (``weights = [*agent.fc.trainable_variables][0]``, read as they are then) or a
        value of nothing that changes (``T = tf.constant(2.0)``). A value computed from
        the object's variables (``w_norm = tf.norm(agent.w)``) or drawn at random, which
        TF1 computed again at each run, would be computed once."""
        bindings: Dict[str, List[cst.BaseExpression]] = {}
        around = [] if self._driven.body is self._module_node.body else self._driven.body
        for stmt in [*self._module_node.body, *around, *nodes(self._driven_copy)]:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                        targets = small.targets if isinstance(small, cst.Assign) else [small]
                        for t in targets:
                            for n in nodes(t.target):
                                if isinstance(n, cst.Name):
                                    bindings.setdefault(n.value, []).append(small.value)

        def calls(v: Optional[cst.BaseExpression]) -> List[cst.Call]:
            return [] if v is None else [n for n in nodes(v) if isinstance(n, cst.Call)]

        # names whose value changes between runs: the object's (its variables), those
        # computed from such names, and random draws
        changing = {"self", self._driven.instance}
        grown = True
        while grown:
            grown = False
            for name, values in bindings.items():
                if name not in changing and any(
                        v is None or {n.value for n in nodes(v) if isinstance(n, cst.Name)}
                        & changing or any(self.tf_api_name(c.func) in RANDOM for c in calls(v))
                        for v in values):
                    changing.add(name)
                    grown = True
        function = self._driven.function
        local = set() if function is None else {
            n for stmt in function.body.body for n in names_of(stmt)[1]} | {
            p.name.value for p in function.params.params}
        for run in runs:
            for name in dict.fromkeys(run.names):
                if name.startswith("self."):
                    continue
                if name in local:
                    self._bail(TS107.code, run.call, f"`{name}`, fetched beside the values of "
                               f"`{self._driven.instance}`, is a local of "
                               f"`{function.name.value}()`, which the class's step methods "
                               "cannot read: not converted")
                    continue
                values = bindings.get(name, [])
                if not values or name in changing and any(
                        v is None or calls(v) or isinstance(v, cst.Lambda) for v in values):
                    self._bail(TS107.code, run.call, f"`{name}`, fetched beside the values of "
                               f"`{self._driven.instance}`, is computed by module code from "
                               "values that change: eager code would compute it once, not at "
                               "each run: not converted")

    def _check_driven_uses(self) -> None:
        """Outside its session block, module code may read the object's plain
        attributes, not the graph values the step methods now compute."""
        driven = self._driven
        moved = self._names_of_graph() | set(self._placeholders) - set(self._settings)
        for n in self._outside_nodes():
            if isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) \
                    and n.value.value == driven.instance and f"self.{n.attr.value}" in moved:
                self._bail(TS107.code, n, f"`{code_of(n)}`, a graph value of "
                           f"`{driven.cls.name.value}`, is used outside the session block "
                           "that runs it: not converted")
