"""The model-code rule in a class: the methods that build the model once, and where their variables live.

Part of :mod:`tapeshift.migrate.rules.model_code`. TF1 agents and models build
their graph in ``__init__`` and the ``_build_*`` methods it calls; those run once
per object, so their variable scopes, ``get_variable`` calls and layers can be
replayed like module-level code. What they make must outlive the method (other
methods compute with it, ``tf.get_collection`` in ``__init__`` lists it), so
each variable or layer is kept on the object: ``w1 = tf.get_variable("w1",
...)`` in ``_build_net`` becomes ``self.w1 = tf.Variable(..., name="eval_net/l1/w1")``
and the method's later reads of ``w1`` read ``self.w1``. A local bound to two
variables (an eval and a target network built by the same lines) gets one
attribute per variable, named after the TF1 name (``self.eval_net_l1_w1``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set

import libcst as cst

from tapeshift.migrate.engine.toolkit.walk import nodes


@dataclass
class ClassContext:
    node: cst.ClassDef
    methods: Dict[str, cst.FunctionDef]
    #: ``__init__`` and the methods only the once-run methods call
    once: Set[str]
    #: attribute names the class uses on ``self`` (and those made so far)
    attrs: Set[str]
    #: how often each local name is bound in the once-run methods
    local_counts: Dict[str, int]
    #: new bodies of the methods processed so far
    bodies: Dict[str, List[cst.BaseStatement]] = field(default_factory=dict)
    #: in the method being processed: local -> the attribute that now holds its value
    renames: Dict[str, str] = field(default_factory=dict)
    #: methods read at their calls (``x = self._build_net(...)``)
    inlined: Set[str] = field(default_factory=set)

    def attribute(self, local: Optional[str], tf1_name: str, preferred: Sequence[str] = ()) -> str:
        """A fresh ``self.<attr>`` for a variable or layer: the local's own name when
        it is bound once and free, else the first free ``preferred`` name, else one
        made of the TF1 name."""
        free = [n for n in preferred if n.isidentifier() and n not in self.attrs]
        if local is not None and self.local_counts.get(local, 0) == 1 and local not in self.attrs:
            name = local
        elif free:
            name = free[0]
        else:
            base = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in tf1_name).strip("_")
            name = base or "var"
            k = 1
            while name in self.attrs:
                name = f"{base}_{k}"
                k += 1
        self.attrs.add(name)
        return f"self.{name}"


@dataclass
class FunctionContext:
    """A model function read at its first call: what it makes goes to module level."""

    node: cst.FunctionDef
    params: Set[str]
    locals: Set[str]
    #: the statements that make its variables and layers, placed before the first call
    hoisted: List[cst.BaseStatement] = field(default_factory=list)
    #: local -> the module name that now holds its value
    renames: Dict[str, str] = field(default_factory=dict)
    #: local -> how many statements bind it (names, tuple targets)
    local_counts: Dict[str, int] = field(default_factory=dict)
    #: a function run once (``main()``) that only calls model functions: read for them
    driver: bool = False

    @classmethod
    def of(cls, fn: cst.FunctionDef) -> "FunctionContext":
        params = {p.name.value for p in (*fn.params.params, *fn.params.posonly_params,
                                         *fn.params.kwonly_params)}
        for star in (fn.params.star_arg, fn.params.star_kwarg):
            if isinstance(star, cst.Param):
                params.add(star.name.value)
        local = {n.target.value for n in nodes(fn.body)
                 if isinstance(n, cst.AssignTarget) and isinstance(n.target, cst.Name)}
        return cls(fn, params, local, local_counts=_binding_counts([fn]))


def class_context(node: cst.ClassDef) -> Optional[ClassContext]:
    """The once-run methods of ``node``; None without an ``__init__``."""
    methods = {s.name.value: s for s in node.body.body if isinstance(s, cst.FunctionDef)}
    if "__init__" not in methods:
        return None
    calls = {name: _self_calls(fn, methods) for name, fn in methods.items()}
    once = {"__init__"}
    frontier = ["__init__"]
    while frontier:
        for callee in calls[frontier.pop()]:
            if callee not in once:
                once.add(callee)
                frontier.append(callee)
    # a method called from a method that may run again runs again
    changed = True
    while changed:
        changed = False
        for name in list(once - {"__init__"}):
            if any(name in calls[caller] for caller in methods if caller not in once):
                once.discard(name)
                changed = True
    attrs = {n.attr.value for n in nodes(node) if isinstance(n, cst.Attribute)
             and isinstance(n.value, cst.Name) and n.value.value == "self"}
    return ClassContext(node, methods, once, attrs,
                        _binding_counts([methods[name] for name in once]))


def _binding_counts(functions: List[cst.FunctionDef]) -> Dict[str, int]:
    """Each local -> how many assignments in ``functions`` bind it."""
    counts: Dict[str, int] = {}
    for fn in functions:
        for n in nodes(fn.body):
            if isinstance(n, cst.AssignTarget) and isinstance(n.target, cst.Name):
                counts[n.target.value] = counts.get(n.target.value, 0) + 1
            elif isinstance(n, cst.AssignTarget) and isinstance(n.target, (cst.Tuple, cst.List)):
                for el in n.target.elements:
                    if isinstance(el.value, cst.Name):
                        counts[el.value.value] = counts.get(el.value.value, 0) + 1
    return counts


def method_call(stmt: cst.CSTNode, ctx: ClassContext) -> Optional[str]:
    """The once-run method a statement ``self.m(...)`` calls, or None."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Expr)):
        return None
    call = stmt.body[0].value
    if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) \
            and isinstance(call.func.value, cst.Name) and call.func.value.value == "self" \
            and call.func.attr.value in ctx.once:
        return call.func.attr.value
    return None


def _self_calls(fn: cst.FunctionDef, methods: Dict[str, cst.FunctionDef]) -> Set[str]:
    out = set()
    for n in nodes(fn.body):
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) \
                and isinstance(n.func.value, cst.Name) and n.func.value.value == "self" \
                and n.func.attr.value in methods:
            out.add(n.func.attr.value)
    return out


class LocalRenamer(cst.CSTTransformer):
    """Reads of renamed locals -> their attributes (``w1`` -> ``self.w1``)."""

    def __init__(self, renames: Dict[str, str]) -> None:
        super().__init__()
        self.renames = renames

    def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
        return not isinstance(node.target, cst.Name)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return True

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute):
        return updated_node.with_changes(attr=original_node.attr)

    def visit_Arg(self, node: cst.Arg) -> bool:
        return True

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
        return updated_node.with_changes(keyword=original_node.keyword)

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name):
        target = self.renames.get(original_node.value)
        return cst.parse_expression(target) if target is not None else updated_node


_SIMPLE = (cst.Name, cst.SimpleString, cst.Integer, cst.Float)


def inline_call(stmt: cst.CSTNode, ctx: ClassContext) -> Optional[tuple]:
    """``x = self.m(args)`` of a once-run method ``m`` whose body ends in ``return y``:
    (``m``, its parameters -> the arguments, its body). A method that builds a
    network for the scope it is given (``self._build_net(s, scope="eval_net",
    trainable=True)``, called once per network) makes other variables at each
    call: read at each call, its layers are the object's and its computation the
    caller's. None when the call or the method has another shape. The body is
    the method's own (its TensorFlow names are known); :func:`inlined_body`
    writes the result out for the caller."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Assign) and len(stmt.body[0].targets) == 1):
        return None
    call = stmt.body[0].value
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
            and isinstance(call.func.value, cst.Name) and call.func.value.value == "self"
            and call.func.attr.value in ctx.once and call.func.attr.value != "__init__"):
        return None
    fn = ctx.methods[call.func.attr.value]
    body = list(fn.body.body)
    returns = [n for n in nodes(fn.body) if isinstance(n, cst.Return)]
    last = _last_statement(body)
    if len(returns) != 1 or not (isinstance(last, cst.SimpleStatementLine) and len(last.body) == 1
                                 and last.body[0] is returns[0] and returns[0].value is not None):
        return None
    params = list(fn.params.params)
    if not params or params[0].name.value != "self" or fn.params.kwonly_params \
            or fn.params.star_kwarg is not None or isinstance(fn.params.star_arg, cst.Param):
        return None
    values: Dict[str, cst.BaseExpression] = {}
    names = [p.name.value for p in params[1:]]
    for k, arg in enumerate(call.args):
        if arg.star:
            return None
        key = arg.keyword.value if arg.keyword is not None else (names[k] if k < len(names) else None)
        if key not in names:
            return None
        values[key] = arg.value
    for p in params[1:]:
        if p.name.value not in values:
            if p.default is None:
                return None
            values[p.name.value] = p.default
    if not all(_simple(v) for v in values.values()):
        return None
    stores = {n.target.value for n in nodes(fn.body)
              if isinstance(n, cst.AssignTarget) and isinstance(n.target, cst.Name)}
    if stores & set(values):
        return None
    return call.func.attr.value, values, body


def inlined_body(stmt: cst.SimpleStatementLine, values: Dict[str, cst.BaseExpression],
                 body: List[cst.BaseStatement]) -> List[cst.BaseStatement]:
    """A method's body as read for one call (:func:`inline_call`), written out for the
    caller: its parameters replaced by the arguments, ``return y`` made ``x = y``."""
    renames = {name: _code(value) for name, value in values.items()}
    body = [s.visit(LocalRenamer(renames)) for s in body]
    last = _last_statement(body)
    if last is None or not (isinstance(last, cst.SimpleStatementLine)
                            and isinstance(last.body[0], cst.Return)):
        return body
    assign = last.with_changes(body=[cst.Assign(targets=stmt.body[0].targets,
                                                value=last.body[0].value)])
    body = _replace_last(body, assign)
    body[0] = body[0].with_changes(leading_lines=[*stmt.leading_lines, *body[0].leading_lines])
    return body


def _last_statement(body):
    """The last statement of ``body``, looking into a trailing ``with`` block."""
    last = body[-1] if body else None
    while isinstance(last, cst.With) and last.body.body:
        last = last.body.body[-1]
    return last


def _replace_last(body, new):
    """``body`` with its last statement (looked for as :func:`_last_statement` does) ``new``."""
    last = body[-1]
    if isinstance(last, cst.With):
        return [*body[:-1], last.with_changes(body=last.body.with_changes(
            body=_replace_last(list(last.body.body), new)))]
    return [*body[:-1], new]


def _simple(expr: cst.BaseExpression) -> bool:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return isinstance(expr, _SIMPLE)


def _code(expr: cst.BaseExpression) -> str:
    return cst.Module(body=[]).code_for_node(expr)
