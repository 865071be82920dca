"""``tf.contrib.slim`` / ``layers`` / ``framework`` -> ``tf_slim``; other ``tf.contrib`` reported.

``tf.contrib`` is gone in TF2, in ``tensorflow.compat.v1`` too, so a file that
uses it breaks in either form unless its contrib names move. The ones tf-slim
still provides move to ``tf_slim`` (a name tf-slim does not export is left and
reported); every other contrib module is reported with its maintained
replacement (``tapeshift.migrate.engine.contrib_table``). Files that use tf-slim stay in graph mode for
now (TS118): slim layers create their variables when called, which an eager
rewrite must not repeat.

``xavier_initializer()`` (uniform, the default) is TensorFlow's own
``glorot_uniform_initializer``: the same bound, sqrt(6 / (fan_in + fan_out)),
drawn by the same ``random_uniform`` op, so it becomes TF1's core
``tf.glorot_uniform_initializer`` (which the later rules spell for each form) and
a file that used contrib for its initializer alone needs no tf-slim. (``uniform=False`` is a truncated normal with
stddev sqrt(1.3 / n), which no TensorFlow initializer draws: it moves to tf_slim.)
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional

import libcst as cst
from libcst.codemod.visitors import AddImportsVisitor
from libcst.metadata import QualifiedNameProvider

from tapeshift.migrate.engine.registry import register_rule
from tapeshift.migrate.engine.rule import SCRATCH_IDENTIFIERS, TapeshiftCodemod
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.tf_names import tf_module_alias
from tapeshift.migrate.engine.toolkit.walk import nodes_of, visit
from tapeshift.migrate.rules.rnn_cells_table import CONTRIB_RNN_FUNCTIONS, RNN_CELLS
from tapeshift.migrate.rules.contrib_slim_table import TF_SLIM, TF_SLIM_LAYERS
from tapeshift.migrate.rules.contrib_summary import converts
from tapeshift.migrate.rules.model_code_syntax import is_none
from tapeshift.migrate.rules import rnn_cells
from tapeshift.migrate.engine.contrib_table import CONTRIB_REPLACEMENTS, CONTRIB_TF_SLIM
from tapeshift.migrate.engine.findings import CodeInfo, Severity

# Codes this rule reports (docs/codes.md is generated from them)

TS117 = CodeInfo(
    code="TS117",
    name="contrib-module-gone",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="a tf.contrib module (or name) with no automatic TF2 counterpart",
    what="Finds a `tf.contrib` module other than slim, layers and framework (which "
         "move to `tf_slim`), or a slim/layers/framework name tf-slim does not export.",
    why="`tf.contrib` is gone in TF2, `tensorflow.compat.v1` included: the line "
        "fails on import or on first use whatever mode the file is in.",
    example="cell = tf.contrib.rnn.LayerNormBasicLSTMCell(64)",
    use_instead="cell = tf.keras.layers.LSTMCell(64) with tf.keras.layers.LayerNormalization "
                "(the message names the maintained replacement for each contrib module)",
    fix_safety="No automatic fix: the replacements differ in API. The file is migrated "
               "in compat mode and this line still needs a hand edit.",
)

TS118 = CodeInfo(
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
)

TS135 = CodeInfo(
    code="TS135",
    name="uses-tf-slim-functions",
    severity=Severity.INFO,
    summary="tf-slim's initializers or regularizers, from the tf_slim package; the file can "
            "reach tape form",
    what="Reports a file whose only tf-slim names (after `tf.contrib.layers` / `slim` moved "
         "to `tf_slim`) are initialisers and regularisers: `variance_scaling_initializer`, "
         "`xavier_initializer(uniform=False)`, `l2_regularizer` and their kin.",
    why="These make no variables and touch no collection: they are functions of their "
        "arguments, which run eagerly as they ran in a graph, so unlike slim's layers they "
        "do not keep the file in graph mode (TS118). They still come from tf-slim, which "
        "must be installed.",
    example="w_init = tf.contrib.layers.variance_scaling_initializer()",
    use_instead="import tf_slim\nw_init = tf_slim.variance_scaling_initializer()   "
                "# pip install tf-slim",
    fix_safety="Keeps numbers: the same functions (TensorFlow has no initialiser with "
               "tf-slim's truncated-normal constant, 1.3, so none is substituted).",
)

DESCRIPTION = "tf.contrib.slim/layers/framework -> tf_slim; other tf.contrib modules reported"

_EXPORTS = {"tf_slim": TF_SLIM, "tf_slim.layers": TF_SLIM_LAYERS}

#: tf-slim functions that make no variable and touch no collection: initialisers and
#: regularisers, functions of their arguments that run eagerly as they ran in a graph.
#: A file that uses nothing else of tf-slim can reach tape form (TS135, not TS118).
PURE_SLIM = frozenset({
    "xavier_initializer", "xavier_initializer_conv2d", "variance_scaling_initializer",
    "l1_regularizer", "l2_regularizer", "l1_l2_regularizer", "sum_regularizer",
})
#: tf.contrib's global-step functions: TensorFlow's own under ``tf.train`` (tf-slim's
#: are thin wrappers of them)
_GLOBAL_STEP = {f"contrib.{m}.{n}": f"train.{n}" for m in ("framework", "slim")
                for n in ("get_or_create_global_step", "get_global_step", "create_global_step")}

#: tf-slim's one_hot_encoding: tf.one_hot of the same arguments (``_one_hot``)
_ONE_HOT = {f"contrib.{m}.one_hot_encoding" for m in ("layers", "slim")}
_ONE_HOT_PARAMS = ("labels", "num_classes", "on_value", "off_value", "outputs_collections", "scope")
_ONE_HOT_KEYWORDS = {"labels": "indices", "num_classes": "depth", "on_value": "on_value",
                     "off_value": "off_value", "scope": "name"}

#: contrib initializers that are a TensorFlow initializer when called with ``uniform``
#: left at True: their parameters after ``uniform``, passed on by keyword
_XAVIER = {f"contrib.{m}.{n}": ("seed", "dtype") for m in ("layers", "slim")
           for n in ("xavier_initializer", "xavier_initializer_conv2d")}


def slim_target(api: str) -> Optional[str]:
    """``contrib.slim.fully_connected`` -> ``tf_slim.fully_connected``; None if not provided."""
    parts = api.split(".")
    if len(parts) < 2 or parts[0] != "contrib" or parts[1] not in CONTRIB_TF_SLIM:
        return None
    module = CONTRIB_TF_SLIM[parts[1]]
    if len(parts) == 2:
        return module
    if module == "tf_slim" and parts[2] == "layers":  # tf.contrib.slim.layers.X
        module, parts = "tf_slim.layers", parts[1:]
    if parts[2] not in _EXPORTS[module]:
        if module == "tf_slim.layers" and parts[2] in TF_SLIM:
            module = "tf_slim"  # e.g. contrib.layers.xavier_initializer is tf_slim's top level
        else:
            return None
    return ".".join([module, *parts[2:]])


def _attributes_read(module: cst.Module) -> Dict[str, set]:
    """name -> the attributes read from it in the module (``layers.conv2d``: conv2d)."""
    out: Dict[str, set] = {}
    for node in nodes_of(module, cst.Attribute):
        if isinstance(node.value, cst.Name):
            out.setdefault(node.value.value, set()).add(node.attr.value)
    return out


def _attribute_chain(expr: cst.BaseExpression):
    """(the attributes that spell ``expr``, outermost first; what they start from):
    ``tf.contrib.summary.scalar`` -> ([its three Attribute nodes], ``tf``)."""
    parts = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr)
        expr = expr.value
    return parts, expr


@register_rule
class ContribToTfSlim(TapeshiftCodemod):
    DESCRIPTION = DESCRIPTION
    RULE = "contrib"
    #: first on the original source; in compat form too (tf.contrib is gone from compat.v1)
    PHASE = ("pre", "compat-pre")
    ORDER = 10
    CODES = (TS117, TS118, TS135)
    #: tf.contrib.* references and imports; TS118 for a file importing tf_slim
    SCREEN_NAMES = frozenset({"contrib", "tf_slim"})
    #: its result is the same in both phases: the fallback's run is the first one's
    USES_SHARED_FACTS = False

    def __init__(self, context):
        super().__init__(context)
        self._slim_used = False
        self._slim_model_code = False  # a tf-slim name other than PURE_SLIM's is used
        self._as_import = {}  # `slim = tf.contrib.slim` statement -> (module, bound name)
        #: xavier_initializer, one_hot_encoding calls -> TensorFlow's call (and what it was)
        self._calls: dict = {}
        self._call_parts: set = set()  # the attributes that spell those calls' functions
        self._summary_parts: set = set()  # ... and those of tf.contrib.summary calls converted
        self._rnn_parts: set = set()  # ... and of tf.contrib.rnn names the rnn-cells rule converts
        self._global_step_parts: set = set()  # ... and of the global-step functions' modules
        self._inner: set = set()  # attributes that are the value of another attribute

    # -- `slim = tf.contrib.slim` becomes `import tf_slim as slim` ------------
    def visit_Module(self, node: cst.Module) -> bool:
        # every tf.contrib reference, import or alias spells "contrib": without it
        # only leave_Module has anything to do (TS118 for a file using tf_slim)
        spelled = self.context.scratch.get(SCRATCH_IDENTIFIERS)
        if spelled is not None and "contrib" not in spelled:
            return False
        self._rnn_imports = contrib_rnn_imports(node)
        self._tf = tf_module_alias(node)
        self._attrs_of = _attributes_read(node)
        return True

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if len(node.body) != 1 or not isinstance(node.body[0], cst.Assign):
            return
        assign = node.body[0]
        if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
            return
        api = self.tf_api_name(assign.value)
        if api is not None and api.count(".") == 1 and slim_target(api) is not None:
            bound = assign.targets[0].target.value
            module = self._module_for(slim_target(api), bound)
            # (an imported module's uses are renamed one by one; this name's are not)
            exported = _EXPORTS.get(module)
            missing = [] if exported is None else sorted(self._attrs_of.get(bound, set()) - exported)
            if missing:
                self.report(TS117.code, node, f"`{bound}.{missing[0]}`"
                            f"{f' (and {len(missing) - 1} more)' if len(missing) > 1 else ''} "
                            f"is not in {module}: that use fails on TF2")
            self._as_import[node] = (module, bound)

    def leave_SimpleStatementLine(self, original_node, updated_node):
        if original_node not in self._as_import:
            return updated_node
        module, bound = self._as_import[original_node]
        self._slim_used = self._slim_model_code = True  # (the module: any of its names)
        self.record_change(original_node, f"{bound} = tf.contrib... -> import {module} as {bound}")
        return updated_node.with_changes(body=[cst.Import(names=[cst.ImportAlias(
            name=cst.parse_expression(module), asname=cst.AsName(name=cst.Name(bound)))])])

    # -- tf.contrib.rnn.BasicLSTMCell: the RNN rules' (model code in tape form, rnn-cells
    # in compat form), which convert it or report why not
    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._inner.add(node.value)  # (a module reference in a longer name: not a use of its own)
        if node not in self._rnn_parts and rnn_cells.converts(node, self.tf_api_name):
            self._rnn_parts.update(_attribute_chain(node)[0])
        elif self.tf_api_name(node) in _GLOBAL_STEP:  # becomes tf.train's as a whole
            self._global_step_parts.update(_attribute_chain(node.value)[0])

    # -- xavier_initializer(): TensorFlow's glorot_uniform_initializer ---------
    def visit_Call(self, node: cst.Call) -> None:
        if converts(node, self.tf_api_name):  # the contrib-summary rule's: tf.summary
            self._summary_parts.update(_attribute_chain(node.func)[0])
            return
        api = self.tf_api_name(node.func)
        if api in _ONE_HOT and isinstance(node.func, cst.Attribute):
            self._one_hot(node, api)
            return
        if api not in _XAVIER or not isinstance(node.func, cst.Attribute):
            return
        args = []
        for i, arg in enumerate(node.args):
            name = arg.keyword.value if arg.keyword else ("uniform", *_XAVIER[api])[i] \
                if i <= len(_XAVIER[api]) and not arg.star else None
            if name == "uniform":
                if not (isinstance(arg.value, cst.Name) and arg.value.value == "True"):
                    return  # a truncated normal TensorFlow has no initializer for
            elif name is None:
                return
            else:
                args.append(arg.with_changes(keyword=cst.Name(name), equal=cst.AssignEqual(
                    whitespace_before=cst.SimpleWhitespace(""),
                    whitespace_after=cst.SimpleWhitespace(""))))
        if args:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        parts = _attribute_chain(node.func)[0]
        if self._tf is None:
            return
        self._call_parts.update(parts)
        # (the tf module's, not the root's: `L.xavier_initializer()` with L a contrib module)
        self._calls[node] = (node.with_changes(
            func=cst.parse_expression(f"{self._tf}.glorot_uniform_initializer"), args=args),
            "tf.glorot_uniform_initializer()")

    def _one_hot(self, node: cst.Call, api: str) -> None:
        """``slim.one_hot_encoding(labels, n, on_value, off_value, scope=s)`` ->
        ``tf.one_hot(labels, n, on_value=..., off_value=..., name=s)``: the op slim runs
        (its int32 labels cast to int64 first, which changes no index), no variable."""
        args = []
        for i, arg in enumerate(node.args):
            name = arg.keyword.value if arg.keyword else _ONE_HOT_PARAMS[i] \
                if i < len(_ONE_HOT_PARAMS) and not arg.star else None
            if name == "outputs_collections" and is_none(arg.value):
                continue
            if name not in _ONE_HOT_KEYWORDS:
                return  # outputs_collections given (or *args): slim's own function stays
            if arg.keyword is None and i < 4:  # (tf.one_hot's first four are these)
                args.append(arg)
            else:
                args.append(arg.with_changes(
                    keyword=cst.Name(_ONE_HOT_KEYWORDS[name]),
                    equal=arg.equal if arg.keyword else cst.AssignEqual(
                        cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))))
        if self._tf is None or not args:
            return
        args[-1] = args[-1].with_changes(comma=node.args[-1].comma)
        self._call_parts.update(_attribute_chain(node.func)[0])
        self._calls[node] = (node.with_changes(func=cst.parse_expression(f"{self._tf}.one_hot"),
                                               args=args), "tf.one_hot(...)")

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        new = self._calls.get(original_node)
        if new is None:
            return updated_node
        self.record_change(original_node, f"tf.{self.tf_api_name(original_node.func)}"
                                          f"{'()' if new[1].endswith('()') else '(...)'} -> {new[1]}")
        return new[0].with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar)

    # -- references: tf.contrib.slim.fully_connected ------------------------
    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute):
        api = self.tf_api_name(original_node)
        if api is None or not api.startswith("contrib.") or self._is_import_value(original_node):
            return updated_node
        value = original_node.value
        if isinstance(value, cst.Name) and value.value in self._rnn_imports.values():
            # `from tensorflow.contrib import rnn`: `rnn.LSTMCell` spelled as the RNN
            # rules read it, `tf.contrib.rnn.LSTMCell`
            return cst.parse_expression(f"{self._tf}.contrib.rnn.{original_node.attr.value}")
        if original_node in self._call_parts or original_node in self._summary_parts \
                or original_node in self._rnn_parts or original_node in self._global_step_parts:
            return updated_node  # glorot_uniform_initializer, tf.summary's, tf-keras' rnn_cell
        parts = api.split(".")
        if api in _GLOBAL_STEP:  # tf.contrib.framework.get_or_create_global_step -> tf.train's
            root = _attribute_chain(original_node)[1]
            self.record_change(original_node, f"tf.{api} -> tf.{_GLOBAL_STEP[api]}")
            return cst.parse_expression(f"{code_of(root)}.{_GLOBAL_STEP[api]}").with_changes(
                lpar=updated_node.lpar, rpar=updated_node.rpar)
        target = slim_target(api)
        if target is None:
            if len(parts) == 2 and parts[1] not in CONTRIB_TF_SLIM:
                self._report_gone(original_node, parts[1])
            elif len(parts) >= 3 and parts[1] in CONTRIB_TF_SLIM:
                self.report(TS117.code, original_node, f"tf.{api} is not exported by tf-slim; "
                            "left as it was (it fails on TF2)")
            return updated_node
        self._slim_used = True
        if original_node not in self._inner:
            self._slim_model_code |= target.rpartition(".")[2] not in PURE_SLIM
        AddImportsVisitor.add_needed_import(self.context, "tf_slim")
        self.record_change(original_node, f"tf.{api} -> {target}")
        return cst.parse_expression(target).with_changes(lpar=updated_node.lpar,
                                                         rpar=updated_node.rpar)

    # -- imports ---------------------------------------------------------------
    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import):
        if original_node in self._rnn_imports:
            return self._drop_rnn_import(original_node)
        names = []
        for alias in updated_node.names:
            dotted = code_of(alias.name)
            if dotted.startswith("tensorflow.contrib.") and alias.asname is not None:
                target = slim_target(dotted[len("tensorflow."):])
                if target is not None:
                    target = self._module_for(target, code_of(alias.asname.name))
                    self._slim_used = self._slim_model_code = True
                    self.record_change(original_node, f"import {dotted} -> import {target}")
                    alias = alias.with_changes(name=cst.parse_expression(target))
                else:
                    self._report_gone(original_node, dotted.split(".")[2])
            names.append(alias)
        return updated_node.with_changes(names=names)

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom):
        if updated_node.module is None or isinstance(updated_node.names, cst.ImportStar):
            return updated_node
        module = code_of(updated_node.module)
        if module == "tensorflow.contrib":
            return self._from_contrib(original_node, updated_node)
        if not module.startswith("tensorflow.contrib."):
            return updated_node
        target = slim_target(module[len("tensorflow."):])
        if target is None:
            self._report_gone(original_node, module.split(".")[2])
            return updated_node
        exported = _EXPORTS.get(target, TF_SLIM)
        if target == "tf_slim.layers" and all(
                code_of(a.name) not in exported and code_of(a.name) in TF_SLIM
                for a in updated_node.names):
            target, exported = "tf_slim", TF_SLIM  # from contrib.layers import xavier_initializer
        missing = [code_of(a.name) for a in updated_node.names if code_of(a.name) not in exported]
        if missing:
            self.report(TS117.code, original_node, f"{', '.join(missing)} not exported by "
                        f"{target}; the import was left as it was (it fails on TF2)")
            return updated_node
        self._slim_used = True
        self._slim_model_code |= any(code_of(a.name) not in PURE_SLIM for a in updated_node.names)
        self.record_change(original_node, f"from {module} -> from {target}")
        return updated_node.with_changes(module=cst.parse_expression(target))

    def _drop_rnn_import(self, node: cst.CSTNode):
        self.record_change(node, f"`{code_of(node)}`: its cells and functions are spelled "
                           "tf.contrib.rnn.X, which the RNN rules convert")
        return cst.RemovalSentinel.REMOVE

    def _from_contrib(self, original_node, updated_node):
        """``from tensorflow.contrib import slim`` -> ``import tf_slim as slim``."""
        if original_node in self._rnn_imports:
            return self._drop_rnn_import(original_node)
        if len(updated_node.names) != 1:
            self.report(TS117.code, original_node, "several tf.contrib modules imported in one "
                        "statement; left as it was")
            return updated_node
        alias = updated_node.names[0]
        name = code_of(alias.name)
        target = CONTRIB_TF_SLIM.get(name)
        if target is None:
            self._report_gone(original_node, name)
            return updated_node
        bound = code_of(alias.asname.name) if alias.asname else name
        target = self._module_for(target, bound)
        self._slim_used = self._slim_model_code = True
        self.record_change(original_node, f"from tensorflow.contrib import {name} -> "
                                          f"import {target} as {bound}")
        return cst.Import(names=[cst.ImportAlias(
            name=cst.parse_expression(target),
            asname=cst.AsName(name=cst.Name(bound)))])

    def _module_for(self, target: str, bound: str) -> str:
        """The module a name bound to a whole contrib module becomes: ``tf_slim`` for
        ``tf.contrib.layers`` when tf-slim's top level has every name the file reads from
        it (``layers.xavier_initializer`` and ``layers.l2_regularizer`` are there, not in
        ``tf_slim.layers``, which has only the layers)."""
        if target == "tf_slim.layers" and self._attrs_of.get(bound, set()) <= TF_SLIM:
            return "tf_slim"
        return target

    def _is_import_value(self, node: cst.Attribute) -> bool:
        return any(stmt.body[0].value is node for stmt in self._as_import)

    def _report_gone(self, node, name: str) -> None:
        advice = CONTRIB_REPLACEMENTS.get(name, "no maintained replacement is known")
        self.report(TS117.code, node, f"tf.contrib.{name} is gone in TensorFlow 2 (compat.v1 "
                    f"included); use {advice}")

    def leave_Module(self, original_node, updated_node):
        imports = _imports_tf_slim(original_node)
        if imports and not self._slim_used and self._slim_only_in_templates(original_node):
            return updated_node  # tape form already: model functions share their variables
        pure = self._pure_used(original_node) if self._slim_used or imports else set()
        # (a file that imports tf_slim, migrated before: its calls tell, read only where a
        # pure name is spelled at all)
        if pure and not self._slim_model_code and (
                not imports or slim_calls_only_in(self, original_node, lambda fn: False)):
            self.report(TS135.code, original_node, "uses tf-slim's initializers or regularizers "
                        f"only ({', '.join(sorted(pure))}): install it (pip install tf-slim); "
                        "they run eagerly as in a graph")
            return updated_node
        if self._slim_used or imports:
            note = ""
            if spells(self.context, original_node, "batch_norm"):
                note = ("; tf-slim 1.1.0's batch_norm fails on TensorFlow >= 2.16 as shipped "
                        "(call tapeshift.compat.slim.install_tf_slim_fixes() first, as run-legacy does)")
            self.report(TS118.code, original_node, "uses tf-slim: install it (pip install tf-slim); "
                        f"slim model code stays in graph mode for now{note}")
        return updated_node


    def _pure_used(self, module: cst.Module) -> set:
        """The :data:`PURE_SLIM` names the module spells."""
        spelled = self.context.scratch.get(SCRATCH_IDENTIFIERS)
        if spelled is None:
            return {w for w in PURE_SLIM if w in module.code}
        return PURE_SLIM & set(spelled)

    def _slim_only_in_templates(self, module: cst.Module) -> bool:
        """Every tf-slim call sits in a function rebound to
        ``tf.compat.v1.make_template(..., f)`` (what the feeds rule writes)."""
        wrapped: set = set()
        for stmt in module.body:
            if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 \
                    and isinstance(stmt.body[0], cst.Assign):
                value = stmt.body[0].value
                if isinstance(value, cst.Call) and self.is_tf(value.func, "make_template") \
                        and len(value.args) > 1 and isinstance(value.args[1].value, cst.Name):
                    wrapped.add(value.args[1].value.value)
        return bool(wrapped) and slim_calls_only_in(
            self, module, lambda fn: fn.name.value in wrapped)


def contrib_rnn_imports(module: cst.Module) -> Dict[cst.CSTNode, str]:
    """Module-level ``from tensorflow.contrib import rnn [as R]`` and ``import
    tensorflow.contrib.rnn as R`` whose name is used only as ``R.X`` for X the RNN
    rules convert, in a file that imports TensorFlow by a name: import -> R."""
    if tf_module_alias(module) is None:
        return {}
    found: Dict[cst.CSTNode, str] = {}
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.ImportFrom) and small.module is not None \
                    and code_of(small.module) == "tensorflow.contrib" \
                    and not isinstance(small.names, cst.ImportStar) and len(small.names) == 1 \
                    and code_of(small.names[0].name) == "rnn":
                alias = small.names[0]
                found[small] = code_of(alias.asname.name) if alias.asname else "rnn"
            elif isinstance(small, cst.Import) and len(small.names) == 1 \
                    and code_of(small.names[0].name) == "tensorflow.contrib.rnn" \
                    and small.names[0].asname is not None:
                found[small] = code_of(small.names[0].asname.name)
    if not found:
        return {}
    convertible = RNN_CELLS | CONTRIB_RNN_FUNCTIONS
    uses: Dict[str, int] = {}  # R -> its uses as R.X with X convertible
    attrs = set()  # the names after a dot (``tf.contrib.rnn``'s rnn is no use of a name)
    for attribute in nodes_of(module, cst.Attribute):
        attrs.add(id(attribute.attr))
        if isinstance(attribute.value, cst.Name) and attribute.attr.value in convertible:
            uses[attribute.value.value] = uses.get(attribute.value.value, 0) + 1
    spelled: Dict[str, int] = {}
    for name in nodes_of(module, cst.Name):
        if id(name) not in attrs:
            spelled[name.value] = spelled.get(name.value, 0) + 1
    # the import spells R once (``rnn``, or ``as R``); every other spelling is R.X
    return {node: bound for node, bound in found.items()
            if spelled.get(bound, 0) - uses.get(bound, 0) == 1
            and list(found.values()).count(bound) == 1}


def slim_calls_only_in(rule: TapeshiftCodemod, module: cst.Module,
                       inside: Callable[[cst.FunctionDef], bool]) -> bool:
    """No tf-slim call in ``module`` outside the functions ``inside`` accepts
    (``arg_scope`` aside: a context manager that runs as well in eager code)."""
    outside = False

    class _V(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return not inside(node)

        def visit_Call(self, call: cst.Call) -> bool:
            nonlocal outside
            outside = outside or is_slim_call(rule, call)
            return not outside

    visit(module, _V())
    return not outside


def slim_names(rule: TapeshiftCodemod, node: cst.CSTNode) -> List[str]:
    """The qualified names of tf-slim's that ``node`` (a name or attribute) refers to."""
    try:
        qualified = rule.get_metadata(QualifiedNameProvider, node, set())
    except KeyError:
        return []
    return [q.name for q in qualified if q.name == "tf_slim" or q.name.startswith("tf_slim.")]


def is_slim_call(rule: TapeshiftCodemod, call: cst.Call) -> bool:
    """``call`` calls a tf-slim function other than ``arg_scope`` and the pure ones
    (:data:`PURE_SLIM`: they make no variables, in eager code as in a graph)."""
    return any(name.startswith("tf_slim.") and not name.endswith("arg_scope")
               and name.rpartition(".")[2] not in PURE_SLIM for name in slim_names(rule, call.func))


def spells(context, module: cst.Module, text: str) -> bool:
    """``text`` (a run of word characters) appears in the module's code; told from
    the identifiers the pipeline lists, when it does (no second print of the tree)."""
    spelled = context.scratch.get(SCRATCH_IDENTIFIERS)
    if spelled is None:
        return text in module.code
    return any(text in word for word in spelled)


def _imports_tf_slim(module: cst.Module) -> bool:
    """The file already uses tf_slim (a migrated file, migrated again, stays in graph mode)."""
    for node in module.body:
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                if isinstance(small, cst.Import) and any(
                        code_of(a.name).split(".")[0] == "tf_slim" for a in small.names):
                    return True
                if isinstance(small, cst.ImportFrom) and small.module is not None \
                        and code_of(small.module).split(".")[0] == "tf_slim":
                    return True
    return False
