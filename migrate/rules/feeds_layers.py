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
from tapeshift.migrate.engine.toolkit.dataflow import block_info
from tapeshift.migrate.engine.toolkit.kinds import VARIABLE_MAKERS
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

    def _outside_layer_reads(self) -> Set[str]:
        """Layers whose variables code outside the block reads (the class rule's: module
        code reading an object's layer)."""
        return set()

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

    def _layer_builds(self, body: List[cst.CSTNode]) -> Dict[int, List[cst.SimpleStatementLine]]:
        """statement index of a layer's creation (-1: made before the block, by the
        model-code rule, for a model function) -> ``layer(tf_keras.Input([size]))``
        right after it (at the block's start for -1)."""
        facts = self._layer_facts
        out: Dict[int, List[cst.SimpleStatementLine]] = {}
        for handle in sorted(self._need_build,
                             key=lambda h: (self._layers[h], self._layer_order.get(h, 0))):
            entry = facts.layers[handle]
            creation = self._layers[handle]
            where = body[max(creation, 0)]
            if entry.info.get("cls") not in ("Dense", "BatchNormalization"):
                self._bail(TS107.code, where, f"the variables of `{handle}` are read "
                           "where it has not run, and only a Dense or a batch normalization "
                           "layer on the output of one is built before its first call: not "
                           "converted")
            size = self._input_size(handle, body)
            if size is None or not self._known_at(size, creation):
                self._bail(TS107.code, where, f"the variables of `{handle}` are read "
                           "where it has not run, and the size of its input is not in the code "
                           "(build it by hand: layer.build((None, n))): not converted")
            # called on a symbolic input: built under its name (``build`` alone would
            # name the variables ``kernel``, not ``Net/l1/kernel``)
            why = "  # built now: its variables are read before its first call" if not out else ""
            out.setdefault(creation, []).append(
                cst.parse_statement(f"{handle}(tf_keras.Input([{size}])){why}\n"))
            self.record_change(where, f"`{handle}` built where it is made "
                               f"(input size {size}): TF1 made its variables with the graph, "
                               "and they are read before its first call")
        return out

    def _known_at(self, size: str, creation: int) -> bool:
        """The names ``size`` reads are bound when the build after statement
        ``creation`` runs: none is bound by the block after it (its parameters and
        the module's names are)."""
        reads = {n.value for n in nodes(cst.parse_expression(size)) if isinstance(n, cst.Name)}
        later = set()
        for st in self._stmts[creation + 1:]:
            later |= st.writes
        return not reads & (later | set(self._placeholders))

    def _input_size(self, handle: str, body: List[cst.CSTNode]) -> Optional[str]:
        """The last dimension of the input of the first call of ``handle``: in the
        graph statements, or in a model function they call (the model-code rule's:
        the layer made before its first call, called in its body)."""
        for j in sorted(self._graph):
            for n in nodes(body[j]):
                if isinstance(n, cst.Call) and self._ref(n.func) == handle and n.args:
                    return self._last_dim(n.args[0].value, self._block_names(j, body), 0)
        facts = self._layer_facts
        functions = {fn.name.value: fn for fn in getattr(self, "_module_node", cst.Module([])).body
                     if isinstance(fn, cst.FunctionDef) and facts is not None
                     and fn.name.value in facts.functions}
        for j in sorted(self._graph):
            for n in nodes(body[j]):
                if isinstance(n, cst.Call) and isinstance(n.func, cst.Name) \
                        and n.func.value in functions:
                    size = self._size_in_function(handle, functions[n.func.value], n, j, body)
                    if size is not None:
                        return size
        return None

    def _size_in_function(self, handle: str, fn: cst.FunctionDef, call: cst.Call, j: int,
                          body: List[cst.CSTNode]) -> Optional[str]:
        stmts = block_info(fn.body.body)
        for k, stmt in enumerate(fn.body.body):
            for n in nodes(stmt):
                if isinstance(n, cst.Call) and self._ref(n.func) == handle and n.args:
                    names = self._function_names(fn, stmts, k, call, self._block_names(j, body))
                    return self._last_dim(n.args[0].value, names, 0)
        return None

    # -- what a name holds where a layer is called: (kind, expression, the names
    # -- there) with kind "placeholder", "variable" (its tf.Variable call) or "value"
    def _block_names(self, before: int, body: List[cst.CSTNode]):
        def resolve(ref: str):
            if ref in self._placeholders:
                return "placeholder", self._placeholders[ref], None
            defs = [k for k in range(before) if ref in self._stmts[k].writes]
            if not defs:
                return self._module_names()(ref)
            value, target = self._assignment(body[defs[-1]])
            if target != ref or value is None:
                return None
            if ref in self._var_names:
                return "variable", value, None
            return "value", value, self._block_names(defs[-1], body)
        return resolve

    def _function_names(self, fn: cst.FunctionDef, stmts, before: int, call: cst.Call, outer):
        """Names in the body of ``fn`` (called as ``call`` where ``outer`` resolves names)."""
        params = [p.name.value for p in fn.params.params]

        def resolve(ref: str):
            defs = [k for k in range(before) if ref in stmts[k].writes]
            if defs:
                stmt = fn.body.body[defs[-1]]
                small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) \
                    and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign) else None
                if small is None or len(small.targets) != 1 \
                        or not isinstance(small.targets[0].target, cst.Name):
                    return None
                return "value", small.value, self._function_names(fn, stmts, defs[-1], call, outer)
            if ref in params:
                k = params.index(ref)
                arg = next((a.value for a in call.args if a.keyword is not None
                            and a.keyword.value == ref), None)
                if arg is None and k < len(call.args) and call.args[k].keyword is None:
                    arg = call.args[k].value
                return None if arg is None else ("value", arg, outer)
            return self._module_names()(ref)
        return resolve

    def _module_names(self):
        """Module-level ``name = tf.Variable(...)`` (what the model-code rule made)."""
        def resolve(ref: str):
            for stmt in getattr(self, "_module_node", cst.Module([])).body:
                value, target = self._assignment(stmt)
                if target == ref and isinstance(value, cst.Call) \
                        and self.tf_api_name(value.func) in VARIABLE_MAKERS:
                    return "variable", value, None
            return None
        return resolve

    def _last_dim(self, expr: cst.BaseExpression, names, depth: int) -> Optional[str]:
        """The last dimension of ``expr`` as code; ``names`` resolves the names in it."""
        if depth > 20:
            return None
        ref = self._ref(expr)
        if ref is not None:
            held = names(ref)
            if held is None:
                return None
            kind, value, inner = held
            if kind == "placeholder":
                return _literal(_declared_last(value), names)
            if kind == "variable":
                return _literal(_variable_last(value), names)
            return self._last_dim(value, inner, depth + 1)
        if isinstance(expr, cst.Call):
            handle = self._ref(expr.func)
            facts = self._layer_facts
            if handle in self._layers or facts is not None and handle in facts.layers:
                info = facts.layers[handle].info
                if info.get("cls") == "Dense":
                    return info.get("size")
                if info.get("cls") in ("Dropout", "BatchNormalization") and expr.args:
                    return self._last_dim(expr.args[0].value, names, depth + 1)
                return None
            api = self.tf_api_name(expr.func) or ""
            if api in _SAME_LAST and expr.args:
                return self._last_dim(expr.args[0].value, names, depth + 1)
            if api == "one_hot":  # (axis=-1, the default: depth is the last dimension)
                args = {a.keyword.value if a.keyword else ("indices", "depth")[k]: a.value
                        for k, a in enumerate(expr.args) if a.keyword or k < 2}
                if "depth" in args and "axis" not in args:
                    return _literal(code_of(args["depth"]), names)
                return None
            if api in ("matmul", "linalg.matmul") and len(expr.args) >= 2:
                return self._last_dim(expr.args[1].value, names, depth + 1)
            if api == "concat" and _last_axis(expr) and isinstance(expr.args[0].value, cst.List):
                parts = [self._last_dim(e.value, names, depth + 1)
                         for e in expr.args[0].value.elements]
                return None if None in parts or not parts else " + ".join(parts)
            return None
        if isinstance(expr, cst.BinaryOperation):
            return self._last_dim(expr.left, names, depth + 1) or \
                self._last_dim(expr.right, names, depth + 1)
        if isinstance(expr, cst.UnaryOperation):
            return self._last_dim(expr.expression, names, depth + 1)
        return None


def _literal(size: Optional[str], names) -> Optional[str]:
    """``size`` as the integer a name holds where the layer is called, when it is a
    name bound to one (``n_l1 = 30`` in a build method read at each of its calls,
    which binds it again later: the build must not read it)."""
    if size is None or not size.isidentifier():
        return size
    held = names(size)
    if held is not None and held[0] == "value" and isinstance(held[1], cst.Integer):
        return held[1].value
    return size


def _declared_last(call: cst.Call) -> Optional[str]:
    """The last entry of a placeholder's declared ``shape`` (``x.shape[-1]`` for a
    shape given as ``x.shape``: a value's shape, whose names the build checks)."""
    shape = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "shape"),
                 call.args[1].value if len(call.args) > 1 and call.args[1].keyword is None else None)
    if isinstance(shape, (cst.List, cst.Tuple)) and shape.elements:
        last = shape.elements[-1].value
        if not (isinstance(last, cst.Name) and last.value == "None"):
            return code_of(last)
    if isinstance(shape, cst.Attribute) and shape.attr.value == "shape" \
            and isinstance(shape.value, cst.Name):
        return f"{code_of(shape)}[-1]"
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
