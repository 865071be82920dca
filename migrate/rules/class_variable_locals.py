"""A variable (or optimizer) a session-holding class keeps in a local of ``__init__`` -> an attribute.

Agents and models written as classes often make their variables as locals of
the method that builds the graph::

    class Autoencoder:
        def __init__(self, xdim, hdim):
            w_encode = tf.Variable(tf.random_normal([xdim, hdim]))
            self.x_in = tf.placeholder("float", [None, xdim])
            self.h = tf.matmul(self.x_in, w_encode)
            self.session = tf.Session()

        def encode(self, x):
            return self.session.run(self.h, feed_dict={self.x_in: x})

In TF1 the local only names the variable while the graph is built; the graph
holds it afterwards. In TF2 the computation of ``self.h`` moves into a method
that runs at each ``encode`` (the class-feeds rule), and that method must reach
the variable: so it becomes ``self.w_encode``, made where it was, once per
object, under the name the author gave it. Every read in that method follows.

An optimizer made in a local (``optimizer = tf.train.AdamOptimizer(lr)``, then
``self.train = optimizer.minimize(self.loss)``) moves likewise: made again in each
step method, it would start its slots and step count anew at every step.

Only a local bound once, by ``tf.Variable(...)`` (or ``get_variable``, or an
optimizer's constructor) as the whole right-hand side, read later in its method and bound by nothing else
there (no loop, comprehension, lambda or nested definition reuses the name),
whose name is free on the object, is moved; only in ``__init__`` or a method
it calls once (a method run at each of several calls would leave the attribute
holding the last call's variable); and only in a class whose once-run methods
open a session (or keep one passed in) that its methods run, or whose graph the
module's session runs: the classes the class-feeds rule converts.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set

import libcst as cst

from tapeshift.migrate.engine.registry import register_rule
from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.engine.tf1_api import SESSIONS
from tapeshift.migrate.engine.toolkit.kinds import VARIABLE_MAKERS
from tapeshift.migrate.engine.toolkit.tf_names import tf_module_alias
from tapeshift.migrate.engine.toolkit.walk import nodes
from tapeshift.migrate.rules.class_feeds_driven import driven_session
from tapeshift.migrate.rules.model_code_classes import ClassContext, LocalRenamer, class_context


@register_rule
class ClassVariableLocals(TapeshiftCodemod):
    DESCRIPTION = "A variable a session-holding class keeps in a local of __init__ -> an attribute."
    RULE = "class-variable-locals"
    #: after the model-code and feeds rules (model code made its variables attributes), before class-feeds
    PHASE = "pre"
    ORDER = 32
    SCREEN_NAMES = SESSIONS

    def visit_Module(self, node: cst.Module) -> bool:
        self._replaced: Dict[cst.ClassDef, cst.ClassDef] = {}
        if tf_module_alias(node) is None:
            return False
        driven = driven_session(node, self.tf_api_name)
        self._driven = driven.cls if driven is not None else None
        for stmt in node.body:
            if isinstance(stmt, cst.ClassDef):
                new = self._class(stmt)
                if new is not None:
                    self._replaced[stmt] = new
        return False

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if not self._replaced:
            return updated_node
        return updated_node.with_changes(body=[self._replaced.get(s, s) for s in updated_node.body])

    def _class(self, cls: cst.ClassDef) -> Optional[cst.ClassDef]:
        ctx = class_context(cls)
        if ctx is None or not (cls is self._driven or self._runs_a_session(cls, ctx)):
            return None
        taken = set(ctx.attrs) | set(ctx.methods)
        new_methods: Dict[str, cst.FunctionDef] = {}
        for name in sorted(ctx.once):
            if name != "__init__" and not _called_once(cls, ctx, name):
                continue  # made again at each call, the attribute would hold the last one
            fn = ctx.methods[name]
            moved = [local for local in self._variable_locals(fn) if local not in taken]
            if moved:
                taken.update(moved)
                new_methods[name] = self._moved(fn, moved)
        if not new_methods:
            return None
        members = [new_methods.get(s.name.value, s) if isinstance(s, cst.FunctionDef) else s
                   for s in cls.body.body]
        return cls.with_changes(body=cls.body.with_changes(body=members))

    def _runs_a_session(self, cls: cst.ClassDef, ctx: ClassContext) -> bool:
        """Some method runs ``self.<s>``, which a once-run method binds to a new
        Session or ``__init__`` to one of its parameters."""
        init_params = {p.name.value for p in ctx.methods["__init__"].params.params}
        bound: Set[str] = set()
        for name in ctx.once:
            for n in nodes(ctx.methods[name].body):
                if isinstance(n, cst.Assign) and len(n.targets) == 1 \
                        and _self_attribute(n.targets[0].target) is not None:
                    value = n.value
                    if isinstance(value, cst.Call) and self.tf_api_name(value.func) in SESSIONS \
                            or name == "__init__" and isinstance(value, cst.Name) \
                            and value.value in init_params:
                        bound.add(_self_attribute(n.targets[0].target))
        return any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
                   and n.func.attr.value == "run" and _self_attribute(n.func.value) in bound
                   for n in nodes(cls))

    def _variable_locals(self, fn: cst.FunctionDef) -> List[str]:
        """The locals of ``fn`` that may move: bound once, by a statement of its own
        body making a variable, and read after it."""
        bindings: Dict[str, int] = {}
        other: Set[str] = {p.name.value for p in _all_params(fn.params)}
        for n in nodes(fn.body):
            for name in _bound_names(n):
                bindings[name] = bindings.get(name, 0) + 1
            if isinstance(n, (cst.Lambda, cst.FunctionDef, cst.ClassDef, cst.CompFor,
                              cst.For, cst.WithItem, cst.Global, cst.Nonlocal, cst.Import,
                              cst.ImportFrom, cst.NamedExpr, cst.AugAssign, cst.Del,
                              cst.ExceptHandler, cst.AnnAssign)):
                other |= _names_bound_by(n)
        out = []
        for k, stmt in enumerate(fn.body.body):
            if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
                    and isinstance(stmt.body[0], cst.Assign) and len(stmt.body[0].targets) == 1
                    and isinstance(stmt.body[0].targets[0].target, cst.Name)
                    and isinstance(stmt.body[0].value, cst.Call)
                    and self._kept(self.tf_api_name(stmt.body[0].value.func))):
                continue
            local = stmt.body[0].targets[0].target.value
            if bindings.get(local) != 1 or local in other:
                continue
            if any(isinstance(n, cst.Name) and n.value == local
                   for later in fn.body.body[k + 1:] for n in nodes(later)):
                out.append(local)
        return out

    @staticmethod
    def _kept(api: Optional[str]) -> bool:
        """A call that makes a variable, or an optimizer (whose slots and step count
        must outlive one step)."""
        return api is not None and (api in VARIABLE_MAKERS or api.startswith("train.")
                                    and api.endswith("Optimizer"))

    def _moved(self, fn: cst.FunctionDef, moved: List[str]) -> cst.FunctionDef:
        renamer = LocalRenamer({local: f"self.{local}" for local in moved})
        body = []
        for stmt in fn.body.body:
            new = stmt.visit(renamer)
            target = _single_name_target(stmt)
            if target in moved:
                assign = new.body[0]
                new = new.with_changes(body=[assign.with_changes(targets=[
                    assign.targets[0].with_changes(target=cst.parse_expression(f"self.{target}"))])])
                what = "optimizer" if (self.tf_api_name(stmt.body[0].value.func) or "").endswith(
                    "Optimizer") else "variable"
                self.record_change(stmt, f"the {what} `{target}` kept on the object as "
                                   f"`self.{target}`: the methods that run the graph read it")
            body.append(new)
        return fn.with_changes(body=fn.body.with_changes(body=body))


def _called_once(cls: cst.ClassDef, ctx: ClassContext, name: str) -> bool:
    """``self.<name>(...)`` is called at one place in the class, a statement of a
    once-run method's own body (not in a loop or another block)."""
    def calls(node: cst.CSTNode) -> int:
        return sum(1 for n in nodes(node) if isinstance(n, cst.Call)
                   and _self_attribute(n.func) == name)
    top = sum(calls(stmt) for m in ctx.once for stmt in ctx.methods[m].body.body
              if isinstance(stmt, cst.SimpleStatementLine))
    return top == 1 and calls(cls) == 1


def _self_attribute(node: cst.CSTNode) -> Optional[str]:
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) \
            and node.value.value == "self":
        return node.attr.value
    return None


def _single_name_target(stmt: cst.CSTNode) -> Optional[str]:
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 \
            and isinstance(stmt.body[0], cst.Assign) and len(stmt.body[0].targets) == 1 \
            and isinstance(stmt.body[0].targets[0].target, cst.Name):
        return stmt.body[0].targets[0].target.value
    return None


def _all_params(params: cst.Parameters) -> List[cst.Param]:
    out = [*params.posonly_params, *params.params, *params.kwonly_params]
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            out.append(star)
    return out


def _bound_names(node: cst.CSTNode) -> List[str]:
    """Names a plain assignment target binds (``a = ...``, ``a, b = ...``)."""
    if not isinstance(node, cst.AssignTarget):
        return []
    return [n.value for n in nodes(node.target) if isinstance(n, cst.Name)]


def _names_bound_by(node: cst.CSTNode) -> Set[str]:
    """Every name ``node`` (a loop, comprehension, lambda, nested definition, import,
    walrus, ...) may bind; over-approximated: each Name in its binding part."""
    if isinstance(node, (cst.Lambda,)):
        return {p.name.value for p in _all_params(node.params)}
    if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        return {node.name.value}
    part = {
        cst.CompFor: lambda n: n.target, cst.For: lambda n: n.target,
        cst.WithItem: lambda n: n.asname, cst.NamedExpr: lambda n: n.target,
        cst.AugAssign: lambda n: n.target, cst.Del: lambda n: n.target,
        cst.ExceptHandler: lambda n: n.name, cst.AnnAssign: lambda n: n.target,
    }.get(type(node))
    bound = part(node) if part is not None else node
    return {n.value for n in nodes(bound) if isinstance(n, cst.Name)} if bound is not None else set()
