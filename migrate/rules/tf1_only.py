"""Nothing TF1-only may be left in a tape-form file.

Reports (TS109) every reference to a name that exists in ``tf.compat.v1`` but
not in TF2 ``tf`` and that no rule converts. It changes nothing: a file with
such a reference is migrated in compat mode instead.
"""

from __future__ import annotations

import functools
from typing import FrozenSet, Optional

import libcst as cst
from libcst.metadata import QualifiedNameProvider

from tapeshift.migrate.engine.findings import TS109
from tapeshift.migrate.engine.registry import handled_names, register_rule
from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.tf1_api import SESSIONS
from tapeshift.migrate.engine.tf1_api_table import TF1_ONLY
from tapeshift.migrate.rules.layers_compat_table import TF_KERAS_LEGACY_LAYERS
from tapeshift.migrate.rules.renames import OTHER_DEFAULTS, SEEDED_INITIALIZERS, TF1_SOURCE, eager_compat
from tapeshift.migrate.rules.session import TS113, TS116, inline_update

#: Gone from TensorFlow altogether (not even in ``tf.compat.v1``).
GONE = frozenset({"contrib"})
#: In TF2 but raising under eager execution; the gradients rule converts them.
EAGER_UNSUPPORTED = frozenset({"gradients", "hessians"})


def handled() -> FrozenSet[str]:
    """TF1-only names another rule converts or reports itself (the rules' ``HANDLES``)."""
    return handled_names()


def tf1_only(name: str, strict: bool = False) -> Optional[str]:
    """The TF1-only prefix of an API name, or None. Not strict: names another
    rule converts are not reported."""
    parts = name.split(".")
    handled_now = handled()
    if not strict and any(".".join(parts[:k]) in handled_now for k in range(1, len(parts) + 1)):
        return None  # tf.logging.info: converted whole, its TF1-only module included
    for k in range(1, len(parts) + 1):
        prefix = ".".join(parts[:k])
        if prefix in GONE or (prefix in TF1_ONLY and (strict or prefix not in handled_now)):
            return prefix
    return None


@functools.lru_cache(maxsize=4)  # one set of handled names in a run (tests add rules)
def _unconverted_screen(handled_now: FrozenSet[str]) -> FrozenSet[str]:
    return frozenset(
        {n.rpartition(".")[2] for n in (TF1_ONLY - handled_now) | set(SEEDED_INITIALIZERS)} | GONE)


def _unconverted_names() -> FrozenSet[str]:
    """The screen of :class:`TF1OnlyNames`: the last parts of the TF1-only names no
    rule converts, and of the v1 initialisers whose seed it checks; and a part of the
    tf-keras module of compat mode's tf.layers (graph-mode layers)."""
    return _unconverted_screen(handled()) | {"__internal__"}


@register_rule
class TF1OnlyNames(TapeshiftCodemod):
    DESCRIPTION = "Report TF1-only API names that no rule converts (they block tape form)."
    RULE = "tf1-only"
    PHASE = "check"
    ORDER = 10
    #: tapeshift.migrate.engine.screen runs the rule only on a file spelling one of these
    #: (a function: which names are handled depends on the other rules)
    SCREEN_NAMES = staticmethod(_unconverted_names)
    #: Also report names another rule handles (used on the rules' output).
    STRICT = False

    def _check(self, node: cst.CSTNode) -> bool:
        if self.STRICT and self.tf_api_names(node) & EAGER_UNSUPPORTED:
            self.report(TS109.code, node, f"{code_of(node)} raises under eager execution and "
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
                self.report(TS109.code, node, f"{code_of(node)}: tf.{prefix} has no TF2 counterpart "
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
        # the tf.layers of compat mode's output (layers_compat.py): graph-mode layers
        # that make their variables at every call; migrated again, the file stays compat
        for alias in node.names:
            if code_of(alias.name) == TF_KERAS_LEGACY_LAYERS:
                self.report(TS109.code, node, f"{TF_KERAS_LEGACY_LAYERS} holds TF1's graph-mode "
                            "layers (what compat mode gives tf.layers): they need graph mode")
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if node.module is None or node.relative:
            return False
        module = code_of(node.module)
        if module.startswith("tensorflow.contrib"):
            self.report(TS109.code, node, "tf.contrib is gone from TensorFlow 2 altogether")
        elif module in ("tensorflow", "tensorflow.compat.v1") and self.STRICT \
                and not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                name = code_of(alias.name)
                if tf1_only(name, strict=True):
                    self.report(TS109.code, alias, f"`from {module} import {name}` is left and "
                                "would fail under TF2")
        return False

    def visit_Call(self, node: cst.Call) -> Optional[bool]:
        # arguments of a Session the session rule removes (config=tf.ConfigProto(...))
        if not self.STRICT and self.is_tf(node.func, *SESSIONS):
            return False
        # sess.run(tf.assign(v, x)): made and run at that line, which the session rule
        # writes v.assign(x) (the check of its output, STRICT, sees what it leaves)
        update = inline_update(node, self.tf_api_name) if not self.STRICT and isinstance(
            node.func, cst.Attribute) and node.func.attr.value == "run" else None
        if update is not None and self.tf_api_name(update.func) is not None:
            for arg in update.args:
                arg.visit(self)
            return False
        if not self.STRICT:
            self._seeded_initializer(node)
        return None

    def _seeded_initializer(self, node: cst.Call) -> None:
        """A v1 initialiser kept in tape form (renames.EAGER_COMPAT) given a seed:
        eager TF2 draws another stream from it than the v1 graph (TS113)."""
        if not isinstance(node.func, (cst.Name, cst.Attribute)):
            return  # init(...)([2, 3]): the call of the initialiser made before
        names = self.tf_api_names(node.func) & set(SEEDED_INITIALIZERS)
        if not names:
            return
        if names <= OTHER_DEFAULTS and not self.shared.get(TF1_SOURCE) and not any(
                q.name.startswith("tensorflow.compat.v1.")
                for q in self.get_metadata(QualifiedNameProvider, node.func, set())):
            return  # TF2's class of that name in a TF2 file: not migrated
        index = SEEDED_INITIALIZERS[min(names)]
        seed = next((a.value for a in node.args if a.keyword is not None
                     and a.keyword.value == "seed"), None)
        positional = [a for a in node.args if a.keyword is None and not a.star]
        if seed is None and len(positional) > index:
            seed = positional[index].value
        if seed is not None and not (isinstance(seed, cst.Name) and seed.value == "None"):
            self.report(TS113.code, node, f"{code_of(node.func)}(seed={code_of(seed)}): TF2 draws "
                        "other numbers from this seed than the TF1 graph did",
                        changes_numbers=True)
        else:
            self.report(TS116.code, node, f"{code_of(node.func)}: random initial values: the "
                        "legacy run and the migrated run draw different numbers (unseeded "
                        "in both)", changes_numbers=True)


@register_rule
class TF1OnlyNamesLeft(TF1OnlyNames):
    DESCRIPTION = "After the tape rules ran: report any TF1-only name still in the file."
    RULE = "tf1-only-left"
    PHASE = "check-after"
    ORDER = 10
    SCREEN_NAMES = frozenset(n.rpartition(".")[2] for n in TF1_ONLY) | GONE | EAGER_UNSUPPORTED
    STRICT = True


#: What stays TF1-only after the TS109 audit (issue #17), by reason: every name
#: of TF1_ONLY that no rule converts matches one pattern here (``*`` ends a
#: prefix); tests/migrate/rules/test_tf1_audit_table.py checks that, and that
#: docs/codes.md (TS109) lists each pattern.
TRULY_TF1_ONLY = {
    "variable store and scopes (the model-code rule converts them where the code shows "
    "the names: module level, a class's build methods, model functions at their first "
    "call; elsewhere TS125)": (
        "variable_scope", "get_variable", "get_variable_scope", "get_local_variable",
        "VariableScope", "AUTO_REUSE", "variable_op_scope", "op_scope", "no_regularizer",
        "create_partitioned_variables", "fixed_size_partitioner", "min_max_variable_partitioner",
        "variable_axis_size_partitioner"),
    "state changes that run only when fetched in a graph but at once eagerly "
    "(the feeds rules run `tf.assign*` fetched in fed code when fetched; elsewhere "
    "when they run is not proven)": (
        "assign", "assign_add", "assign_sub", "count_up_to", "scatter_*", "batch_scatter_update",
        "Print", "write_file", "train.write_graph"),
    "graph collections (eager has none; the model-code rule writes variable "
    "collections out as lists where the code shows what they hold)": (
        "GraphKeys", "get_collection", "get_collection_ref", "add_to_collection",
        "add_to_collections", "global_variables", "local_variables", "model_variables",
        "trainable_variables", "moving_average_variables", "all_variables",
        "losses.add_loss", "losses.compute_weighted_loss", "losses.get_losses",
        "losses.get_regularization_loss", "losses.get_regularization_losses",
        "losses.get_total_loss"),
    "graphs, sessions and their protos": (
        "ConfigProto", "GPUOptions", "GraphOptions", "OptimizerOptions", "RunOptions",
        "RunMetadata", "GraphDef", "NodeDef", "MetaGraphDef", "AttrValue", "NameAttrList",
        "TensorInfo", "Event", "SessionLog", "Summary", "SummaryMetadata", "HistogramProto",
        "LogMessage", "get_default_graph", "get_default_session", "get_session_handle",
        "get_session_tensor", "delete_session_tensor", "colocate_with", "container",
        "add_check_numerics_ops", "report_uninitialized_variables", "is_variable_initialized",
        "assert_variables_initialized", "initialize_all_tables", "tables_initializer",
        "initializers.global_variables", "initializers.local_variables",
        "initializers.tables_initializer", "initializers.variables", "graph_util.*",
        "NoGradient", "NotDifferentiable", "wrap_function", "SparseTensorValue",
        "ragged.RaggedTensorValue", "ragged.constant_value", "get_seed", "random.get_seed",
        "random.set_random_seed", "executing_eagerly_outside_functions"),
    "TF1 behaviour switches, and the v1 TensorShape's Dimension class": (
        "enable_control_flow_v2", "disable_control_flow_v2", "control_flow_v2_enabled",
        "enable_resource_variables", "disable_resource_variables", "resource_variables_enabled",
        "enable_tensor_equality", "disable_tensor_equality", "enable_v2_tensorshape",
        "disable_v2_tensorshape", "experimental.output_all_intermediates", "Dimension"),
    "placeholders of other kinds": ("sparse.placeholder", "ragged.placeholder"),
    "queues, readers and queue-based input pipelines": (
        "FIFOQueue", "PaddingFIFOQueue", "PriorityQueue", "RandomShuffleQueue", "QueueBase",
        "io.PaddingFIFOQueue", "io.PriorityQueue", "io.RandomShuffleQueue", "io.QueueBase",
        "ConditionalAccumulator", "ConditionalAccumulatorBase", "SparseConditionalAccumulator",
        "sparse.SparseConditionalAccumulator", "ReaderBase", "TFRecordReader", "TextLineReader",
        "FixedLengthRecordReader", "IdentityReader", "LMDBReader", "WholeFileReader",
        "io.TFRecordCompressionType", "io.tf_record_iterator", "python_io",
        "data.make_one_shot_iterator", "data.make_initializable_iterator",
        "data.get_output_classes", "data.get_output_shapes", "data.get_output_types",
        "train.batch", "train.batch_join", "train.maybe_batch", "train.maybe_batch_join",
        "train.shuffle_batch", "train.shuffle_batch_join", "train.maybe_shuffle_batch",
        "train.maybe_shuffle_batch_join", "train.input_producer", "train.range_input_producer",
        "train.slice_input_producer", "train.string_input_producer", "train.limit_epochs",
        "train.match_filenames_once", "train.QueueRunner", "train.add_queue_runner",
        "train.queue_runner", "train.start_queue_runners", "train.LooperThread"),
    "training loops, hooks, checkpoints and saved models of TF1 (the savers rule converts "
    "`tf.train.Saver` where it can list its variables; `train.get_global_step` runs "
    "eagerly)": (
        "train.SaverDef", "train.Scaffold", "train.Supervisor", "train.Server",
        "train.*Hook", "train.*Session", "train.*SessionCreator", "train.SessionManager",
        "train.SessionRun*", "train.CheckpointSaverListener", "train.SecondOrStepTimer",
        "train.NanLossDuringTrainingError", "train.NewCheckpointReader", "train.VocabInfo",
        "train.Optimizer", "train.AdagradDAOptimizer", "train.SyncReplicasOptimizer",
        "train.assert_global_step", "train.basic_train_loop", "train.checkpoint_exists",
        "train.create_global_step", "train.global_step",
        "train.do_quantize_training_on_graphdef", "train.export_meta_graph",
        "train.import_meta_graph", "train.generate_checkpoint_state_proto",
        "train.get_checkpoint_mtimes", "train.init_from_checkpoint", "train.remove_checkpoint",
        "train.update_checkpoint_state", "train.warm_start", "train.replica_device_setter",
        "train.summary_iterator", "train.sdca_*", "saved_model.*", "tpu.*",
        "distribute.get_loss_reduction"),
    "v1 summaries (TF2's tf.summary writes through other calls)": ("summary.*",),
    "v1 metrics (local variables and an update op run when fetched)": ("metrics.*",),
    "TF1-only modules with no TF2 module of that name": (
        "layers", "distributions", "gfile", "app", "flags", "logging", "manip", "spectral",
        "resource_loader", "user_ops", "mixed_precision", "profiler.*", "lite.*", "test.*"),
    "graph-mode layer helpers (tf.keras.layers.Dense in TF2; the model-code rule converts "
    "or reports RNN cells and RNNs)": (
        "nn.relu_layer", "nn.xw_plus_b", "feature_column.input_layer",
        "feature_column.linear_model", "feature_column.shared_embedding_columns"),
    "random ops whose TF2 name is the same function but whose eager stream differs "
    "from the graph's (seeded: TS113)": (
        "random_crop", "nn.uniform_candidate_sampler", "nn.log_uniform_candidate_sampler",
        "random.multinomial", "random.stateless_multinomial"),
    "a TF2 name exists but with another signature or other defaults (not renamed: "
    "the call would need its arguments rewritten)": (
        "arg_max", "arg_min", "batch_to_space_nd", "bincount", "confusion_matrix", "decode_csv",
        "decode_raw", "floor_div", "image.extract_image_patches", "image.resize_images",
        "image.resize_area", "image.resize_bicubic", "image.resize_bilinear",
        "image.resize_nearest_neighbor", "image.resize_image_with_pad", "linalg.transpose",
        "load_file_system_library", "nn.conv2d_backprop_input", "nn.conv2d_backprop_filter",
        "nn.conv3d_backprop_filter", "nn.conv3d_backprop_filter_v2", "nn.ctc_loss_v2",
        "nn.depthwise_conv2d_native", "nn.fused_batch_norm", "nn.quantized_*",
        "parse_example", "parse_single_example", "quantize_v2", "reduce_join",
        "serialize_many_sparse", "serialize_sparse",
        "sparse_add", "sparse_concat", "sparse_matmul", "sparse_merge", "sparse.merge",
        "sparse_reduce_max", "sparse_reduce_sum", "sparse_reduce_max_sparse",
        "sparse_reduce_sum_sparse", "sparse.reduce_max_sparse", "sparse.reduce_sum_sparse",
        "sparse_segment_mean", "sparse_segment_sqrt_n", "sparse_segment_sum", "sparse_split",
        "sparse_to_dense", "string_split", "string_to_hash_bucket", "string_to_number", "substr",
        "verify_tensor_all_finite", "where_v2", "setdiff1d", "clip_by_average_norm",
        "batch_gather", "convert_to_tensor_or_indexed_slices",
        "convert_to_tensor_or_sparse_tensor", "errors.error_code_from_exception_type",
        "errors.exception_type_from_error_code", "errors.raise_exception_on_not_ok_status"),
    "graph assertions: an op that checks only when fetched (tf.debugging.assert_* raise at "
    "once eagerly, and take other arguments)": (
        "assert_greater_equal", "assert_integer", "assert_less_equal", "assert_near",
        "assert_negative", "assert_non_negative", "assert_non_positive", "assert_none_equal",
        "assert_positive", "assert_rank_at_least", "assert_rank_in", "assert_scalar",
        "assert_type"),
}


def truly_tf1_only_group(name: str) -> Optional[str]:
    """The :data:`TRULY_TF1_ONLY` reason a name falls under, or None."""
    for reason, patterns in TRULY_TF1_ONLY.items():
        for p in patterns:
            head, star, tail = p.partition("*")
            if name == p or star and name.startswith(head) and name.endswith(tail) \
                    and len(name) >= len(head) + len(tail):
                return reason
    return None
