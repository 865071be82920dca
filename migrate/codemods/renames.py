"""TF1 op names that moved in TF2 get their TF2 names.

Two tables, keyed by full name, live here beside the rule (a test checks them
against the installed TensorFlow: every old name exists in ``tf.compat.v1``,
every new name in TF2 ``tf``):

* :data:`RENAMES`: a pure rename, ``tf.log(x)`` -> ``tf.math.log(x)``.
* :data:`CASTS`: ``tf.to_float(x)`` -> ``tf.cast(x, tf.float32)``.

A name reached through ``from tensorflow import log`` is rewritten to
``tf.math.log`` (the import is removed when unused). A ``to_float`` that is not
called (passed as a function) cannot be rewritten; it is reported (TS109).
"""

from __future__ import annotations

from typing import Dict, Optional

import libcst as cst
from libcst.codemod.visitors import AddImportsVisitor
from libcst.metadata import QualifiedNameProvider

from migrate.codemods._base import TapeshiftCodemod, all_names, code_of, fresh_name, tf_module_alias

#: old full name -> new full name (both under ``tensorflow``).
RENAMES: Dict[str, str] = {
    "tensorflow.log": "tensorflow.math.log",
    "tensorflow.log1p": "tensorflow.math.log1p",
    "tensorflow.log_sigmoid": "tensorflow.math.log_sigmoid",
    "tensorflow.logical_xor": "tensorflow.math.logical_xor",
    "tensorflow.div": "tensorflow.math.divide",
    "tensorflow.div_no_nan": "tensorflow.math.divide_no_nan",
    "tensorflow.floordiv": "tensorflow.math.floordiv",
    "tensorflow.mod": "tensorflow.math.floormod",
    "tensorflow.squared_difference": "tensorflow.math.squared_difference",
    "tensorflow.rsqrt": "tensorflow.math.rsqrt",
    "tensorflow.erf": "tensorflow.math.erf",
    "tensorflow.lgamma": "tensorflow.math.lgamma",
    "tensorflow.digamma": "tensorflow.math.digamma",
    "tensorflow.igamma": "tensorflow.math.igamma",
    "tensorflow.betainc": "tensorflow.math.betainc",
    "tensorflow.is_nan": "tensorflow.math.is_nan",
    "tensorflow.is_inf": "tensorflow.math.is_inf",
    "tensorflow.is_finite": "tensorflow.math.is_finite",
    "tensorflow.segment_sum": "tensorflow.math.segment_sum",
    "tensorflow.unsorted_segment_sum": "tensorflow.math.unsorted_segment_sum",
    "tensorflow.count_nonzero": "tensorflow.math.count_nonzero",
    "tensorflow.cumprod": "tensorflow.math.cumprod",
    "tensorflow.random_normal": "tensorflow.random.normal",
    "tensorflow.random_uniform": "tensorflow.random.uniform",
    "tensorflow.truncated_normal": "tensorflow.random.truncated_normal",
    "tensorflow.random_shuffle": "tensorflow.random.shuffle",
    "tensorflow.random_gamma": "tensorflow.random.gamma",
    "tensorflow.random_poisson": "tensorflow.random.poisson",
    "tensorflow.multinomial": "tensorflow.random.categorical",
    "tensorflow.set_random_seed": "tensorflow.random.set_seed",
    "tensorflow.matrix_transpose": "tensorflow.linalg.matrix_transpose",
    "tensorflow.matrix_inverse": "tensorflow.linalg.inv",
    "tensorflow.matrix_determinant": "tensorflow.linalg.det",
    "tensorflow.matrix_diag": "tensorflow.linalg.diag",
    "tensorflow.matrix_diag_part": "tensorflow.linalg.diag_part",
    "tensorflow.matrix_band_part": "tensorflow.linalg.band_part",
    "tensorflow.matrix_solve": "tensorflow.linalg.solve",
    "tensorflow.cholesky": "tensorflow.linalg.cholesky",
    "tensorflow.diag": "tensorflow.linalg.tensor_diag",
    "tensorflow.trace": "tensorflow.linalg.trace",
    "tensorflow.lin_space": "tensorflow.linspace",
    "tensorflow.sparse_tensor_dense_matmul": "tensorflow.sparse.sparse_dense_matmul",
    "tensorflow.sparse_to_dense": "tensorflow.compat.v1.sparse_to_dense",
    "tensorflow.nn.softmax_cross_entropy_with_logits_v2": "tensorflow.nn.softmax_cross_entropy_with_logits",
    "tensorflow.check_numerics": "tensorflow.debugging.check_numerics",
    "tensorflow.is_numeric_tensor": "tensorflow.debugging.is_numeric_tensor",
    "tensorflow.string_split": "tensorflow.compat.v1.string_split",
    "tensorflow.py_func": "tensorflow.numpy_function",
    "tensorflow.extract_image_patches": "tensorflow.image.extract_patches",
    "tensorflow.space_to_depth": "tensorflow.nn.space_to_depth",
    "tensorflow.depth_to_space": "tensorflow.nn.depth_to_space",
    "tensorflow.reverse_v2": "tensorflow.reverse",
}

#: old full name -> TF2 dtype name, for ``tf.cast(x, tf.<dtype>)``.
CASTS: Dict[str, str] = {
    "tensorflow.to_float": "float32",
    "tensorflow.to_double": "float64",
    "tensorflow.to_int32": "int32",
    "tensorflow.to_int64": "int64",
    "tensorflow.to_bfloat16": "bfloat16",
    "tensorflow.to_complex64": "complex64",
    "tensorflow.to_complex128": "complex128",
}

# sparse_to_dense and string_split have no TF2 home with the same signature;
# py_func -> numpy_function is the documented TF2 equivalent. Keep the table
# honest: these are not renamed, only listed so the check test sees them.
_NOT_RENAMED = ("tensorflow.sparse_to_dense", "tensorflow.string_split")
for _name in _NOT_RENAMED:
    RENAMES.pop(_name)


#: ``tf.compat.v1`` names that run under eager execution and keep TF1's
#: numbers (docs/tf1-vs-tf2.md, section 6: the v1 optimizers' update rules differ from
#: Keras'; under eager a ``*_decay`` returns a callable the v1 optimizers
#: accept; ``make_template`` is what makes tf-slim model functions reuse their
#: variables eagerly). Tape form keeps them, spelled ``tf.compat.v1.<name>``.
EAGER_COMPAT = frozenset({
    *(f"train.{kind}Optimizer" for kind in (
        "Adadelta", "Adagrad", "Adam", "Ftrl", "GradientDescent", "Momentum",
        "ProximalAdagrad", "ProximalGradientDescent", "RMSProp")),
    *(f"train.{kind}_decay" for kind in (
        "exponential", "inverse_time", "natural_exp", "polynomial", "cosine",
        "linear_cosine", "noisy_linear_cosine", "piecewise_constant")),
    "train.cosine_decay_restarts", "train.piecewise_constant",
    "train.get_or_create_global_step",
    # shares variables made through variable scopes across eager calls (docs/tf1-vs-tf2.md, section 4)
    "make_template",
})
RENAMES.update({f"tensorflow.{name}": f"tensorflow.compat.v1.{name}" for name in EAGER_COMPAT})


def eager_compat(qualified: str) -> bool:
    """True for a ``tensorflow.compat.v1`` name kept as it is in tape form."""
    prefix = "tensorflow.compat.v1."
    return qualified.startswith(prefix) and qualified[len(prefix):] in EAGER_COMPAT


def _short(full: str) -> str:
    return full[len("tensorflow."):]


class RenameTF1Names(TapeshiftCodemod):
    DESCRIPTION = "Give TF1 op names that moved in TF2 their TF2 names (tf.log -> tf.math.log)."
    RULE = "renames"

    def __init__(self, context) -> None:
        super().__init__(context)
        self._alias: Optional[str] = None
        self._needs_import: Optional[str] = None
        self._from_imported: set = set()

    def visit_Module(self, node: cst.Module) -> bool:
        alias = tf_module_alias(node)
        if alias is None:
            taken = all_names(node)
            alias = "tf" if "tf" not in taken else fresh_name("tensorflow_", taken)
            self._needs_import = alias
        self._alias = alias
        return True

    def _old(self, node: cst.CSTNode) -> Optional[str]:
        if any(eager_compat(q.name) for q in self.get_metadata(QualifiedNameProvider, node, set())):
            return None  # already spelled tf.compat.v1.<name>
        for name in self.tf_api_names(node):
            full = "tensorflow." + name
            if full in RENAMES or full in CASTS:
                return full
        return None

    def _root(self, node: cst.BaseExpression) -> Optional[str]:
        """The module alias an attribute chain starts from (``tf`` in ``tf.compat.v1.log``)."""
        while isinstance(node, cst.Attribute):
            node = node.value
        if isinstance(node, cst.Name) and self.tf_api_name(node) == "":
            return node.value
        return None

    def _new_ref(self, node: cst.BaseExpression, dotted: str) -> cst.BaseExpression:
        root = self._root(node) if isinstance(node, cst.Attribute) else None
        if root is None:
            root = self._alias
            if self._needs_import:
                AddImportsVisitor.add_needed_import(self.context, "tensorflow", asname=self._alias)
            if isinstance(node, cst.Name):
                self._from_imported.add(node.value)
        return cst.parse_expression(f"{root}.{dotted}")

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        old = self._old(original_node.func)
        if old is None or old not in CASTS:
            return updated_node
        if not updated_node.args or updated_node.args[0].keyword is not None:
            self.report("TS109", original_node, f"{code_of(original_node.func)} with keyword "
                        "arguments only is not rewritten")
            return updated_node
        dtype = self._new_ref(original_node.func, CASTS[old])
        cast = self._new_ref(original_node.func, "cast")
        first, *rest = updated_node.args
        args = [first.with_changes(comma=cst.MaybeSentinel.DEFAULT), cst.Arg(value=dtype), *rest]
        self.record_change(original_node, f"{_short(old)}(x) -> cast(x, {CASTS[old]})")
        return updated_node.with_changes(func=cast, args=[
            a.with_changes(comma=cst.MaybeSentinel.DEFAULT) if i < len(args) - 1 else a
            for i, a in enumerate(args)])

    def _rename(self, original_node, updated_node):
        old = self._old(original_node)
        if old is None:
            return updated_node
        if old in CASTS:
            return updated_node  # handled (or reported) at the call
        self.record_change(original_node, f"{_short(old)} -> {_short(RENAMES[old])}")
        return self._new_ref(original_node, _short(RENAMES[old]))

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute):
        return self._rename(original_node, updated_node)

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name):
        # ``from tensorflow import log`` then ``log(x)``; names in other positions
        # (attributes, keywords, imports) have no qualified name and stay.
        return self._rename(original_node, updated_node)

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg):
        value = original_node.value
        if isinstance(value, (cst.Name, cst.Attribute)):
            old = self._old(value)
            if old in CASTS:
                self.report("TS109", value, f"{code_of(value)} used as a value cannot be rewritten "
                            f"to tf.cast; use `lambda x: tf.cast(x, tf.{CASTS[old]})`")
        return updated_node

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        self.remove_tf_from_imports(original_node, lambda name, bound: bound in self._from_imported)
        return updated_node
