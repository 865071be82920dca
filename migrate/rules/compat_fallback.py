"""Fallback that never breaks a program: run the file on ``tensorflow.compat.v1``.

``import tensorflow as tf`` -> ``import tensorflow.compat.v1 as tf`` and
``tf.disable_v2_behavior()`` after the imports; ``from tensorflow import X`` ->
``from tensorflow.compat.v1 import X`` (plus ``disable_v2_behavior``);
``from tensorflow.contrib import slim`` -> ``import tf_slim as slim``. A file
already in that form is left unchanged. Graph semantics, and so every number,
are kept; the findings that sent the file here say why.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from tapeshift.migrate.engine.registry import register_rule
from tapeshift.migrate.engine.rule import SCRATCH_IDENTIFIERS, TapeshiftCodemod
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.statements import statement_children
from tapeshift.migrate.engine.toolkit.walk import children, instance_test, release
from tapeshift.migrate.engine.findings import TS109

_V1 = "tensorflow.compat.v1"
# per-node tests of the walk in visit_Module (memoized isinstance: node classes are ABCs)
_is_call, _is_import, _is_import_from = (instance_test(cst.Call), instance_test(cst.Import),
                                        instance_test(cst.ImportFrom))


def _dotted(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


@register_rule
class CompatFallback(TapeshiftCodemod):
    DESCRIPTION = "Run the file on tensorflow.compat.v1 with v2 behaviour disabled (keeps graph semantics)."
    RULE = "compat"
    PHASE = "compat"
    ORDER = 10
    STATEMENTS_ONLY = True  # imports, and a statement after them

    def __init__(self, context) -> None:
        super().__init__(context)
        self._anchor: Optional[cst.SimpleStatementLine] = None
        self._call: Optional[str] = None
        self._has_disable = False
        self._uses_tf = False
        self._add_name_to: Optional[cst.ImportFrom] = None

    def visit_Module(self, node: cst.Module) -> bool:
        owner = self
        first_tf_stmt = None
        alias = None
        from_stmt = None

        # imports are statements: expressions need a look only for a
        # disable_v2_behavior() call, in a file that spells that name at all
        spelled = self.context.scratch.get(SCRATCH_IDENTIFIERS)
        calls = spelled is None or "disable_v2_behavior" in spelled

        def walk(n, stack):
            nonlocal first_tf_stmt, alias, from_stmt
            if _is_call(n) and owner.is_tf(n.func, "disable_v2_behavior"):
                owner._has_disable = True
            if _is_import(n):
                for a in n.names:
                    name = code_of(a.name)
                    if name == "tensorflow" or name.startswith("tensorflow."):
                        owner._uses_tf = True
                        if name in ("tensorflow", _V1) and stack and first_tf_stmt is None:
                            first_tf_stmt = stack[-1]
                            alias = code_of(a.asname.name) if a.asname else (
                                "tensorflow" if name == "tensorflow" else None)
                return
            if _is_import_from(n) and n.module is not None and n.relative == ():
                mod = code_of(n.module)
                if mod == "tensorflow" or mod.startswith("tensorflow."):
                    owner._uses_tf = True
                    if mod in ("tensorflow", _V1) and from_stmt is None:
                        from_stmt = (stack[-1], n)
                    elif mod == "tensorflow.compat" and first_tf_stmt is None \
                            and not isinstance(n.names, cst.ImportStar):
                        for a in n.names:  # from tensorflow.compat import v1 as tf
                            if code_of(a.name) == "v1":
                                first_tf_stmt = stack[-1]
                                alias = code_of(a.asname.name) if a.asname else "v1"
                return
            stack.append(n)
            for c in (children(n) if calls else statement_children(n)):
                walk(c, stack)
            stack.pop()

        try:
            walk(node, [])
        finally:
            release(walk)
        if not self._uses_tf or self._has_disable:
            return True
        if first_tf_stmt is not None and alias is not None:
            self._call = f"{alias}.disable_v2_behavior()"
            anchor = first_tf_stmt
        elif from_stmt is not None:
            self._call = "disable_v2_behavior()"
            anchor, self._add_name_to = from_stmt
        else:
            return True
        # after the run of imports that holds the TensorFlow import
        if anchor in node.body:
            i = node.body.index(anchor)
            while i + 1 < len(node.body) and isinstance(node.body[i + 1], cst.SimpleStatementLine) \
                    and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in node.body[i + 1].body):
                i += 1
            anchor = node.body[i]
        self._anchor = anchor
        self.record_change(anchor, f"added `{self._call}` after the imports")
        return True

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import):
        names = []
        changed = False
        for a in updated_node.names:
            if code_of(a.name) == "tensorflow":
                asname = a.asname or cst.AsName(name=cst.Name("tensorflow"))
                a = a.with_changes(name=_dotted(_V1), asname=asname)
                changed = True
            names.append(a)
        if changed:
            self.record_change(original_node, "import tensorflow -> import tensorflow.compat.v1")
            return updated_node.with_changes(names=names)
        return updated_node

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom):
        if updated_node.module is None or updated_node.relative:
            return updated_node
        mod = code_of(updated_node.module)
        if mod == "tensorflow.contrib" and not isinstance(updated_node.names, cst.ImportStar) \
                and [code_of(a.name) for a in updated_node.names] == ["slim"]:
            a = updated_node.names[0]
            self.record_change(original_node, "tensorflow.contrib.slim -> tf_slim")
            return cst.Import(names=[cst.ImportAlias(
                name=cst.Name("tf_slim"), asname=a.asname or cst.AsName(name=cst.Name("slim")))])
        if mod.startswith("tensorflow.contrib"):
            self.report(TS109.code, original_node, "tf.contrib is not part of TensorFlow 2, "
                        "not even under tensorflow.compat.v1")
            return updated_node
        if mod == "tensorflow":
            updated_node = updated_node.with_changes(module=_dotted(_V1))
            self.record_change(original_node, "from tensorflow import -> from tensorflow.compat.v1 import")
        if original_node is self._add_name_to and not isinstance(updated_node.names, cst.ImportStar):
            names = list(updated_node.names)
            names[-1] = names[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            names.append(cst.ImportAlias(name=cst.Name("disable_v2_behavior")))
            updated_node = updated_node.with_changes(names=names)
        return updated_node

    def leave_SimpleStatementLine(self, original_node, updated_node):
        if original_node is self._anchor and self._call:
            call = cst.parse_statement(self._call + "\n")
            return cst.FlattenSentinel([updated_node, call])
        return updated_node
