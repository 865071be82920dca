"""Shared plumbing for the tapeshift codemods: findings, changes, TF names.

Every codemod matches TensorFlow by *qualified name* (what a name is bound to,
resolved by LibCST's scope analysis), never by the spelling ``tf.``. A name is
"TensorFlow" when its qualified name starts with ``tensorflow``; the part after
``tensorflow.``, ``tensorflow.compat.v1.`` or ``tensorflow.compat.v2.`` is its
*API name* (``gradients``, ``train.AdamOptimizer``), which the rules compare.
"""

from __future__ import annotations

from typing import Callable, Iterable, List, Optional, Set

import libcst as cst
from libcst.codemod import CodemodContext, VisitorBasedCodemodCommand
from libcst.codemod.visitors import RemoveImportsVisitor
from libcst.metadata import PositionProvider, QualifiedNameProvider

from migrate.findings import REGISTRY, Change, Finding, Severity, make_finding

SCRATCH_FINDINGS = "tapeshift.findings"
SCRATCH_CHANGES = "tapeshift.changes"
#: One dict shared by the rules that migrate one file, in order: a pre-rule
#: leaves facts for the later rules here (``step_functions``: the names of the
#: functions the feeds rule generated; they hold eager training code on purpose).
SCRATCH_SHARED = "tapeshift.shared"

_TF_PREFIXES = ("tensorflow.compat.v1.", "tensorflow.compat.v2.", "tensorflow.")
_TF_MODULES = ("tensorflow", "tensorflow.compat.v1", "tensorflow.compat.v2")


def api_name(qualified: str) -> Optional[str]:
    """``tensorflow.compat.v1.train.Saver`` -> ``train.Saver``; ``""`` for the
    module itself; None when the name is not TensorFlow."""
    if qualified in _TF_MODULES:
        return ""
    for prefix in _TF_PREFIXES:
        if qualified.startswith(prefix):
            return qualified[len(prefix):]
    return None


def findings_of(context: CodemodContext) -> List[Finding]:
    return list(context.scratch.get(SCRATCH_FINDINGS, []))


def changes_of(context: CodemodContext) -> List[Change]:
    return list(context.scratch.get(SCRATCH_CHANGES, []))


def code_of(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


class TapeshiftCodemod(VisitorBasedCodemodCommand):
    """Base class: TF name resolution and finding / change records."""

    METADATA_DEPENDENCIES = (QualifiedNameProvider, PositionProvider)
    RULE = "base"

    # -- TensorFlow names -------------------------------------------------
    def tf_api_names(self, node: cst.CSTNode) -> Set[str]:
        try:
            qnames = self.get_metadata(QualifiedNameProvider, node, set())
        except KeyError:
            return set()
        out = set()
        for q in qnames:
            name = api_name(q.name)
            if name is not None:
                out.add(name)
        return out

    def tf_api_name(self, node: cst.CSTNode) -> Optional[str]:
        names = self.tf_api_names(node)
        return min(names) if names else None

    def is_tf(self, node: cst.CSTNode, *names: str) -> bool:
        return bool(self.tf_api_names(node) & set(names))

    def is_tf_call(self, node: cst.CSTNode, *names: str) -> bool:
        return isinstance(node, cst.Call) and self.is_tf(node.func, *names)

    @property
    def shared(self) -> dict:
        """Facts shared with the other rules migrating this file (see SCRATCH_SHARED)."""
        return self.context.scratch.setdefault(SCRATCH_SHARED, {})

    # -- records ----------------------------------------------------------
    def position(self, node: cst.CSTNode):
        try:
            start = self.get_metadata(PositionProvider, node).start
            return start.line, start.column + 1
        except KeyError:
            return 0, 0

    def report(self, code: str, node: cst.CSTNode, message: str,
               changes_numbers: bool = False) -> Finding:
        line, col = self.position(node)
        finding = make_finding(code, self.context.filename or "<string>", line, col,
                               message, changes_numbers)
        self.context.scratch.setdefault(SCRATCH_FINDINGS, []).append(finding)
        if finding.severity is not Severity.INFO:
            self.warn(f"{code} {line}:{col}: {message}")
        return finding

    def record_change(self, node: cst.CSTNode, description: str) -> None:
        line, col = self.position(node)
        self.context.scratch.setdefault(SCRATCH_CHANGES, []).append(
            Change(rule=self.RULE, path=self.context.filename or "<string>",
                   line=line, column=col, description=description))

    def remove_tf_from_imports(self, module: cst.Module,
                               should_remove: Callable[[str, str], bool]) -> None:
        """Schedule removal of module-level ``from tensorflow[.compat.v1] import
        name [as bound]`` when ``should_remove(name, bound)`` and it is unused."""
        for stmt in module.body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                if not isinstance(small, cst.ImportFrom) or small.module is None \
                        or isinstance(small.names, cst.ImportStar):
                    continue
                mod = code_of(small.module)
                if mod not in ("tensorflow", "tensorflow.compat.v1"):
                    continue
                for alias in small.names:
                    name = code_of(alias.name)
                    asname = code_of(alias.asname.name) if alias.asname else None
                    if should_remove(name, asname or name):
                        RemoveImportsVisitor.remove_unused_import(self.context, mod, name, asname)

    def blocked(self) -> bool:
        """True when this codemod reported something that blocks tape form."""
        return any(REGISTRY[f.code].blocks_tape for f in findings_of(self.context)
                   if f.path == (self.context.filename or "<string>"))


def tf_module_alias(module: cst.Module) -> Optional[str]:
    """The name a module-level ``import tensorflow[.compat.v1] as X`` binds."""
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if not isinstance(small, cst.Import):
                continue
            for alias in small.names:
                dotted = code_of(alias.name)
                if alias.asname is not None and dotted in _TF_MODULES:
                    return code_of(alias.asname.name)
                if alias.asname is None and dotted == "tensorflow":
                    return "tensorflow"
    return None


def all_names(module: cst.Module) -> Set[str]:
    """Every identifier spelled in the module (to pick fresh names)."""
    found: Set[str] = set()

    class _V(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            found.add(node.value)

    module.visit(_V())
    return found


def fresh_name(base: str, taken: Iterable[str]) -> str:
    taken = set(taken)
    if base not in taken:
        return base
    i = 1
    while f"{base}_{i}" in taken:
        i += 1
    return f"{base}_{i}"


def keyword_arg(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(
        keyword=cst.Name(name),
        value=value,
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                              whitespace_after=cst.SimpleWhitespace("")),
    )


def positional_arg(value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(value=value)


def clean_args(args: List[cst.Arg]) -> List[cst.Arg]:
    """Arguments with default commas (the last one without a trailing comma)."""
    out = []
    for i, arg in enumerate(args):
        comma = cst.MaybeSentinel.DEFAULT if i < len(args) - 1 else cst.MaybeSentinel.DEFAULT
        out.append(arg.with_changes(comma=comma))
    return out


# --------------------------------------------------------------------------
# What a name holds: "variable", "tensor", "list", "tuple" or "unknown".
# --------------------------------------------------------------------------
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


class KindMixin:
    """Infer, per name, what kind of value a module-level or local name holds."""

    def expr_kind(self, expr: cst.BaseExpression, kinds: dict) -> str:
        if isinstance(expr, cst.Call):
            name = self.tf_api_name(expr.func)
            if name is None:
                return "unknown"
            if name in VARIABLE_MAKERS:
                # a tape watches trainable variables only: anything else is a
                # plain tensor to it (and gets tape.watch)
                for arg in expr.args:
                    if arg.keyword is not None and arg.keyword.value == "trainable" \
                            and not (isinstance(arg.value, cst.Name) and arg.value.value == "True"):
                        return "tensor"
                if len(expr.args) > 1 and all(a.keyword is None for a in expr.args[:2]):
                    return "tensor"  # tf.Variable(value, trainable_flag, ...) positional
                return "variable"
            if name in LIST_MAKERS:
                return "list"
            if name in NON_TENSOR or "." in name and name.split(".")[0] in ("train", "summary"):
                return "unknown"
            return "tensor"
        if isinstance(expr, cst.Subscript):
            base = self.expr_kind(expr.value, kinds)
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
        if isinstance(expr, cst.List):
            return "list"
        if isinstance(expr, cst.Tuple):
            return "tuple"
        return "unknown"

    def infer_kinds(self, module: cst.Module):
        """(kinds, list_elements) for every name assigned in the module."""
        kinds: dict = {}
        elements: dict = {}
        owner = self

        class _V(cst.CSTVisitor):
            def visit_Assign(self, node: cst.Assign) -> None:
                if len(node.targets) != 1:
                    return
                target = node.targets[0].target
                if isinstance(target, cst.Name):
                    kind = owner.expr_kind(node.value, kinds)
                    name = target.value
                    if name in kinds and kinds[name] != kind:
                        kind = "unknown"
                    kinds[name] = kind
                    if isinstance(node.value, cst.List) and all(
                            isinstance(e.value, cst.Name) for e in node.value.elements):
                        elements[name] = [e.value.value for e in node.value.elements]
                    else:
                        elements.pop(name, None)
                elif isinstance(target, (cst.Tuple, cst.List)):
                    # g1, g2 = tf.gradients(l, [a, b]) -> elements are tensors
                    vk = owner.expr_kind(node.value, kinds)
                    for el in target.elements:
                        if isinstance(el.value, cst.Name):
                            kinds[el.value.value] = "tensor" if vk == "list" else "unknown"

        module.visit(_V())
        return kinds, elements
