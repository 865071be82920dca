"""Part of the feeds rules: a graph value fed in place of its computation.

TF1 lets a run feed any tensor, not only a placeholder: a DDPG critic is trained
on the actions stored in its replay memory by feeding the actor's output,
``sess.run(self.ctrain, {self.S: bs, self.a: ba, self.R: br, self.S_: bs_})``.
The run then uses the fed value wherever the graph reads ``self.a``, and does not
compute it. The step function of such a run takes the value as a parameter and
computes only what the fetches need from it (``backward_slice`` stops at the fed
value); a run of the same fetches that does not feed it gets a function of its
own.

The parameter is converted to the tensor's dtype, as TF1 converts a feed. The
codemod has no dtypes, so it converts only a value it can tell is float32 (the
step function converts to float32): one
computed from float32 placeholders (and variables and Python numbers) by layers
and ops that keep a float dtype. Any other fed tensor is reported (TS107).
"""

from __future__ import annotations

from typing import List, Optional, Set

import libcst as cst

from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.dataflow import backward_slice
from tapeshift.migrate.engine.toolkit.walk import nodes
from tapeshift.migrate.rules.feeds_steps import call_argument
from tapeshift.migrate.rules.session import TS107

#: ops whose result has the dtype of their float inputs
FLOAT_KEEPING = frozenset({
    "add", "subtract", "multiply", "divide", "truediv", "matmul", "linalg.matmul", "negative",
    "square", "sqrt", "exp", "log", "abs", "maximum", "minimum", "clip_by_value", "tanh",
    "sigmoid", "nn.relu", "nn.relu6", "nn.elu", "nn.selu", "nn.leaky_relu", "nn.softplus",
    "nn.tanh", "nn.sigmoid", "nn.softmax", "nn.bias_add", "nn.dropout", "reshape", "concat",
    "stack", "squeeze", "expand_dims", "transpose", "identity", "stop_gradient", "reduce_sum",
    "reduce_mean", "reduce_max", "reduce_min", "math.tanh", "math.sigmoid", "math.exp",
    "math.log", "math.square", "math.sqrt", "math.maximum", "math.minimum",
})


#: RNN cells whose state is one tensor
SINGLE_STATE_CELLS = frozenset({"BasicRNNCell", "GRUCell"})


class FedValues:
    """Part of ``FeedsToFunctions``: which graph values a run may feed, and their dtype."""

    def _fed_value(self, ref: str, at: cst.CSTNode) -> None:
        """Check that ``ref`` (a feed key that is no placeholder) is a graph value
        made by one statement of its own, whose dtype is float32; else TS107."""
        defs = [j for j in sorted(self._graph) if ref in self._stmts[j].writes]
        why: Optional[str] = None
        if ref in self._var_names or not defs:
            why = "which is not a placeholder or a tensor of this graph"
        elif len(defs) > 1 or self._stmts[defs[0]].writes != {ref} or defs[0] in self._train:
            why = "a graph value not made by one statement of its own"
        else:
            why = self._not_float32(ref, defs[0])
        if why is not None:
            self._bail(TS107.code, at, f"feeding `{code_of(at)}`, {why}, is not converted")

    def _computed_unless_given(self, param: str, node: cst.BaseStatement) -> cst.If:
        """``node``, the statement that makes the value ``param`` names, for a step
        whose runs feed it only sometimes (a named feed dict, one of whose values
        feeds an RNN's state): computed when not given, else the given value as
        the tensor TF1's feed makes."""
        tf = self._alias
        given = cst.parse_statement(f"{param} = {tf}.convert_to_tensor({param}, {tf}.float32)")
        return cst.If(
            test=cst.parse_expression(f"{param} is None"),
            body=cst.IndentedBlock(body=[node.with_changes(leading_lines=[])]),
            orelse=cst.Else(body=cst.IndentedBlock(body=[given])),
            leading_lines=node.leading_lines)

    def _float32_state(self, call: cst.Call) -> bool:
        """``cell.zero_state(batch, tf.float32)`` of a cell whose state is one tensor
        (``BasicRNNCell``, ``GRUCell``; an LSTM's is a tuple, which one conversion
        would stack)."""
        if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "zero_state"):
            return False
        dtype = call_argument(call, 1, "dtype")
        if dtype is None or self.tf_api_name(dtype) != "float32":
            return False
        cell = self._ref(call.func.value)
        defs = [st for st in self._stmts if cell is not None and cell in st.writes]
        value = self._assignment(defs[0].node)[0] if len(defs) == 1 else None
        if not isinstance(value, cst.Call):
            return False
        made = self.tf_api_name(value.func) or code_of(value.func)
        return made.rpartition(".")[2] in SINGLE_STATE_CELLS

    def _not_float32(self, ref: str, k: int) -> Optional[str]:
        """Why the value statement ``k`` binds to ``ref`` may not be float32 (None: it is)."""
        placeholders = 0
        for j in sorted(backward_slice(self._stmts, {ref}, k + 1)):
            if j not in self._graph:  # a placeholder, a variable, a layer: read below
                continue
            for n in nodes(self._stmts[j].node):
                if isinstance(n, cst.Call):
                    handle = self._ref(n.func)
                    facts = self._layer_facts
                    if handle in self._layers or facts is not None and handle in facts.layers \
                            or self.tf_api_name(n.func) in FLOAT_KEEPING:
                        continue
                    if self._float32_state(n):
                        placeholders += 1  # a float32 source, as a float32 placeholder is
                        continue
                    return f"computed by `{code_of(n.func)}`, whose dtype the codemod cannot tell"
            for name in self._stmts[j].reads:
                if name in self._placeholders:
                    dtype = call_argument(self._placeholders[name], 0, "dtype")
                    if dtype is None or self.tf_api_name(dtype) != "float32":
                        spelled = code_of(dtype) if dtype is not None else "not given"
                        return f"computed from the placeholder `{name}` of dtype {spelled}"
                    placeholders += 1
        if not placeholders:
            return "computed from no float32 placeholder (its dtype is not in the code)"
        return None

    def _check_fed_training(self, step, order, limit: int, fetched: Set[str], needed: Set[int],
                            run_call: cst.Call) -> None:
        """A step fed graph values must not train a variable those values are computed
        from: TF1 differentiates through a fed tensor (its producers' gradients, at
        the fed value), eager code computes nothing behind it."""
        whole = {order[k].index for k in backward_slice(order, fetched, limit)}
        cut = (whole - needed) & self._graph  # the statements the feeds leave out
        behind: Set[str] = set()
        for j in cut:
            value = self._assignment(self._stmts[j].node)[0]
            if isinstance(value, cst.Call) and self._float32_state(value):
                continue  # zeros: the cell's variables are not behind them
            # (a layer's call reads its handle)
            behind |= {r for r in self._stmts[j].reads if r in self._var_names or r in self._layers}
        if not behind:
            return
        for j in step.statements:
            trained = self._trained_refs(j)
            if trained is None or trained & behind:
                self._bail(TS107.code, run_call, f"this run feeds {', '.join(step.fed_values + step.maybe_fed)} and "
                           "takes gradients for variables they are computed from: TF1 differentiates "
                           "through a fed tensor, eager code computes nothing behind it: not converted")

    def _trained_refs(self, j: int) -> Optional[Set[str]]:
        """The variables and layers statement ``j`` differentiates (None: not known):
        the sources of its ``tf.gradients`` (a train op's: the var_list its rewrite
        passes)."""
        out: Set[str] = set()
        for n in nodes(self._rewrites.get(j, self._stmts[j].node)):
            if isinstance(n, cst.Call) and code_of(n.func).rpartition(".")[2] == "gradients":
                sources = n.args[1].value if len(n.args) >= 2 else None
                for el in _elements(sources, self, j) if sources is not None else [None]:
                    if el is None:
                        return None
                    out.add(el)
        return out



def _elements(var_list: cst.BaseExpression, rule, before: int) -> List[Optional[str]]:
    """The refs a var_list names: ``[W, b]``, ``[*dense.variables]`` (the layer), or a
    name bound to such a list before statement ``before``; None for what is not known."""
    ref = rule._ref(var_list)
    if ref is not None and ref not in rule._var_names:
        defs = [k for k in range(before) if ref in rule._stmts[k].writes]
        value = rule._assignment(rule._stmts[defs[-1]].node)[0] if defs else None
        return _elements(value, rule, defs[-1]) if value is not None else [None]
    if ref is not None:
        return [ref]
    if not isinstance(var_list, (cst.List, cst.Tuple)):
        return [None]
    out: List[Optional[str]] = []
    for e in var_list.elements:
        if isinstance(e, cst.StarredElement) and isinstance(e.value, cst.Attribute) \
                and e.value.attr.value in ("variables", "trainable_variables"):
            out.append(rule._ref(e.value.value))
        elif isinstance(e, cst.Element) and rule._ref(e.value) is not None:
            out.append(rule._ref(e.value))
        else:
            out.append(None)
    return out
