"""``tf.layers`` -> tf-keras' legacy layers, so that compat-mode output runs on Keras 3.

On TensorFlow >= 2.16 (Keras 3 by default) ``tf.compat.v1.layers.dense``
raises "`dense` is not available with Keras 3": ``tf.compat.v1.layers`` is a
lazy loader that only works when ``TF_USE_LEGACY_KERAS=1`` was set before
TensorFlow was imported and the tf-keras package is installed. This rule
rewrites every reference to ``tf.layers`` (``tf.compat.v1.layers`` too, matched
by qualified name in every import form) to the module TensorFlow routes it to
in that case, ``tf_keras.api._v1.keras.__internal__.legacy.layers``
(:data:`~tapeshift.migrate.rules.layers_compat_table.TF_KERAS_LEGACY_LAYERS`): the
same functions and classes, so every number is kept, and the output needs
neither an environment variable nor tapeshift at run time, only the tf-keras
package (TS124 says so). A name that module does not provide is left as it
was and reported (TS109).

``tf.layers.dense(x, 3)`` -> ``tf_layers.dense(x, 3)`` with
``import tf_keras.api._v1.keras.__internal__.legacy.layers as tf_layers``;
``from tensorflow.layers import dense`` and ``from tensorflow import layers``
import from tf-keras instead. It runs in compat mode only (a tape-mode file
that uses ``tf.layers`` falls back to compat mode, TS109), after the compat
fallback: a file whose one TensorFlow import is ``from tensorflow import
layers`` still gets ``disable_v2_behavior()``.
"""

from __future__ import annotations

import re
from typing import Optional, Set

import libcst as cst
from libcst.codemod.visitors import AddImportsVisitor

from tapeshift.migrate.engine.registry import register_rule
from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.tf_names import all_names, fresh_name
from tapeshift.migrate.rules.layers_compat_table import LEGACY_LAYERS, TF_KERAS_LEGACY_LAYERS
from tapeshift.migrate.engine.findings import CodeInfo, Severity, TS109

# Codes this rule reports (docs/codes.md is generated from them)

TS124 = CodeInfo(
    code="TS124",
    name="uses-tf-keras-layers",
    severity=Severity.INFO,
    summary="tf.layers moved to tf-keras' legacy layers; the file needs the tf-keras package",
    what="Reports a file (in compat mode) whose `tf.layers` / `tf.compat.v1.layers` "
         "references and imports were rewritten to "
         "`tf_keras.api._v1.keras.__internal__.legacy.layers`, the module TensorFlow itself "
         "routes `tf.compat.v1.layers` to under `TF_USE_LEGACY_KERAS=1`.",
    why="On TensorFlow >= 2.16 Keras 3 is the default and `tf.compat.v1.layers.dense` raises "
        "\"`dense` is not available with Keras 3\"; the TF1 layers now live in the tf-keras "
        "package. Importing them from there needs no environment variable.",
    example="h = tf.layers.dense(x, 10)",
    use_instead="import tf_keras.api._v1.keras.__internal__.legacy.layers as tf_layers\n"
                "h = tf_layers.dense(x, 10)   # pip install tf-keras",
    fix_safety="Safe: the same layer code (variables from `get_variable`, batch-norm updates in "
               "`UPDATE_OPS`), so every number is kept; install tf-keras of your TensorFlow's "
               "version.",
)


DESCRIPTION = "tf.layers / tf.compat.v1.layers -> tf-keras' legacy layers (they run on Keras 3)"

_PARENT, _, _LEAF = TF_KERAS_LEGACY_LAYERS.rpartition(".")
#: the import modules that mean ``tf.layers`` (``from X import dense``)
_LAYERS_MODULES = ("tensorflow.layers", "tensorflow.compat.v1.layers")
#: the import modules that hold ``layers`` (``from X import layers``)
_TF_MODULES = ("tensorflow", "tensorflow.compat.v1")


#: "." and then the word "layers", whatever whitespace, line continuations and
#: comments stand between them: how every attribute ``X.layers`` is spelled
#: (and some text that is no attribute: strings, comments, module paths)
_DOT_LAYERS = re.compile(r"\.(?:[ \t\f\r\n]|\\\r?\n|\\\r|#[^\r\n]*)*layers\b")
#: a line that starts an import of a module path (``from P import``, ``import P``):
#: the keywords ``from P import`` and ``import`` appear in nothing but import
#: statements, so outside a string such a line is one
_IMPORT_PATH = re.compile(r"[ \t\f]*(?:from[ \t\f]+([\w.]+)[ \t\f]+import\b|import[ \t\f]+([\w.]+))")
#: ``from tensorflow[.compat.v1] import``, however spaced (the form that may import ``layers``)
_FROM_TF = re.compile(r"\bfrom(?:\s|\\)+tensorflow(?:\s|\\|\.|compat|v1)*?\bimport\b")


def may_act(code: str) -> bool:
    """False when the rule certainly has nothing to do in ``code``.

    It changes or reports only (a) an import of ``tensorflow[.compat.v1].layers``
    or ``from tensorflow[.compat.v1] import layers``, and (b) an attribute ``X.layers``
    that is TensorFlow's (and attributes of it). So it has nothing to do where
    no ``from tensorflow... import`` is spelled, and every ``.layers`` of the
    text is in the module path at the start of an import line that is not
    TensorFlow's (``from tensor2tensor.layers import common_layers``): the
    names of an import statement are no attributes with a qualified name.
    Anything else (a ``.layers`` in a string, a comment, an expression, a
    path spelled with spaces) lets the rule run."""
    if _FROM_TF.search(code):
        return True
    for match in _DOT_LAYERS.finditer(code):
        dot = match.start()
        line = max(code.rfind("\n", 0, dot), code.rfind("\r", 0, dot)) + 1
        head = _IMPORT_PATH.match(code, line)
        if head is None:
            return True
        group = 1 if head.group(1) is not None else 2
        start, end = head.span(group)
        if not (start <= dot and match.end() <= end) \
                or head.group(group).split(".", 1)[0] == "tensorflow":
            return True
    return False


@register_rule
class LayersToTfKeras(TapeshiftCodemod):
    DESCRIPTION = DESCRIPTION
    RULE = "layers"
    #: after the fallback, which must still see `from tensorflow import layers` as TensorFlow
    PHASE = "compat-post"
    ORDER = 10
    CODES = (TS124,)
    #: every reference to tf.layers, and every import of it, spells "layers"
    SCREEN_NAMES = frozenset({"layers"})
    #: and most files that spell it (tensor2tensor's) do so in other modules' paths
    SCREEN_CODE = staticmethod(may_act)

    def __init__(self, context) -> None:
        super().__init__(context)
        self._alias: Optional[str] = None
        self._first: Optional[cst.CSTNode] = None
        self._skip: Set[cst.CSTNode] = set()  # `tf.layers` nodes left for a name not provided

    # -- references: tf.layers.dense, tf.compat.v1.layers.Dense -----------------
    def visit_Module(self, node: cst.Module) -> None:
        self._module = node

    def _api(self, node: cst.CSTNode) -> Optional[str]:
        """The API name, ``compat.v1.`` read through (``tf.compat.v1.layers`` where
        ``tf`` is ``tensorflow.compat.v1``, as the compat fallback writes it)."""
        api = self.tf_api_name(node)
        while api is not None and (api == "compat.v1" or api.startswith("compat.v1.")):
            api = api[len("compat.v1."):]
        return api

    def visit_Attribute(self, node: cst.Attribute) -> None:
        api = self._api(node)
        if api is None or not api.startswith("layers.") or self._api(node.value) != "layers":
            return
        name = node.attr.value
        if name not in LEGACY_LAYERS:
            self._skip.add(node.value)
            self.report(TS109.code, node, f"{code_of(node)}: tf.layers.{name} is not in tf-keras' "
                        "legacy layers; left as it was (it fails on TensorFlow >= 2.16 with "
                        "Keras 3)")

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute):
        if original_node in self._skip or self._api(original_node) != "layers":
            return updated_node
        self._used(original_node)
        self.record_change(original_node, f"{code_of(original_node)} -> {self._alias} "
                                          f"({TF_KERAS_LEGACY_LAYERS})")
        return cst.Name(self._alias, lpar=updated_node.lpar, rpar=updated_node.rpar)

    def _used(self, node: cst.CSTNode) -> None:
        if self._first is None:
            self._first = node
        if self._alias is None:
            self._alias = fresh_name("tf_layers", all_names(self._module))
            AddImportsVisitor.add_needed_import(self.context, TF_KERAS_LEGACY_LAYERS,
                                                asname=self._alias)

    # -- imports ------------------------------------------------------------
    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import):
        names = []
        for alias in updated_node.names:
            dotted = code_of(alias.name)
            if dotted in _LAYERS_MODULES or dotted.startswith(
                    tuple(m + "." for m in _LAYERS_MODULES)):
                rest = dotted.split(".")[2 if dotted.startswith("tensorflow.layers") else 4:]
                if alias.asname is None:
                    # `import tensorflow.layers`: the references are rewritten; what is
                    # left to import is the package above it (tensorflow.layers is no
                    # module on TF2)
                    package = dotted[:dotted.index(".layers")]
                    self.record_change(original_node, f"import {dotted} -> import {package}")
                    alias = alias.with_changes(name=cst.parse_expression(package))
                elif rest and rest[0] not in LEGACY_LAYERS:
                    self.report(TS109.code, original_node, f"import {dotted}: tf.layers.{rest[0]} "
                                "is not in tf-keras' legacy layers; left as it was")
                else:
                    target = ".".join([TF_KERAS_LEGACY_LAYERS, *rest])
                    self._mark(original_node)
                    self.record_change(original_node, f"import {dotted} -> import {target}")
                    alias = alias.with_changes(name=cst.parse_expression(target))
            names.append(alias)
        return updated_node.with_changes(names=names)

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom):
        if updated_node.module is None or updated_node.relative:
            return updated_node
        module = code_of(updated_node.module)
        if isinstance(updated_node.names, cst.ImportStar):
            if module in _LAYERS_MODULES:
                self._mark(original_node)
                self.record_change(original_node, f"from {module} import * -> "
                                                  f"from {TF_KERAS_LEGACY_LAYERS} import *")
                return updated_node.with_changes(
                    module=cst.parse_expression(TF_KERAS_LEGACY_LAYERS))
            return updated_node
        if module in _LAYERS_MODULES or module.startswith(tuple(m + "." for m in _LAYERS_MODULES)):
            return self._from_layers(original_node, updated_node, module)
        if module in _TF_MODULES:
            return self._layers_from_tf(original_node, updated_node, module)
        return updated_node

    def _from_layers(self, original_node, updated_node, module: str):
        """``from tensorflow.layers import dense`` -> ``from <tf-keras layers> import dense``."""
        rest = module.split(".")[2 if module.startswith("tensorflow.layers") else 4:]
        wanted = [rest[0]] if rest else [code_of(a.name) for a in updated_node.names]
        missing = [n for n in wanted if n not in LEGACY_LAYERS]
        if missing:
            self.report(TS109.code, original_node, f"from {module} import: "
                        f"{', '.join('tf.layers.' + n for n in missing)} not in tf-keras' legacy "
                        "layers; the import was left as it was (it fails on Keras 3)")
            return updated_node
        target = ".".join([TF_KERAS_LEGACY_LAYERS, *rest])
        self._mark(original_node)
        self.record_change(original_node, f"from {module} -> from {target}")
        return updated_node.with_changes(module=cst.parse_expression(target))

    def _layers_from_tf(self, original_node, updated_node, module: str):
        """``from tensorflow import layers [as L]`` -> ``from <tf-keras> import layers [as L]``
        (out of a statement that imports other names too)."""
        names = list(updated_node.names)
        moved = [a for a in names if code_of(a.name) == "layers"]
        if not moved:
            return updated_node
        self._mark(original_node)
        bound = code_of(moved[0].asname.name) if moved[0].asname else "layers"
        self.record_change(original_node, f"from {module} import layers -> "
                                          f"from {_PARENT} import {_LEAF}")
        if len(moved) == len(names):
            alias = cst.ImportAlias(name=cst.Name(_LEAF),
                                    asname=moved[0].asname if bound != _LEAF else None)
            return updated_node.with_changes(module=cst.parse_expression(_PARENT), names=[alias])
        for alias in moved:
            asname = code_of(alias.asname.name) if alias.asname else None
            AddImportsVisitor.add_needed_import(self.context, _PARENT, _LEAF,
                                                asname=asname if asname != _LEAF else None)
        kept = [a for a in names if code_of(a.name) != "layers"]
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated_node.with_changes(names=kept)

    def _mark(self, node: cst.CSTNode) -> None:
        if self._first is None:
            self._first = node

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module):
        if self._first is not None:
            self.report(TS124.code, self._first, "tf.layers now come from the tf-keras package "
                        "(pip install tf-keras, the version of your TensorFlow): on TensorFlow "
                        ">= 2.16 with Keras 3 tf.compat.v1.layers is gone")
        return updated_node
