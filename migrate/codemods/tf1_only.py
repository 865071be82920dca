"""Nothing TF1-only may be left in a tape-form file.

Reports (TS109) every reference to a name that exists in ``tf.compat.v1`` but
not in TF2 ``tf`` and that no rule converts. It changes nothing: a file with
such a reference is migrated in compat mode instead.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst
from libcst.metadata import QualifiedNameProvider

from migrate.codemods._base import TapeshiftCodemod, code_of
from migrate.codemods.compat_v1_imports import BEHAVIOUR_SWITCHES
from migrate.codemods.renames import CASTS, RENAMES, SEEDED_INITIALIZERS, eager_compat
from migrate.codemods.session import GRAPH_HOUSEKEEPING, INITIALIZERS, PLACEHOLDERS, SESSIONS
from migrate.codemods.tf1_only_table import TF1_ONLY

#: Gone from TensorFlow altogether (not even in ``tf.compat.v1``).
GONE = frozenset({"contrib"})
#: In TF2 but raising under eager execution; the gradients rule converts them.
EAGER_UNSUPPORTED = frozenset({"gradients", "hessians"})
#: TF1-only names another rule converts or reports itself.
HANDLED = frozenset(
    {k[len("tensorflow."):] for k in (*RENAMES, *CASTS)}
    | SESSIONS | INITIALIZERS | PLACEHOLDERS | BEHAVIOUR_SWITCHES | GRAPH_HOUSEKEEPING
)


def tf1_only(name: str, strict: bool = False) -> Optional[str]:
    """The TF1-only prefix of an API name, or None. Not strict: names another
    rule converts are not reported."""
    parts = name.split(".")
    if not strict and any(".".join(parts[:k]) in HANDLED for k in range(1, len(parts) + 1)):
        return None  # tf.logging.info: converted whole, its TF1-only module included
    for k in range(1, len(parts) + 1):
        prefix = ".".join(parts[:k])
        if prefix in GONE or (prefix in TF1_ONLY and (strict or prefix not in HANDLED)):
            return prefix
    return None


class TF1OnlyNames(TapeshiftCodemod):
    DESCRIPTION = "Report TF1-only API names that no rule converts (they block tape form)."
    RULE = "tf1-only"
    #: Also report names another rule handles (used on the rules' output).
    STRICT = False

    def _check(self, node: cst.CSTNode) -> bool:
        if self.STRICT and self.tf_api_names(node) & EAGER_UNSUPPORTED:
            self.report("TS109", node, f"{code_of(node)} raises under eager execution and "
                        "was not converted")
            return True
        try:
            qualified = self.get_metadata(QualifiedNameProvider, node, set())
        except KeyError:
            qualified = set()
        if any(eager_compat(q.name) for q in qualified):
            return True  # runs eagerly with TF1's numbers: kept on purpose, its parts too
        for name in sorted(self.tf_api_names(node)):
            prefix = tf1_only(name, self.STRICT)
            if prefix:
                extra = " (gone from TensorFlow 2 altogether)" if prefix.split(".")[0] in GONE else ""
                self.report("TS109", node, f"{code_of(node)}: tf.{prefix} has no TF2 counterpart "
                            f"in the rename tables{extra}")
                return True
        return False

    def _reported_or_kept(self, node: cst.CSTNode) -> bool:
        """Reported, or a name kept or converted whole (``tf.logging.info``: its
        ``tf.logging`` is not reported on its own)."""
        if self._check(node):
            return True
        return not self.STRICT and any(tf1_only(name, strict=True)
                                       for name in self.tf_api_names(node))

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return not self._reported_or_kept(node)

    def visit_Name(self, node: cst.Name) -> None:
        self._check(node)

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if node.module is None or node.relative:
            return False
        module = code_of(node.module)
        if module.startswith("tensorflow.contrib"):
            self.report("TS109", node, "tf.contrib is gone from TensorFlow 2 altogether")
        elif module in ("tensorflow", "tensorflow.compat.v1") and self.STRICT \
                and not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                name = code_of(alias.name)
                if tf1_only(name, strict=True):
                    self.report("TS109", alias, f"`from {module} import {name}` is left and "
                                "would fail under TF2")
        return False

    def visit_Call(self, node: cst.Call) -> Optional[bool]:
        # arguments of a Session the session rule removes (config=tf.ConfigProto(...))
        if not self.STRICT and self.is_tf(node.func, *SESSIONS):
            return False
        if not self.STRICT:
            self._seeded_initializer(node)
        return None

    def _seeded_initializer(self, node: cst.Call) -> None:
        """A v1 initialiser kept in tape form (renames.EAGER_COMPAT) given a seed:
        eager TF2 draws another stream from it than the v1 graph (TS113)."""
        names = self.tf_api_names(node.func) & set(SEEDED_INITIALIZERS)
        if not names:
            return
        index = SEEDED_INITIALIZERS[min(names)]
        seed = next((a.value for a in node.args if a.keyword is not None
                     and a.keyword.value == "seed"), None)
        positional = [a for a in node.args if a.keyword is None and not a.star]
        if seed is None and len(positional) > index:
            seed = positional[index].value
        if seed is not None and not (isinstance(seed, cst.Name) and seed.value == "None"):
            self.report("TS113", node, f"{code_of(node.func)}(seed={code_of(seed)}): seeded "
                        "random ops give a different stream in eager TF2")
        else:
            self.report("TS116", node, f"{code_of(node.func)}: random initial values: the "
                        "legacy run and the migrated run draw different numbers (unseeded "
                        "in both)", changes_numbers=True)


class TF1OnlyNamesLeft(TF1OnlyNames):
    DESCRIPTION = "After the tape rules ran: report any TF1-only name still in the file."
    STRICT = True
