"""``import tensorflow.compat.v1 as tf`` -> ``import tensorflow as tf`` once a file converts.

Run last in tape form, only when every other rule converted the file: the
import goes back to TF2, ``tf.disable_v2_behavior()`` (and
``disable_eager_execution`` / ``enable_eager_execution`` /
``enable_v2_behavior``) go away, and ``tf.compat.v1.NAME`` becomes ``tf.NAME``
where ``NAME`` exists in TF2.
"""

from __future__ import annotations

from typing import Set

import libcst as cst
from libcst.codemod.visitors import RemoveImportsVisitor
from libcst.metadata import QualifiedNameProvider

from tapeshift.migrate.engine.registry import register_rule
from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.rules.renames import OTHER_DEFAULTS, eager_compat
from tapeshift.migrate.engine.tf1_api import BEHAVIOUR_SWITCHES
from tapeshift.migrate.engine.tf1_api_table import TF1_ONLY

_V1 = "tensorflow.compat.v1"


@register_rule
class CompatV1ToTF2Imports(TapeshiftCodemod):
    DESCRIPTION = "Turn tensorflow.compat.v1 imports back into TF2 imports and drop disable_v2_behavior()."
    RULE = "imports"
    #: last: the other tape rules still read the compat.v1 names it rewrites
    PHASE = "tape"
    ORDER = 50
    HANDLES = BEHAVIOUR_SWITCHES
    #: tensorflow.compat.v1 imports and X.compat.v1.NAME; the behaviour switches
    SCREEN_NAMES = frozenset({"compat"}) | BEHAVIOUR_SWITCHES

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import):
        names = []
        for a in updated_node.names:
            if code_of(a.name) == _V1 and a.asname is not None:
                a = a.with_changes(name=cst.Name("tensorflow"))
                self.record_change(original_node, "import tensorflow.compat.v1 -> import tensorflow")
            names.append(a)
        return updated_node.with_changes(names=names)

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom):
        if updated_node.module is None or updated_node.relative:
            return updated_node
        mod = code_of(updated_node.module)
        if mod == _V1:
            self.record_change(original_node, "from tensorflow.compat.v1 -> from tensorflow")
            for a in updated_node.names if not isinstance(updated_node.names, cst.ImportStar) else ():
                if code_of(a.name) in BEHAVIOUR_SWITCHES:
                    RemoveImportsVisitor.remove_unused_import(self.context, "tensorflow", code_of(a.name))
            return updated_node.with_changes(module=cst.Name("tensorflow"))
        if mod == "tensorflow.compat" and not isinstance(updated_node.names, cst.ImportStar) \
                and [code_of(a.name) for a in updated_node.names] == ["v1"] \
                and updated_node.names[0].asname is not None:
            self.record_change(original_node, "from tensorflow.compat import v1 -> import tensorflow")
            return cst.Import(names=[cst.ImportAlias(name=cst.Name("tensorflow"),
                                                     asname=updated_node.names[0].asname)])
        return updated_node

    def leave_SimpleStatementLine(self, original_node, updated_node):
        if len(original_node.body) == 1 and isinstance(original_node.body[0], cst.Expr):
            value = original_node.body[0].value
            if isinstance(value, cst.Call) and self.is_tf(value.func, *BEHAVIOUR_SWITCHES):
                self.record_change(original_node, f"{code_of(value.func)}() removed")
                return cst.RemoveFromParent()
        return updated_node

    def visit_Module(self, node: cst.Module) -> bool:
        self._keep: Set[cst.Attribute] = set()
        return True

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        # X.compat.v1.train.AdamOptimizer must keep its compat.v1 although
        # X.train exists in TF2: the whole chain decides
        if node in self._keep:
            return True
        for q in self.get_metadata(QualifiedNameProvider, node, set()):
            if not q.name.startswith(_V1 + "."):
                continue
            parts = q.name[len(_V1) + 1:].split(".")
            if eager_compat(q.name) or any(
                    ".".join(parts[:k]) in TF1_ONLY for k in range(1, len(parts) + 1)):
                inner = node.value
                while isinstance(inner, cst.Attribute):
                    self._keep.add(inner)
                    inner = inner.value
        return True

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute):
        # X.compat.v1.NAME -> X.NAME when NAME exists in TF2
        if original_node in self._keep:
            return updated_node
        value = updated_node.value
        if isinstance(value, cst.Attribute) and value.attr.value == "v1" \
                and isinstance(value.value, cst.Attribute) and value.value.attr.value == "compat" \
                and isinstance(value.value.value, cst.Name) \
                and self.tf_api_name(original_node.value.value.value) == "":
            name = updated_node.attr.value
            # (not a v1 initialiser whose TF2 namesake has other defaults)
            if name not in TF1_ONLY and name not in BEHAVIOUR_SWITCHES and name != "compat" \
                    and name not in OTHER_DEFAULTS:
                self.record_change(original_node, f"compat.v1.{name} -> {name}")
                return updated_node.with_changes(value=value.value.value)
        return updated_node
