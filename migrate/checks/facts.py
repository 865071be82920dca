"""What a module says about gradients: the shared analysis behind the check rules.

One pass over the module, block by block in statement order, keeps an
environment of the last expression assigned to each name, so a rule can follow
a value through assignments across statements (``g = tf.gradients(l, h)[0]``
... ``g * d``). It records

- every gradient taken: ``tf.gradients(Y, X)`` (TF1, a list) and
  ``tape.gradient(Y, X)`` (TF2), with target, source, seed and place;
- every elementwise product (``a * b``, ``tf.multiply``, ``tf.math.multiply``)
  with the environment it was seen in;
- every ``GradientTape`` bound by ``with ... as t`` and the calls made on it;
- whether the module shows eager (TF2) or graph (TF1) execution.

TensorFlow is recognised by qualified name (LibCST's ``QualifiedNameProvider``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import libcst as cst
import libcst.matchers as m
from libcst.metadata import MetadataWrapper, PositionProvider

from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.metadata import node_start, qualified_names
from tapeshift.migrate.engine.toolkit.tf_names import api_name
from tapeshift.migrate.engine.toolkit.walk import instance_test, walk
from tapeshift.migrate.engine.python_syntax import parse

Env = Dict[str, object]  # name -> expression, Unpacked or Opaque

GRAPH_MARKERS = {"Session", "InteractiveSession", "disable_v2_behavior",
                 "disable_eager_execution", "placeholder"}
EAGER_MARKERS = {"GradientTape", "function", "enable_eager_execution", "enable_v2_behavior"}


@dataclass
class Grad:
    """A gradient value: d target / d source, optionally seeded (a VJP)."""

    kind: str  # "tf1" or "tape"
    call: cst.Call
    target: cst.BaseExpression
    source: cst.BaseExpression
    seed: Optional[cst.BaseExpression]
    indexed: bool  # the value is element 0 of tf.gradients' list
    tape: Optional[str] = None


@dataclass
class Product:
    node: cst.CSTNode  # the BinaryOperation or the tf.multiply Call
    left: cst.BaseExpression
    right: cst.BaseExpression
    env: Env


@dataclass
class TapeBinding:
    name: str
    with_node: cst.With
    persistent: Optional[bool]  # None: not a literal
    body_lines: Tuple[int, int]
    calls: List[cst.Call] = field(default_factory=list)
    env_before: Env = field(default_factory=dict)
    assigned_in_body: set = field(default_factory=set)
    enclosing_tapes: Tuple[str, ...] = ()
    rebound_after: Optional[int] = None  # line where the name is bound again


@dataclass
class GradientSite:
    grad: Grad
    env: Env
    in_tf_function: bool
    in_graph_block: bool


class Facts:
    def __init__(self, module: cst.Module, wrapper: Optional[MetadataWrapper] = None,
                 source: Optional[str] = None):
        """``wrapper``: a MetadataWrapper of ``module`` itself whose metadata the
        caller shares with other readers of the tree (by default, a new one);
        ``source``: the module's code, when the caller has it."""
        if wrapper is None or wrapper.module is not module:
            wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        self.wrapper = wrapper
        self._source = source
        self.module = self.wrapper.module
        self.qnames = qualified_names(self.wrapper)
        self.products: List[Product] = []
        self.gradient_sites: List[GradientSite] = []
        self.tapes: List[TapeBinding] = []
        self.override_maps: List[cst.Call] = []
        self.used_api: set = set()
        self._collect_api()
        self._walk(self.module.body, {}, tapes=(), in_fn=False, in_graph=False)

    @property
    def positions(self):
        """LibCST's positions (ends too), computed when first asked for: a tape's
        ``with`` block needs its end line (a start is :meth:`line`'s, cheaper)."""
        return self.wrapper.resolve(PositionProvider)

    # -- names -------------------------------------------------------------
    def _qualified(self, node: cst.CSTNode):
        value = self.qnames.get(node, ())
        return value() if callable(value) else value  # LibCST resolves these lazily

    def api(self, node: cst.CSTNode) -> Optional[str]:
        names = {api_name(q.name) for q in self._qualified(node)}
        names.discard(None)
        return min(names) if names else None

    def line(self, node: cst.CSTNode) -> int:
        return node_start(self.wrapper, node)[0]

    def col(self, node: cst.CSTNode) -> int:
        return node_start(self.wrapper, node)[1] + 1

    def _collect_api(self) -> None:
        for node in self.qnames:
            if not _is_name_or_attribute(node):
                continue
            for q in self._qualified(node):
                name = api_name(q.name)
                if name:
                    self.used_api.add(name.split(".")[-1])
        numpy_calls = _calls_numpy_method(self._source)
        if numpy_calls is None:
            numpy_calls = m.findall(self.module, m.Call(func=m.Attribute(attr=m.Name("numpy"))))
        if numpy_calls:
            self.used_api.add(".numpy()")

    @property
    def shows_graph_mode(self) -> bool:
        return bool(self.used_api & GRAPH_MARKERS)

    @property
    def shows_eager_mode(self) -> bool:
        return bool(self.used_api & (EAGER_MARKERS | {".numpy()"})) and not self.shows_graph_mode

    # -- values ------------------------------------------------------------
    def resolve(self, expr: cst.BaseExpression, env: Env, depth: int = 0) -> cst.BaseExpression:
        while isinstance(expr, cst.Name) and expr.value in env and depth < 20:
            expr, depth = env[expr.value], depth + 1
        return expr

    def key(self, expr: cst.BaseExpression, env: Env) -> str:
        """Identity of a tensor expression: names through pure aliases, else its text."""
        seen = 0
        while isinstance(expr, cst.Name) and isinstance(env.get(expr.value), cst.Name) and seen < 20:
            expr, seen = env[expr.value], seen + 1
        return code_of(expr).strip()

    def grad_of(self, expr: cst.BaseExpression, env: Env) -> Optional[Grad]:
        """The gradient an expression holds, following assignments; None if it is not one."""
        expr = self.resolve(expr, env)
        if isinstance(expr, Unpacked):
            g = self._grad_call(expr.call)
            return g if g is not None and g.kind == "tf1" else None
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1:
            index = expr.slice[0].slice
            if isinstance(index, cst.Index) and m.matches(index.value, m.Integer("0")):
                base = self.resolve(expr.value, env)
                if isinstance(base, cst.Call):
                    g = self._grad_call(base)
                    if g is not None and g.kind == "tf1":
                        return g
        if isinstance(expr, cst.Call):
            g = self._grad_call(expr)
            if g is not None and g.kind == "tape":
                return g
        return None

    def _grad_call(self, call: cst.Call) -> Optional[Grad]:
        args = [a for a in call.args if a.keyword is None and a.star == ""]
        kw = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        if self.api(call.func) == "gradients":
            target = args[0].value if args else kw.get("ys")
            source = args[1].value if len(args) > 1 else kw.get("xs")
            seed = args[2].value if len(args) > 2 else kw.get("grad_ys")
            if target is None or source is None:
                return None
            if isinstance(source, (cst.List, cst.Tuple)):
                if len(source.elements) != 1:
                    return None
                source = source.elements[0].value
            return Grad("tf1", call, target, source, seed, indexed=True)
        if m.matches(call.func, m.Attribute(value=m.Name(), attr=m.Name("gradient"))):
            tape = call.func.value.value
            if not any(t.name == tape for t in self.tapes):
                return None
            target = args[0].value if args else kw.get("target")
            source = args[1].value if len(args) > 1 else kw.get("sources")
            seed = args[2].value if len(args) > 2 else kw.get("output_gradients")
            if target is None or source is None or isinstance(source, (cst.List, cst.Tuple)):
                return None
            return Grad("tape", call, target, source, seed, indexed=False, tape=tape)
        return None

    # -- the walk ----------------------------------------------------------
    def _walk(self, body, env: Env, *, tapes: Tuple[str, ...], in_fn: bool, in_graph: bool):
        for stmt in body:
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    self._examine(small, env, in_fn, in_graph)
                    self._assign(small, env)
            elif isinstance(stmt, cst.With):
                self._with(stmt, env, tapes, in_fn, in_graph)
            elif isinstance(stmt, cst.FunctionDef):
                is_tf_fn = any(self.api(d.decorator if not isinstance(d.decorator, cst.Call)
                                        else d.decorator.func) == "function"
                               for d in stmt.decorators)
                self._walk(stmt.body.body, dict(env), tapes=(), in_fn=in_fn or is_tf_fn,
                           in_graph=in_graph)
            elif isinstance(stmt, cst.ClassDef):
                self._walk(stmt.body.body, dict(env), tapes=(), in_fn=in_fn, in_graph=in_graph)
            else:
                for part in _expressions_of(stmt):
                    self._examine(part, env, in_fn, in_graph)
                for block in _blocks_of(stmt):
                    self._walk(block, env, tapes=tapes, in_fn=in_fn, in_graph=in_graph)
        return env

    def _with(self, stmt: cst.With, env, tapes, in_fn, in_graph):
        new_tapes = list(tapes)
        graph_block = in_graph
        bindings = []
        for item in stmt.items:
            self._examine(item.item, env, in_fn, in_graph)
            call = item.item
            if m.matches(call, m.Call(func=m.Attribute(attr=m.Name("as_default")))) or (
                isinstance(call, cst.Call) and self.api(call.func) in ("Graph", "Session")
            ):
                graph_block = True
            if isinstance(call, cst.Call) and self.api(call.func) == "GradientTape":
                if item.asname is not None and isinstance(item.asname.name, cst.Name):
                    name = item.asname.name.value
                    persistent: Optional[bool] = False
                    for a in call.args:
                        if a.keyword is not None and a.keyword.value == "persistent":
                            persistent = {"True": True, "False": False}.get(code_of(a.value).strip())
                    start = self.line(stmt)
                    end = self.positions[stmt].end.line
                    for t in self.tapes:  # an earlier tape of that name ends here
                        if t.name == name and t.rebound_after is None:
                            t.rebound_after = start
                    binding = TapeBinding(name, stmt, persistent, (start, end),
                                          env_before=dict(env), enclosing_tapes=tuple(tapes))
                    self.tapes.append(binding)
                    bindings.append(binding)
                    new_tapes.append(name)
        before = set(env)
        snapshot = dict(env)
        self._walk(stmt.body.body, env, tapes=tuple(new_tapes), in_fn=in_fn, in_graph=graph_block)
        for b in bindings:
            b.assigned_in_body = {n for n in env if n not in before or env[n] is not snapshot.get(n)}

    def _assign(self, small: cst.BaseSmallStatement, env: Env) -> None:
        if isinstance(small, cst.Assign):
            for target in small.targets:
                t = target.target
                if isinstance(t, cst.Name):
                    env[t.value] = small.value
                elif isinstance(t, (cst.Tuple, cst.List)):
                    value = self.resolve(small.value, env)
                    for i, el in enumerate(t.elements):
                        if isinstance(el.value, cst.Name):
                            single = i == 0 and len(t.elements) == 1
                            if single and isinstance(value, cst.Call) and self.api(value.func) == "gradients":
                                env[el.value.value] = Unpacked(value, i)
                            else:
                                env[el.value.value] = Opaque()
        elif isinstance(small, (cst.AugAssign, cst.AnnAssign)):
            if isinstance(small.target, cst.Name):
                aug = isinstance(small, cst.AugAssign) or small.value is None
                env[small.target.value] = Opaque() if aug else small.value

    def _examine(self, node: cst.CSTNode, env: Env, in_fn: bool, in_graph: bool) -> None:
        # a function defined inside an expression's statement is not walked into
        # (its body runs later), a lambda is
        for n, _ in walk(node, prune=_is_function):
            kind = type(n)
            if kind is cst.BinaryOperation:
                if isinstance(n.operator, cst.Multiply):
                    self.products.append(Product(n, n.left, n.right, dict(env)))
            elif kind is cst.Call:
                self._examine_call(n, env, in_fn, in_graph)

    def _examine_call(self, n: cst.Call, env: Env, in_fn: bool, in_graph: bool) -> None:
        name = self.api(n.func)
        if name in ("multiply", "math.multiply") and len(n.args) >= 2:
            self.products.append(Product(n, n.args[0].value, n.args[1].value, dict(env)))
        # method names, told by spelling (plain tests: LibCST's matchers cost
        # more than the rest of this analysis on a large file)
        func = n.func
        method = func.attr.value if isinstance(func, cst.Attribute) else None
        if method == "gradient_override_map":
            self.override_maps.append(n)
        if method in ("gradient", "jacobian") and isinstance(func.value, cst.Name):
            for t in reversed(self.tapes):
                if t.name == func.value.value and t.rebound_after is None:
                    t.calls.append(n)
                    break
        g = self._grad_call(n) if name == "gradients" or method == "gradient" else None
        if g is not None:
            self.gradient_sites.append(GradientSite(g, dict(env), in_fn, in_graph))


#: ``isinstance(node, cst.FunctionDef)``, answered once per type (LibCST's classes are ABCs)
_is_function = instance_test(cst.FunctionDef)
_is_name_or_attribute = instance_test((cst.Name, cst.Attribute))


def _calls_numpy_method(source: Optional[str]) -> Optional[bool]:
    """Whether ``source`` calls a ``.numpy()`` method (``t.numpy()``), asked of
    Python's own parser (a matcher over the CST takes many times longer);
    None when the source is not known or Python cannot parse it."""
    if source is None:
        return None
    if "numpy" not in source:
        return False
    tree = parse(source)
    if tree is None:
        return None
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr == "numpy" for n in ast.walk(tree))


@dataclass(frozen=True, eq=False)
class Unpacked:
    """Env entry for ``g, = tf.gradients(...)``: element ``index`` of the call."""

    call: cst.Call
    index: int


@dataclass(frozen=True, eq=False)
class Opaque:
    """Env entry for a value the analysis does not follow."""


def _expressions_of(stmt: cst.BaseCompoundStatement):
    if isinstance(stmt, (cst.If, cst.While)):
        yield stmt.test
    elif isinstance(stmt, cst.For):
        yield stmt.iter


def _blocks_of(stmt: cst.BaseCompoundStatement):
    """The statement lists inside an if/for/while/try (elif chains included)."""
    if isinstance(stmt, cst.If):
        yield stmt.body.body
        if isinstance(stmt.orelse, cst.If):
            yield from _blocks_of(stmt.orelse)
        elif stmt.orelse is not None:
            yield stmt.orelse.body.body
    elif isinstance(stmt, (cst.For, cst.While)):
        yield stmt.body.body
        if stmt.orelse is not None:
            yield stmt.orelse.body.body
    elif isinstance(stmt, (cst.Try, cst.TryStar)):
        yield stmt.body.body
        for handler in stmt.handlers:
            yield handler.body.body
        if stmt.orelse is not None:
            yield stmt.orelse.body.body
        if stmt.finalbody is not None:
            yield stmt.finalbody.body.body
    elif isinstance(stmt, cst.Match):
        for case in stmt.cases:
            yield case.body.body


def names_in(value) -> set:
    """Names an env value reads."""
    if isinstance(value, Unpacked):
        value = value.call
    if isinstance(value, Opaque):
        return set()
    return {n.value for n in m.findall(value, m.Name())}
