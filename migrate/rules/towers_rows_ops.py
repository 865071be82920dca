"""The ops :mod:`tapeshift.migrate.rules.towers_rows` knows, and what each makes of the rows of a batch.

Each table says how an op treats the rows of a batch: elementwise (each row on its
own), per example (a layer, a convolution, a per-example loss), a reduction (over
the rows: a mean or a sum; along other axes: rows again), or a mean over every
element (the ``tf.losses`` functions with their default reduction). A test checks
every name against the installed TensorFlow (``tests/migrate/rules/test_towers.py``).
:class:`OpReader` has each family's rule: what kind of value (rows, a mean or sum over
them, a constant) and what rank one call gives, given its arguments', or a
:class:`NotDistributive` saying why the op may mix the rows of the batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Protocol

import libcst as cst

from tapeshift.migrate.engine.toolkit.builders import code_of

#: the kinds of value (:mod:`tapeshift.migrate.rules.towers_rows` says what each means)
ROWS, MEAN, SUM, CONST = "rows", "mean", "sum", "const"

#: elementwise ops of one tensor (its first positional argument or this keyword)
UNARY = {name: "x" for name in (
    "nn.relu", "nn.relu6", "nn.elu", "nn.selu", "nn.softplus", "nn.softsign", "nn.leaky_relu",
    "nn.tanh", "tanh", "math.tanh", "nn.sigmoid", "sigmoid", "math.sigmoid", "exp", "math.exp",
    "log", "math.log", "log1p", "math.log1p", "square", "math.square", "sqrt", "math.sqrt",
    "rsqrt", "math.rsqrt", "abs", "math.abs", "negative", "math.negative", "sign", "math.sign",
    "identity", "stop_gradient", "cast", "to_float", "to_double", "nn.softmax", "nn.log_softmax",
    "math.softplus", "floor", "math.floor", "round", "math.round", "reciprocal", "math.reciprocal",
)}
UNARY.update({"nn.relu": "features", "nn.relu6": "features", "nn.elu": "features",
              "nn.selu": "features", "nn.softplus": "features", "nn.softsign": "features",
              "nn.leaky_relu": "features", "nn.softmax": "logits", "nn.log_softmax": "logits"})
#: unary ops that are linear: a mean or sum stays one through them
LINEAR_UNARY = frozenset({"negative", "math.negative", "identity", "stop_gradient", "cast",
                          "to_float", "to_double"})
#: elementwise ops of two tensors (x, y)
BINARY = frozenset({
    "add", "math.add", "subtract", "math.subtract", "multiply", "math.multiply", "divide",
    "math.divide", "truediv", "math.truediv", "maximum", "math.maximum", "minimum",
    "math.minimum", "pow", "math.pow", "squared_difference", "math.squared_difference",
    "equal", "math.equal", "not_equal", "math.not_equal", "greater", "math.greater", "less",
    "math.less",
})
#: per-example losses of (labels, logits): one value per row
PER_EXAMPLE_LOSSES = frozenset({
    "nn.softmax_cross_entropy_with_logits", "nn.softmax_cross_entropy_with_logits_v2",
    "nn.sparse_softmax_cross_entropy_with_logits", "nn.sigmoid_cross_entropy_with_logits",
})
#: ``tf.losses`` functions: with no ``weights`` and the default reduction, the mean
#: over every element of a per-example loss
MEAN_LOSSES = {
    "losses.mean_squared_error": ("labels", "predictions"),
    "losses.absolute_difference": ("labels", "predictions"),
    "losses.log_loss": ("labels", "predictions"),
    "losses.softmax_cross_entropy": ("onehot_labels", "logits"),
    "losses.sparse_softmax_cross_entropy": ("labels", "logits"),
    "losses.sigmoid_cross_entropy": ("multi_class_labels", "logits"),
}
#: ``tf.layers`` that compute each example on its own (their first argument: ``inputs``)
ROW_LAYERS = frozenset({
    "layers.dense", "layers.conv1d", "layers.conv2d", "layers.conv3d",
    "layers.separable_conv1d", "layers.separable_conv2d", "layers.conv2d_transpose",
    "layers.conv3d_transpose", "layers.max_pooling1d", "layers.max_pooling2d",
    "layers.max_pooling3d", "layers.average_pooling1d", "layers.average_pooling2d",
    "layers.average_pooling3d", "layers.flatten",
})
#: layers without variables (no name needed to share them)
NO_VARIABLE_LAYERS = frozenset(n for n in ROW_LAYERS if "pooling" in n or n.endswith("flatten"))
#: ops on one example at a time whose first argument is the batch and the others constants
ROW_OPS = frozenset({"nn.conv1d", "nn.conv2d", "nn.conv3d", "nn.max_pool", "nn.avg_pool",
                     "nn.max_pool2d", "nn.avg_pool2d", "nn.bias_add", "one_hot"})
MATMUL = frozenset({"matmul", "linalg.matmul"})
REDUCTIONS = {"reduce_mean": MEAN, "math.reduce_mean": MEAN, "reduce_sum": SUM,
              "math.reduce_sum": SUM}
#: reductions that are not linear: along the rows of a batch they mix examples
ROW_REDUCTIONS = frozenset({"reduce_max", "math.reduce_max", "reduce_min", "math.reduce_min",
                            "reduce_logsumexp", "math.reduce_logsumexp", "argmax", "math.argmax",
                            "argmin", "math.argmin", "reduce_prod", "math.reduce_prod"})
ADD_N = frozenset({"add_n", "math.add_n"})
VARIABLE_SCOPE, NAME_SCOPE = "variable_scope", "name_scope"
GET_VARIABLE = "get_variable"
NEW_VARIABLES = frozenset({"Variable", "VariableV1", "compat.v1.Variable"})


class NotDistributive(Exception):
    """The towers' computation is not known to distribute over the batch: why, and where."""

    def __init__(self, node: cst.CSTNode, reason: str) -> None:
        super().__init__(reason)
        self.node = node
        self.reason = reason


@dataclass(frozen=True)
class Value:
    """What an expression of the tower is: its kind, and its rank where known."""

    kind: str
    rank: Optional[int] = None


def describe(kind: str) -> str:
    return {ROWS: "the rows of the batch", MEAN: "a mean over the batch",
            SUM: "a sum over the batch", CONST: "a value that does not depend on the batch",
            }.get(kind, kind)


Env = Dict[str, Value]
Reuse = List[Optional[str]]


class TowerReader(Protocol):
    """What :class:`tapeshift.migrate.rules.towers_rows.TowerReader` lends an op's reading."""

    def _expr(self, expr: cst.BaseExpression, env: Env, reuse: Reuse) -> Value: ...

    def _arith(self, op: str, left: Value, right: Value, node: cst.CSTNode) -> Value: ...

    def _matmul(self, left: Value, right: Value, node: cst.CSTNode) -> Value: ...


class OpReader:
    """One TensorFlow call on the batch."""

    def __init__(self, reader: TowerReader, call: cst.Call, api: str, env: Env,
                 reuse: Reuse) -> None:
        self.reader, self.call, self.api, self.env, self.reuse = reader, call, api, env, reuse
        self.keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}

    def arg(self, position: int, *names: str) -> Optional[cst.BaseExpression]:
        return argument(self.call, position, *names)

    def of(self, expr: Optional[cst.BaseExpression]) -> Value:
        return Value(CONST, 0) if expr is None else self.reader._expr(expr, self.env, self.reuse)

    def others_constant(self, *used: Optional[cst.BaseExpression]) -> None:
        for a in self.call.args:
            if any(a.value is u for u in used):
                continue
            if self.of(a.value).kind != CONST:
                raise self.refuse(f"its argument `{code_of(a.value)}` depends on the batch")

    def refuse(self, why: str) -> NotDistributive:
        return NotDistributive(self.call, f"tf.{self.api}: {why}")

    def rows(self, value: Value, what: str = "its input") -> int:
        if value.kind != ROWS or value.rank is None:
            raise self.refuse(f"{what} is {describe(value.kind)}"
                              + (" of a rank this rule cannot see" if value.kind == ROWS else ""))
        return value.rank

    def axes(self, expr: Optional[cst.BaseExpression], rank: Optional[int]) -> Optional[List[int]]:
        """Constant axes made non-negative (None: every axis); refused if unknown."""
        if expr is None or (isinstance(expr, cst.Name) and expr.value == "None"):
            return None
        values = _axes(expr)
        if values is None:
            raise self.refuse(f"the axis `{code_of(expr)}` is not a constant")
        out = []
        for v in values:
            if v < 0:
                if rank is None:
                    raise self.refuse(f"axis {v} of a tensor whose rank this rule cannot see "
                                      "(of a [B] tensor it is the batch)")
                v += rank
            out.append(v)
        return out

    def value(self) -> Value:  # noqa: C901 - one branch per family of ops
        api = self.api
        if api in UNARY:
            x = self.arg(0, "x", UNARY[api], "features", "logits", "input")
            value = self.of(x)
            if api in ("nn.softmax", "nn.log_softmax"):
                axis = self.arg(1, "axis", "dim")
                rank = self.rows(value)
                axes = self.axes(axis, rank) or [rank - 1]
                if 0 in axes:
                    raise self.refuse("along the rows of the batch")
            self.others_constant(x)
            if value.kind in (MEAN, SUM) and api not in LINEAR_UNARY:
                raise self.refuse(f"of {describe(value.kind)}: not linear, so the towers' "
                                  "average is not the whole batch's value")
            return value
        if api == "clip_by_value":
            x = self.arg(0, "t")
            self.others_constant(x)
            value = self.of(x)
            self.rows(value)
            return value
        if api in BINARY:
            x, y = self.arg(0, "x"), self.arg(1, "y")
            self.others_constant(x, y)
            left, right = self.of(x), self.of(y)
            op = "+" if "add" in api else "-" if "subtract" in api else \
                "/" if "div" in api else "*" if "multiply" in api else "elementwise"
            if op == "elementwise":
                if {left.kind, right.kind} <= {ROWS, CONST}:
                    return self.reader._arith("*", left, right, self.call)
                raise self.refuse(f"of {describe(left.kind)} and {describe(right.kind)}: not linear")
            return self.reader._arith(op, left, right, self.call)
        if api in ADD_N:
            inputs = self.arg(0, "inputs")
            if not isinstance(inputs, (cst.List, cst.Tuple)) or not inputs.elements:
                raise self.refuse("of a list this rule cannot see")
            values = [self.of(e.value) for e in inputs.elements]
            result = values[0]
            for value in values[1:]:
                result = self.reader._arith("+", result, value, self.call)
            return result
        if api in MATMUL:
            a, b = self.arg(0, "a"), self.arg(1, "b")
            for flag in ("transpose_a", "adjoint_a", "a_is_sparse"):
                if flag in self.keywords:
                    raise self.refuse(f"{flag}= on the batch is not read")
            self.others_constant(a, b)
            return self.reader._matmul(self.of(a), self.of(b), self.call)
        if api in REDUCTIONS or api in ROW_REDUCTIONS:
            return self.reduction()
        if api in PER_EXAMPLE_LOSSES:
            labels, logits = self.keywords.get("labels"), self.keywords.get("logits")
            if labels is None or logits is None:
                raise self.refuse("without labels= and logits=")
            self.others_constant(labels, logits)
            rank = self.rows(self.of(logits), "its logits")
            if rank < 2:
                raise self.refuse("logits of rank 1: the softmax would run along the batch")
            label_rank = self.rows(self.of(labels), "its labels")
            sparse = "sparse" in api
            if label_rank != (rank - 1 if sparse else rank):
                raise self.refuse(f"labels of rank {label_rank} for logits of rank {rank}")
            return Value(ROWS, rank if "sigmoid" in api else rank - 1)
        if api in MEAN_LOSSES:
            first, second = MEAN_LOSSES[api]
            labels, predictions = self.arg(0, first), self.arg(1, second)
            extra = set(self.keywords) - {first, second, "scope", "loss_collection"}
            positional = [a for a in self.call.args if a.keyword is None]
            if extra or len(positional) > 2 or labels is None or predictions is None:
                raise self.refuse("with weights or another reduction: only the default (the "
                                  "mean over every element) is read")
            label_rank = self.rows(self.of(labels), "its labels")
            rank = self.rows(self.of(predictions), "its predictions")
            if label_rank != (rank - 1 if "sparse" in api else rank):
                raise self.refuse(f"labels of rank {label_rank} for predictions of rank {rank}")
            return Value(MEAN)
        if api in ROW_LAYERS or api in ROW_OPS:
            x = self.arg(0, "inputs", "input", "value", "indices", "x")
            self.others_constant(x)
            rank = self.rows(self.of(x))
            if api == "layers.flatten":
                return Value(ROWS, 2)
            if api == "one_hot":
                return Value(ROWS, rank + 1)
            return Value(ROWS, rank)
        if api == "concat":
            values, axis = self.arg(0, "values"), self.arg(1, "axis")
            if not isinstance(values, (cst.List, cst.Tuple)) or not values.elements:
                raise self.refuse("of a list this rule cannot see")
            ranks = {self.rows(self.of(e.value)) for e in values.elements}
            if len(ranks) != 1:
                raise self.refuse("of tensors of different ranks")
            rank = ranks.pop()
            axes = self.axes(axis, rank)
            if axes is None or 0 in axes:
                raise self.refuse("along the rows of the batch")
            return Value(ROWS, rank)
        if api == "expand_dims":
            x, axis = self.arg(0, "input"), self.arg(1, "axis")
            self.others_constant(x)
            rank = self.rows(self.of(x))
            axes = self.axes(axis, rank + 1)
            if axes is None or 0 in axes:
                raise self.refuse("before the rows of the batch")
            return Value(ROWS, rank + 1)
        if api in ("reshape", "manip.reshape"):
            x, shape = self.arg(0, "tensor"), self.arg(1, "shape")
            self.others_constant(x, shape)
            self.rows(self.of(x))
            if isinstance(shape, (cst.List, cst.Tuple)) and shape.elements \
                    and _int_value(shape.elements[0].value) == -1:
                return Value(ROWS, len(shape.elements))  # a shard that cannot fill them raises
            raise self.refuse("to a shape that does not start with -1: it may mix the rows")
        raise self.refuse("not an op this rule knows to compute each row of the batch on its own")

    def reduction(self) -> Value:
        api = self.api
        x = self.arg(0, "input_tensor", "x")
        axis = self.arg(1, "axis")
        if axis is None:
            axis = self.keywords.get("reduction_indices")
        value = self.of(x)
        self.others_constant(x, axis)
        if value.kind in (MEAN, SUM) and api in REDUCTIONS:
            return Value(value.kind)  # a mean (sum) of means (sums) is one
        rank = self.rows(value)
        axes = self.axes(axis, rank)
        keep = self.keywords.get("keepdims", self.keywords.get("keep_dims"))
        if axes is not None and 0 not in axes:
            kept = keep is not None and code_of(keep) == "True"
            return Value(ROWS, rank if kept else rank - len(set(axes)))
        if api in ROW_REDUCTIONS:
            raise self.refuse("across the rows of the batch: not a mean or a sum, so the "
                              "towers' average is not the whole batch's value")
        return Value(REDUCTIONS[api])


def argument(call: cst.Call, position: int, *names: str) -> Optional[cst.BaseExpression]:
    positional = [a for a in call.args if a.keyword is None]
    if position < len(positional):
        return positional[position].value
    for a in call.args:
        if a.keyword is not None and a.keyword.value in names:
            return a.value
    return None


def _int_value(expr: cst.BaseExpression) -> Optional[int]:
    if isinstance(expr, cst.Integer):
        return int(expr.value)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus) \
            and isinstance(expr.expression, cst.Integer):
        return -int(expr.expression.value)
    return None


def _axes(expr: cst.BaseExpression) -> Optional[List[int]]:
    if isinstance(expr, (cst.List, cst.Tuple)):
        values = [_int_value(e.value) for e in expr.elements]
        return None if any(v is None for v in values) else values  # type: ignore[return-value]
    value = _int_value(expr)
    return None if value is None else [value]
