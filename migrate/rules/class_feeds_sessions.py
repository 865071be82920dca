"""Part of the class-feeds rule: which session a class runs, and how it is used.

:class:`ClassSessions` is a mixin of
:class:`~tapeshift.migrate.rules.class_feeds.ClassFeedsToMethods`, whose state it
uses. A class runs the graph it builds with ``self.sess``, opened by a once-run
method (``self.sess = tf.Session()``, before or after the graph) or passed to the
constructor and kept (``self.sess = sess``). Eager code has no session: the
statement goes, a passed one's parameter goes from ``__init__`` and its argument
from every construction (:class:`DropArguments`), and the initializer's runs go.
Any other use of the session (a Saver, another object, the session of an object
read outside the class, an initializer run again) is reported and the class is
not converted.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.dataflow import loop_body_ids
from tapeshift.migrate.engine.toolkit.walk import nodes
from tapeshift.migrate.engine.tf1_api import INITIALIZERS, SESSIONS
from tapeshift.migrate.rules.model_code_classes import ClassContext
from tapeshift.migrate.rules.session import TS106, TS107, TS115


class ClassSessions:
    """Part of ``ClassFeedsToMethods``: the class's session, found and checked."""

    def _session_of(self, cls: cst.ClassDef, ctx: ClassContext) -> Optional[Tuple[str, cst.Call]]:
        """(``self.sess``, its ``tf.Session()`` call) when a once-run method opens it."""
        found = None
        for name in ctx.once:
            for n in nodes(ctx.methods[name].body):
                if isinstance(n, cst.Assign) and len(n.targets) == 1 \
                        and isinstance(n.value, cst.Call) \
                        and self.tf_api_name(n.value.func) in SESSIONS \
                        and self._ref(n.targets[0].target) is not None \
                        and self._ref(n.targets[0].target).startswith("self."):
                    if found is not None:
                        self._bail(TS107.code, n.value, "more than one Session in the class")
                    found = (self._ref(n.targets[0].target), n.value)
        return found

    def _passed_session(self, ctx: ClassContext) -> Optional[Tuple[str, cst.SimpleStatementLine, str]]:
        """(``self.sess``, ``self.sess = sess``, ``sess``) for a session passed to the
        constructor, kept on the object and used by another method's ``.run``."""
        init = ctx.methods["__init__"]
        params = {p.name.value for p in init.params.params[1:]}
        for stmt in init.body.body:
            if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
                    and isinstance(stmt.body[0], cst.Assign)
                    and len(stmt.body[0].targets) == 1):
                continue
            assign = stmt.body[0]
            ref = self._ref(assign.targets[0].target)
            if ref is None or not ref.startswith("self.") or not (
                    isinstance(assign.value, cst.Name) and assign.value.value in params):
                continue
            runs = any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
                       and n.func.attr.value == "run" and self._ref(n.func.value) == ref
                       for name, fn in ctx.methods.items() if name not in ctx.once
                       for n in nodes(fn.body))
            if runs:
                return ref, stmt, assign.value.value
        return None

    def _session_moved(self, flat: List[Tuple[str, cst.BaseStatement]], at: int) -> int:
        """Where the graph's session starts: ``self.sess = tf.Session()`` opened before
        the graph is built (``__init__`` opens it first, then makes the placeholders)
        runs that graph all the same, so the statement is read as if it came just
        before its first use. ``flat`` is reordered in place; the new index is returned."""
        ref = self._session_ref
        use = next((j for j in range(at + 1, len(flat))
                    if any(self._ref(n) == ref for n in nodes(flat[j][1]))), len(flat))
        if use == at + 1:
            return at
        flat.insert(use - 1, flat.pop(at))
        return use - 1

    def _check_passed_session(self, cls: cst.ClassDef, ctx: ClassContext,
                              kept: cst.SimpleStatementLine, param: str) -> None:
        """The constructor's session parameter goes (eager code has no session), so
        it may be read only where it is kept, and every use of the class in the module
        must be a call whose argument for it can be dropped."""
        init = ctx.methods["__init__"]
        labels = {id(n.attr) for n in nodes(init.body) if isinstance(n, cst.Attribute)}
        reads = [n for n in nodes(init.body) if isinstance(n, cst.Name) and n.value == param
                 and id(n) not in labels]
        if len(reads) != 1 or not any(n is reads[0] for n in nodes(kept)):
            self._bail(TS106.code, kept, f"the session parameter `{param}` of "
                       f"`{cls.name.value}` is used other than kept as `{self._session_ref}`")
        position = [p.name.value for p in init.params.params].index(param) - 1
        sites: List[cst.Call] = []
        for n in nodes(self._module_node):
            if isinstance(n, cst.Name) and n.value == cls.name.value and n is not cls.name:
                sites.append(n)
        calls = {id(c.func): c for c in nodes(self._module_node) if isinstance(c, cst.Call)}
        self._constructions: Dict[cst.Call, int] = {}
        for name in sites:
            call = calls.get(id(name))
            at = None if call is None else next(
                (k for k, a in enumerate(call.args) if (a.keyword is not None and
                 a.keyword.value == param) or (a.keyword is None and not a.star and k == position)),
                None)
            if call is None or at is None or any(a.star for a in call.args):
                self._bail(TS106.code, name, f"`{cls.name.value}` is used other than by a call "
                           f"that passes `{param}`: its session parameter cannot go")
            self._constructions[call] = at

    def _check_session_uses(self, body: List[cst.CSTNode], start: int, runs) -> None:
        """``self.sess`` may only run fetches, run the initializer, or give its graph
        to a FileWriter (TF2 writes no graph)."""
        allowed = {id(run.call.func.value) for run in runs}
        inits = [(stmt, n) for stmt in body for n in nodes(stmt)
                 if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
                 and n.func.attr.value == "run" and self._ref(n.func.value) == self._session_ref
                 and self._initializer_run(n)]
        for stmt, n in inits:
            # run again, the initializer puts the variables back to their initial values;
            # eager variables get theirs once, where they are made. One run in a method
            # (`start()`) is the initialisation; beside another, or in a loop, a reset
            looped = loop_body_ids(stmt)
            if id(n) in looped or isinstance(stmt, cst.FunctionDef) and len(inits) > 1:
                where = f"`{stmt.name.value}`" if isinstance(stmt, cst.FunctionDef) \
                    and id(n) not in looped else "a loop"
                self._bail(TS115.code, n, f"the initializer runs again in {where}, resetting "
                           "the variables: not converted")
            allowed.add(id(n.func.value))
        for stmt in body:
            for n in nodes(stmt):
                if isinstance(n, cst.Call) and self.tf_api_name(n.func) == "summary.FileWriter" \
                        and len(n.args) == 2 and isinstance(n.args[1].value, cst.Attribute) \
                        and n.args[1].value.attr.value == "graph":
                    allowed.add(id(n.args[1].value.value))
        allowed |= self._session_passings()
        allowed |= {id(call.func.value) for call in self._value_runs}  # self.sess.run(self.W)
        for stmt in body:
            for n in nodes(stmt):
                if self._ref(n) == self._session_ref and id(n) not in allowed \
                        and not is_binding(stmt, n) and not self._passed_as(stmt, n):
                    self._bail(TS106.code, n, f"`{self._session_ref}` used other than by "
                               "sess.run: the codemod cannot follow it")
        # an object's session read outside the class (``model.sess.run(model.W)``) would
        # outlive the conversion: the attribute is gone from the migrated class
        attr = self._session_ref.rpartition(".")[2]
        outside = [n for stmt in self._module_node.body if stmt is not self._block
                   for n in nodes(stmt)]
        for n in outside:
            if isinstance(n, cst.Attribute) and n.attr.value == attr \
                    and not (isinstance(n.value, cst.Name) and n.value.value == "self"):
                self._bail(TS106.code, n, f"`{code_of(n)}`: the session of an object of "
                           f"`{self._block.name.value}` used outside the class: not converted")

    def _session_passings(self) -> Set[int]:
        """Reads of the session that pass it to a method that only runs it (the
        class_feeds_driven part's)."""
        return set()

    def _passed_as(self, stmt: cst.CSTNode, node: cst.CSTNode) -> bool:
        """``node`` is the parameter of a method the session is passed to."""
        helpers = getattr(self, "_helpers", {})
        return isinstance(stmt, cst.FunctionDef) and stmt.name.value in helpers \
            and any(p.name is node for p in stmt.params.params
                    if p.name.value == helpers[stmt.name.value][0])

    def _initializer_run(self, call: cst.Call) -> bool:
        """``self.sess.run(tf.global_variables_initializer())``, or of ``self.init``
        bound in the once-run methods only to an initializer."""
        if not call.args:
            return False
        arg = call.args[0].value
        if isinstance(arg, cst.Call):
            return self.tf_api_name(arg.func) in INITIALIZERS
        return self._ref(arg) is not None and self._ref(arg) in self._initializers

    def _initializer_refs(self, flat, cls: cst.ClassDef) -> Set[str]:
        """Attributes (``self.init``) bound in the once-run methods only to initializers
        and read only by ``self.sess.run(self.init)``: binding and runs go."""
        bound: Dict[str, bool] = {}
        for _, stmt in flat:
            value, target = self._assignment(stmt)
            if target is not None:
                bound[target] = bound.get(target, True) and isinstance(value, cst.Call) \
                    and self.tf_api_name(value.func) in INITIALIZERS
        refs = {ref for ref, only in bound.items() if only and ref.startswith("self.")}
        seen: Dict[str, int] = {}
        allowed: Dict[str, int] = {}
        for n in nodes(cls):
            ref = self._ref(n) if isinstance(n, cst.Attribute) else None
            if ref in refs:
                seen[ref] = seen.get(ref, 0) + 1
            if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) \
                    and n.func.attr.value == "run" and self._ref(n.func.value) == self._session_ref \
                    and len(n.args) == 1 and self._ref(n.args[0].value) in refs:
                ref = self._ref(n.args[0].value)
                allowed[ref] = allowed.get(ref, 0) + 1
        writes = {ref: sum(1 for _, stmt in flat if self._assignment(stmt)[1] == ref) for ref in refs}
        return {ref for ref in refs if seen.get(ref, 0) == writes[ref] + allowed.get(ref, 0)}


class DropArguments(cst.CSTTransformer):
    """``Actor(sess, 0.1)`` -> ``Actor(0.1)``: the argument at the given index goes."""

    def __init__(self, calls: Dict[cst.Call, int]) -> None:
        super().__init__()
        self._calls = calls

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        at = self._calls.get(original_node)
        if at is None:
            return updated_node
        args = [a for k, a in enumerate(updated_node.args) if k != at]
        if args:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated_node.with_changes(args=args)


def is_binding(stmt: cst.CSTNode, node: cst.CSTNode) -> bool:
    """``node`` is what ``stmt`` binds: ``node = ...``, ``with ... as node:``."""
    if isinstance(stmt, cst.With):
        return any(item.asname is not None and item.asname.name is node for item in stmt.items)
    return isinstance(stmt, cst.SimpleStatementLine) and any(
        isinstance(s, cst.Assign) and any(t.target is node for t in s.targets) for s in stmt.body)
