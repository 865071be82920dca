"""Findings: what a tapeshift rule reports, and the one registry of codes.

A :class:`Finding` is a record, never a print: the command modules format it.
Every code is registered once, with its documentation (what the rule does,
why, an example, what to use instead and how safe the fix is), in
:data:`REGISTRY`; ``docs/codes.md`` is generated from it (a test keeps them equal).

Where codes are declared:
    TS1xx  ``tapeshift migrate``: each rule declares the codes it reports
           (``CODES``, registered with the rule by ``tapeshift.migrate.engine.registry``);
           the engine's own (TS100, TS101, TS114) and TS109, which several
           rules report, are declared below
    TS2xx  ``tapeshift check`` (the linter), in ``tapeshift.migrate.checks.codes``

A code is registered exactly once (:func:`register`). Reading a code that is
not registered yet loads every module that declares codes
(:func:`load_all_codes`, through the loader ``tapeshift.migrate.engine.registry``
adds): a process that only prints findings made elsewhere (a worker's) has not
imported the rules. ``docs/codes.md`` is rendered by the registry.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, List, Optional


class Severity(str, enum.Enum):
    """How much a finding matters.

    ``error``: the file could not be processed at all, or it was migrated in
    compat mode for a reason the user must act on (a gradient override the
    codemod cannot map), or the code computes a wrong number (``check``).
    ``warning``: a rewrite was not made (the file fell back, or a construct was
    left as it was); the reason is in the message.
    ``info``: the rewrite was made; something about it is worth knowing.
    """

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class CodeInfo:
    """One registered code and its documentation."""

    code: str
    name: str
    severity: Severity
    summary: str
    what: str
    why: str
    example: str
    use_instead: str
    fix_safety: str
    #: True when a tape-form rewrite cannot be made while this finding stands,
    #: so ``migrate`` falls back to compat mode for the file.
    blocks_tape: bool = False


@dataclass(frozen=True)
class Finding:
    """One thing a rule found, at one place in one file."""

    code: str
    severity: Severity
    path: str
    line: int
    column: int
    message: str
    #: True when applying the suggested fix would change computed numbers.
    changes_numbers: bool = False

    @property
    def info(self) -> CodeInfo:
        return REGISTRY[self.code]

    @property
    def name(self) -> str:
        return REGISTRY[self.code].name

    def location(self) -> str:
        return f"{self.path}:{self.line}:{self.column}"

    def to_dict(self) -> dict:
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "message": self.message,
            "changes_numbers": self.changes_numbers,
        }


class _Codes(dict):
    """code -> CodeInfo; a code not registered yet loads every declaring module first."""

    def __missing__(self, code: str) -> CodeInfo:
        if load_all_codes() is self and dict.__contains__(self, code):
            return dict.__getitem__(self, code)
        raise KeyError(code)

    def __contains__(self, code: object) -> bool:
        return dict.__contains__(self, code) or (
            load_all_codes() is self and dict.__contains__(self, code))


REGISTRY: Dict[str, CodeInfo] = _Codes()

#: Functions that import every module declaring codes: the registry adds its
#: own when it is imported (this module imports nothing of the layers above it).
_LOADERS: List[Callable[[], None]] = []
_loading = False


def add_code_loader(load: Callable[[], None]) -> None:
    """Have ``load`` run the first time a code that is not registered is read."""
    _LOADERS.append(load)


def load_all_codes() -> Dict[str, CodeInfo]:
    """Import every module that declares codes (through the loaders); return the registry."""
    global _loading
    if _loading:
        return REGISTRY
    _loading = True
    try:
        for load in list(_LOADERS):
            load()
    finally:
        _loading = False
    return REGISTRY


def register(info: CodeInfo) -> CodeInfo:
    """Add a code to the registry; each code and each name only once."""
    if dict.__contains__(REGISTRY, info.code):  # as registered so far: no loading
        raise ValueError(f"code {info.code} is already registered")
    if any(other.name == info.name for other in REGISTRY.values()):
        raise ValueError(f"name {info.name!r} is already registered")
    REGISTRY[info.code] = info
    return info


def lookup(code: str) -> CodeInfo:
    try:
        return REGISTRY[code]
    except KeyError:
        raise KeyError(f"unknown finding code {code!r}") from None


def iter_codes(prefix: str = "") -> Iterator[CodeInfo]:
    load_all_codes()
    for code in sorted(REGISTRY):
        if code.startswith(prefix):
            yield REGISTRY[code]


def make_finding(
    code: str,
    path: str,
    line: int,
    column: int,
    message: Optional[str] = None,
    changes_numbers: bool = False,
) -> Finding:
    """A finding for a registered code; the message defaults to the summary."""
    info = lookup(code)
    return Finding(
        code=code,
        severity=info.severity,
        path=path,
        line=line,
        column=column,
        message=message or info.summary,
        changes_numbers=changes_numbers,
    )


# --------------------------------------------------------------------------
# TS1xx codes of the engine itself, and the text the fallback codes share
# --------------------------------------------------------------------------

COMPAT_SAFETY = (
    "The construct is left as it was and the whole file is migrated in compat "
    "mode (`tensorflow.compat.v1` with v2 behaviour disabled), which runs "
    "under TF2 and keeps every number."
)

TS100 = register(CodeInfo(
    code="TS100",
    name="unparsable-source",
    severity=Severity.ERROR,
    summary="the file does not parse as Python 3 and was left untouched",
    what="Reports a file the codemod cannot parse (a syntax error, or Python 2 "
         "code such as `print x`).",
    why="A rewrite needs a syntax tree; guessing at text would risk breaking the file.",
    example="print \"loss\", sess.run(loss)",
    use_instead="Port the file to Python 3 first (for example with `2to3` or "
                "`pyupgrade`), then run `tapeshift migrate` again.",
    fix_safety="No fix is applied: the file is not written. The run continues and "
               "exits with code 2.",
))

TS101 = register(CodeInfo(
    code="TS101",
    name="compat-fallback",
    severity=Severity.WARNING,
    summary="file migrated in compat mode (tensorflow.compat.v1, v2 behaviour disabled)",
    what="The file was rewritten to import `tensorflow.compat.v1` and call "
         "`disable_v2_behavior()` instead of being converted to tape form. The "
         "other findings for the file say why.",
    why="Some construct in the file could not be converted to eager/tape form "
        "without risking different numbers; graph mode keeps the old semantics.",
    example="import tensorflow as tf\nx = tf.placeholder(tf.float32)",
    use_instead="import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()\n"
                "x = tf.placeholder(tf.float32)",
    fix_safety="Safe: the program keeps TF1 graph semantics and every number.",
))

# Reported by several rules (tf1-only, renames, compat, layers), so declared here
# rather than in one of them: the others could not import it without a cycle.
TS109 = register(CodeInfo(
    code="TS109",
    name="tf1-only-api",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="a TF1-only API with no TF2 counterpart in the rename tables",
    what="Finds references to names that exist in `tf.compat.v1` but not in "
         "TF2 `tf` and that no rule converts (for example `tf.variable_scope`, "
         "`tf.layers.dense`, `tf.contrib.*`). Audited against TensorFlow 2.21 "
         "(`migrate/rules/renames.py`): a TF1-only name whose TF2 name is bound to "
         "the same object and that is stateless and deterministic gets that name "
         "(`tf.global_norm` -> `tf.linalg.global_norm`, `tf.ceil` -> `tf.math.ceil`, "
         "121 names); `tf.logging.*`, absl's command line (`tf.app.run`, "
         "`tf.flags.DEFINE_*` and `tf.flags.FLAGS`, also as `tf.app.flags.*`), "
         "the v1 initialisers TF2 dropped "
         "(`tf.truncated_normal_initializer`, `tf.glorot_uniform_initializer`, "
         "`tf.variance_scaling_initializer`, `tf.orthogonal_initializer`, "
         "`tf.uniform_unit_scaling_initializer`) and the `tf.losses` loss functions "
         "run eagerly with TF1's semantics and are kept, spelled `tf.compat.v1.<name>` "
         "(a v1 initialiser given a seed is reported as TS113). The v1 initialisers "
         "whose name TF2 gave to a class with other defaults or arguments "
         "(`tf.random_normal_initializer`: stddev 1.0 in TF1, 0.05 in TF2; "
         "`tf.random_uniform_initializer`: [0, 1) in TF1, [-0.05, 0.05) in TF2; "
         "`tf.constant_initializer`, `tf.zeros_initializer`, `tf.ones_initializer`: "
         "no `dtype` in TF2) become `tf.compat.v1.<name>` in a file that uses TF1, and "
         "are left alone in a file that does not. What stays TF1-only, "
         "by reason: "
        "Variable store and scopes (the model-code rule converts them where the code shows "
        "the names: module level, a class's build methods, model functions at their first "
        "call; elsewhere TS125): `variable_scope`, "
        "`get_variable`, `get_variable_scope`, `get_local_variable`, `VariableScope`, "
        "`AUTO_REUSE`, `variable_op_scope`, `op_scope`, `no_regularizer`, "
        "`create_partitioned_variables`, `fixed_size_partitioner`, "
        "`min_max_variable_partitioner`, `variable_axis_size_partitioner`. State changes that "
        "run only when fetched in a graph but at once eagerly (the feeds rules run `tf.assign*` "
        "fetched in fed code when fetched; elsewhere when they run is not proven): `assign`, `assign_add`, `assign_sub`, `count_up_to`, "
        "`scatter_*`, `batch_scatter_update`, `Print`, `write_file`, `train.write_graph`. "
        "Graph collections (eager has none; the model-code rule writes variable collections "
        "out as lists where the code shows what they hold): "
        "`GraphKeys`, `get_collection`, `get_collection_ref`, `add_to_collection`, "
        "`add_to_collections`, `global_variables`, `local_variables`, `model_variables`, "
        "`trainable_variables`, `moving_average_variables`, `all_variables`, "
        "`losses.add_loss`, `losses.compute_weighted_loss`, `losses.get_losses`, "
        "`losses.get_regularization_loss`, `losses.get_regularization_losses`, "
        "`losses.get_total_loss`. Graphs, sessions and their protos: `ConfigProto`, "
        "`GPUOptions`, `GraphOptions`, `OptimizerOptions`, `RunOptions`, `RunMetadata`, "
        "`GraphDef`, `NodeDef`, `MetaGraphDef`, `AttrValue`, `NameAttrList`, `TensorInfo`, "
        "`Event`, `SessionLog`, `Summary`, `SummaryMetadata`, `HistogramProto`, `LogMessage`, "
        "`get_default_graph`, `get_default_session`, `get_session_handle`, "
        "`get_session_tensor`, `delete_session_tensor`, `colocate_with`, `container`, "
        "`add_check_numerics_ops`, `report_uninitialized_variables`, "
        "`is_variable_initialized`, `assert_variables_initialized`, `initialize_all_tables`, "
        "`tables_initializer`, `initializers.global_variables`, "
        "`initializers.local_variables`, `initializers.tables_initializer`, "
        "`initializers.variables`, `graph_util.*`, `NoGradient`, `NotDifferentiable`, "
        "`wrap_function`, `SparseTensorValue`, `ragged.RaggedTensorValue`, "
        "`ragged.constant_value`, `get_seed`, `random.get_seed`, `random.set_random_seed`, "
        "`executing_eagerly_outside_functions`. TF1 behaviour switches, and the v1 "
        "TensorShape's Dimension class: `enable_control_flow_v2`, `disable_control_flow_v2`, "
        "`control_flow_v2_enabled`, `enable_resource_variables`, "
        "`disable_resource_variables`, `resource_variables_enabled`, "
        "`enable_tensor_equality`, `disable_tensor_equality`, `enable_v2_tensorshape`, "
        "`disable_v2_tensorshape`, `experimental.output_all_intermediates`, `Dimension`. "
        "Placeholders of other kinds: `sparse.placeholder`, `ragged.placeholder`. Queues, "
        "readers and queue-based input pipelines: `FIFOQueue`, `PaddingFIFOQueue`, "
        "`PriorityQueue`, `RandomShuffleQueue`, `QueueBase`, `io.PaddingFIFOQueue`, "
        "`io.PriorityQueue`, `io.RandomShuffleQueue`, `io.QueueBase`, "
        "`ConditionalAccumulator`, `ConditionalAccumulatorBase`, "
        "`SparseConditionalAccumulator`, `sparse.SparseConditionalAccumulator`, `ReaderBase`, "
        "`TFRecordReader`, `TextLineReader`, `FixedLengthRecordReader`, `IdentityReader`, "
        "`LMDBReader`, `WholeFileReader`, `io.TFRecordCompressionType`, "
        "`io.tf_record_iterator`, `python_io`, `data.make_one_shot_iterator`, "
        "`data.make_initializable_iterator`, `data.get_output_classes`, "
        "`data.get_output_shapes`, `data.get_output_types`, `train.batch`, "
        "`train.batch_join`, `train.maybe_batch`, `train.maybe_batch_join`, "
        "`train.shuffle_batch`, `train.shuffle_batch_join`, `train.maybe_shuffle_batch`, "
        "`train.maybe_shuffle_batch_join`, `train.input_producer`, "
        "`train.range_input_producer`, `train.slice_input_producer`, "
        "`train.string_input_producer`, `train.limit_epochs`, `train.match_filenames_once`, "
        "`train.QueueRunner`, `train.add_queue_runner`, `train.queue_runner`, "
        "`train.start_queue_runners`, `train.LooperThread`. Training loops, hooks, "
        "checkpoints and saved models of TF1 (the savers rule converts `tf.train.Saver` "
        "where it can list its variables; `train.get_global_step` runs eagerly): "
        "`train.SaverDef`, "
        "`train.Scaffold`, `train.Supervisor`, `train.Server`, `train.*Hook`, "
        "`train.*Session`, `train.*SessionCreator`, `train.SessionManager`, "
        "`train.SessionRun*`, `train.CheckpointSaverListener`, `train.SecondOrStepTimer`, "
        "`train.NanLossDuringTrainingError`, `train.NewCheckpointReader`, `train.VocabInfo`, "
        "`train.Optimizer`, `train.AdagradDAOptimizer`, `train.SyncReplicasOptimizer`, "
        "`train.assert_global_step`, `train.basic_train_loop`, `train.checkpoint_exists`, "
        "`train.create_global_step`, `train.global_step`, "
        "`train.do_quantize_training_on_graphdef`, `train.export_meta_graph`, "
        "`train.import_meta_graph`, `train.generate_checkpoint_state_proto`, "
        "`train.get_checkpoint_mtimes`, `train.init_from_checkpoint`, "
        "`train.remove_checkpoint`, `train.update_checkpoint_state`, `train.warm_start`, "
        "`train.replica_device_setter`, `train.summary_iterator`, `train.sdca_*`, "
        "`saved_model.*`, `tpu.*`, `distribute.get_loss_reduction`. V1 summaries (TF2's "
        "tf.summary writes through other calls): `summary.*`. V1 metrics (local variables and "
        "an update op run when fetched): `metrics.*`. TF1-only modules with no TF2 module of "
        "that name: `layers`, `distributions`, `gfile`, `app`, `flags`, `logging`, `manip`, "
        "`spectral`, `resource_loader`, `user_ops`, `mixed_precision`, `profiler.*`, "
        "`lite.*`, `test.*`. Graph-mode layer helpers (tf.keras.layers.Dense in TF2; the "
        "model-code rule converts or reports RNN cells and RNNs): `nn.relu_layer`, "
        "`nn.xw_plus_b`, "
        "`feature_column.input_layer`, `feature_column.linear_model`, "
        "`feature_column.shared_embedding_columns`. Random ops whose TF2 name is the same "
        "function but whose eager stream differs from the graph's (seeded: TS113): "
        "`random_crop`, `nn.uniform_candidate_sampler`, "
        "`nn.log_uniform_candidate_sampler`, `random.multinomial`, "
        "`random.stateless_multinomial`. A TF2 name exists but with another signature or "
        "other defaults (not renamed: the call would need its arguments rewritten): "
        "`arg_max`, `arg_min`, `batch_to_space_nd`, `bincount`, `confusion_matrix`, "
        "`decode_csv`, `decode_raw`, `floor_div`, `image.extract_image_patches`, "
        "`image.resize_images`, `image.resize_area`, `image.resize_bicubic`, "
        "`image.resize_bilinear`, `image.resize_nearest_neighbor`, "
        "`image.resize_image_with_pad`, `linalg.transpose`, `load_file_system_library`, "
        "`nn.conv2d_backprop_input`, `nn.conv2d_backprop_filter`, "
        "`nn.conv3d_backprop_filter`, `nn.conv3d_backprop_filter_v2`, `nn.ctc_loss_v2`, "
        "`nn.depthwise_conv2d_native`, `nn.fused_batch_norm`, `nn.quantized_*`, "
        "`parse_example`, `parse_single_example`, `quantize_v2`, `reduce_join`, "
        "`serialize_many_sparse`, "
        "`serialize_sparse`, `sparse_add`, `sparse_concat`, `sparse_matmul`, `sparse_merge`, "
        "`sparse.merge`, `sparse_reduce_max`, `sparse_reduce_sum`, "
        "`sparse_reduce_max_sparse`, `sparse_reduce_sum_sparse`, `sparse.reduce_max_sparse`, "
        "`sparse.reduce_sum_sparse`, `sparse_segment_mean`, `sparse_segment_sqrt_n`, "
        "`sparse_segment_sum`, `sparse_split`, `sparse_to_dense`, `string_split`, "
        "`string_to_hash_bucket`, `string_to_number`, `substr`, `verify_tensor_all_finite`, "
        "`where_v2`, `setdiff1d`, `clip_by_average_norm`, `batch_gather`, "
        "`convert_to_tensor_or_indexed_slices`, `convert_to_tensor_or_sparse_tensor`, "
        "`errors.error_code_from_exception_type`, `errors.exception_type_from_error_code`, "
        "`errors.raise_exception_on_not_ok_status`. Graph assertions: an op that checks only "
        "when fetched (tf.debugging.assert_* raise at once eagerly, and take other "
        "arguments): `assert_greater_equal`, `assert_integer`, `assert_less_equal`, "
        "`assert_near`, `assert_negative`, `assert_non_negative`, `assert_non_positive`, "
        "`assert_none_equal`, `assert_positive`, `assert_rank_at_least`, `assert_rank_in`, "
        "`assert_scalar`, `assert_type`.",
    why="Left as it was, the name would raise `AttributeError` under TF2; renamed "
        "to a TF2 name that is not the same function, it could compute other numbers.",
    example="tf.layers.dense(x, 10)",
    use_instead="The TF2 API (`tf.keras.layers.Dense(10)(x)`), or leave the file "
                "in compat mode. `tf.contrib` has no TF2 counterpart at all "
                "(`tf_slim` replaces `tf.contrib.slim`).",
    fix_safety=COMPAT_SAFETY,
))





TS114 = register(CodeInfo(
    code="TS114",
    name="codemod-internal-error",
    severity=Severity.ERROR,
    blocks_tape=True,
    summary="the codemod failed on this file; it was migrated in compat mode (or left untouched)",
    what="Reports an internal failure: a rule raised, or its output did not compile.",
    why="Output is compiled before it is returned, so a codemod bug never leaves a "
        "broken file: the file falls back to compat mode, and if even that fails it "
        "is left untouched (and the run exits with code 2).",
    example="(any input that triggers the bug)",
    use_instead="Report the file to the tapeshift maintainers; use `--mode compat` meanwhile.",
    fix_safety="Safe: either compat mode (graph semantics kept) or no change at all.",
))


@dataclass(frozen=True)
class Change:
    """One rewrite a codemod made, at one place in one file."""

    rule: str
    path: str
    line: int
    column: int
    description: str

    def location(self) -> str:
        return f"{self.path}:{self.line}:{self.column}"

    def to_dict(self) -> dict:
        return {"rule": self.rule, "path": self.path, "line": self.line,
                "column": self.column, "description": self.description}
