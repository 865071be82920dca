"""tf-slim's ``fully_connected`` -> the tf-keras ``Dense`` layer the model-code rule creates once.

``tf.contrib.layers.fully_connected(x, 10, activation_fn=None)`` (``slim.fully_connected``)
makes ``fully_connected/weights`` and ``fully_connected/biases`` and computes
``activation_fn(x @ weights + biases)``, as ``tf.layers.dense`` does with its kernel and bias.
The rule reads it as the ``tf.layers.dense`` call of the same arguments
(:func:`as_dense`) and makes the same layer object (model_code_layers.py):

- ``num_outputs`` -> ``units``; ``activation_fn`` -> ``activation``, whose default is
  ``tf.nn.relu`` here, not None;
- ``weights_initializer`` -> ``kernel_initializer`` (both default to Glorot uniform);
- ``biases_initializer`` -> ``bias_initializer`` (both default to zeros; None means
  no bias: ``use_bias=False``);
- ``scope`` -> ``name``; ``reuse`` and ``trainable`` as they are.

The variables are then named ``.../kernel`` and ``.../bias``, not ``weights`` and
``biases``. So a file whose Saver would look them up by name is not converted. The
arguments Dense has no place for (a normalizer, regularizers that slim adds to
a collection, collections) keep the call as it is, and say why (TS125).
Only ``fully_connected`` is read this way, outside a model function: in a model function
the feeds rule shares the variables of every tf-slim layer with make_template.
"""

from __future__ import annotations

from typing import List, Optional

import libcst as cst
from libcst.codemod.visitors import RemoveImportsVisitor

from tapeshift.migrate.engine.toolkit.builders import appended, code_of, keyword_arg
from tapeshift.migrate.engine.toolkit.walk import nodes, nodes_of
from tapeshift.migrate.rules.contrib_slim import slim_names
from tapeshift.migrate.rules.model_code_syntax import bind, is_none

#: tf-slim's fully_connected, in its order
SLIM_PARAMS = ("inputs", "num_outputs", "activation_fn", "normalizer_fn", "normalizer_params",
               "weights_initializer", "weights_regularizer", "biases_initializer",
               "biases_regularizer", "reuse", "variables_collections", "outputs_collections",
               "trainable", "scope")
#: its arguments Dense has no place for
_NO_PLACE = ("normalizer_fn", "normalizer_params", "weights_regularizer", "biases_regularizer",
             "variables_collections", "outputs_collections")
#: its arguments -> Dense's (the rest are dropped or translated)
_RENAMED = {"num_outputs": "units", "activation_fn": "activation",
            "weights_initializer": "kernel_initializer", "biases_initializer": "bias_initializer",
            "reuse": "reuse", "trainable": "trainable", "scope": "name"}


def is_slim_dense(rule, call: cst.Call) -> bool:
    """``call`` calls tf-slim's ``fully_connected`` (as the contrib rule spelled it)."""
    return any(name.rpartition(".")[2] == "fully_connected" for name in slim_names(rule, call.func))


def slim_references(rule, module: cst.Module) -> int:
    """How many names (``slim.fully_connected`` counts once) refer to something of
    tf-slim's, outside the imports: each fully_connected read as Dense is one."""
    inner = {id(part) for a in nodes_of(module, cst.Attribute) for part in (a.value, a.attr)}
    imported = {id(n) for imp in nodes_of(module, (cst.Import, cst.ImportFrom)) for n in nodes(imp)}
    count = 0
    for node in nodes_of(module, (cst.Name, cst.Attribute)):
        if id(node) not in inner and id(node) not in imported and slim_names(rule, node):
            count += 1
    return count


def why_not_dense(call: cst.Call) -> Optional[str]:
    """Why ``call`` (a fully_connected) is not read as a Dense layer (None: it is)."""
    if any(a.star for a in call.args):
        return f"`{code_of(call.func)}(*args)` is not converted"
    args = bind(call, SLIM_PARAMS)
    for name in _NO_PLACE:
        if name in args and not is_none(args[name]):
            return (f"`{code_of(call.func)}(..., {name}=...)`: a tf-keras Dense layer has no "
                    "place for it, not converted")
    return None


def as_dense(call: cst.Call, tf: str) -> cst.Call:
    """The ``tf.layers.dense`` call that computes what ``call`` (a fully_connected,
    :func:`why_not_dense` None) does, its arguments in their order and layout: the
    first three by place if they were (dense's are slim's), the others by keyword."""
    out: List[cst.Arg] = []
    activation = False
    for k, arg in enumerate(call.args):
        name = arg.keyword.value if arg.keyword is not None else SLIM_PARAMS[k]
        activation = activation or name == "activation_fn"
        if name == "inputs" or (arg.keyword is None and name in ("num_outputs", "activation_fn")):
            out.append(arg)
        elif name == "biases_initializer" and is_none(arg.value):
            out.append(_keyword(arg, "use_bias", cst.Name("False")))
        elif name in _RENAMED:
            out.append(_keyword(arg, _RENAMED[name], arg.value))
        # (else an argument Dense has no place for, None here: dropped)
    out[-1] = out[-1].with_changes(comma=call.args[-1].comma)
    if not activation:  # slim's default, written out
        out = appended(out, keyword_arg("activation", cst.parse_expression(f"{tf}.nn.relu")))
    return call.with_changes(func=cst.parse_expression(f"{tf}.layers.dense"), args=out)


def _keyword(arg: cst.Arg, name: str, value: cst.BaseExpression) -> cst.Arg:
    """``arg`` as ``name=value``, in its place and layout."""
    equal = arg.equal if arg.keyword is not None else cst.AssignEqual(
        cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
    return arg.with_changes(keyword=cst.Name(name), value=value, equal=equal)


def remove_slim_imports(context, module: cst.Module) -> None:
    """Have LibCST remove the module's imports of tf-slim that nothing uses any more."""
    def of_slim(name: str) -> bool:
        return name == "tf_slim" or name.startswith("tf_slim.")

    for imp in nodes_of(module, (cst.Import, cst.ImportFrom)):
        if isinstance(imp, cst.ImportFrom):
            if imp.module is not None and not imp.relative and of_slim(code_of(imp.module)):
                RemoveImportsVisitor.remove_unused_import_by_node(context, imp)
            continue
        for alias in imp.names:  # (only the tf-slim names of `import numpy, tf_slim`)
            if of_slim(code_of(alias.name)):
                RemoveImportsVisitor.remove_unused_import(
                    context, code_of(alias.name),
                    asname=code_of(alias.asname.name) if alias.asname else None)
