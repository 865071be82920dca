"""Part of the feeds rules: functions called by graph code that read graph values as globals.

A loss builder often reads the model's tensors as module names (aymericdamien's VAE)::

    def vae_loss(x_reconstructed, x_true):
        kl_div_loss = 1 + z_std - tf.square(z_mean) - tf.exp(z_std)
        ...
    loss_op = vae_loss(decoder, input_image)

The graph statements move into step functions, where ``z_std`` and ``z_mean`` are
locals, so the function can no longer read them as globals. Each such name becomes a
parameter of the function, passed by keyword where graph code calls it
(``vae_loss(decoder, input_image, z_std=z_std, z_mean=z_mean)``). The call then reads
the binding that reaches it, which is the tensor TF1 read when the line ran.

Only a function of the session's block that graph code alone calls, and only
directly, is converted this way. It must not use ``global``/``nonlocal`` or
``**kwargs``, and each name it reads must be bound before every call. Any other
function that reads a graph value is reported, as before (TS107).
"""

from __future__ import annotations

from typing import Dict, List

import libcst as cst

from tapeshift.migrate.engine.toolkit.dataflow import last_def, names_of
from tapeshift.migrate.engine.toolkit.walk import nodes
from tapeshift.migrate.rules.feeds_steps import loaded_refs


class GraphFunctions:
    """Part of :class:`tapeshift.migrate.rules.feeds.FeedsToFunctions`: functions
    that graph code calls and that read graph values (state on the rule)."""

    def _graph_functions(self, body: List[cst.CSTNode], start: int) -> None:
        """Record in ``self._graph_params`` each function (by index) whose graph reads
        become parameters, and add those reads to the statements calling it."""
        self._graph_params: Dict[int, List[str]] = {}
        if self.BASE is not None:  # (a class's methods: the class rule reads them)
            return
        moved = self._names_of_graph() | set(self._placeholders) - set(self._settings)
        for i, node in enumerate(body[:start]):
            if not isinstance(node, cst.FunctionDef) or i in self._early_functions \
                    or node.name.value in self._builders or node.name.value in self._plain_builders:
                continue
            free = _free_reads(node, moved)
            callers = self._graph_callers(body, node.name.value) if free else None
            if not callers or any(last_def(self._stmts, name, j) < 0
                                  for j in callers for name in free):
                continue  # (TF1 raises NameError there)
            self._graph_params[i] = free
            passing = _PassNames(node.name.value, free)
            for j in callers:
                self._stmts[j].reads |= set(free)
                self._rewrites[j] = self._rewrites.get(j, body[j]).visit(passing)
            self.record_change(node, f"`{node.name.value}` reads the graph values "
                               f"{', '.join(f'`{n}`' for n in free)}: they become its parameters, "
                               "passed where graph code calls it")

    def _graph_callers(self, body: List[cst.CSTNode], name: str):
        """The graph statements calling ``name`` (None: it is referred to elsewhere,
        or otherwise than called)."""
        callers = []
        for j, stmt in enumerate(body):
            refs = [n for n, ref in loaded_refs(stmt) if ref == name]
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value == name:
                continue
            if not refs:
                continue
            if j not in self._graph:
                return None
            called = {id(c.func) for c in nodes(stmt) if isinstance(c, cst.Call)}
            if any(id(n) not in called for n in refs):
                return None
            callers.append(j)
        return callers

    def _with_passed(self, i: int, fn: cst.FunctionDef) -> cst.FunctionDef:
        """``fn`` with the graph values it reads as parameters after its own (keyword-only
        after one with a default value)."""
        added = [cst.Param(cst.Name(name)) for name in self._graph_params[i]]
        if any(p.default is not None for p in fn.params.params):
            return fn.with_changes(params=fn.params.with_changes(
                star_arg=cst.ParamStar(), kwonly_params=added))
        return fn.with_changes(params=fn.params.with_changes(
            params=[*fn.params.params, *added]))


def _free_reads(fn: cst.FunctionDef, moved) -> List[str]:
    """The names of ``moved`` that ``fn`` reads as globals, in order of first read
    (none if it declares globals or takes ``*args``/``**kwargs``)."""
    params = fn.params
    if params.star_arg not in (cst.MaybeSentinel.DEFAULT, None) or params.star_kwarg is not None \
            or params.kwonly_params or params.posonly_params:
        return []
    if any(isinstance(n, (cst.Global, cst.Nonlocal)) for n in nodes(fn.body)):
        return []
    own = {p.name.value for p in params.params} | names_of(fn.body)[1]
    out: List[str] = []
    for _, name in loaded_refs(fn.body):
        if name in moved and name not in own and name not in out:
            out.append(name)
    return out


class _PassNames(cst.CSTTransformer):
    """``f(a, b)`` -> ``f(a, b, z=z)`` for the names ``f`` now takes."""

    def __init__(self, function: str, names: List[str]) -> None:
        super().__init__()
        self._function = function
        self._names = names

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        if not (isinstance(updated_node.func, cst.Name) and updated_node.func.value == self._function):
            return updated_node
        args = list(updated_node.args)
        if args:
            args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        args += [cst.Arg(cst.Name(name), keyword=cst.Name(name),
                         equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                               whitespace_after=cst.SimpleWhitespace("")))
                 for name in self._names]
        for k in range(len(args) - 1):
            if args[k].comma is cst.MaybeSentinel.DEFAULT:
                args[k] = args[k].with_changes(
                    comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        return updated_node.with_changes(args=args)
