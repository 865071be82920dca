"""RNN cells -> tf-keras' legacy cells, so that compat-mode RNN code runs on Keras 3.

``tf.nn.rnn_cell.BasicLSTMCell`` fails on TensorFlow >= 2.16 ("`BasicLSTMCell`
is not available with Keras 3"), and ``tf.contrib.rnn`` is gone altogether.
Both held the same classes, which tf-keras still ships in the module
TensorFlow itself routes ``tf.compat.v1.nn.rnn_cell`` to under
``TF_USE_LEGACY_KERAS=1`` (:mod:`~tapeshift.migrate.rules.rnn_cells_table`)::

    tf.nn.rnn_cell.BasicLSTMCell(64)     -> tf_rnn_cell.BasicLSTMCell(64)
    tf.contrib.rnn.LSTMStateTuple(c, h)  -> tf_rnn_cell.LSTMStateTuple(c, h)
    tf.contrib.rnn.static_rnn(cell, xs)  -> tf.nn.static_rnn(cell, xs)

with ``import tf_keras.api._v1.keras.__internal__.legacy.rnn_cell as
tf_rnn_cell``. The classes are the same code, so every number is kept; the
file needs the tf-keras package (TS134 says so). ``tf.nn.dynamic_rnn`` and the
static functions stay TensorFlow's, in ``tf.compat.v1.nn``.

It runs in compat form (on the fallback's output). In tape form the model-code
rule converts module-level RNNs itself, with the same cells
(:mod:`~tapeshift.migrate.rules.model_code_rnn`), and reports the rest (TS125).
A ``tf.contrib.rnn`` name outside the table (``LayerNormBasicLSTMCell``, the
fused cells) stays as it was and is reported by the contrib rule (TS117), as is
a ``tf.contrib.rnn`` function in a file that imports TensorFlow by no name.
"""

from __future__ import annotations

from typing import Callable, Optional, Set

import libcst as cst
from libcst.codemod.visitors import AddImportsVisitor

from tapeshift.migrate.engine.findings import TS109, CodeInfo, Severity
from tapeshift.migrate.engine.registry import register_rule
from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.tf_names import all_names, fresh_name, tf_module_alias
from tapeshift.migrate.rules.rnn_cells_table import (
    CONTRIB_RNN_FUNCTIONS, RNN_CELLS, TF_KERAS_LEGACY_RNN_CELL)

TS134 = CodeInfo(
    code="TS134",
    name="uses-tf-keras-rnn-cells",
    severity=Severity.INFO,
    summary="RNN cells moved to tf-keras' legacy rnn_cell; the file needs the tf-keras package",
    what="Reports a file (in compat mode) whose `tf.nn.rnn_cell` / `tf.contrib.rnn` cells were "
         "rewritten to `tf_keras.api._v1.keras.__internal__.legacy.rnn_cell`, and whose "
         "`tf.contrib.rnn.static_rnn` (and the other static functions) became `tf.nn`'s.",
    why="On TensorFlow >= 2.16 with Keras 3 `tf.compat.v1.nn.rnn_cell.LSTMCell` raises "
        "\"`LSTMCell` is not available with Keras 3\", and `tf.contrib` is gone. The cells "
        "live on in the tf-keras package, where TensorFlow itself finds them under "
        "`TF_USE_LEGACY_KERAS=1`; importing them from there needs no environment variable.",
    example="cell = tf.contrib.rnn.BasicLSTMCell(64)",
    use_instead="import tf_keras.api._v1.keras.__internal__.legacy.rnn_cell as tf_rnn_cell\n"
                "cell = tf_rnn_cell.BasicLSTMCell(64)   # pip install tf-keras",
    fix_safety="Safe: the same cell classes (TF 1.x's tf.contrib.rnn re-exported them), so "
               "every number is kept; install tf-keras of your TensorFlow's version.",
)

DESCRIPTION = "tf.nn.rnn_cell / tf.contrib.rnn -> tf-keras' legacy RNN cells (they run on Keras 3)"


def _short(api: Optional[str]) -> Optional[str]:
    """The API name with ``compat.v1.`` read through (as the compat fallback spells it)."""
    while api is not None and (api == "compat.v1" or api.startswith("compat.v1.")):
        api = api[len("compat.v1."):]
    return api


def converts(node: cst.Attribute, api_name: Callable[[cst.CSTNode], Optional[str]]) -> bool:
    """``node`` is a ``tf.contrib.rnn.X`` this rule converts (the contrib rule reports
    those as TF1-only, not as gone)."""
    api = _short(api_name(node)) or ""
    head, _, leaf = api.rpartition(".")
    return head == "contrib.rnn" and (leaf in RNN_CELLS or leaf in CONTRIB_RNN_FUNCTIONS)


@register_rule
class RnnCellsToTfKeras(TapeshiftCodemod):
    DESCRIPTION = DESCRIPTION
    RULE = "rnn-cells"
    #: on the fallback's output, beside tf.layers' move to tf-keras
    PHASE = "compat-post"
    ORDER = 11
    CODES = (TS134,)
    #: tf.nn.rnn_cell and tf.contrib.rnn are spelled with these words
    SCREEN_NAMES = frozenset({"rnn_cell", "rnn"})
    USES_SHARED_FACTS = False

    def __init__(self, context) -> None:
        super().__init__(context)
        self._alias: Optional[str] = None
        self._first: Optional[cst.CSTNode] = None
        self._skip: Set[cst.CSTNode] = set()  # `tf.nn.rnn_cell` nodes left (a name not provided)

    def visit_Module(self, node: cst.Module) -> None:
        self._module = node
        self._tf = tf_module_alias(node)  # (the fallback's `import tensorflow.compat.v1 as tf`)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if _short(self.tf_api_name(node.value)) != "nn.rnn_cell":
            return
        if node.attr.value not in RNN_CELLS:
            self._skip.add(node.value)
            self.report(TS109.code, node, f"{code_of(node)}: tf.nn.rnn_cell.{node.attr.value} "
                        "is not in tf-keras' legacy rnn_cell; left as it was (it fails on "
                        "TensorFlow >= 2.16 with Keras 3)")

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute):
        api = _short(self.tf_api_name(original_node))
        if api == "nn.rnn_cell" and original_node not in self._skip:
            self._used(original_node)
            self.record_change(original_node, f"{code_of(original_node)} -> {self._alias} "
                                              f"({TF_KERAS_LEGACY_RNN_CELL})")
            return cst.Name(self._alias, lpar=updated_node.lpar, rpar=updated_node.rpar)
        if not converts(original_node, self.tf_api_name):
            return updated_node
        leaf = original_node.attr.value
        if leaf in CONTRIB_RNN_FUNCTIONS:  # tf.contrib.rnn.static_rnn -> tf.nn.static_rnn
            if self._tf is None:
                return updated_node
            new = cst.parse_expression(f"{self._tf}.nn.{leaf}")
            self.record_change(original_node, f"{code_of(original_node)} -> {code_of(new)}")
        else:
            self._used(original_node)
            new = cst.Attribute(value=cst.Name(self._alias), attr=cst.Name(leaf))
            self.record_change(original_node, f"{code_of(original_node)} -> {self._alias}."
                                              f"{leaf} ({TF_KERAS_LEGACY_RNN_CELL})")
        return new.with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar)

    def _used(self, node: cst.CSTNode) -> None:
        if self._first is None:
            self._first = node
        if self._alias is None:
            self._alias = fresh_name("tf_rnn_cell", all_names(self._module))
            AddImportsVisitor.add_needed_import(self.context, TF_KERAS_LEGACY_RNN_CELL,
                                                asname=self._alias)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module):
        if self._first is not None:
            self.report(TS134.code, self._first, "RNN cells now come from the tf-keras package "
                        "(pip install tf-keras, the version of your TensorFlow): on TensorFlow "
                        ">= 2.16 with Keras 3 tf.compat.v1.nn.rnn_cell is gone, and tf.contrib.rnn "
                        "with all of tf.contrib")
        return updated_node
