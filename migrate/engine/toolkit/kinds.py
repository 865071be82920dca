"""What a name holds, per name of a module: "variable", "tensor", "list", "tuple" or "unknown".

A rule that turns ``tf.gradients`` into a tape must know which names hold
variables (a tape watches trainable variables by itself), which hold tensors
(``tape.watch``) and which hold lists of them. The answer is read from the
module's assignments, in the order they are written, and from the TensorFlow
call that made each value; anything else is "unknown".
"""

from __future__ import annotations

from typing import List, Optional

import libcst as cst

from tapeshift.migrate.engine.toolkit.dataflow import target_names
from tapeshift.migrate.engine.toolkit.variable_store import MODEL_CODE
from tapeshift.migrate.engine.toolkit.statements import statements
from tapeshift.migrate.engine.toolkit.walk import nodes

VARIABLE_MAKERS = frozenset({"Variable", "get_variable", "VariableV1"})
LIST_MAKERS = frozenset({
    "gradients", "hessians", "trainable_variables", "global_variables",
    "local_variables", "model_variables", "all_variables", "get_collection",
    "unstack", "split", "meshgrid", "tuple", "dynamic_partition",
})
#: TF names whose value is not a tensor (no ``.numpy()``).
NON_TENSOR = frozenset({
    "Session", "InteractiveSession", "Graph", "GradientTape", "global_variables_initializer",
    "initialize_all_variables", "local_variables_initializer", "variables_initializer",
    "initialize_variables", "float32", "float64", "int32", "int64", "bool", "TensorShape",
    "shape",
})
#: TF calls whose value is a tuple, a namedtuple, a structure or a SparseTensor (no
#: ``.numpy()`` of its own): a tuple of tensors is "unknown", not "tensor"
STRUCTURE_RESULTS = frozenset({
    "nn.moments", "nn.weighted_moments", "nn.sufficient_statistics", "nn.top_k", "math.top_k",
    "unique", "unique_with_counts", "setdiff1d", "listdiff", "sets.difference",
    "linalg.eigh", "self_adjoint_eig", "linalg.eig", "svd", "linalg.svd", "qr", "linalg.qr",
    "linalg.lu", "identity_n", "cond", "case", "switch_case", "map_fn", "scan", "foldl",
    "foldr", "py_func", "numpy_function", "py_function", "nn.max_pool_with_argmax",
    "nn.fractional_max_pool", "nn.fractional_avg_pool", "nn.ctc_greedy_decoder",
    "nn.ctc_beam_search_decoder", "nn.log_uniform_candidate_sampler",
    "nn.uniform_candidate_sampler", "random.uniform_candidate_sampler",
    "nn.fixed_unigram_candidate_sampler", "nn.learned_unigram_candidate_sampler",
    "nn.compute_accidental_hits", "nn.dynamic_rnn", "nn.static_rnn", "nn.bidirectional_dynamic_rnn",
    "nn.raw_rnn", "nn.static_bidirectional_rnn", "SparseTensor", "sparse.from_dense",
    "sparse.reorder", "sparse.reshape", "sparse.concat", "sparse.slice", "sparse.transpose",
    "sparse.retain", "sparse.reset_shape", "sparse.fill_empty_rows", "sparse.split",
    "sparse_placeholder",
})
#: TF modules whose calls make no tensor (optimizers, writers, strategies and their contexts)
NON_TENSOR_MODULES = frozenset({"train", "summary", "distribute"})


#: the kind of a name bound to a lambda whose body is a TensorFlow op's call
RETURNS_TENSOR = "function returning a tensor"
#: ``weights = {'h1': tf.Variable(...), ...}``: trainable variables held in a dict literal
VARIABLE_DICT = "dict of variables"
#: dtype names: ``tf.Variable(init, tf.float32)`` passes a dtype as ``trainable``,
#: which TF1 takes as true
_DTYPES = frozenset({"float16", "half", "bfloat16", "float32", "float64", "double", "int8",
                     "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool",
                     "complex64", "complex128", "string"})


#: ``def init_weights(shape): return tf.Variable(tf.random_normal(shape))``, called:
#: a new variable per call, made where the call is
RETURNS_VARIABLE = "function returning a new variable"


def variable_factory(fn: cst.FunctionDef, tf_api_name) -> Optional[cst.Call]:
    """The variable maker call of a function whose body (a docstring aside) is
    ``return tf.Variable(...)`` (or ``get_variable``), after assignments of its
    initial value to names of its own (``initial = tf.truncated_normal(shape)``);
    None for any other function."""
    body = [s for s in fn.body.body if not (
        isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1
        and isinstance(s.body[0], cst.Expr) and isinstance(s.body[0].value, cst.SimpleString))] \
        if isinstance(fn.body, cst.IndentedBlock) else []
    if not body or not isinstance(body[-1], cst.SimpleStatementLine) \
            or len(body[-1].body) != 1 or not isinstance(body[-1].body[0], cst.Return) \
            or not all(isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1
                       and isinstance(s.body[0], cst.Assign) and len(s.body[0].targets) == 1
                       and isinstance(s.body[0].targets[0].target, cst.Name)
                       for s in body[:-1]):
        return None
    value = body[-1].body[0].value
    if isinstance(value, cst.Call) and tf_api_name(value.func) in VARIABLE_MAKERS:
        return value
    return None


def trainable_flag(expr: cst.BaseExpression) -> Optional[bool]:
    """What a ``trainable`` argument is as a truth value: ``True``, a dtype (an
    object, so true), a nonzero integer -> True; ``False``, ``None``, ``0`` ->
    False; None when only the running program knows."""
    if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
        return expr.value == "True"
    if isinstance(expr, cst.Attribute) and expr.attr.value in _DTYPES:
        return True
    if isinstance(expr, cst.Integer):
        return expr.evaluated_value != 0
    return None


class KindMixin:
    """Infer, per name, what kind of value a module-level or local name holds."""

    def expr_kind(self, expr: cst.BaseExpression, kinds: dict) -> str:
        if isinstance(expr, cst.Call):
            facts = self.shared.get(MODEL_CODE)
            if facts is not None and _handle(expr.func) in facts.layers:
                return "tensor"  # a layer object the model-code rule made, called
            name = self.tf_api_name(expr.func)
            if name is None:
                # f = lambda a, b: tf.sin(b * tf.cos(a * x)); f(a, b): what its body makes
                # (or a function, self.forward(x) a method, returning tensors only)
                if _handle(expr.func) and kinds.get(_handle(expr.func)) == RETURNS_TENSOR:
                    return "tensor"
                if isinstance(expr.func, cst.Name) \
                        and kinds.get(expr.func.value) == RETURNS_VARIABLE:
                    return "variable"
                # ema.average(W): the moving average's variable
                func = expr.func
                if isinstance(func, cst.Attribute) and func.attr.value == "average" \
                        and isinstance(func.value, cst.Name) \
                        and kinds.get(func.value.value) == "moving_average":
                    return "tensor"
                return "unknown"
            if name == "train.ExponentialMovingAverage":
                return "moving_average"
            if name in VARIABLE_MAKERS:
                # a tape watches trainable variables only: anything else is a
                # plain tensor to it (and gets tape.watch)
                for arg in expr.args:
                    if arg.keyword is not None and arg.keyword.value == "trainable" \
                            and trainable_flag(arg.value) is not True:
                        return "tensor"
                if len(expr.args) > 1 and all(a.keyword is None for a in expr.args[:2]) \
                        and trainable_flag(expr.args[1].value) is not True:
                    return "tensor"  # tf.Variable(value, trainable_flag, ...) positional
                return "variable"
            if name in LIST_MAKERS:
                return "list"
            if name in NON_TENSOR or name in STRUCTURE_RESULTS \
                    or "." in name and name.split(".")[0] in NON_TENSOR_MODULES:
                return "unknown"
            return "tensor"
        if isinstance(expr, cst.Subscript):
            base = self.expr_kind(expr.value, kinds)
            if base == VARIABLE_DICT:
                return "variable"  # weights['h1']
            if base == "list" and any(isinstance(e.slice, cst.Slice) for e in expr.slice):
                return "list"  # tf.trainable_variables()[:2]: a list still
            return "tensor" if base in ("tensor", "variable", "list") else "unknown"
        if isinstance(expr, cst.BinaryOperation):
            kl = self.expr_kind(expr.left, kinds)
            kr = self.expr_kind(expr.right, kinds)
            if "list" in (kl, kr) or "tuple" in (kl, kr):
                return "unknown"
            return "tensor" if {kl, kr} & {"tensor", "variable"} else "unknown"
        if isinstance(expr, cst.UnaryOperation):
            k = self.expr_kind(expr.expression, kinds)
            return "tensor" if k in ("tensor", "variable") else "unknown"
        if isinstance(expr, cst.Name):
            return kinds.get(expr.value, "unknown")
        if isinstance(expr, cst.Dict) and expr.elements and all(
                isinstance(e, cst.DictElement) and self.expr_kind(e.value, kinds) == "variable"
                for e in expr.elements):
            return VARIABLE_DICT
        if isinstance(expr, cst.List):
            return "list"
        if isinstance(expr, cst.Tuple):
            return "tuple"
        return "unknown"

    def returns_tensor(self, fn: cst.FunctionDef, kinds: dict) -> bool:
        """Every ``return`` of ``fn`` returns a tensor (``return tf.matmul(h, W2)``)."""
        if fn.asynchronous is not None or any(isinstance(n, (cst.Yield, cst.Await))
                                              for n in nodes(fn.body)):
            return False
        own = _own_statements(fn)
        returned = [n.value for n in own if isinstance(n, cst.Return)]
        values = [v for v in returned if v is not None]
        if not returned or len(values) != len(returned):
            return False  # (a bare return gives None)
        local = _local_kinds(self, fn, own, kinds)
        return local is not None and all(self.expr_kind(v, local) == "tensor" for v in values)

    def infer_kinds(self, module: cst.Module):
        """(kinds, list_elements) for every name assigned in the module."""
        kinds: dict = {}
        elements: dict = {}
        for node in statements(module):  # assignments in the order they are written
            if type(node) is cst.FunctionDef:
                returned = variable_factory(node, self.tf_api_name)
                if returned is not None and self.expr_kind(returned, kinds) == "variable":
                    kinds[node.name.value] = RETURNS_VARIABLE  # (a trainable one)
                elif self.returns_tensor(node, kinds):
                    kinds[node.name.value] = RETURNS_TENSOR
                continue
            if type(node) is not cst.Assign or len(node.targets) != 1:
                continue
            target = node.targets[0].target
            if isinstance(target, cst.Name):
                kind = self.expr_kind(node.value, kinds) if not isinstance(node.value, cst.Lambda) \
                    else (RETURNS_TENSOR if self.expr_kind(node.value.body, kinds) == "tensor"
                          and isinstance(node.value.body, cst.Call) else "unknown")
                name = target.value
                if name in kinds and kinds[name] != kind:
                    kind = "unknown"
                kinds[name] = kind
                listed = _listed(node.value)
                if listed is not None:
                    elements[name] = listed
                else:
                    elements.pop(name, None)
            elif isinstance(target, (cst.Tuple, cst.List)):
                # g1, g2 = tf.gradients(l, [a, b]) -> elements are tensors;
                # a, b = [tf.Variable(p) for p in init] -> what the maker makes
                vk = self.expr_kind(node.value, kinds)
                value = node.value
                made = value.elt if isinstance(value, cst.ListComp) else (
                    value.elements[0].value if isinstance(value, (cst.List, cst.Tuple))
                    and value.elements else None)
                ek = self.expr_kind(made, kinds) if isinstance(made, cst.Call) else "unknown"
                if ek == "variable" and isinstance(value, (cst.List, cst.Tuple)) and any(
                        self.expr_kind(e.value, kinds) != "variable" for e in value.elements):
                    ek = "unknown"
                looped = isinstance(value, cst.Call) and self.tf_api_name(value.func) == \
                    "while_loop" and _single_loop_vars(value) == len(target.elements)
                for el in target.elements:
                    if isinstance(el.value, cst.Name):
                        # (tf.while_loop gives its loop variables back as tensors, eager too)
                        kinds[el.value.value] = "tensor" if vk == "list" or looped else (
                            "variable" if ek == "variable" else "unknown")
        return kinds, elements


def _own_statements(fn: cst.FunctionDef) -> List[cst.CSTNode]:
    """The statements of ``fn``'s body, not those of the functions and classes in it."""
    nested = {id(n) for d in statements(fn.body) if isinstance(d, (cst.FunctionDef, cst.ClassDef))
              for n in statements(d.body)}
    return [n for n in statements(fn.body) if id(n) not in nested]


def _local_kinds(owner, fn: cst.FunctionDef, inner: List[cst.CSTNode],
                 kinds: dict) -> Optional[dict]:
    """The kinds of ``fn``'s names where it returns (``inner``: its own statements;
    ``kinds``: the names it reads from outside; a parameter, or a name bound other
    than by ``name = value``, is unknown)."""
    declared = (*fn.params.params, *fn.params.posonly_params, *fn.params.kwonly_params,
                *[p for p in (fn.params.star_arg, fn.params.star_kwarg) if isinstance(p, cst.Param)])
    unknown = {p.name.value for p in declared}
    simple = [n for n in inner if type(n) is cst.Assign and len(n.targets) == 1
              and isinstance(n.targets[0].target, cst.Name)]
    for n in inner:
        targets: list = []
        if isinstance(n, cst.For):
            targets = [n.target]
        elif isinstance(n, cst.With):
            targets = [i.asname.name for i in n.items if i.asname is not None]
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign)):
            targets = [n.target]
        elif isinstance(n, cst.Assign) and n not in simple:
            targets = [t.target for t in n.targets]
        elif isinstance(n, (cst.FunctionDef, cst.ClassDef)) and n is not fn:
            targets = [n.name]
        elif isinstance(n, (cst.Import, cst.ImportFrom, cst.ExceptHandler, cst.Global,
                            cst.Nonlocal)):
            return None  # (names bound or declared otherwise: not followed)
        unknown |= {name for t in targets for name in target_names(t)}
    bound = unknown | {n.targets[0].target.value for n in simple}
    local = {k: v for k, v in kinds.items() if k not in bound}
    for n in simple:
        name = n.targets[0].target.value
        kind = owner.expr_kind(n.value, local)
        local[name] = kind if local.get(name, kind) == kind else "unknown"
    for name in unknown:
        local[name] = "unknown"
    return local


def _handle(expr: cst.BaseExpression) -> str:
    """``x`` or ``self.x`` as code (how the model-code rule names what it made); else ""."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) \
            and expr.value.value == "self":
        return f"self.{expr.attr.value}"
    return ""


def _listed(value: cst.BaseExpression):
    """The elements of a list of names (``[W, b]``, ``[self.W, self.b]``); a layer's variables
    (``*dense.trainable_variables``, ``*self.fc.variables``) listed as ``*dense``."""
    if not isinstance(value, cst.List):
        return None
    out = []
    for e in value.elements:
        if isinstance(e, cst.StarredElement) and isinstance(e.value, cst.Attribute) \
                and e.value.attr.value in ("trainable_variables", "variables") \
                and _handle(e.value.value):
            out.append("*" + _handle(e.value.value))
        elif isinstance(e, cst.Element) and _handle(e.value):
            out.append(_handle(e.value))  # W, or self.W (a variable the object holds)
        else:
            return None
    return out


def _single_loop_vars(call: cst.Call) -> int:
    """``tf.while_loop(cond, body, [v1, v2])``: how many loop variables, when each is a
    single value (not a list, tuple or dict); else -1."""
    loop_vars = next((a.value for k, a in enumerate(call.args)
                      if (a.keyword is None and k == 2 and not a.star)
                      or (a.keyword is not None and a.keyword.value == "loop_vars")), None)
    if isinstance(loop_vars, (cst.List, cst.Tuple)) and all(
            isinstance(e, cst.Element) and not isinstance(e.value, (cst.List, cst.Tuple, cst.Dict))
            for e in loop_vars.elements):
        return len(loop_vars.elements)
    return -1
