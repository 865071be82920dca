"""Findings: what a tapeshift rule reports, and the one registry of codes.

A :class:`Finding` is a record, never a print: the command modules format it.
Every code a rule can report is registered here once, with its documentation
(what the rule does, why, an example, what to use instead and how safe the fix
is). ``docs/codes.md`` documents each registered code; a test checks that.

Code ranges:
    TS1xx  ``tapeshift migrate`` (the codemod), registered below
    TS2xx  ``tapeshift check`` (the linter), registered in ``tapeshift.migrate.checks.codes``

Add a code with :func:`register`; a code is registered exactly once. A module
that registers codes is listed in :data:`CODE_MODULES`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Dict, Iterator, Optional


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


REGISTRY: Dict[str, CodeInfo] = {}

#: Modules that register codes when imported (besides this one). A new family
#: of codes adds its module here, so that :func:`load_all_codes` (and so
#: ``docs/codes.md`` and its test) sees every code.
CODE_MODULES = ("tapeshift.migrate.checks.codes",)


def load_all_codes() -> Dict[str, CodeInfo]:
    """Import every module in :data:`CODE_MODULES`; return the full registry."""
    import importlib

    for name in CODE_MODULES:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is None or not name.startswith(exc.name):
                raise
    return REGISTRY


def register(info: CodeInfo) -> CodeInfo:
    """Add a code to the registry; each code and each name only once."""
    if info.code in REGISTRY:
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
# TS1xx: migration findings (``tapeshift migrate``)
# --------------------------------------------------------------------------

_COMPAT_SAFETY = (
    "The construct is left as it was and the whole file is migrated in compat "
    "mode (`tensorflow.compat.v1` with v2 behaviour disabled), which runs "
    "under TF2 and keeps every number."
)

register(CodeInfo(
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

register(CodeInfo(
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

register(CodeInfo(
    code="TS102",
    name="gradients-stop-gradients",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="tf.gradients(..., stop_gradients=...) has no GradientTape equivalent",
    what="Finds `tf.gradients` calls that pass `stop_gradients=`.",
    why="`GradientTape.gradient` has no `stop_gradients` argument; the same "
        "effect needs `tf.stop_gradient` placed in the forward code, which the "
        "codemod cannot do without knowing the author's intent.",
    example="g = tf.gradients(loss, [a, b], stop_gradients=[a, b])",
    use_instead="Put `tf.stop_gradient(a)` where `a` is used in the forward "
                "computation, then take `tape.gradient(loss, [a, b])`.",
    fix_safety=_COMPAT_SAFETY,
))

register(CodeInfo(
    code="TS103",
    name="gradients-in-control-flow",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="tf.gradients inside control flow the codemod cannot follow",
    what="Finds `tf.gradients` calls inside a loop, a condition, a `with` block, "
         "a lambda, a comprehension, or a function passed to `tf.while_loop` / "
         "`tf.map_fn`.",
    why="A tape must be active around the exact forward computation; inside "
        "control flow the codemod cannot place it so that every number is kept.",
    example="def body(i, x):\n    g = tf.gradients(f(x), x)[0]\n    return i + 1, x - g\n"
            "tf.while_loop(cond, body, [0, x0])",
    use_instead="Write the loop body with its own `tf.GradientTape` by hand.",
    fix_safety=_COMPAT_SAFETY,
))

register(CodeInfo(
    code="TS104",
    name="gradients-unresolved-operand",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="the targets or sources of tf.gradients are not names the codemod can follow",
    what="Finds `tf.gradients` calls whose `ys` or `xs` are not plain names (or "
         "lists of names) defined in the same function or module, for example "
         "`tf.trainable_variables()` or `model.weights`.",
    why="The tape has to be placed around the computation from the sources to "
        "the targets, and TensorFlow's list semantics kept; both need to see "
        "where the operands come from.",
    example="grads = tf.gradients(loss, tf.trainable_variables())",
    use_instead="Name the variables explicitly, or write the tape by hand: "
                "`tape.gradient(loss, model.trainable_variables)`.",
    fix_safety=_COMPAT_SAFETY,
))

register(CodeInfo(
    code="TS105",
    name="gradients-interleaved",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="a gradient is taken in the middle of the forward computation it belongs to",
    what="Finds a `tf.gradients` call that sits between statements of the "
         "forward computation another gradient of the same order needs, and cannot "
         "be moved after it (it is not a plain assignment, or a later statement of "
         "the forward computation reads its result or rebinds what it reads).",
    why="A tape answers gradients after its `with` block; moving the statement "
        "could change what it reads.",
    example="h = f(W)\nprint(tf.gradients(h, W)[0])\nloss = g(h)\ng2 = tf.gradients(loss, W)[0]",
    use_instead="Move the forward computation before the first gradient, then migrate.",
    fix_safety=_COMPAT_SAFETY,
))

register(CodeInfo(
    code="TS106",
    name="session-not-visible",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="a Session is used in a way the codemod cannot see whole",
    what="Finds Sessions built on another graph (`graph=`, `target=`), passed "
         "to or returned from functions, reached through "
         "`tf.get_default_session()`, or run with options the codemod does not model.",
    why="Replacing `sess.run(x)` by the value of `x` is right only when the "
        "codemod sees every use of the session and the graph it runs.",
    example="def evaluate(sess, loss):\n    return sess.run(loss)",
    use_instead="Keep graph code in one place; after migrating, pass values "
                "(`loss.numpy()`) rather than sessions.",
    fix_safety=_COMPAT_SAFETY,
))

register(CodeInfo(
    code="TS107",
    name="session-feeds-placeholders",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="a fed graph the feeds rule cannot turn into functions of the fed values",
    what="Reports placeholders and `feed_dict=` the feeds rule cannot follow: a "
         "feed_dict that is not a dict literal, feeding a computed tensor, a placeholder "
         "needed but not fed, variables created from fed values (`tf.layers.dense(x)`), "
         "graph code in a loop or `with` block, a graph value used outside `sess.run`, "
         "more than one Session, `tf.sparse_placeholder`, placeholders without a Session.",
    why="A fed graph is a function of its feeds; straight-line eager code would "
        "compute each tensor once, with whatever value existed when the line ran "
        "(docs/tf1-vs-tf2.md, section 1). The feeds rule turns each distinct set of fetches into "
        "a function of the placeholders it needs; what it cannot place exactly stays "
        "in compat form.",
    example="x = tf.placeholder(tf.float32)\nfeed = {x: 2.0}\nprint(sess.run(y, feed_dict=feed))",
    use_instead="print(sess.run(y, feed_dict={x: 2.0}))  # a dict literal at the call "
                "becomes run_y(x=2.0)",
    fix_safety=_COMPAT_SAFETY,
))

register(CodeInfo(
    code="TS108",
    name="session-stateful-op",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="the graph holds an op whose value changes when it runs and the codemod cannot place it",
    what="Finds state changes the rules cannot place: optimizer steps outside a file "
         "that runs them in a Session (or in forms the feeds rule does not convert: "
         "`var_list` from a collection, a placeholder learning rate, `minimize` not "
         "assigned), assignments, `tf.Print`, `py_func`, dataset iterators and random "
         "ops outside variable initialisers.",
    why="In a graph these run each time `sess.run` fetches them; in eager code "
        "they would run once, when the line is reached, so losses read later "
        "would see different variable values (docs/tf1-vs-tf2.md, section 1). Train ops the "
        "feeds rule converts run inside the step function of their `sess.run`.",
    example="train = opt.minimize(loss, var_list=tf.get_collection('actor'))",
    use_instead="train = opt.minimize(loss, var_list=[W1, b1])  # an explicit list is converted",
    fix_safety=_COMPAT_SAFETY,
))

register(CodeInfo(
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
         "121 names); `tf.logging.*`, the v1 initialisers TF2 dropped "
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
        "Variable store and scopes (another part of issue #17): `variable_scope`, "
        "`get_variable`, `get_variable_scope`, `get_local_variable`, `VariableScope`, "
        "`AUTO_REUSE`, `variable_op_scope`, `op_scope`, `no_regularizer`, "
        "`create_partitioned_variables`, `fixed_size_partitioner`, "
        "`min_max_variable_partitioner`, `variable_axis_size_partitioner`. State changes that "
        "run only when fetched in a graph but at once eagerly (when they run is not proven by "
        "the session and feeds rules): `assign`, `assign_add`, `assign_sub`, `count_up_to`, "
        "`scatter_*`, `batch_scatter_update`, `Print`, `write_file`, `train.write_graph`. "
        "Graph collections (eager has none: get_collection returns other values): "
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
        "checkpoints and saved models of TF1: `train.Saver`, `train.SaverDef`, "
        "`train.Scaffold`, `train.Supervisor`, `train.Server`, `train.*Hook`, "
        "`train.*Session`, `train.*SessionCreator`, `train.SessionManager`, "
        "`train.SessionRun*`, `train.CheckpointSaverListener`, `train.SecondOrStepTimer`, "
        "`train.NanLossDuringTrainingError`, `train.NewCheckpointReader`, `train.VocabInfo`, "
        "`train.Optimizer`, `train.AdagradDAOptimizer`, `train.SyncReplicasOptimizer`, "
        "`train.assert_global_step`, `train.basic_train_loop`, `train.checkpoint_exists`, "
        "`train.create_global_step`, `train.get_global_step`, `train.global_step`, "
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
        "`lite.*`, `test.*`, `nn.rnn_cell`. Graph-mode RNNs and layer helpers "
        "(tf.keras.layers.RNN / Dense in TF2): `nn.dynamic_rnn`, "
        "`nn.bidirectional_dynamic_rnn`, `nn.static_rnn`, `nn.static_bidirectional_rnn`, "
        "`nn.static_state_saving_rnn`, `nn.raw_rnn`, `nn.relu_layer`, `nn.xw_plus_b`, "
        "`feature_column.input_layer`, `feature_column.linear_model`, "
        "`feature_column.shared_embedding_columns`. Random ops whose TF2 name is the same "
        "function but whose eager stream differs from the graph's (seeded they block tape "
        "form: TS113): `random_crop`, `nn.uniform_candidate_sampler`, "
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
    fix_safety=_COMPAT_SAFETY,
))

register(CodeInfo(
    code="TS110",
    name="gradients-graph-only-argument",
    severity=Severity.INFO,
    summary="a tf.gradients argument with no meaning in eager mode was dropped",
    what="Drops `gate_gradients`, `aggregation_method`, "
         "`colocate_gradients_with_ops` and `name` when converting `tf.gradients` "
         "to `tape.gradient`.",
    why="They control graph construction and placement; `GradientTape.gradient` "
        "does not take them.",
    example="tf.gradients(loss, W, colocate_gradients_with_ops=True)",
    use_instead="tape.gradient(loss, W)",
    fix_safety="Safe: the migrated code computes what the legacy graph meant. "
               "`aggregation_method` may change float rounding in the last bits. Eager "
               "code always finishes every gradient before any update, as "
               "`gate_gradients=True` does; a legacy graph without it that applies the "
               "gradients to ref variables (TF1's default) can race: an update may land "
               "before a backward op reads the variable, so the legacy run itself is not "
               "reproducible (measured on a DDPG actor update: 8 of 15 runs differed).",
))

register(CodeInfo(
    code="TS111",
    name="gradients-unconnected",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="no forward computation from the sources to the targets was found",
    what="Finds a `tf.gradients` call whose targets do not depend, by the names "
         "in the code, on any of its sources.",
    why="Either the gradient is `None` by design, or the dependency goes "
        "through state the codemod cannot see (an object, a closure); placing a "
        "tape would be a guess.",
    example="loss = model(x)  # model reads W internally\ng = tf.gradients(loss, W)",
    use_instead="Write the tape by hand around the call that uses the variables.",
    fix_safety=_COMPAT_SAFETY,
))

register(CodeInfo(
    code="TS112",
    name="gradient-override",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="gradient_override_map / RegisterGradient is ignored in eager mode",
    what="Finds `@tf.RegisterGradient` and `graph.gradient_override_map(...)`.",
    why="In eager mode the override map is silently ignored: a gradient-reversal "
        "layer gave [-3, -3] in a graph and [3, 3] under a tape (docs/tf1-vs-tf2.md, section 8).",
    example="with g.gradient_override_map({\"Identity\": \"Reverse\"}):\n    y = tf.identity(x)",
    use_instead="@tf.custom_gradient\ndef reverse(x):\n    return tf.identity(x), lambda dy: -dy",
    fix_safety=_COMPAT_SAFETY,
))

register(CodeInfo(
    code="TS113",
    name="seeded-random-stream",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="seeded random ops give a different stream in eager TF2",
    what="Finds random ops in a file that sets a graph-level or op-level seed.",
    why="`tf.set_random_seed(0)` and `tf.random.set_seed(0)` give different "
        "streams (docs/tf1-vs-tf2.md, section 5): a tape-form file would start from other "
        "numbers than the legacy run.",
    example="tf.set_random_seed(0)\nW = tf.Variable(tf.random_normal([2, 2]))",
    use_instead="Carry the initial values over explicitly (e.g. from a checkpoint "
                "or a NumPy array), or use stateless random ops with fixed seeds.",
    fix_safety=_COMPAT_SAFETY,
))

register(CodeInfo(
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

register(CodeInfo(
    code="TS115",
    name="unsupported-fetch",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="a sess.run fetch the codemod cannot turn into a value",
    what="Finds `sess.run` fetches that are strings (tensor names), operations "
         "run for their effect, or expressions whose definition is not in the file.",
    why="The fetch must be a tensor (or a structure of tensors) built in the "
        "same file for its value to be computed eagerly.",
    example="sess.run(\"loss:0\")",
    use_instead="Fetch the Python name of the tensor: `sess.run(loss)`.",
    fix_safety=_COMPAT_SAFETY,
))

register(CodeInfo(
    code="TS116",
    name="unseeded-random-init",
    severity=Severity.INFO,
    summary="random initial values: the legacy and the migrated run draw different numbers",
    what="Notes a random op in a variable initialiser in a file that sets no seed. "
         "The file is converted.",
    why="Unseeded, the legacy program draws new numbers on every run too; the "
        "migrated program is as correct, but a number-by-number comparison of the "
        "two runs (`tapeshift verify`) will differ (docs/tf1-vs-tf2.md, section 5).",
    example="W = tf.Variable(tf.random_normal([2, 2]))",
    use_instead="For a comparable run, start from fixed values: "
                "`W = tf.Variable(np.load(\"W0.npy\"))`, or stateless random ops with a fixed seed.",
    fix_safety="The rewrite keeps the semantics (one random draw at creation); only "
               "the drawn values differ, as between any two unseeded runs.",
))



# TS119: Keras optimizers, on request (migrate/rules/keras_optimizers.py)
register(CodeInfo(
    code="TS119",
    name="keras-optimizer-numbers",
    severity=Severity.WARNING,
    blocks_tape=False,
    summary="with --keras-optimizers: a Keras optimizer that does not compute TF1's update "
            "bit for bit, or a v1 optimizer that stays",
    what="Reports each optimizer `--keras-optimizers` maps to Keras whose update differs "
         "from TF1's (RMSProp's rule, Momentum with a changing learning rate, float "
         "rounding of Adam, Momentum, Adadelta), and each it leaves as "
         "`tf.compat.v1.train` because it is used other than through `apply_gradients`.",
    why="The v1 optimizers run eagerly and keep every number (docs/tf1-vs-tf2.md, section 6); "
        "Keras' implementations are not always the same computation, so a "
        "migration that moves to them must say where the numbers move.",
    example="opt = tf.train.RMSPropOptimizer(0.01)",
    use_instead="opt = tf.compat.v1.train.RMSPropOptimizer(0.01)  # the default: same numbers",
    fix_safety="The mapping is opt-in; without `--keras-optimizers` nothing changes.",
))


# TS117-TS118: tf.contrib (migrate/rules/contrib_slim.py)
register(CodeInfo(
    code="TS117",
    name="contrib-module-gone",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="a tf.contrib module (or name) with no automatic TF2 counterpart",
    what="Finds a `tf.contrib` module other than slim, layers and framework (which "
         "move to `tf_slim`), or a slim/layers/framework name tf-slim does not export.",
    why="`tf.contrib` is gone in TF2, `tensorflow.compat.v1` included: the line "
        "fails on import or on first use whatever mode the file is in.",
    example="cell = tf.contrib.rnn.LSTMCell(64)",
    use_instead="cell = tf.compat.v1.nn.rnn_cell.LSTMCell(64)   (the message names the "
                "maintained replacement for each contrib module)",
    fix_safety="No automatic fix: the replacements differ in API. The file is migrated "
               "in compat mode and this line still needs a hand edit.",
))

register(CodeInfo(
    code="TS118",
    name="uses-tf-slim",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="tf.contrib.slim moved to the tf_slim package; this file's slim code stays in graph mode",
    what="Reports a file whose `tf.contrib.slim` / `layers` / `framework` references were "
         "rewritten to `tf_slim` (install it: `pip install tf-slim`) and whose slim layers "
         "are not all inside model functions the feeds rule wraps in `make_template`, or "
         "that uses `batch_norm`.",
    why="Slim layers create their variables when called; turning the file into eager "
        "code would create them again on every call. A model function called from the "
        "graph a session runs is wrapped in `tf.compat.v1.make_template` (variables "
        "created once) and the file goes to tape form; slim layers called elsewhere (at "
        "module level, in a library with no session) give no such anchor, so the file "
        "runs in graph mode (compat), as before.",
    example="slim = tf.contrib.slim\nnet = slim.fully_connected(x, 10)",
    use_instead="def model(x):\n    return slim.fully_connected(x, 10)\n"
                "logits = model(x)   # wrapped in make_template, trained in tape form",
    fix_safety="Safe: the same tf-slim code, in graph mode; every number is kept. "
               "(tf-slim 1.1.0's batch_norm needs `tapeshift.compat.slim.install_tf_slim_fixes()` "
               "on TF >= 2.16; `tapeshift run-legacy` applies it.)",
))


# TS124: tf.layers on Keras 3 (migrate/rules/layers_compat.py)
register(CodeInfo(
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
))

# TS120-TS123: custom gradients (migrate/rules/custom_gradients.py)
_COMPAT_SAFETY_CG = (
    "The override is left as it was and the whole file is migrated in compat "
    "mode (`tensorflow.compat.v1` with v2 behaviour disabled), where the graph "
    "honours `gradient_override_map`: every number is kept."
)


register(CodeInfo(
    code="TS120",
    name="override-map-not-static",
    severity=Severity.ERROR,
    blocks_tape=True,
    summary="a gradient_override_map the codemod cannot read statically",
    what="Finds `gradient_override_map(...)` whose argument is not a literal dict of "
         "string literals (a map built at run time), or that is not used as the "
         "context manager of a `with` statement.",
    why="The rewrite has to know, when it reads the file, which op types get which "
        "gradient; a map built at run time could say anything.",
    example="overrides = {\"Identity\": name}\nwith g.gradient_override_map(overrides):\n"
            "    y = tf.identity(x)",
    use_instead="with g.gradient_override_map({\"Identity\": \"FlipGradient\"}):\n"
                "    y = tf.identity(x)",
    fix_safety=_COMPAT_SAFETY_CG,
))


register(CodeInfo(
    code="TS121",
    name="override-op-not-visible",
    severity=Severity.ERROR,
    blocks_tape=True,
    summary="an overridden op type the codemod cannot find or rewrite in its scope",
    what="Finds an op type in a `gradient_override_map` that no call in the `with` "
         "block visibly builds, that the codemod has no tape form for, or a block "
         "that calls a function whose ops it cannot see (a layer, a helper).",
    why="The override applies to every op of that type built in the block, also "
        "inside called functions; the codemod rewrites only calls it can map to an "
        "op type (`migrate/rules/custom_gradients_ops.py`).",
    example="with g.gradient_override_map({\"Relu\": \"GuidedRelu\"}):\n"
            "    h = tf.layers.dense(x, 10, activation=tf.nn.relu)",
    use_instead="Call the op inside the scope yourself: "
                "`h = tf.nn.relu(tf.matmul(x, W) + b)`, or write the "
                "`@tf.custom_gradient` function by hand.",
    fix_safety=_COMPAT_SAFETY_CG,
))


register(CodeInfo(
    code="TS122",
    name="registered-gradient-not-found",
    severity=Severity.ERROR,
    blocks_tape=True,
    summary="the gradient an override map names is not registered in the file in a readable form",
    what="Finds a `gradient_override_map` value with no `@tf.RegisterGradient(...)` "
         "function of that name in the file (decorator form, registered before the "
         "scope, in the same or the module scope), other than TensorFlow's own "
         "\"Identity\" gradient.",
    why="The tape form calls the gradient function itself; one registered in another "
        "module, or under a name computed at run time, cannot be found.",
    example="from mylib import gradients  # registers \"FlipGradient\"\n"
            "with g.gradient_override_map({\"Identity\": \"FlipGradient\"}):\n"
            "    y = tf.identity(x)",
    use_instead="Register the gradient in the same file, or write the "
                "`@tf.custom_gradient` function by hand.",
    fix_safety=_COMPAT_SAFETY_CG,
))


register(CodeInfo(
    code="TS123",
    name="registered-gradient-op-use",
    severity=Severity.ERROR,
    blocks_tape=True,
    summary="a registered gradient function uses its op in a way the codemod cannot map",
    what="Finds a gradient function whose `op` argument is used other than as "
         "`op.inputs[0]` or `op.outputs[0]` (for example `op.get_attr(...)`, `op.type`, "
         "`op.inputs` as a list), that takes other than `(op, grad)`, or that is "
         "also called directly.",
    why="Under a tape there is no op: the backward function receives the forward "
        "input, the forward output and the upstream gradient, nothing else.",
    example="@tf.RegisterGradient(\"Scaled\")\ndef _scaled(op, grad):\n"
            "    return grad * op.get_attr(\"T\").max",
    use_instead="Pass what the gradient needs as a Python value closed over by a "
                "hand-written `@tf.custom_gradient` function.",
    fix_safety=_COMPAT_SAFETY_CG,
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


def codes_markdown(prefix: str = "") -> str:
    """``docs/codes.md``, rendered from the registry (a test keeps them equal)."""
    out = [
        "# Finding codes",
        "",
        "Every code tapeshift reports, from the one registry in `migrate/engine/findings.py`.",
        "This file is generated: `python -c \"from tapeshift.migrate.engine.findings import codes_markdown; "
        "print(codes_markdown(), end='')\" > docs/codes.md`.",
        "",
        "Severity: `error` (the file was not processed, the codemod failed on it, an override could not be mapped, or a number is wrong), `warning` (a rewrite was not "
        "made; the file fell back to compat mode), `info` (the rewrite was made; worth "
        "knowing). *Blocks tape form*: while such a finding stands, `tapeshift migrate` "
        "migrates the file in compat mode.",
        "",
        "| code | name | severity | summary |",
        "|---|---|---|---|",
    ]
    load_all_codes()
    infos = list(iter_codes(prefix))
    for i in infos:
        out.append(f"| [{i.code}](#{i.code.lower()}-{i.name}) | `{i.name}` | {i.severity.value} | {i.summary} |")
    for i in infos:
        out += [
            "",
            f"## {i.code} {i.name}",
            "",
            f"Severity: {i.severity.value}. Blocks tape form: {'yes' if i.blocks_tape else 'no'}.",
            "",
            f"**What it does.** {i.what}",
            "",
            f"**Why.** {i.why}",
            "",
            "**Example.**",
            "",
            "```python",
            i.example,
            "```",
            "",
            "**Use instead.**",
            "",
            (f"```python\n{i.use_instead}\n```" if "\n" in i.use_instead or i.use_instead.startswith(("import", "def", "@", "tape."))
             else i.use_instead),
            "",
            f"**Fix safety.** {i.fix_safety}",
        ]
    return "\n".join(out) + "\n"
