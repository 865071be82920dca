"""What a tower computes, read from its source: rows of the batch, or a mean or sum over them.

The towers rule (:mod:`tapeshift.migrate.rules.towers`) replaces TF1's towers,
each computing its loss on one split of the batch, by replicas computing the same
function on shards of another size (all the batch on one device, half of it on
each of two ...). That keeps TF1's numbers only when the tower function
*distributes over the batch*: computed on the whole batch, it gives what the
towers gave together. This module reads the tower function (and the module
functions it calls) and says which of three kinds its value is, or why it
cannot tell:

``ROWS``
    a tensor whose first axis is the batch, each row computed from the same row
    of the inputs (or from a whole number of rows, as ``reshape([-1, ...])``
    regroups them): computed on a concatenation of shards, it is the
    concatenation of the shards' values;
``MEAN``
    a mean over the rows of a ``ROWS`` value (``tf.reduce_mean``, the
    ``tf.losses`` functions), then anything linear in it (a sum of means, a mean
    times a constant, plus a constant such as a weight penalty): on ``R`` equal
    shards it is the mean of the shards' values;
``SUM``
    a sum over the rows (``tf.reduce_sum``), then anything linear in it without a
    constant term: on shards, the sum of the shards' values;
``CONST``
    no dependence on the batch (variables, hyper-parameters, penalties on
    weights).

Ranks are followed where the source shows them (a placeholder's shape, a
variable's, a layer's output), because broadcasting can turn rows into pairs of
rows: ``pred - y`` with ``pred`` of shape ``[B, 1]`` and ``y`` of shape ``[B]`` is
``[B, B]``, every prediction against every label, which no split of the batch
keeps. A negative axis needs a known rank (``axis=-1`` of a ``[B]`` tensor is the
batch). Anything else (batch statistics, slices of rows, ``tf.shape`` of the
batch, random draws such as dropout, batch normalization, ops this module does
not know, a rank it cannot see) is a :class:`NotDistributive` with the node and
the reason, and the towers stay as they are. The same walk checks that the towers share their variables: every
``tf.get_variable`` and ``tf.layers`` call must be reached by the towers after
the first in a reusing scope (``reuse=True``, ``tf.AUTO_REUSE``, the loop's
``reuse_variables()``) under a constant name, and no ``tf.Variable`` is made
in a tower (each tower would make its own).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst

from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.walk import children, nodes
from tapeshift.migrate.rules.session import RANDOM
from tapeshift.migrate.rules.towers_rows_ops import (
    CONST, GET_VARIABLE, MEAN, NAME_SCOPE, NEW_VARIABLES, NO_VARIABLE_LAYERS, REDUCTIONS,
    ROW_LAYERS, ROWS, SUM, VARIABLE_SCOPE, NotDistributive, OpReader, Value, argument, describe)

__all__ = ["ROWS", "MEAN", "SUM", "CONST", "REUSE", "AUTO", "NotDistributive", "Value",
           "Reading", "TowerReader"]

#: the reuse of a variable scope as the towers after the first see it
REUSE, AUTO = "reuse", "auto"

@dataclass
class Reading:
    """What the tower function was found to compute."""

    kind: str  # MEAN or SUM
    #: the variables and layers the towers share, as code (``tf.get_variable("w")``)
    shared: List[str] = field(default_factory=list)


Env = Dict[str, Value]
Reuse = List[Optional[str]]


class TowerReader:
    """Reads the tower function a call names, called with arguments of given :class:`Value`.

    ``api_name(node)``: the TensorFlow API name a node refers to (None if not
    TensorFlow); ``functions``: the module's functions by name; ``batch_globals``:
    module names whose values are made from fed or read data (a tower that read
    one would read all of the batch); ``global_ranks``: module names of constant
    rank (numbers: 0); ``loop_reuse``: the reuse the towers after the first get
    from the loop (REUSE, AUTO or None).
    """

    MAX_DEPTH = 8

    def __init__(self, api_name: Callable[[cst.CSTNode], Optional[str]],
                 functions: Dict[str, cst.FunctionDef], batch_globals: Set[str],
                 global_ranks: Dict[str, int], loop_reuse: Optional[str]) -> None:
        self._api = api_name
        self._functions = functions
        self._batch_globals = batch_globals
        self._global_ranks = global_ranks
        self._loop_reuse = loop_reuse
        self._stack: List[str] = []
        self.shared: List[str] = []

    # -- functions ---------------------------------------------------------
    def read(self, call: cst.Call, args: Sequence[Tuple[Optional[str], Value]]) -> Reading:
        """``call`` (of a module function) with arguments ``(keyword or None, value)``."""
        value = self._call_function(call, args, [self._loop_reuse])
        if value.kind not in (MEAN, SUM):
            raise NotDistributive(call, f"the tower's value is {describe(value.kind)}, not a "
                                  "mean or a sum over its rows of the batch: what the towers' "
                                  "average gradient is then depends on how the batch is split")
        return Reading(value.kind, list(self.shared))

    def _call_function(self, call: cst.Call, args: Sequence[Tuple[Optional[str], Value]],
                       reuse: Reuse) -> Value:
        name = call.func.value  # type: ignore[attr-defined]
        fn = self._functions[name]
        if name in self._stack or len(self._stack) >= self.MAX_DEPTH:
            raise NotDistributive(call, f"`{name}` calls itself or nests too deep to read")
        params = fn.params
        if isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None \
                or params.kwonly_params or params.posonly_params:
            raise NotDistributive(fn, f"`{name}` takes *args, **kwargs or keyword-only "
                                  "parameters: its arguments cannot be followed")
        names = [p.name.value for p in params.params]
        env: Env = {}
        for p in params.params:  # defaults are constants
            env[p.name.value] = Value(CONST, self._const_rank(p.default, {}) if p.default else None)
        given: Set[str] = set()
        for k, (keyword, value) in enumerate(args):
            target = names[k] if keyword is None and k < len(names) else keyword
            if target is None or target not in env or target in given:
                raise NotDistributive(call, f"the arguments of this call do not match `{name}`'s "
                                      "parameters")
            env[target] = value
            given.add(target)
        missing = [p.name.value for p in params.params if p.default is None
                   and p.name.value not in given]
        if missing:
            raise NotDistributive(call, f"`{name}` is called without {', '.join(missing)}")
        self._stack.append(name)
        try:
            body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else []
            result = self._block(body, env, reuse)
        finally:
            self._stack.pop()
        if result is None:
            raise NotDistributive(fn, f"`{name}` does not end with a `return` of a value")
        return result

    def _block(self, body: Sequence[cst.BaseStatement], env: Env, reuse: Reuse) -> Optional[Value]:
        """The value the block returns (None: it does not return)."""
        for k, stmt in enumerate(body):
            last = k == len(body) - 1
            result: Optional[Value] = None
            if isinstance(stmt, cst.SimpleStatementLine):
                for j, small in enumerate(stmt.body):
                    result = self._small(small, env, reuse)
                    if result is not None and j != len(stmt.body) - 1:
                        break
            elif isinstance(stmt, cst.With):
                inner = self._with(stmt, reuse)
                result = self._block(stmt.body.body if isinstance(stmt.body, cst.IndentedBlock)
                                     else [], env, inner)
            else:
                raise NotDistributive(stmt, f"a `{type(stmt).__name__}` statement in a tower: "
                                      "only assignments, variable and name scopes and one "
                                      "`return` at the end are read")
            if result is not None:
                if not last:
                    raise NotDistributive(stmt, "a `return` before the end of the function")
                return result
        return None

    def _with(self, stmt: cst.With, reuse: Reuse) -> Reuse:
        out = list(reuse)
        for item in stmt.items:
            call = item.item
            api = self._api(call.func) if isinstance(call, cst.Call) else None
            if api not in (VARIABLE_SCOPE, NAME_SCOPE) or item.asname is not None:
                raise NotDistributive(item, f"`with {code_of(call)}` in a tower: only "
                                      "`tf.variable_scope(\"name\", reuse=...)` and "
                                      "`tf.name_scope(\"name\")` are read")
            assert isinstance(call, cst.Call)
            positional = [a for a in call.args if a.keyword is None]
            keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
            named = positional[0].value if positional else keywords.get("name_or_scope",
                                                                         keywords.get("name"))
            if not isinstance(named, cst.SimpleString) or len(positional) > 1:
                raise NotDistributive(call, f"`{code_of(call)}`: a scope in a tower must be "
                                      "named by one string (a computed name may differ per tower)")
            unknown = set(keywords) - {"reuse", "values", "name_or_scope", "name"}
            if unknown:
                raise NotDistributive(call, f"`{code_of(call)}`: the scope's "
                                      f"{', '.join(sorted(unknown))} cannot be read here")
            if api == VARIABLE_SCOPE and "reuse" in keywords:
                out.append(self._reuse_value(keywords["reuse"], out[-1]))
            else:
                out.append(out[-1])
        return out

    def _reuse_value(self, value: cst.BaseExpression, inherited: Optional[str]) -> Optional[str]:
        if isinstance(value, cst.Name) and value.value == "True":
            return REUSE
        if isinstance(value, cst.Name) and value.value in ("None", "False"):
            return inherited  # TF1: None and False inherit the parent's reuse
        if self._api(value) == "AUTO_REUSE":
            return AUTO
        raise NotDistributive(value, f"`reuse={code_of(value)}` in a tower: only True, "
                              "tf.AUTO_REUSE, None and False are read")

    # -- statements --------------------------------------------------------
    def _small(self, small: cst.BaseSmallStatement, env: Env, reuse: Reuse) -> Optional[Value]:
        if isinstance(small, cst.Return):
            if small.value is None:
                raise NotDistributive(small, "the tower returns nothing")
            return self._expr(small.value, env, reuse)
        if isinstance(small, cst.Pass):
            return None
        if isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString,
                                                                     cst.ConcatenatedString)):
            return None  # a docstring
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            target = small.targets[0].target
            if isinstance(target, cst.Name):
                env[target.value] = self._expr(small.value, env, reuse)
                return None
            if isinstance(target, (cst.Tuple, cst.List)) \
                    and isinstance(small.value, (cst.Tuple, cst.List)) \
                    and len(target.elements) == len(small.value.elements) \
                    and all(isinstance(e.value, cst.Name) for e in target.elements):
                values = [self._expr(e.value, env, reuse) for e in small.value.elements]
                for e, value in zip(target.elements, values):
                    env[e.value.value] = value  # type: ignore[attr-defined]
                return None
        if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name) \
                and type(small.operator) in _AUG:
            name = small.target.value
            if name not in env:
                raise NotDistributive(small, f"`{name}` is updated before it is set in the tower")
            env[name] = self._arith(_AUG[type(small.operator)], env[name],
                                    self._expr(small.value, env, reuse), small)
            return None
        raise NotDistributive(small, f"`{code_of(small)}` in a tower: only assignments and one "
                              "`return` are read (a statement run for its effect would run once "
                              "per tower in TF1)")

    # -- expressions -------------------------------------------------------
    def _expr(self, expr: cst.BaseExpression, env: Env, reuse: Reuse) -> Value:
        self._check_calls(expr, reuse)
        if not self._depends_on_batch(expr, env):
            return Value(CONST, self._const_rank(expr, env))
        return self._batch_expr(expr, env, reuse)

    def _check_calls(self, expr: cst.CSTNode, reuse: Reuse) -> None:
        """Random draws, new variables and shared ones anywhere in ``expr`` (a variable's
        initial value is drawn once, where it is made: not a draw of each step)."""
        todo = [expr]
        while todo:
            node = todo.pop()
            api = self._api(node.func) if isinstance(node, cst.Call) else None
            if api is None:
                todo.extend(reversed(children(node)))
                continue
            assert isinstance(node, cst.Call)
            if api in NEW_VARIABLES:
                raise NotDistributive(node, "tf.Variable in a tower makes a new variable in each "
                                      "tower (get_variable under reuse would share it)")
            if "initializer" in api:
                continue
            if api in RANDOM or api.startswith("random") or ".random" in api \
                    or "batch_norm" in api or "dropout" in api:
                raise NotDistributive(node, f"tf.{api} in a tower: each replica would draw its "
                                      "own numbers or use its own batch statistics, unlike "
                                      "TF1's towers")
            if api == GET_VARIABLE:
                self._shared(node, api, reuse)
                continue  # its arguments make its initial value, once
            if api in ROW_LAYERS and api not in NO_VARIABLE_LAYERS:
                self._shared(node, api, reuse)
            todo.extend(reversed(children(node)))

    def _shared(self, call: cst.Call, api: str, reuse: Reuse) -> None:
        """A variable or layer every tower must share."""
        own = None
        name = None
        for k, arg in enumerate(call.args):
            if arg.keyword is not None and arg.keyword.value == "reuse":
                own = self._reuse_value(arg.value, None)
            if arg.keyword is not None and arg.keyword.value == "name":
                name = arg.value
            if api == GET_VARIABLE and arg.keyword is None and k == 0:
                name = arg.value
        if not isinstance(name, cst.SimpleString):
            raise NotDistributive(call, f"tf.{api} in a tower without a constant name: TF1 names "
                                  "it anew in each tower (`dense`, `dense_1`), so the towers "
                                  "may not share it")
        if (own or reuse[-1]) not in (REUSE, AUTO):
            raise NotDistributive(call, f"tf.{api}({code_of(name)}) is not reused by the towers "
                                  "after the first (no reuse=True, tf.AUTO_REUSE or "
                                  "reuse_variables() reaches it): TF1 would make it again, or fail")
        shared = f"tf.{api}({code_of(name)})"
        if shared not in self.shared:
            self.shared.append(shared)

    def _depends_on_batch(self, expr: cst.CSTNode, env: Env) -> bool:
        for node in nodes(expr):
            if isinstance(node, cst.Name):
                value = env.get(node.value)
                if value is not None and value.kind != CONST:
                    return True
                if value is None and node.value in self._batch_globals:
                    raise NotDistributive(node, f"the tower reads `{node.value}`, made from the "
                                          "whole fed batch outside the towers")
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) \
                    and node.func.value in self._functions:
                return True  # a module function: read it (it may make variables)
        return False

    def _const_rank(self, expr: cst.BaseExpression, env: Env) -> Optional[int]:
        if isinstance(expr, (cst.Integer, cst.Float)):
            return 0
        if isinstance(expr, cst.UnaryOperation):
            return self._const_rank(expr.expression, env)
        if isinstance(expr, cst.Name):
            if expr.value in env:
                return env[expr.value].rank
            return self._global_ranks.get(expr.value)
        if isinstance(expr, cst.BinaryOperation) and not isinstance(expr.operator,
                                                                    cst.MatrixMultiply):
            left, right = self._const_rank(expr.left, env), self._const_rank(expr.right, env)
            return None if left is None or right is None else max(left, right)
        if isinstance(expr, cst.Call):
            api = self._api(expr.func)
            if api == GET_VARIABLE:
                shape = argument(expr, 1, "shape")
                if isinstance(shape, (cst.List, cst.Tuple)):
                    return len(shape.elements)
            if api in ("nn.l2_loss",) or (api in REDUCTIONS and argument(expr, 1, "axis") is None
                                          and argument(expr, 1, "reduction_indices") is None):
                return 0
        return None

    def _batch_expr(self, expr: cst.BaseExpression, env: Env, reuse: Reuse) -> Value:
        if isinstance(expr, cst.Name):
            return env[expr.value]
        if isinstance(expr, cst.BinaryOperation):
            left = self._expr(expr.left, env, reuse)
            right = self._expr(expr.right, env, reuse)
            if isinstance(expr.operator, cst.MatrixMultiply):
                return self._matmul(left, right, expr)
            op = _BINARY_OPS.get(type(expr.operator))
            if op is None:
                raise NotDistributive(expr, f"`{code_of(expr.operator).strip()}` of the batch "
                                      "is not read")
            return self._arith(op, left, right, expr)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
            return self._expr(expr.expression, env, reuse)
        if isinstance(expr, cst.Call):
            return self._call(expr, env, reuse)
        raise NotDistributive(expr, f"`{code_of(expr)}`: this expression of the batch is not "
                              "read (slices, attributes and subscripts of rows may mix them)")

    def _arith(self, op: str, left: Value, right: Value, node: cst.CSTNode) -> Value:
        kinds = {left.kind, right.kind}
        if kinds == {CONST}:
            return Value(CONST, None if left.rank is None or right.rank is None
                         else max(left.rank, right.rank))
        if kinds <= {ROWS, CONST}:
            return Value(ROWS, self._broadcast(left, right, node))
        if op in ("+", "-"):
            if kinds == {MEAN} or kinds == {MEAN, CONST}:
                return Value(MEAN)  # a constant term: the same on every shard, averaged
            if kinds == {SUM}:
                return Value(SUM)
        if op == "*" and CONST in kinds and len(kinds) == 2 and kinds - {CONST} <= {MEAN, SUM}:
            return Value((kinds - {CONST}).pop())
        if op == "/" and right.kind == CONST and left.kind in (MEAN, SUM):
            return left
        raise NotDistributive(node, f"{describe(left.kind)} {op} {describe(right.kind)}: not "
                              "linear in the batch, so the towers' average is not the whole "
                              "batch's value")

    def _broadcast(self, left: Value, right: Value, node: cst.CSTNode) -> int:
        """The rank of an elementwise op of rows (with rows or a constant), when the rows
        stay first: equal ranks of rows, a constant of no higher rank."""
        rows = [v for v in (left, right) if v.kind == ROWS]
        consts = [v for v in (left, right) if v.kind == CONST]
        ranks = {v.rank for v in rows}
        if None in ranks or len(ranks) != 1:
            shown = " and ".join("?" if v.rank is None else str(v.rank) for v in rows)
            raise NotDistributive(node, f"an elementwise op of rows of the batch of rank {shown}: "
                                  "unless both have one known rank, broadcasting may pair every "
                                  "row with every other ([B, 1] - [B] is [B, B])")
        rank = ranks.pop()
        assert rank is not None
        for c in consts:
            if c.rank is None or c.rank > rank:
                raise NotDistributive(node, "an elementwise op of the batch's rows and a value "
                                      "whose rank this rule cannot see (or higher than theirs): "
                                      "broadcasting could move the rows off the first axis")
        return rank

    def _matmul(self, left: Value, right: Value, node: cst.CSTNode) -> Value:
        if left.kind == ROWS and right.kind == CONST and left.rank is not None and left.rank >= 2 \
                and (right.rank is None or right.rank == 2):
            return Value(ROWS, left.rank)
        if left.kind == CONST and right.kind == CONST:
            return Value(CONST)
        raise NotDistributive(node, f"a matrix product of {describe(left.kind)} and "
                              f"{describe(right.kind)}: only rows (of a known rank) times a "
                              "matrix of weights keeps the rows apart")

    def _call(self, call: cst.Call, env: Env, reuse: Reuse) -> Value:
        if any(a.star for a in call.args):
            raise NotDistributive(call, "*args in a call on the batch are not followed")
        if isinstance(call.func, cst.Name) and call.func.value in self._functions:
            args = [(a.keyword.value if a.keyword is not None else None,
                     self._expr(a.value, env, reuse)) for a in call.args]
            return self._call_function(call, args, reuse)
        api = self._api(call.func)
        if api is None:
            raise NotDistributive(call, f"`{code_of(call.func)}` on the batch: not a TensorFlow "
                                  "op this rule knows")
        return OpReader(self, call, api, env, reuse).value()


_BINARY_OPS = {cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.Divide: "/",
               cst.Power: "**"}
_AUG = {cst.AddAssign: "+", cst.SubtractAssign: "-", cst.MultiplyAssign: "*",
        cst.DivideAssign: "/"}
