"""TF1 op names that moved in TF2 get their TF2 names.

Two tables, keyed by full name, live here beside the rule (a test checks them
against the installed TensorFlow: every old name exists in ``tf.compat.v1``,
every new name in TF2 ``tf``):

* :data:`RENAMES`: a pure rename, ``tf.log(x)`` -> ``tf.math.log(x)``.
* :data:`CASTS`: ``tf.to_float(x)`` -> ``tf.cast(x, tf.float32)``.

:data:`KEYWORDS` renames the keyword arguments of a renamed function whose
parameters changed names (``tf.gfile.Exists(filename=p)`` ->
``tf.io.gfile.exists(path=p)``).

A name reached through ``from tensorflow import log`` is rewritten to
``tf.math.log`` (the import is removed when unused). A ``to_float`` that is not
called (passed as a function) cannot be rewritten; it is reported (TS109).
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

import libcst as cst
from libcst.codemod.visitors import AddImportsVisitor
from libcst.metadata import QualifiedNameProvider

from tapeshift.migrate.engine.registry import register_rule
from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.tf_names import all_names, fresh_name, tf_module_alias
from tapeshift.migrate.engine.findings import TS109

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
    # tf.gfile's functions call their tf.io.gfile namesakes (FastGFile and Open
    # are GFile); only the parameter names changed: KEYWORDS below
    "tensorflow.gfile.GFile": "tensorflow.io.gfile.GFile",
    "tensorflow.gfile.FastGFile": "tensorflow.io.gfile.GFile",
    "tensorflow.gfile.Open": "tensorflow.io.gfile.GFile",
    "tensorflow.gfile.Exists": "tensorflow.io.gfile.exists",
    "tensorflow.gfile.Glob": "tensorflow.io.gfile.glob",
    "tensorflow.gfile.IsDirectory": "tensorflow.io.gfile.isdir",
    "tensorflow.gfile.ListDirectory": "tensorflow.io.gfile.listdir",
    "tensorflow.gfile.MakeDirs": "tensorflow.io.gfile.makedirs",
    "tensorflow.gfile.MkDir": "tensorflow.io.gfile.mkdir",
    "tensorflow.gfile.Remove": "tensorflow.io.gfile.remove",
    "tensorflow.gfile.DeleteRecursively": "tensorflow.io.gfile.rmtree",
    "tensorflow.gfile.Rename": "tensorflow.io.gfile.rename",
    "tensorflow.gfile.Copy": "tensorflow.io.gfile.copy",
    "tensorflow.gfile.Stat": "tensorflow.io.gfile.stat",
    "tensorflow.gfile.Walk": "tensorflow.io.gfile.walk",
}

#: old full name -> {old parameter: new parameter}, for renamed functions whose
#: parameters were renamed too (``tf.gfile.Exists(filename=p)`` ->
#: ``tf.io.gfile.exists(path=p)``; deprecated aliases such as ``keep_dims`` included).
KEYWORDS: Dict[str, Dict[str, str]] = {
    **{f"tensorflow.gfile.{name}": {"filename": "path"}
       for name in ("Exists", "Remove", "Stat")},
    "tensorflow.gfile.Glob": {"filename": "pattern"},
    **{f"tensorflow.gfile.{name}": {"dirname": "path"}
       for name in ("IsDirectory", "ListDirectory", "MakeDirs", "MkDir", "DeleteRecursively")},
    "tensorflow.gfile.Rename": {"oldname": "src", "newname": "dst"},
    "tensorflow.gfile.Copy": {"oldpath": "src", "newpath": "dst"},
    "tensorflow.gfile.Walk": {"in_order": "topdown"},
    "tensorflow.count_nonzero": {"input_tensor": "input", "reduction_indices": "axis",
                                 "keep_dims": "keepdims"},
    "tensorflow.extract_image_patches": {"ksizes": "sizes"},
    "tensorflow.multinomial": {"output_dtype": "dtype"},
    "tensorflow.nn.softmax_cross_entropy_with_logits_v2": {"dim": "axis"},
}

#: full name -> {TF1 keyword alias: TF2 keyword}, for functions TF2 keeps under their
#: name but without TF1's deprecated keyword aliases (``tf.reduce_sum(x,
#: reduction_indices=1)`` raises a TypeError in TF2; ``axis=1`` is the same argument).
#: Each pair checked against TF 2.21's signatures: the alias is a parameter of the
#: ``tf.compat.v1`` function and not of the TF2 one, which has the new name.
KEYWORD_ALIASES: Dict[str, Dict[str, str]] = {
    **{f"tensorflow.{prefix}{name}": {"reduction_indices": "axis", "keep_dims": "keepdims"}
       for prefix in ("", "math.")
       for name in ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
                    "reduce_all", "reduce_any", "reduce_logsumexp")},
    **{f"tensorflow.{prefix}{name}": {"dimension": "axis"}
       for prefix in ("", "math.") for name in ("argmax", "argmin")},
    "tensorflow.expand_dims": {"dim": "axis"},
    "tensorflow.squeeze": {"squeeze_dims": "axis"},
    "tensorflow.nn.softmax": {"dim": "axis"},
    "tensorflow.nn.log_softmax": {"dim": "axis"},
    "tensorflow.norm": {"keep_dims": "keepdims"},
    "tensorflow.nn.moments": {"keep_dims": "keepdims"},
    "tensorflow.reverse_sequence": {"seq_dim": "seq_axis", "batch_dim": "batch_axis"},
}

#: old full name -> (the old function's parameters, the new one's), for renamed
#: functions whose parameters moved: from the first positional argument whose
#: position changed, a call passes its arguments by the new names
#: (``tf.random_poisson(lam, shape)`` -> ``tf.random.poisson(lam=lam, shape=shape)``;
#: ``tf.multinomial(logits, n, seed)``'s third is ``seed``, ``categorical``'s ``dtype``).
PARAMETERS: Dict[str, Tuple[Tuple[str, ...], Tuple[str, ...]]] = {
    "tensorflow.random_poisson": (("lam", "shape", "dtype", "seed", "name"),
                                  ("shape", "lam", "dtype", "seed", "name")),
    "tensorflow.multinomial": (("logits", "num_samples", "seed", "name", "output_dtype"),
                               ("logits", "num_samples", "dtype", "seed", "name")),
    "tensorflow.depth_to_space": (("input", "block_size", "name", "data_format"),
                                  ("input", "block_size", "data_format", "name")),
    "tensorflow.space_to_depth": (("input", "block_size", "name", "data_format"),
                                  ("input", "block_size", "data_format", "name")),
    "tensorflow.count_nonzero": (("input_tensor", "axis", "keepdims", "dtype", "name",
                                  "reduction_indices", "keep_dims", "input"),
                                 ("input", "axis", "keepdims", "dtype", "name")),
    "tensorflow.extract_image_patches": (("images", "ksizes", "strides", "rates", "padding",
                                          "name", "sizes"),
                                         ("images", "sizes", "strides", "rates", "padding",
                                          "name")),
    "tensorflow.nn.softmax_cross_entropy_with_logits_v2": (("labels", "logits", "axis", "name",
                                                            "dim"),
                                                           ("labels", "logits", "axis", "name")),
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
    # eagerly the global step get_or_create_global_step made (one per program: the
    # model-code rule refuses a file that resets the graph and has one)
    "train.get_global_step",
    # shares variables made through variable scopes across eager calls (docs/tf1-vs-tf2.md, section 4)
    "make_template",
})
#: TF1-only names whose TF2 name is bound to the very same Python object in
#: TensorFlow (``tf.compat.v1.<old> is tf.<new>``, checked by
#: tests/migrate/rules/test_tables.py): the same function, so the same defaults and the
#: same numbers. Only stateless, deterministic ones: an op with a side effect or a
#: random stream runs at once in eager code but only when fetched in a graph, so
#: the queues, ``write_file``, ``train.write_graph``, ``train.Server``,
#: ``train.match_filenames_once`` (a local variable), ``random_crop``, the
#: candidate samplers and ``NoGradient`` (graph registration) are not renamed
#: (docs/codes.md, TS109, lists them).
IDENTICAL: Dict[str, str] = {
    # TS109 named it in the corpora; gradient clipping code uses it
    "global_norm": "linalg.global_norm",
    # shape helpers, in TF2's tf.compat (not tf.compat.v1)
    "dimension_value": "compat.dimension_value", "dimension_at_index": "compat.dimension_at_index",
    # version and build constants
    "VERSION": "version.VERSION", "GIT_VERSION": "version.GIT_VERSION",
    "COMPILER_VERSION": "version.COMPILER_VERSION",
    "GRAPH_DEF_VERSION": "version.GRAPH_DEF_VERSION",
    "GRAPH_DEF_VERSION_MIN_CONSUMER": "version.GRAPH_DEF_VERSION_MIN_CONSUMER",
    "GRAPH_DEF_VERSION_MIN_PRODUCER": "version.GRAPH_DEF_VERSION_MIN_PRODUCER",
    "CXX11_ABI_FLAG": "sysconfig.CXX11_ABI_FLAG", "CXX_VERSION": "sysconfig.CXX_VERSION",
    "MONOLITHIC_BUILD": "sysconfig.MONOLITHIC_BUILD", "QUANTIZED_DTYPES": "dtypes.QUANTIZED_DTYPES",
    # classes and exceptions that build no op
    "OpError": "errors.OpError", "FixedLenFeature": "io.FixedLenFeature",
    "FixedLenSequenceFeature": "io.FixedLenSequenceFeature", "SparseFeature": "io.SparseFeature",
    "VarLenFeature": "io.VarLenFeature",
    # elementwise and reduction math
    "accumulate_n": "math.accumulate_n", "angle": "math.angle", "ceil": "math.ceil",
    "conj": "math.conj", "erfc": "math.erfc", "expm1": "math.expm1", "floormod": "math.floormod",
    "igammac": "math.igammac", "imag": "math.imag", "invert_permutation": "math.invert_permutation",
    "lbeta": "math.lbeta", "polygamma": "math.polygamma", "real": "math.real",
    "reciprocal": "math.reciprocal", "rint": "math.rint", "zeta": "math.zeta",
    "is_non_decreasing": "math.is_non_decreasing", "is_strictly_increasing": "math.is_strictly_increasing",
    "debugging.is_finite": "math.is_finite", "debugging.is_inf": "math.is_inf",
    "debugging.is_nan": "math.is_nan", "debugging.is_non_decreasing": "math.is_non_decreasing",
    "debugging.is_strictly_increasing": "math.is_strictly_increasing",
    "segment_max": "math.segment_max", "segment_mean": "math.segment_mean",
    "segment_min": "math.segment_min", "segment_prod": "math.segment_prod",
    "unsorted_segment_max": "math.unsorted_segment_max",
    "unsorted_segment_mean": "math.unsorted_segment_mean",
    "unsorted_segment_min": "math.unsorted_segment_min",
    "unsorted_segment_prod": "math.unsorted_segment_prod",
    "unsorted_segment_sqrt_n": "math.unsorted_segment_sqrt_n",
    "tensor_scatter_add": "tensor_scatter_nd_add", "tensor_scatter_sub": "tensor_scatter_nd_sub",
    "tensor_scatter_update": "tensor_scatter_nd_update",  # new tensors, no variable changes
    # linear algebra and signal processing
    "cholesky_solve": "linalg.cholesky_solve", "cross": "linalg.cross",
    "diag_part": "linalg.tensor_diag_part", "matrix_set_diag": "linalg.set_diag",
    "matrix_solve_ls": "linalg.lstsq", "matrix_triangular_solve": "linalg.triangular_solve",
    "qr": "linalg.qr", "svd": "linalg.svd", "self_adjoint_eig": "linalg.eigh",
    "self_adjoint_eigvals": "linalg.eigvalsh",
    "fft": "signal.fft", "fft2d": "signal.fft2d", "fft3d": "signal.fft3d",
    "ifft": "signal.ifft", "ifft2d": "signal.ifft2d", "ifft3d": "signal.ifft3d",
    # nn and image ops under their TF2 names
    "nn.avg_pool_v2": "nn.avg_pool", "nn.max_pool_v2": "nn.max_pool",
    "nn.ctc_beam_search_decoder_v2": "nn.ctc_beam_search_decoder",
    "nn.depthwise_conv2d_native_backprop_filter": "nn.depthwise_conv2d_backprop_filter",
    "nn.depthwise_conv2d_native_backprop_input": "nn.depthwise_conv2d_backprop_input",
    "image.resize_image_with_crop_or_pad": "image.resize_with_crop_or_pad",
    "image.transpose_image": "image.transpose",
    # quantization
    "dequantize": "quantization.dequantize", "quantize": "quantization.quantize",
    "quantized_concat": "quantization.quantized_concat",
    **{f"fake_quant_with_min_max_{k}": f"quantization.fake_quant_with_min_max_{k}" for k in (
        "args", "args_gradient", "vars", "vars_gradient", "vars_per_channel",
        "vars_per_channel_gradient")},
    # sets, sparse tensors, strings, serialisation (values in, values out)
    "sets.set_difference": "sets.difference", "sets.set_intersection": "sets.intersection",
    "sets.set_size": "sets.size", "sets.set_union": "sets.union",
    "sparse.matmul": "sparse.sparse_dense_matmul", "sparse_fill_empty_rows": "sparse.fill_empty_rows",
    "sparse_mask": "sparse.mask", "sparse_maximum": "sparse.maximum",
    "sparse_minimum": "sparse.minimum", "sparse_reorder": "sparse.reorder",
    "sparse_reset_shape": "sparse.reset_shape", "sparse_reshape": "sparse.reshape",
    "sparse_retain": "sparse.retain", "sparse_slice": "sparse.slice",
    "sparse_softmax": "sparse.softmax", "sparse_tensor_to_dense": "sparse.to_dense",
    "sparse_to_indicator": "sparse.to_indicator", "sparse_transpose": "sparse.transpose",
    "string_join": "strings.join", "string_strip": "strings.strip",
    "string_to_hash_bucket_fast": "strings.to_hash_bucket_fast",
    "string_to_hash_bucket_strong": "strings.to_hash_bucket_strong",
    "regex_replace": "strings.regex_replace", "dtypes.as_string": "strings.as_string",
    "decode_base64": "io.decode_base64", "encode_base64": "io.encode_base64",
    "decode_compressed": "io.decode_compressed", "decode_json_example": "io.decode_json_example",
    "deserialize_many_sparse": "io.deserialize_many_sparse", "parse_tensor": "io.parse_tensor",
    "serialize_tensor": "io.serialize_tensor",
    "parse_single_sequence_example": "io.parse_single_sequence_example",
    # reading files has no side effect (writing has: write_file is not renamed)
    "read_file": "io.read_file", "matching_files": "io.matching_files",
    # Python-level checks, run when the code runs in both (no op to fetch)
    "assert_proper_iterable": "debugging.assert_proper_iterable",
    "assert_same_float_dtype": "debugging.assert_same_float_dtype",
}
RENAMES.update({f"tensorflow.{old}": f"tensorflow.{new}" for old, new in IDENTICAL.items()})

#: ``tf.compat.v1`` names added to :data:`EAGER_COMPAT` by the TS109 audit
#: (issue #17): each runs eagerly with TF1's semantics; tests/migrate/rules/test_tf1_audit.py
#: runs them eagerly against a v1 graph.
#:
#: * ``logging.*``: Python's logging behind TensorFlow's logger; no graph, no numbers.
#:   TF2's ``tf.get_logger()`` is not a rename (other call shapes), so the v1 name stays.
#: * the v1 initialisers TF2 dropped: TF2 has no class with the same defaults
#:   (``truncated_normal_initializer`` has stddev=1.0, Keras' ``TruncatedNormal`` 0.05;
#:   Keras' ``GlorotUniform`` and ``VarianceScaling`` draw through other ops and
#:   seed handling, not proven equal). Unseeded, they draw different numbers in
#:   the two runs, as every unseeded random op does; a seeded one is reported (TS113)
#:   by the tf1-only rule, see :data:`SEEDED_INITIALIZERS`.
#: * ``losses.<loss>``: the v1 loss functions compute the same reduction eagerly; in
#:   a graph they also add the loss to the LOSSES collection, which is read only
#:   through names that stay TF1-only (``losses.get_total_loss``, ``get_losses``,
#:   ``get_regularization_loss(es)``, ``get_collection``), so a file that reads it
#:   stays in compat mode. ``losses.add_loss`` and ``compute_weighted_loss`` (which
#:   also writes it) are not listed.
#: * ``app.run`` and ``flags.*`` (also reached as ``app.flags.*``): absl's command
#:   line, which parses the flags and calls ``main``; no graph, no numbers.
_FLAGS = (
    "FLAGS", "DEFINE", "DEFINE_alias", "DEFINE_bool", "DEFINE_boolean", "DEFINE_enum",
    "DEFINE_float", "DEFINE_integer", "DEFINE_list", "DEFINE_multi_float",
    "DEFINE_multi_integer", "DEFINE_multi_string", "DEFINE_string", "mark_flag_as_required",
    "mark_flags_as_required",
)
AUDITED_EAGER_COMPAT = frozenset({
    *(f"logging.{name}" for name in (
        "DEBUG", "ERROR", "FATAL", "INFO", "WARN", "TaskLevelStatusMessage", "debug", "error",
        "fatal", "flush", "get_verbosity", "info", "log", "log_every_n", "log_first_n", "log_if",
        "set_verbosity", "vlog", "warn", "warning")),
    "truncated_normal_initializer", "glorot_uniform_initializer", "glorot_normal_initializer",
    "variance_scaling_initializer", "orthogonal_initializer", "uniform_unit_scaling_initializer",
    "initializers.uniform_unit_scaling",
    *(f"losses.{name}" for name in (
        "absolute_difference", "cosine_distance", "hinge_loss", "huber_loss", "log_loss",
        "mean_pairwise_squared_error", "mean_squared_error", "sigmoid_cross_entropy",
        "softmax_cross_entropy", "sparse_softmax_cross_entropy")),
    "app.run",
    *(f"{module}.{name}" for module in ("flags", "app.flags") for name in _FLAGS),
})
#: v1 initialiser -> index of its ``seed`` parameter (checked against the installed
#: signatures by tests/migrate/rules/test_tables.py). Eager TF2 draws another stream
#: from an op seed than a v1 graph (each call of a seeded eager op advances one
#: kernel's state; each graph op has its own): such a call is reported (TS113).
SEEDED_INITIALIZERS: Dict[str, int] = {
    "truncated_normal_initializer": 2, "glorot_uniform_initializer": 0,
    "glorot_normal_initializer": 0, "variance_scaling_initializer": 3,
    "orthogonal_initializer": 1, "uniform_unit_scaling_initializer": 1,
    "initializers.uniform_unit_scaling": 1,
    "random_normal_initializer": 2, "random_uniform_initializer": 2,
}
#: v1 initialisers whose name TF2 gave to another class, with other defaults or
#: arguments (TF2's ``random_normal_initializer`` has stddev 0.05, v1's 1.0; TF2's
#: ``random_uniform_initializer`` draws from [-0.05, 0.05), v1's from [0, 1);
#: TF2's ``constant``/``zeros``/``ones_initializer`` take no ``dtype``). In a file
#: written for TF1 they become ``tf.compat.v1.<name>``, the same class, which
#: runs eagerly; a file that uses nothing of TF1 keeps TF2's meaning
#: (:data:`TF1_SOURCE`).
OTHER_DEFAULTS = frozenset({
    "random_normal_initializer", "random_uniform_initializer", "constant_initializer",
    "zeros_initializer", "ones_initializer",
})
#: Shared fact set by the pipeline: the file uses TF1 (a TF1-only or v1 name).
TF1_SOURCE = "tf1_source"
EAGER_COMPAT = EAGER_COMPAT | AUDITED_EAGER_COMPAT
RENAMES.update({f"tensorflow.{name}": f"tensorflow.compat.v1.{name}" for name in EAGER_COMPAT})


#: v1 names a rule writes and keeps as ``tf.compat.v1``, never renamed into: the v1
#: summary ops, whose TF2 namesakes mean something else (they return a serialized
#: ``Summary``, TF1's bytes, histogram buckets included; TF2's write to a default
#: writer or do nothing; :mod:`tapeshift.migrate.rules.summaries`), and the v1 Saver.
KEPT_V1 = frozenset({"summary.scalar", "summary.histogram", "summary.image", "summary.audio",
                     "summary.text", "summary.tensor_summary",
                     # runs eagerly given its var_list (TF2 has no name-based Saver), which
                     # the savers rule writes out (tapeshift.migrate.rules.savers)
                     "train.Saver",
                     # run eagerly over tf-keras' legacy cells, which make their variables
                     # once, at the first call (tapeshift.migrate.rules.model_code_rnn)
                     "nn.dynamic_rnn", "nn.static_rnn"})


def eager_compat(qualified: str) -> bool:
    """True for a ``tensorflow.compat.v1`` name kept as it is in tape form."""
    prefix = "tensorflow.compat.v1."
    short = qualified[len(prefix):]
    return qualified.startswith(prefix) and (short in EAGER_COMPAT or short in OTHER_DEFAULTS
                                             or short in KEPT_V1)


def _short(full: str) -> str:
    return full[len("tensorflow."):]


@register_rule
class RenameTF1Names(TapeshiftCodemod):
    DESCRIPTION = "Give TF1 op names that moved in TF2 their TF2 names (tf.log -> tf.math.log)."
    RULE = "renames"
    PHASE = "tape"
    ORDER = 30
    HANDLES = frozenset(k[len("tensorflow."):] for k in (*RENAMES, *CASTS))
    #: names in its two tables only
    SCREEN_NAMES = frozenset(k.rpartition(".")[2] for k in (*RENAMES, *CASTS, *KEYWORD_ALIASES)) \
        | OTHER_DEFAULTS

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
        for q in self.get_metadata(QualifiedNameProvider, node, set()):
            if eager_compat(q.name):
                short = q.name[len("tensorflow.compat.v1."):]
                if (short in AUDITED_EAGER_COMPAT or short in OTHER_DEFAULTS) \
                        and isinstance(node, cst.Attribute) \
                        and "compat.v1" not in code_of(node):
                    # `import tensorflow.compat.v1 as tf`; tf.logging.info: spelled
                    # tf.compat.v1.logging.info, it stays right when the imports
                    # rule makes that `import tensorflow as tf`
                    return f"tensorflow.{short}"
                return None  # already spelled tf.compat.v1.<name>
        for name in self.tf_api_names(node):
            full = "tensorflow." + name
            if full in RENAMES or full in CASTS:
                return full
            if name in OTHER_DEFAULTS and self.shared.get(TF1_SOURCE):
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
        kept = self._keyword_aliases(original_node)
        if kept is not None:
            return self._keywords(kept, original_node, updated_node)
        old = self._old(original_node.func)
        if old in KEYWORDS or old in PARAMETERS:
            return self._arguments(old, original_node, updated_node)
        if old is None or old not in CASTS:
            return updated_node
        if not updated_node.args or updated_node.args[0].keyword is not None:
            self.report(TS109.code, original_node, f"{code_of(original_node.func)} with keyword "
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

    def _keyword_aliases(self, call: cst.Call) -> Optional[str]:
        """The full name of a function of :data:`KEYWORD_ALIASES` that ``call`` passes
        one of its TF1 aliases."""
        aliases = {a.keyword.value for a in call.args if a.keyword is not None}
        if not aliases:
            return None
        for name in self.tf_api_names(call.func):
            full = "tensorflow." + name
            if aliases & set(KEYWORD_ALIASES.get(full, ())):
                return full
        return None

    def _keywords(self, full: str, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        renamed = KEYWORD_ALIASES[full]
        args = [a.with_changes(keyword=cst.Name(renamed[a.keyword.value]))
                if a.keyword is not None and a.keyword.value in renamed else a
                for a in updated_node.args]
        spelled = sorted(a.keyword.value for a in original_node.args
                         if a.keyword is not None and a.keyword.value in renamed)
        self.record_change(original_node, f"{_short(full)}: " + ", ".join(
            f"{k}= -> {renamed[k]}=" for k in spelled))
        return updated_node.with_changes(args=args)

    def _arguments(self, old: str, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        """The arguments of a renamed call under the new function's parameters."""
        renamed = KEYWORDS.get(old, {})
        old_params, new_params = PARAMETERS.get(old, ((), ()))
        args, by_name = [], False
        for i, arg in enumerate(updated_node.args):
            if arg.star:
                if old in PARAMETERS:
                    self.report(TS109.code, original_node, f"{code_of(original_node.func)} with "
                                f"*args or **kwargs: its parameters moved in {_short(RENAMES[old])}; "
                                "pass them by name")
                args.append(arg)
                continue
            if arg.keyword is not None:
                name = arg.keyword.value
                args.append(arg.with_changes(keyword=cst.Name(renamed.get(name, name))))
                continue
            if old_params:
                name = renamed.get(old_params[i], old_params[i]) if i < len(old_params) else ""
                by_name = by_name or i >= len(new_params) or new_params[i] != name
                if by_name:
                    arg = arg.with_changes(keyword=cst.Name(name), equal=cst.AssignEqual(
                        whitespace_before=cst.SimpleWhitespace(""),
                        whitespace_after=cst.SimpleWhitespace("")))
            args.append(arg)
        if args != list(updated_node.args):
            self.record_change(original_node, f"the arguments of {_short(old)} passed as "
                               f"{_short(RENAMES[old])} takes them")
        return updated_node.with_changes(args=args)

    def _rename(self, original_node, updated_node):
        old = self._old(original_node)
        if old is None:
            return updated_node
        if old in CASTS:
            return updated_node  # handled (or reported) at the call
        new = RENAMES.get(old) or f"tensorflow.compat.v1.{_short(old)}"  # OTHER_DEFAULTS
        self.record_change(original_node, f"{_short(old)} -> {_short(new)}")
        return self._new_ref(original_node, _short(new))

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
                self.report(TS109.code, value, f"{code_of(value)} used as a value cannot be rewritten "
                            f"to tf.cast; use `lambda x: tf.cast(x, tf.{CASTS[old]})`")
        return updated_node

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        self.remove_tf_from_imports(original_node, lambda name, bound: bound in self._from_imported)
        return updated_node
