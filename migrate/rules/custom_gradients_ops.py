"""Which TF op type a TensorFlow call builds, for the custom-gradient codemod.

``gradient_override_map({"Relu": "GuidedRelu"})`` keys on *op types*; the code
calls *functions*. This table says which op type each function builds, keyed
by API name (the part after ``tensorflow.`` / ``tensorflow.compat.v1.``).
``tests/migrate/rules/test_custom_gradients.py`` builds every entry in a graph on
the installed TensorFlow and checks the op types it creates.

:data:`OVERRIDABLE` are the unary ops whose override the codemod rewrites: each
is called as ``f(x)`` or ``f(x, name=...)`` and builds exactly one op, of the
listed type. :data:`NEUTRAL` are other calls whose ops are known (besides
``Const`` helpers), so a scope that uses them can still be read whole; their
op types are never rewritten.
"""

from __future__ import annotations

from typing import Dict, FrozenSet, Tuple

#: API name -> op type; unary, ``f(x, name=None)``, exactly one op.
OVERRIDABLE: Dict[str, str] = {
    "identity": "Identity",
    "nn.relu": "Relu",
    "nn.relu6": "Relu6",
    "nn.elu": "Elu",
    "nn.softplus": "Softplus",
    "sigmoid": "Sigmoid",
    "nn.sigmoid": "Sigmoid",
    "math.sigmoid": "Sigmoid",
    "tanh": "Tanh",
    "nn.tanh": "Tanh",
    "math.tanh": "Tanh",
    "sign": "Sign",
    "math.sign": "Sign",
    "round": "Round",
    "math.round": "Round",
    "floor": "Floor",
    "math.floor": "Floor",
    "ceil": "Ceil",
    "math.ceil": "Ceil",
}

#: The keyword a table function names its tensor argument by.
INPUT_KEYWORDS: FrozenSet[str] = frozenset({"x", "input", "features"})

#: API name -> (op types it builds besides ``Const``, number of tensor arguments).
NEUTRAL: Dict[str, Tuple[Tuple[str, ...], int]] = {
    "matmul": (("MatMul",), 2),
    "add": (("AddV2",), 2),
    "math.add": (("AddV2",), 2),
    "subtract": (("Sub",), 2),
    "math.subtract": (("Sub",), 2),
    "multiply": (("Mul",), 2),
    "math.multiply": (("Mul",), 2),
    "maximum": (("Maximum",), 2),
    "minimum": (("Minimum",), 2),
    "nn.bias_add": (("BiasAdd",), 2),
    "reduce_sum": (("Sum",), 1),
    "reduce_mean": (("Mean",), 1),
    "square": (("Square",), 1),
    "exp": (("Exp",), 1),
    "log": (("Log",), 1),
    "math.log": (("Log",), 1),
    "abs": (("Abs",), 1),
    "negative": (("Neg",), 1),
    "nn.softmax": (("Softmax",), 1),
    "stop_gradient": (("StopGradient",), 1),
}

#: Built-in gradient names an override map may point at without registering
#: them: name -> what the backward returns (``dy`` is the upstream gradient).
#: TensorFlow's "Identity" gradient passes the upstream gradient through (the
#: straight-through estimator ``{"Sign": "Identity"}``).
BUILTIN_GRADIENTS: Dict[str, str] = {
    "Identity": "dy",
}

#: Python builtins that build no TensorFlow op when called inside an override scope.
SAFE_BUILTINS: FrozenSet[str] = frozenset({
    "print", "len", "range", "float", "int", "str", "bool", "list", "tuple", "dict",
    "zip", "enumerate", "isinstance",
})


def op_types_of(api: str) -> Tuple[str, ...]:
    """The op types a table call builds (besides ``Const``); () when unknown."""
    if api in OVERRIDABLE:
        return (OVERRIDABLE[api],)
    if api in NEUTRAL:
        return NEUTRAL[api][0]
    return ()


OVERRIDABLE_TYPES: FrozenSet[str] = frozenset(OVERRIDABLE.values())
