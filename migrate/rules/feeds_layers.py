"""The feeds rule and the layer objects of the model-code rule: when a layer must exist before it runs.

A Keras layer makes its variables at its first call; TF1 made them with the
graph. A step function that computes with a layer calls it before it reads its
variables, and a var_list of a layer not called in the step only lists
variables that get no gradient there. But a step that reads the variables of a
layer it does not run (a target network's soft update, ``sess.run(t_params)``)
would read nothing before the layer's first call. Such a layer is built where
it is made, by a call on a symbolic input, ``fc(tf_keras.Input([8]))`` (which
names its variables as a real call does; ``fc.build(...)`` alone would name them
``kernel``), from the size of its input read off the code: the placeholder's declared shape, the ``units`` of the layer before it,
a variable's shape, through the ops that keep the last dimension. Dense layers
and batch normalizations on rank-2 values only; another layer, or an input size
the code does not show, is reported (TS107) and the file keeps its compat form.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set

import libcst as cst

from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.walk import nodes
from tapeshift.migrate.rules.session import TS107

#: TF ops whose output has the last dimension of their first argument
_SAME_LAST = frozenset({
    "nn.relu", "nn.relu6", "nn.elu", "nn.selu", "nn.leaky_relu", "nn.softplus", "nn.softsign",
    "nn.tanh", "tanh", "math.tanh", "sigmoid", "nn.sigmoid", "math.sigmoid", "nn.softmax",
    "nn.dropout", "identity", "multiply", "math.multiply", "add", "math.add", "subtract",
    "math.subtract", "nn.bias_add", "square", "math.square", "abs", "math.abs", "clip_by_value",
    "stop_gradient", "cast", "nn.l2_normalize", "math.l2_normalize",
})
_READS = frozenset({"variables", "trainable_variables", "weights", "trainable_weights",
                    "non_trainable_variables"})


class LayerBuilds:
    """Part of :class:`tapeshift.migrate.rules.feeds.FeedsToFunctions` (state on the rule)."""

    def _layer_reads(self, node: cst.CSTNode) -> Set[str]:
        """Layers whose variables ``node`` reads (``fc.variables``)."""
        out = set()
        for n in nodes(node):
            if isinstance(n, cst.Attribute) and n.attr.value in _READS:
                ref = self._ref(n.value)
                if ref in self._layers:
                    out.add(ref)
        return out

    def _layer_calls(self, node: cst.CSTNode) -> Set[str]:
        return {self._ref(n.func) for n in nodes(node) if isinstance(n, cst.Call)
                and self._ref(n.func) in self._layers}

    def _note_unbuilt(self, step, body: List[cst.CSTNode]) -> None:
        """Layers this step reads the variables of before it runs them, except
        reads that only feed an optimizer's var_list (no gradient: no update)."""
        needs: Dict[int, Set[str]] = {}
        called: Set[str] = set()
        for j in step.statements:
            unbuilt = self._layer_reads(body[j]) - called
            if unbuilt:
                needs[j] = unbuilt
            called |= self._layer_calls(body[j])
        for j, layers in needs.items():
            if not self._only_var_lists(j, step):
                self._need_build.update(layers)

    def _only_var_lists(self, j: int, step) -> bool:
        """Statement ``j`` of ``step`` is an optimizer step, or binds what only those read."""
        if j in self._train and j not in self._assigns:
            return True
        users = [k for k in step.statements if k > j and self._stmts[k].reads & self._stmts[j].writes]
        return bool(users) and all(self._only_var_lists(k, step) for k in users)

    def _layer_builds(self, body: List[cst.CSTNode]) -> Dict[int, cst.SimpleStatementLine]:
        """statement index of a layer's creation -> ``layer(tf_keras.Input([size]))``."""
        facts = self._layer_facts
        out: Dict[int, cst.SimpleStatementLine] = {}
        for handle in sorted(self._need_build, key=lambda h: self._layers[h]):
            entry = facts.layers[handle]
            creation = self._layers[handle]
            if entry.info.get("cls") not in ("Dense", "BatchNormalization"):
                self._bail(TS107.code, body[creation], f"the variables of `{handle}` are read "
                           "where it has not run, and only a Dense or a batch normalization "
                           "layer on the output of one is built before its first call: not "
                           "converted")
            size = self._input_size(handle, body)
            if size is None:
                self._bail(TS107.code, body[creation], f"the variables of `{handle}` are read "
                           "where it has not run, and the size of its input is not in the code "
                           "(build it by hand: layer.build((None, n))): not converted")
            # called on a symbolic input: built under its name (``build`` alone would
            # name the variables ``kernel``, not ``Net/l1/kernel``)
            why = "  # built now: its variables are read before its first call" if not out else ""
            out[creation] = cst.parse_statement(f"{handle}(tf_keras.Input([{size}])){why}\n")
            self.record_change(body[creation], f"`{handle}` built where it is made "
                               f"(input size {size}): TF1 made its variables with the graph, "
                               "and they are read before its first call")
        return out

    def _input_size(self, handle: str, body: List[cst.CSTNode]) -> Optional[str]:
        for j in sorted(self._graph):
            for n in nodes(body[j]):
                if isinstance(n, cst.Call) and self._ref(n.func) == handle and n.args:
                    return self._last_dim(n.args[0].value, j, body, 0)
        return None

    def _last_dim(self, expr: cst.BaseExpression, before: int, body, depth: int) -> Optional[str]:
        """The last dimension of ``expr`` as code, read off the statements before ``before``."""
        if depth > 20:
            return None
        ref = self._ref(expr)
        if ref is not None:
            if ref in self._placeholders:
                return _declared_last(self._placeholders[ref])
            defs = [k for k in range(before) if ref in self._stmts[k].writes]
            if not defs:
                return None
            value, target = self._assignment(body[defs[-1]])
            if target != ref or value is None:
                return None
            if ref in self._var_names:
                return _variable_last(value)
            return self._last_dim(value, defs[-1], body, depth + 1)
        if isinstance(expr, cst.Call):
            handle = self._ref(expr.func)
            if handle in self._layers:
                info = self._layer_facts.layers[handle].info
                if info.get("cls") == "Dense":
                    return info.get("size")
                if info.get("cls") in ("Dropout", "BatchNormalization") and expr.args:
                    return self._last_dim(expr.args[0].value, before, body, depth + 1)
                return None
            api = self.tf_api_name(expr.func) or ""
            if api in _SAME_LAST and expr.args:
                return self._last_dim(expr.args[0].value, before, body, depth + 1)
            if api in ("matmul", "linalg.matmul") and len(expr.args) >= 2:
                return self._last_dim(expr.args[1].value, before, body, depth + 1)
            if api == "concat" and _last_axis(expr) and isinstance(expr.args[0].value, cst.List):
                parts = [self._last_dim(e.value, before, body, depth + 1)
                         for e in expr.args[0].value.elements]
                return None if None in parts or not parts else " + ".join(parts)
            return None
        if isinstance(expr, cst.BinaryOperation):
            return self._last_dim(expr.left, before, body, depth + 1) or \
                self._last_dim(expr.right, before, body, depth + 1)
        if isinstance(expr, cst.UnaryOperation):
            return self._last_dim(expr.expression, before, body, depth + 1)
        return None


def _declared_last(call: cst.Call) -> Optional[str]:
    """The last entry of a placeholder's declared ``shape``."""
    shape = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "shape"),
                 call.args[1].value if len(call.args) > 1 and call.args[1].keyword is None else None)
    if isinstance(shape, (cst.List, cst.Tuple)) and shape.elements:
        last = shape.elements[-1].value
        if not (isinstance(last, cst.Name) and last.value == "None"):
            return code_of(last)
    return None


def _variable_last(value: cst.BaseExpression) -> Optional[str]:
    """The last entry of a variable's shape: ``tf.Variable(init([3, 8]), ...)``."""
    if isinstance(value, cst.Call) and value.args:
        first = value.args[0].value
        if isinstance(first, cst.Call) and first.args and isinstance(
                first.args[0].value, (cst.List, cst.Tuple)) and first.args[0].value.elements:
            return code_of(first.args[0].value.elements[-1].value)
    return None


def _last_axis(call: cst.Call) -> bool:
    """``tf.concat(values, axis)`` joins along the last axis of rank-2 values (1 or -1)."""
    axis = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "axis"),
                call.args[1].value if len(call.args) > 1 and call.args[1].keyword is None else None)
    if isinstance(axis, cst.UnaryOperation) and isinstance(axis.operator, cst.Minus):
        return isinstance(axis.expression, cst.Integer) and axis.expression.value == "1"
    return isinstance(axis, cst.Integer) and axis.value == "1"
