"""Is a TF1 ``average_gradients`` helper the mean of each variable's gradients across towers?

Multi-tower TF1 programs average the towers' ``(gradient, variable)`` lists with a
helper of their own, nearly always TensorFlow's CIFAR-10 example or a close
variant::

    def average_gradients(tower_grads):
        average_grads = []
        for grad_and_vars in zip(*tower_grads):
            grads = []
            for g, _ in grad_and_vars:
                grads.append(tf.expand_dims(g, 0))
            grad = tf.reduce_mean(tf.concat(axis=0, values=grads), 0)
            v = grad_and_vars[0][1]
            average_grads.append((grad, v))
        return average_grads

The towers rule replaces the call by an all-reduce that takes the mean across
replicas, which is right only if the helper computes exactly that. This module
follows the helper's values symbolically (the towers' lists, one variable's
pairs, a tower's gradient, a list of them, stacked, averaged along the towers,
paired with the first tower's variable) and accepts the forms that compute it:
``expand_dims`` + ``concat`` (either argument order) or ``stack`` along axis 0,
then ``reduce_mean`` along axis 0, or ``add_n(...) / len(pairs)``; loops or list
comprehensions. Anything else (a ``None`` filter, clipping inside, a weighted
mean) is not recognised, and :func:`average_reason` says where.
"""

from __future__ import annotations

from typing import Callable, Dict, Optional, Sequence

import libcst as cst

from tapeshift.migrate.engine.toolkit.builders import code_of

# what a name of the helper holds
TOWERS = "the towers' lists"
PAIRS = "one variable's (gradient, variable) pairs across the towers"
GRAD = "one tower's gradient"
EXPANDED = "a tower's gradient with a towers axis"
LIST_EXPANDED = "the expanded gradients"
LIST_GRADS = "the towers' gradients"
STACKED = "the gradients stacked along the towers"
SUM = "the towers' gradients summed"
COUNT = "the number of towers"
MEAN = "the mean gradient"
VAR = "the variable"
PAIR = "(mean gradient, variable)"
EMPTY = "an empty list"
FILLED = "the list of (mean gradient, variable)"
ZIPPED = "zip(*towers)"

Api = Callable[[cst.CSTNode], Optional[str]]


class _Unknown(Exception):
    def __init__(self, node: cst.CSTNode, what: str = "") -> None:
        super().__init__(what)
        self.node = node
        self.what = what


def average_reason(fn: cst.FunctionDef, api: Api) -> Optional[str]:
    """None when ``fn`` is the mean across towers of each variable's gradients (paired with
    the first tower's variable), else what stops the reading."""
    params = fn.params
    if len(params.params) != 1 or params.star_arg not in (cst.MaybeSentinel.DEFAULT, None) \
            or params.kwonly_params or params.star_kwarg is not None:
        return "it does not take one argument, the towers' lists"
    env: Dict[str, str] = {params.params[0].name.value: TOWERS}
    body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else []
    try:
        result = _Reader(api).block(body, env, outer=True)
    except _Unknown as exc:
        text = code_of(exc.node).strip().splitlines()[0]
        return f"`{text}` {exc.what or 'is not a form the rule reads'}"
    if result != FILLED:
        return "it does not return the list of (mean gradient, variable) pairs"
    return None


class _Reader:
    def __init__(self, api: Api) -> None:
        self.api = api
        self.per_variable_loops = 0

    def block(self, body: Sequence[cst.BaseStatement], env: Dict[str, str],
              outer: bool = False) -> Optional[str]:
        for k, stmt in enumerate(body):
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    result = self.small(small, env)
                    if result is not None:
                        if not outer or k != len(body) - 1:
                            raise _Unknown(small, "returns before the end")
                        return result
            elif isinstance(stmt, cst.For):
                self.loop(stmt, env)
            else:
                raise _Unknown(stmt)
        return None

    def loop(self, stmt: cst.For, env: Dict[str, str]) -> None:
        if stmt.orelse is not None or not isinstance(stmt.body, cst.IndentedBlock):
            raise _Unknown(stmt)
        source = self.value(stmt.iter, env)
        target = stmt.target
        if source == ZIPPED and isinstance(target, cst.Name):
            self.per_variable_loops += 1
            if self.per_variable_loops > 1:
                raise _Unknown(stmt, "is a second loop over the variables")
            env[target.value] = PAIRS
            self.block(stmt.body.body, env)
            return
        if source == PAIRS and isinstance(target, (cst.Tuple, cst.List)) \
                and len(target.elements) == 2 and isinstance(target.elements[0].value, cst.Name):
            env[target.elements[0].value.value] = GRAD
            for s in stmt.body.body:
                self.block([s], env)
            env.pop(target.elements[0].value.value)
            return
        raise _Unknown(stmt)

    def small(self, small: cst.BaseSmallStatement, env: Dict[str, str]) -> Optional[str]:
        if isinstance(small, cst.Return):
            return self.value(small.value, env) if small.value is not None else None
        if isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString,
                                                                     cst.ConcatenatedString)):
            return None
        if isinstance(small, cst.Pass):
            return None
        if isinstance(small, cst.Assign) and len(small.targets) == 1 \
                and isinstance(small.targets[0].target, cst.Name):
            env[small.targets[0].target.value] = self.value(small.value, env)
            return None
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            call = small.value
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "append" \
                    and isinstance(func.value, cst.Name) and len(call.args) == 1:
                name = func.value.value
                item = self.value(call.args[0].value, env)
                before = env.get(name)
                grown = {(EMPTY, EXPANDED): LIST_EXPANDED, (LIST_EXPANDED, EXPANDED): LIST_EXPANDED,
                         (EMPTY, GRAD): LIST_GRADS, (LIST_GRADS, GRAD): LIST_GRADS,
                         (EMPTY, PAIR): FILLED}.get((before, item))  # type: ignore[arg-type]
                if grown is None:
                    raise _Unknown(small, f"appends {item} to {before}")
                env[name] = grown
                return None
        raise _Unknown(small)

    def value(self, expr: cst.BaseExpression, env: Dict[str, str]) -> str:  # noqa: C901
        if isinstance(expr, cst.Name):
            if expr.value not in env:
                raise _Unknown(expr, "is not a value of the helper")
            return env[expr.value]
        if isinstance(expr, cst.List) and not expr.elements:
            return EMPTY
        if isinstance(expr, cst.Integer):
            return expr.value
        if isinstance(expr, cst.Tuple) and len(expr.elements) == 2:
            if (self.value(expr.elements[0].value, env), self.value(expr.elements[1].value, env)) \
                    == (MEAN, VAR):
                return PAIR
            raise _Unknown(expr, "is not (mean gradient, variable)")
        if isinstance(expr, cst.Subscript):  # pairs[0][1]
            inner = expr.value
            if _index(expr) == 1 and isinstance(inner, cst.Subscript) and _index(inner) == 0 \
                    and self.value(inner.value, env) == PAIRS:
                return VAR
            raise _Unknown(expr, "is not the first tower's variable (`pairs[0][1]`)")
        if isinstance(expr, cst.ListComp):
            comp = expr.for_in
            if comp.inner_for_in is not None or comp.ifs or self.value(comp.iter, env) != PAIRS \
                    or not isinstance(comp.target, (cst.Tuple, cst.List)) \
                    or len(comp.target.elements) != 2 \
                    or not isinstance(comp.target.elements[0].value, cst.Name):
                raise _Unknown(expr)
            inner_env = dict(env)
            inner_env[comp.target.elements[0].value.value] = GRAD
            item = self.value(expr.elt, inner_env)
            if item == EXPANDED:
                return LIST_EXPANDED
            if item == GRAD:
                return LIST_GRADS
            raise _Unknown(expr)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Divide):
            if (self.value(expr.left, env), self.value(expr.right, env)) == (SUM, COUNT):
                return MEAN
            raise _Unknown(expr, "is not the towers' sum divided by their number")
        if isinstance(expr, cst.Call):
            return self.call(expr, env)
        raise _Unknown(expr)

    def call(self, call: cst.Call, env: Dict[str, str]) -> str:
        func = call.func
        args = [a.value for a in call.args if a.keyword is None]
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        if isinstance(func, cst.Name) and func.value == "zip" and len(call.args) == 1 \
                and call.args[0].star == "*" and self.value(call.args[0].value, env) == TOWERS:
            return ZIPPED
        if isinstance(func, cst.Name) and func.value == "len" and len(args) == 1 \
                and self.value(args[0], env) == PAIRS:
            return COUNT
        if isinstance(func, cst.Name) and func.value == "float" and len(args) == 1 \
                and self.value(args[0], env) == COUNT:
            return COUNT
        api = self.api(func)
        if api == "expand_dims":
            x, axis = _arg(args, keywords, 0, "input"), _arg(args, keywords, 1, "axis", "dim")
            if x is not None and self.value(x, env) == GRAD and _is_zero(axis):
                return EXPANDED
        if api == "concat":
            values = keywords.get("values")
            axis = keywords.get("axis", keywords.get("concat_dim"))
            if values is None and len(args) == 2:  # concat(values, axis) or TF 0.x concat(0, values)
                values, axis = (args[1], args[0]) if _is_zero(args[0]) else (args[0], args[1])
            elif values is None and len(args) == 1:
                values = args[0]
            elif values is not None and args and axis is None:
                axis = args[0]
            if values is not None and self.value(values, env) == LIST_EXPANDED and _is_zero(axis):
                return STACKED
        if api == "stack":
            values, axis = _arg(args, keywords, 0, "values"), _arg(args, keywords, 1, "axis")
            if values is not None and self.value(values, env) == LIST_GRADS \
                    and (axis is None or _is_zero(axis)):
                return STACKED
        if api in ("reduce_mean", "math.reduce_mean"):
            x = _arg(args, keywords, 0, "input_tensor")
            axis = _arg(args, keywords, 1, "axis", "reduction_indices")
            if x is not None and self.value(x, env) == STACKED and _is_zero(axis) \
                    and set(keywords) <= {"input_tensor", "axis", "reduction_indices", "name"}:
                return MEAN
        if api in ("add_n", "math.add_n"):
            x = _arg(args, keywords, 0, "inputs")
            if x is not None and self.value(x, env) == LIST_GRADS:
                return SUM
        raise _Unknown(call)


def _arg(args, keywords, position: int, *names: str) -> Optional[cst.BaseExpression]:
    if position < len(args):
        return args[position]
    for n in names:
        if n in keywords:
            return keywords[n]
    return None


def _is_zero(expr: Optional[cst.BaseExpression]) -> bool:
    return isinstance(expr, cst.Integer) and int(expr.value) == 0


def _index(sub: cst.Subscript) -> Optional[int]:
    if len(sub.slice) != 1 or not isinstance(sub.slice[0].slice, cst.Index):
        return None
    value = sub.slice[0].slice.value
    return int(value.value) if isinstance(value, cst.Integer) else None
