"""Model code -> TF2 variables and layers created once, under their TF1 names.

TF1 model code names its variables through scopes and looks them up again by
name: ``tf.variable_scope("G")`` + ``tf.get_variable("w", shape)`` makes
``G/w``, ``tf.layers.dense(x, 10)`` makes a layer whose variables are
``G/dense/kernel`` and ``G/dense/bias``, ``reuse=True`` / ``tf.AUTO_REUSE``
hands back the variables of that name, ``tf.get_collection(...,
scope="G")`` lists them. TF2 has no such store: a variable is a Python object,
made once and passed around (docs/tf1-vs-tf2.md, section 4). This rule replays
TF1's store over the module (:mod:`tapeshift.migrate.engine.toolkit.variable_store`)
and writes what it finds as TF2:

* ``with tf.variable_scope("G"):`` / ``tf.name_scope("G"):`` blocks dissolve:
  their names live on in the names of the variables made in them;
* ``tf.get_variable("w", [2, 3], initializer=init)`` -> ``tf.Variable(init([2,
  3]), name="G/w")`` where TF1 created it; where TF1 looked it up (``reuse``),
  the Python name it was created under;
* ``tf.layers.dense(x, 10, tf.nn.relu)`` -> a layer object made once,
  ``dense = tf_keras.layers.Dense(10, tf.nn.relu, name="G/dense")``, called
  where the function was: ``dense(x)``; a reused layer is the same object.
  tf-keras' layers are the classes ``tf.layers`` are made of (same computation,
  same initialisers), their variables are ``tf.Variable`` that the v1
  optimizers accept, and a layer's name may carry the TF1 scope, so its
  variables keep the TF1 names wherever it is first called
  (:mod:`tapeshift.migrate.rules.model_code_layers`); the file needs the
  tf-keras package (TS126);
* ``tf.Variable(..., name="v")`` in a scope gets its TF1 name, ``G/v``;
* ``tf.get_collection(TRAINABLE_VARIABLES / GLOBAL_VARIABLES, scope=...)``,
  ``tf.trainable_variables()`` and ``tf.global_variables()`` -> the list of
  what TF1's collection held at that line, in creation order (``[w, *
  dense.trainable_variables]``);
* ``with tf.control_dependencies(tf.get_collection(UPDATE_OPS)):`` around a
  train op dissolves: a Keras batch normalization called with ``training``
  updates its moving statistics itself, at that call;
* ``tf.train.Saver()`` (and ``Saver(tf.global_variables())``) gets TF1's list
  written out, ``var_list=[w, *dense.variables, global_step]``: what
  GLOBAL_VARIABLES held at that line, the global step of
  ``get_or_create_global_step()`` included, an optimizer's slots not (the v1
  optimizer makes them at its first step: TS127); in a file with a Saver every
  ``tf.Variable`` carries its TF1 name (``Variable_1``), which the Saver keys by;
* ``tf.reset_default_graph()`` starts the store again: what is made after it is
  named as in a new graph (``dense`` again).

Module-level model code and the ``__main__`` guard are read in order; a model
function at its first module-level call (what it makes becomes module names
after their TF1 names, the function computes with them); a class's methods
that run once in the order ``__init__`` calls them, what they make becoming
attributes of ``self``, and a build method called once per network at each
call (:mod:`tapeshift.migrate.rules.model_code_classes`). Whatever cannot be
replayed without running the program (a scope named by a computed string,
layers made in a loop, a regulariser, a function that makes variables where it
runs but is never read, a model function called again that made variables
without AUTO_REUSE) is reported (TS125) and the file keeps its compat form.

This module walks the blocks and statements; the rule's other parts are
:mod:`~tapeshift.migrate.rules.model_code_scopes` (scope blocks dissolved,
constant names), :mod:`~tapeshift.migrate.rules.model_code_functions` (model
functions and classes read where they run) and
:mod:`~tapeshift.migrate.rules.model_code_per_call` (functions making new
variables at each call, read at each), mixins of :class:`ModelCode`,
and :mod:`~tapeshift.migrate.rules.model_code_calls` (the calls rewritten).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.codemod.visitors import AddImportsVisitor

from tapeshift.migrate.engine.findings import COMPAT_SAFETY, CodeInfo, Severity
from tapeshift.migrate.engine.tf1_api import PLACEHOLDERS
from tapeshift.migrate.engine.registry import register_rule
from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.dataflow import names_of
from tapeshift.migrate.engine.toolkit.kinds import variable_factory
from tapeshift.migrate.engine.toolkit.statements import is_main_guard
from tapeshift.migrate.engine.toolkit.tf_names import fresh_name, tf_module_alias
from tapeshift.migrate.engine.toolkit.variable_store import MODEL_CODE, ModelCodeFacts, VariableStore
from tapeshift.migrate.engine.toolkit.walk import instance_test, nodes, nodes_of
from tapeshift.migrate.rules.model_code_calls import SUMMARY_OPS
from tapeshift.migrate.rules.model_code_calls import GLOBAL_STEP_MAKERS
from tapeshift.migrate.rules.model_code_per_call import PerCallFunctions
from tapeshift.migrate.rules.model_code_order import (
    assignment_counts, calls_at_top_only, first_top_level_calls, module_bindings,
    run_once_statements,
)
from tapeshift.migrate.rules.savers import TS127
from tapeshift.migrate.rules.model_code_calls import CallRewriter, single_target
from tapeshift.migrate.rules.model_code_classes import (
    ClassContext, FunctionContext, LocalRenamer, inline_call, inlined_body,
    method_call)
from tapeshift.migrate.rules.model_code_layers import LAYERS
from tapeshift.migrate.rules.model_code_slim import is_slim_dense, remove_slim_imports, slim_references
from tapeshift.migrate.rules.contrib_slim import TS118
from tapeshift.migrate.rules import model_code_rnn
from tapeshift.migrate.rules.model_code_rnn import RNN_APIS, RNN_WORDS, rnn_api
from tapeshift.migrate.rules.rnn_cells_table import TF_KERAS_LEGACY_RNN_CELL
from tapeshift.migrate.rules.model_code_functions import FunctionBodies
from tapeshift.migrate.rules.model_code_scopes import ScopeBlocks

# Codes this rule reports (docs/codes.md is generated from them)

TS125 = CodeInfo(
    code="TS125",
    name="model-code-not-static",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="model code whose variables cannot be named and created once without running it",
    what="Reports variable scopes, `tf.get_variable`, `tf.layers` and variable collections "
         "the model-code rule cannot replay from the source: a scope or variable named by a "
         "computed string, layers or variables made in a loop or a condition, a regulariser, "
         "partitioner or custom getter, a collection of another key, a name TF1 would reject "
         "(created twice without reuse, reused before it exists).",
    why="TF2 has no variable store: each variable must be created once, as an object, under "
        "the name TF1 gave it (so that collections by scope, `var_list=` and checkpoints "
        "keep working). Where the name or the number of variables depends on values known "
        "only when the program runs, the rewrite could create them more than once or under "
        "other names.",
    example="for i in range(3):\n    h = tf.layers.dense(h, 64, name='fc%d' % i)",
    use_instead="fc = [tf_keras.layers.Dense(64, name='fc%d' % i) for i in range(3)]\n"
                "for layer in fc:\n    h = layer(h)",
    fix_safety=COMPAT_SAFETY,
)

TS126 = CodeInfo(
    code="TS126",
    name="keras2-layers",
    severity=Severity.INFO,
    summary="tf.layers became tf-keras (Keras 2) layer objects; the file needs the tf-keras package",
    what="Reports a tape-form file whose `tf.layers.*` calls became `tf_keras.layers.*` "
         "objects created once and called where the functions were, or whose RNN cells "
         "(`tf.nn.rnn_cell`, `tf.contrib.rnn`) became tf-keras' legacy cells, made once and "
         "run by `tf.compat.v1.nn.dynamic_rnn` / `static_rnn` in the step functions.",
    why="`tf.layers` is made of Keras 2 layers (tf-keras since TensorFlow 2.16): the same "
        "computation and initialisers, `tf.Variable` weights the v1 optimizers accept, and "
        "layer names that carry TF1 scopes. Keras 3 (`tf.keras` on TensorFlow >= 2.16) "
        "rejects both of the last two.",
    example="h = tf.layers.dense(x, 10, tf.nn.relu, name='fc')",
    use_instead="fc = tf_keras.layers.Dense(10, tf.nn.relu, name='fc')\nh = fc(x)   "
                "# pip install tf-keras",
    fix_safety="Keeps numbers: the same layer classes; variables keep their TF1 names.",
)

class _NotStatic(Exception):
    """The module's model code cannot be replayed; the reason was reported."""


#: calls that make or read TF1's global step
GLOBAL_STEP_APIS = frozenset({*GLOBAL_STEP_MAKERS, "train.get_global_step"})
# per-node tests of the walks below, answered once per type (LibCST's classes are ABCs)
_is_call = instance_test(cst.Call)
_is_definition = instance_test((cst.FunctionDef, cst.ClassDef, cst.Lambda))
_COLLECTION_KEYS = {"GraphKeys.TRAINABLE_VARIABLES": "trainable",
                    "GraphKeys.GLOBAL_VARIABLES": "global", "GraphKeys.UPDATE_OPS": "update",
                    "trainable_variables": "trainable", "variables": "global",
                    "update_ops": "update"}

#: optimizers whose step makes no slot variable (plain gradient descent keeps none)
_NO_SLOTS = frozenset({"train.GradientDescentOptimizer", "compat.v1.train.GradientDescentOptimizer"})

@register_rule
class ModelCode(ScopeBlocks, FunctionBodies, PerCallFunctions, TapeshiftCodemod):
    DESCRIPTION = "Variable scopes, get_variable and tf.layers -> TF2 variables and layers made once."
    RULE = "model-code"
    #: before the feeds rule, which then sees variables and layer objects made once
    PHASE = "pre"
    ORDER = 25
    CODES = (TS125, TS126)
    SCREEN_NAMES = frozenset({"variable_scope", "get_variable", "layers", "get_collection",
                              "trainable_variables", "global_variables", "name_scope", "Saver",
                              "fully_connected", "Variable", *RNN_WORDS})
    #: TF1's RNN cells and functions: converted at module level, else reported (TS125)
    HANDLES = RNN_APIS

    def __init__(self, context) -> None:
        super().__init__(context)
        self._new_body: Optional[List[cst.BaseStatement]] = None
        self._changed = False
        self._keras = False
        self._slim_dense = False  # tf-slim's fully_connected is spelled (model_code_slim.py)
        self._slim_dense_made = 0  # ... and read as a Dense layer, so many times
        self._first_layer: Optional[cst.Call] = None
        self._first_cell: Optional[cst.Call] = None  # the first RNN cell made
        self._slots: Optional[cst.Call] = None  # the first optimizer step seen
        #: the optimizer steps seen in this graph: (call, the optimizer's API name or None)
        self._optimizer_steps: List[tuple] = []
        self._saver_line: Optional[cst.Call] = None  # the first Saver whose list is written
        self._class: Optional[ClassContext] = None  # the class whose build methods are read
        self._function: Optional[FunctionContext] = None  # the model function being read
        #: model functions defined and not called yet: name -> (out list, index, def)
        self._pending: Dict[str, tuple] = {}
        self._read_functions: Set[str] = set()
        self._inlining = 0  # how deep in methods read at their calls
        #: what the names of the block being read are bound to, at this point of it
        self._env: Dict[str, cst.BaseExpression] = {}
        self._pending_rename: Optional[tuple] = None  # (local, attribute) after this statement
        self._collection_lists: Set[str] = set()  # names read by collections=... only
        #: module names bound to an RNN cell -> what it is (model_code_rnn.Cell)
        self._cells: Dict[str, model_code_rnn.Cell] = {}
        self._rnn_cell_alias: Optional[str] = None  # (set: tf-keras' cells are imported)
        self._keras_cells: Set[str] = set()  # the names tf-keras' legacy cells are imported as

    # ------------------------------------------------------------------
    def visit_Module(self, node: cst.Module) -> bool:
        self._alias = tf_module_alias(node)
        if self._alias is None:
            return False
        spelled = {n.value for n in nodes_of(node, cst.Name)}
        if not spelled & self.SCREEN_NAMES - {"Variable"} \
                and not spelled & {"placeholder", "placeholder_with_default"}:
            return False  # (plain tf.Variable and no fed value: nothing to replay; no metadata)
        self._called_at_top_only = calls_at_top_only(node)
        self._fed_callees = self._functions_called_on_fed_values(node)
        # def weight_variable(shape): return tf.Variable(...): a call of it makes one
        self._factories: Dict[str, cst.Call] = {
            fn.name.value: made for fn in node.body if isinstance(fn, cst.FunctionDef)
            and (made := variable_factory(fn, self.tf_api_name)) is not None
            and self.tf_api_name(made.func) in ("Variable", "VariableV1")}
        if not spelled & self.SCREEN_NAMES - {"Variable"} and not any(
                self.tf_api_name(n.func) in ("Variable", "VariableV1")
                or isinstance(n.func, cst.Name) and n.func.value in self._factories
                for fn in node.body if isinstance(fn, cst.FunctionDef)
                and fn.name.value in self._fed_callees for n in nodes_of(fn, cst.Call)):
            # no variable store in use (plain tf.Variable only, none made by a model
            # function graph code calls): nothing to replay; the rule acts where its
            # screen lets it run, in reference mode as in the pipeline
            return False
        self._module = node
        # tf-keras' legacy cells, imported as tape form imports them: an RNN over one
        # is already migrated (a second run leaves it)
        self._keras_cells = {
            imp.asname.name.value for stmt in node.body
            if isinstance(stmt, cst.SimpleStatementLine)
            for imp in stmt.body if isinstance(imp, cst.Import)
            for imp in imp.names if imp.asname is not None
            and isinstance(imp.asname.name, cst.Name)
            and code_of(imp.name) == TF_KERAS_LEGACY_RNN_CELL}
        self._store = VariableStore()
        self._facts = ModelCodeFacts()
        # the names a name the rule gives could shadow: not those spelled only as an
        # attribute or a keyword (`tf.layers.dense`, `f(units=...)`), which bind nothing
        spelled_free = {id(a.attr) for a in nodes_of(node, cst.Attribute)} \
            | {id(a.keyword) for a in nodes_of(node, cst.Arg) if a.keyword is not None}
        self._taken = {n.value for n in nodes_of(node, cst.Name) if id(n) not in spelled_free}
        self._assignments = assignment_counts(node)
        self._bindings = module_bindings(node, self._assignments)
        self._strings = {name: value.evaluated_value for name, value in self._bindings.items()
                         if isinstance(value, cst.SimpleString)
                         and value.prefix.lower() in ("", "r", "u")}
        self._scope_vars: Dict[str, object] = {}  # `with ... as scope` -> the Scope
        self._claimed: Set[str] = set()  # model functions' locals made module names
        self._drivers: Set[str] = set()  # main(): read for the model functions it calls
        # layer names given more than once (an eval and a target network's `l1`)
        given = [self._const_str(a.value) for n in nodes_of(node, cst.Call)
                 if (self.tf_api_name(n.func) or "").startswith("layers.")
                 for a in n.args if a.keyword is not None and a.keyword.value == "name"]
        self._repeated_layer_names = {g for g in given if g is not None and given.count(g) > 1}
        # functions that make variables when they run, and those whose code is replayed
        # (a module none of whose calls makes one has none: no walk of each function)
        self._makers = {id(fn): fn.name.value for fn in nodes_of(node, cst.FunctionDef)
                        if self._makes_variables(fn)} \
            if any(map(self._is_maker_call, nodes_of(node, cst.Call))) else {}
        # the class of each maker that is a method, and the top-level statement where
        # each class constructed only there is first constructed: a class's methods
        # run once it is, not before
        self._maker_class = {id(fn): cls.name.value for cls in node.body
                             if isinstance(cls, cst.ClassDef)
                             for fn in cls.body.body if isinstance(fn, cst.FunctionDef)}
        self._replayed: Set[int] = set()
        #: class -> the entries its once-run methods make; the objects made at module
        #: level of such a class: (name, class, the store of the graph it is made in)
        self._class_entries: Dict[str, list] = {}
        # agent = Agent(...): (agent, Agent, the store then, the function it is made in)
        self._instances: List[Tuple[str, str, VariableStore, Optional[FunctionContext]]] = []
        self._first_call = first_top_level_calls(node)
        # a Saver keeps variables by their names: every tf.Variable gets its TF1 one
        self._slim_dense = "fully_connected" in spelled
        self._uses_saver = any(self._model_api(n) == "train.Saver"
                               for n in nodes_of(node, cst.Call))
        self._per_call = self._per_call_functions(node)  # (model_code_per_call.py)
        self._global_steps = [n for n in nodes_of(node, cst.Call) if (
            self.tf_api_name(n.func) or "") in GLOBAL_STEP_APIS]
        try:
            self._no_aliases(node)
            if spelled & RNN_WORDS:
                self._rnn_names_called(node)
            body = self._drop_unused_lists(self._block(list(node.body)))
            if self._cells:
                elsewhere = model_code_rnn.cells_used_elsewhere(self, node)
                if elsewhere is not None:
                    self._fail(elsewhere, f"the cell `{elsewhere.value}` used other than as "
                               "the cell of dynamic_rnn/static_rnn (called itself, in a "
                               "lambda, passed) is not converted")
        except _NotStatic:
            return False
        if self._changed:
            self._new_body = body
            self.shared[MODEL_CODE] = self._facts
            first = self._first_layer or self._first_cell
            if first is not None:
                count = sum(not e.info.get("cell") for e in self._facts.layers.values())
                made = [f"tf.layers -> {count} tf-keras layer object{'s' * (count != 1)} "
                        "created once"] if count else []
                if self._cells:
                    made.append(f"RNN cells -> tf-keras' legacy cells, {len(self._cells)} made once")
                self.report(TS126.code, first, f"{', '.join(made)}, variables named as in TF1; "
                            "the file needs tf-keras (pip install tf-keras)")
        return False

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if self._new_body is None:
            return updated_node
        if self._keras:
            AddImportsVisitor.add_needed_import(self.context, "tf_keras")
        if self._rnn_cell_alias is not None:
            AddImportsVisitor.add_needed_import(self.context, TF_KERAS_LEGACY_RNN_CELL,
                                                asname=self._rnn_cell_alias)
        if self._slim_dense_made and self._slim_dense_made == slim_references(self, original_node):
            # every tf-slim layer is a Dense layer now: the file no longer needs tf-slim
            remove_slim_imports(self.context, original_node)
            self.shared.setdefault("resolved", set()).add(TS118.code)
        return updated_node.with_changes(body=self._new_body)

    def _rnn_names_called(self, module: cst.Module) -> None:
        """Every TF1 RNN name is called (a cell class, an RNN): what the rule converts,
        or reports where it meets the call; a name used otherwise is reported here."""
        funcs = {id(n.func) for n in nodes_of(module, cst.Call)}
        attributes = list(nodes_of(module, cst.Attribute))
        inner = {id(a.value) for a in attributes}
        for a in attributes:
            if id(a) not in inner and id(a) not in funcs \
                    and rnn_api(self.tf_api_name(a)) is not None:
                self._fail(a, f"`{code_of(a)}` used other than called is not converted")

    def _no_aliases(self, module: cst.Module) -> None:
        """``dense = tf.layers.dense`` (or ``layers = tf.layers``): what is made
        through such a name is not seen (a collection would miss its variables)."""
        for assign in nodes_of(module, cst.Assign):
            if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name) \
                    or not isinstance(assign.value, (cst.Attribute, cst.Name)):
                continue
            api = self.tf_api_name(assign.value) or ""
            if api in ("layers", "get_variable", "Variable", "VariableV1") \
                    or api.startswith("layers.") and self._model_api(
                        cst.Call(func=assign.value)) is not None:
                name = assign.targets[0].target.value
                self._fail(assign, f"`{name} = {code_of(assign.value)}`: model code called "
                           f"through `{name}` is not converted (call `{code_of(assign.value)}` "
                           "itself)")

    def _fail(self, node: cst.CSTNode, message: str) -> None:
        self.report(TS125.code, node, message)
        raise _NotStatic()

    def note_saver_slots(self, node: cst.Call, slots: List[str]) -> None:
        """A Saver made after an optimizer step whose slots its TF1 list held (TS127)."""
        self.report(TS127.code, node, f"tf.train.Saver(): TF1's list also held the slots of "
                    f"{', '.join(dict.fromkeys(slots))}; the eager Saver made here saves the "
                    "model's variables and the global step (the optimizer makes its slots at "
                    "its first step)")

    # ------------------------------------------------------------------
    # statements
    # ------------------------------------------------------------------
    def _block(self, stmts: Sequence[cst.BaseStatement]) -> List[cst.BaseStatement]:
        out: List[cst.BaseStatement] = []
        for stmt in stmts:
            if isinstance(stmt, cst.With):
                scopes = self._scope_items(stmt)
                if scopes is not None:
                    out.extend(self._dissolve(stmt, scopes))
                    continue
                if self._has_model_calls(stmt.items):
                    self._fail(stmt, f"model code in the `with {code_of(stmt.items[0])}` header "
                               "is not converted")
                body = self._block(list(stmt.body.body))
                out.append(stmt.with_changes(body=stmt.body.with_changes(body=body)))
                continue
            if is_main_guard(stmt, without_else=True):
                body = self._block(list(stmt.body.body))
                out.append(stmt.with_changes(body=stmt.body.with_changes(body=body)))
                continue
            if isinstance(stmt, cst.ClassDef) and self._class is None:
                out.append(self._read_class(stmt))
                continue
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value in self._per_call \
                    and self._per_call[stmt.name.value].fn is stmt:
                out.append(self._per_call_def(self._per_call[stmt.name.value]))
                self._changed = True
                continue
            if isinstance(stmt, cst.FunctionDef) and self._class is None and self._function is None \
                    and stmt.name.value in self._called_at_top_only \
                    and not self._has_model_calls(list(stmt.body.body), slim=False) \
                    and any(isinstance(c.func, cst.Name) and c.func.value in self._pending
                            for c in nodes_of(stmt.body, cst.Call)):
                # main(), run once, calling a model function: read where it is called, for
                # the model functions it calls (what they make goes before main's call)
                self._drivers.add(stmt.name.value)
                self._pending[stmt.name.value] = (out, len(out), stmt)
                out.append(stmt)
                continue
            if isinstance(stmt, cst.FunctionDef) and self._class is None and self._function is None \
                    and self._has_model_calls(list(stmt.body.body), slim=False) \
                    and not self._left_as_written(stmt):
                # (a function of tf-slim layers only is the feeds rule's: make_template)
                # a model function: read where it is first called (TF1 makes its
                # variables then); the def keeps its place
                self._pending[stmt.name.value] = (out, len(out), stmt)
                out.append(stmt)
                continue
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                out.append(stmt)
                continue
            inlined = inline_call(stmt, self._class) if self._class is not None else None
            if inlined is not None:
                method, values, statements = inlined
                self._class.inlined.add(method)
                self._replayed.add(id(self._class.methods[method]))
                self.record_change(stmt, f"`self.{method}(...)` read where it is called: the "
                                   "variables and layers of this call are the object's, its "
                                   "computation the caller's")
                self._changed = True
                saved = dict(self._env)
                self._env.update(values)  # the parameters, bound to this call's arguments
                self._inlining += 1
                try:
                    body = self._block(statements)
                finally:
                    self._env = saved
                    self._inlining -= 1
                out.extend(inlined_body(stmt, values, body))
                continue
            if isinstance(stmt, cst.SimpleStatementLine) and self._graph_reset(stmt):
                out.append(stmt)
                continue
            if isinstance(stmt, cst.SimpleStatementLine):
                if self._class is None:
                    self._note_instance(stmt)
                called = method_call(stmt, self._class) if self._class is not None else None
                if called is not None and called not in self._class.bodies:
                    self._class.bodies[called] = self._method(called)
                stmt, made = self._per_call_made(stmt) if self._class is None \
                    and self._function is None else (stmt, [])
                made = made + self._model_functions_called(stmt)
                new = [self._renamed(s) for s in self._statement(stmt)]
                if made and new:  # the call's blank lines and comments go before what is made
                    made[0] = made[0].with_changes(
                        leading_lines=[*new[0].leading_lines, *made[0].leading_lines])
                    new[0] = new[0].with_changes(leading_lines=[])
                out.extend(made + new)
                self._bind_env(stmt)
                if self._pending_rename is not None:
                    local, handle = self._pending_rename
                    self._renames()[local] = handle
                    self._pending_rename = None
                continue
            if self._has_model_calls(stmt):
                kind = type(stmt).__name__.lower()
                self._fail(stmt, f"model code inside a `{kind}` block: how many variables it "
                           "makes is known only when it runs")
            out.append(self._renamed(stmt))
            for name in names_of(stmt)[1]:
                self._env.pop(name, None)
        return out

    # -- the block being read: its bindings and model calls ---------------
    def _renames(self) -> Dict[str, str]:
        """Locals of the method or model function being read -> what now holds them."""
        if self._function is not None:
            return self._function.renames
        return self._class.renames if self._class is not None else {}

    def _renamed(self, stmt: cst.CSTNode):
        """``stmt`` reading the attributes or module names that now hold renamed locals."""
        renames = self._renames()
        if not renames:
            return stmt
        return stmt.visit(LocalRenamer(renames))

    def _bind_env(self, stmt: cst.SimpleStatementLine) -> None:
        """Note what the statement binds (flow-sensitive: the value at this point)."""
        stores = names_of(stmt)[1]
        for name in stores:
            self._env.pop(name, None)
            self._renames().pop(name, None)
        if len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Assign) \
                or len(stmt.body[0].targets) != 1:
            return
        target, value = stmt.body[0].targets[0].target, stmt.body[0].value
        if isinstance(target, cst.Name):
            self._env[target.value] = value
        elif isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) \
                and len(target.elements) == len(value.elements):
            for t, v in zip(target.elements, value.elements):
                if isinstance(t.value, cst.Name) and not isinstance(v, cst.StarredElement):
                    self._env[t.value.value] = v.value

    def bound(self, expr: Optional[cst.BaseExpression]) -> Optional[cst.BaseExpression]:
        """What a name is bound to here (this block first, then the module), else itself."""
        if isinstance(expr, cst.Name):
            if expr.value in self._env:
                return self._env[expr.value]
            if expr.value in self._bindings and (self._class is None or expr.value not in
                                                 self._class.local_counts) and (
                    self._function is None
                    or expr.value not in self._function.params | self._function.locals):
                return self._bindings[expr.value]
        return expr

    def _left_as_written(self, fn: cst.FunctionDef) -> bool:
        """A function making plain tf.Variables that is not a model function to read:
        ``def weight(shape): return tf.Variable(...)``, each call of which makes a
        variable where it is called, in TF2 as in TF1; or a program, ``main()``
        opening the session that runs the graph it builds (the feeds rule's)."""
        made = [n for n in nodes(fn.body) if _is_call(n) and self._model_api(n, False)]
        if not made or any(self._model_api(c, False) not in ("Variable", "VariableV1")
                           for c in made):
            return False
        returned = {id(n.value) for n in nodes(fn.body) if isinstance(n, cst.Return)}
        return all(id(c) in returned for c in made) or fn.name.value not in self._fed_callees

    def _functions_called_on_fed_values(self, module: cst.Module) -> Set[str]:
        """The functions module code calls on a value computed from a placeholder
        (``y_pred = build_net(x)``): graph code the feeds rule runs at each step,
        whose plain tf.Variables are then made before the call, once."""
        fed: Set[str] = set()
        self._fed_names = fed  # (model_code_per_call.py: arguments of no fed value)
        out: Set[str] = set()
        for stmt in run_once_statements(module):  # (main()'s too, where it is called)
            reads, writes = names_of(stmt)
            calls = [n for n in nodes(stmt) if _is_call(n)]
            if any(self.tf_api_name(c.func) in PLACEHOLDERS for c in calls) or reads & fed:
                fed |= writes
                out |= {c.func.value for c in calls if isinstance(c.func, cst.Name)
                        and any(names_of(a)[0] & fed for a in c.args)}
        return out

    def _has_model_calls(self, node, slim: bool = True) -> bool:
        """``slim``: tf-slim's fully_connected counts (model_code_slim.py)."""
        items = node if isinstance(node, (list, tuple)) else [node]
        for item in items:
            for n in nodes(item):
                if _is_definition(n):
                    continue
                if _is_call(n) and self._model_api(n, slim) is not None:
                    return True
        return False

    def _model_api(self, call: cst.Call, slim: bool = True) -> Optional[str]:
        api = self.tf_api_name(call.func)
        if api is None and isinstance(call.func, cst.Name) \
                and call.func.value in getattr(self, "_factories", {}):
            return "Variable"  # weight_variable([5, 5, 1, 32]): a new variable
        if api is None:
            if slim and self._function is None and self._slim_dense and is_slim_dense(self, call):
                return "layers.fully_connected"  # read as tf.layers.dense (model_code_slim.py)
            return None
        if api in ("get_variable", "get_collection", "trainable_variables", "global_variables",
                   "variable_scope", "get_variable_scope", "Variable", "VariableV1",
                   "train.Saver", *GLOBAL_STEP_MAKERS):
            return api
        if api in SUMMARY_OPS and self._store.scope.name_scope:
            return api  # its tag carries the name scope
        if api.startswith("layers.") and api[len("layers."):] in LAYERS:
            return api
        if api.startswith("layers."):
            return api
        kind = rnn_api(api)
        if kind is not None:
            return None if kind.startswith("rnn.") and self._keras_cells \
                and self._over_keras_cell(call) else api
        return None

    def rnn_kind(self, call: cst.Call) -> Optional[str]:
        """What an RNN call is to :mod:`~tapeshift.migrate.rules.model_code_rnn` (None: no RNN)."""
        return rnn_api(self._model_api(call))

    def _over_keras_cell(self, call: cst.Call) -> bool:
        """An RNN call over a cell made from tf-keras' legacy cells (the tape form's)."""
        cell = self.bound(call.args[0].value) if call.args and call.args[0].keyword is None \
            else None
        return isinstance(cell, cst.Call) and isinstance(cell.func, cst.Attribute) \
            and isinstance(cell.func.value, cst.Name) and cell.func.value.value in self._keras_cells

    def rewrite_rnn(self, rewriter: CallRewriter, kind: str, original: cst.Call, call: cst.Call,
                    top: bool) -> cst.BaseExpression:
        return model_code_rnn.rewrite(rewriter, kind, original, call, top)

    def rnn_cell_alias(self) -> str:
        """The module name tf-keras' legacy RNN cells are imported as (``tf_rnn_cell``)."""
        if self._rnn_cell_alias is None:
            self._rnn_cell_alias = fresh_name("tf_rnn_cell", self._taken)
            self._taken.add(self._rnn_cell_alias)
        return self._rnn_cell_alias

    # -- one statement ------------------------------------------------------
    def _statement(self, stmt: cst.SimpleStatementLine) -> List[cst.BaseStatement]:
        if self._reuse_statement(stmt):
            self._changed = True
            self.record_change(stmt, "`reuse_variables()`: the variables named after it are the "
                               "ones made before")
            return []
        if not self._has_model_calls(stmt):
            self._note_optimizer_steps(stmt)
            return [stmt]
        if self._update_ops_binding(stmt):
            self._changed = True
            return []
        target = single_target(stmt)
        rewriter = CallRewriter(self, target)
        new = stmt.visit(rewriter)
        self._note_optimizer_steps(stmt)
        if not rewriter.changed:
            return [stmt]
        self._changed = True
        if rewriter.target_handle is not None and rewriter.target_handle != target:
            # a local made an attribute (in a class): the statement binds the attribute
            small = new.body[0]
            new = new.with_changes(body=[small.with_changes(targets=[small.targets[0].with_changes(
                target=cst.parse_expression(rewriter.target_handle))])])
            self._pending_rename = (target, rewriter.target_handle)
        before = list(rewriter.before)
        if self._function is not None:  # made at module level, before the first call
            small = new.body[0] if len(new.body) == 1 else None
            if target is not None and "." not in target and isinstance(small, cst.Assign) \
                    and isinstance(small.value, cst.Name) and before and \
                    code_of(before[-1].body[0].targets[0].target) == small.value.value:
                # `w = siamese_w`: the function reads the module name itself; the
                # statement's comments go with what it made
                before[-1] = before[-1].with_changes(leading_lines=[
                    line for line in stmt.leading_lines if line.comment is not None],
                    trailing_whitespace=stmt.trailing_whitespace)
                self._function.hoisted.extend(before)
                self._pending_rename = (target, small.value.value)
                return []
            self._function.hoisted.extend(before)
            return [new]
        if before:
            before[0] = before[0].with_changes(leading_lines=stmt.leading_lines)
            new = new.with_changes(leading_lines=[])
        return [*before, new]

    def _note_optimizer_steps(self, stmt: cst.CSTNode) -> None:
        """An optimizer step built here makes slot variables (Adam's moments) that
        TF1's GLOBAL_VARIABLES collection lists from then on; TF2 keeps them in
        the optimizer."""
        for n in nodes(stmt):
            if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) \
                    and n.func.attr.value in ("minimize", "apply_gradients"):
                receiver = self.bound(n.func.value)
                api = self.tf_api_name(receiver.func) if isinstance(receiver, cst.Call) else None
                if self._slots is None and api not in _NO_SLOTS:
                    self._slots = n
                self._optimizer_steps.append((n, api))

    # -- collection keys, names of what the rule makes ---------------------
    def _collection_key(self, call: cst.Call) -> Optional[str]:
        api = self.tf_api_name(call.func)
        if api != "get_collection" or not call.args:
            return None
        key = call.args[0].value
        return self.collection_key(key)

    def collection_key(self, key: cst.BaseExpression) -> Optional[str]:
        """"trainable", "global", "update", "custom:<name>" for a string key; else None."""
        key_api = self.tf_api_name(key)
        if key_api in _COLLECTION_KEYS:
            return _COLLECTION_KEYS[key_api]
        literal = self._const_str(key)
        if literal is None:
            return None
        return _COLLECTION_KEYS.get(literal, f"custom:{literal}")

    def function_handle(self, local: str) -> str:
        """The module name for what a model function's ``local`` holds: ``local``
        itself where the module spells it nowhere else and the function binds it
        once (its reads then read the module name), else a fresh one."""
        fn = self._function.node
        inside = {id(n) for n in nodes(fn)}
        own = self._function.local_counts.get(local) == 1 and local not in self._claimed \
            and not any(n.value == local and id(n) not in inside
                        for n in nodes_of(self._module, cst.Name))
        if not own:
            return self.handle(local)
        self._claimed.add(local)
        return local

    def handle(self, base: str, local: Optional[str] = None, tf1_name: str = "") -> str:
        """A fresh name for a variable or layer made by the rule (in a class, an
        attribute of ``self``)."""
        if self._class is not None:
            # what a method read at each call makes: named by its scope too
            # (eval_net_l1, target_net_l1), as the calls make one each
            preferred = ("_".join(tf1_name.split("/")[-2:]),) if self._inlining and tf1_name \
                else (base, f"{base}_layer")
            return self._class.attribute(local, tf1_name or base,
                                         () if local is not None else preferred)
        if self._function is not None and tf1_name:
            base = tf1_name  # a module name for what a function makes: its TF1 name
        base = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in base).strip("_") or "var"
        if base[0].isdigit():
            base = "v" + base
        name = fresh_name(base, self._taken)
        self._taken.add(name)
        return name
