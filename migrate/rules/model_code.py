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
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set

import libcst as cst
import libcst.matchers as m
from libcst.codemod.visitors import AddImportsVisitor

from tapeshift.migrate.engine.findings import COMPAT_SAFETY, CodeInfo, Severity
from tapeshift.migrate.engine.registry import register_rule
from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.dataflow import names_of
from tapeshift.migrate.engine.toolkit.tf_names import all_names, fresh_name, tf_module_alias
from tapeshift.migrate.engine.toolkit.variable_store import (
    AUTO, MODEL_CODE, REUSE, FunctionFacts, ModelCodeFacts, StoreError, VariableStore)
from tapeshift.migrate.engine.toolkit.walk import instance_test, nodes, nodes_of
from tapeshift.migrate.rules.model_code_calls import SUMMARY_OPS
from tapeshift.migrate.rules.model_code_calls import GLOBAL_STEP_MAKERS
from tapeshift.migrate.rules.model_code_order import (
    assignment_counts, calls_at_top_only, first_top_level_calls, is_main_guard, module_bindings,
)
from tapeshift.migrate.rules.savers import TS127
from tapeshift.migrate.rules.model_code_calls import (
    CallRewriter, bind, is_none, is_true, single_target, assigned_names)
from tapeshift.migrate.rules.contrib_slim import is_slim_call
from tapeshift.migrate.rules.model_code_classes import (
    ClassContext, FunctionContext, LocalRenamer, class_context, inline_call, inlined_body,
    method_call)
from tapeshift.migrate.rules.model_code_layers import LAYERS

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
         "objects created once and called where the functions were.",
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


_VARIABLE_SCOPE = ("name_or_scope", "default_name", "values", "initializer", "regularizer",
                   "caching_device", "partitioner", "custom_getter", "reuse", "dtype",
                   "use_resource", "constraint", "auxiliary_name_scope")
#: calls that make or read TF1's global step
GLOBAL_STEP_APIS = frozenset({*GLOBAL_STEP_MAKERS, "train.get_global_step"})
# per-node tests of the walks below, answered once per type (LibCST's classes are ABCs)
_is_call = instance_test(cst.Call)
_is_definition = instance_test((cst.FunctionDef, cst.ClassDef, cst.Lambda))
_COLLECTION_KEYS = {"GraphKeys.TRAINABLE_VARIABLES": "trainable",
                    "GraphKeys.GLOBAL_VARIABLES": "global", "GraphKeys.UPDATE_OPS": "update",
                    "trainable_variables": "trainable", "variables": "global",
                    "update_ops": "update"}
@register_rule
class ModelCode(TapeshiftCodemod):
    DESCRIPTION = "Variable scopes, get_variable and tf.layers -> TF2 variables and layers made once."
    RULE = "model-code"
    #: before the feeds rule, which then sees variables and layer objects made once
    PHASE = "pre"
    ORDER = 25
    CODES = (TS125, TS126)
    SCREEN_NAMES = frozenset({"variable_scope", "get_variable", "layers", "get_collection",
                              "trainable_variables", "global_variables", "name_scope", "Saver"})

    def __init__(self, context) -> None:
        super().__init__(context)
        self._new_body: Optional[List[cst.BaseStatement]] = None
        self._changed = False
        self._keras = False
        self._first_layer: Optional[cst.Call] = None
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

    # ------------------------------------------------------------------
    def visit_Module(self, node: cst.Module) -> bool:
        self._alias = tf_module_alias(node)
        if self._alias is None:
            return False
        if not {n.value for n in nodes_of(node, cst.Name)} & self.SCREEN_NAMES:
            # no variable store in use (plain tf.Variable only): nothing to replay; the
            # rule acts where its screen lets it run, in reference mode as in the pipeline
            return False
        self._module = node
        self._store = VariableStore()
        self._facts = ModelCodeFacts()
        self._taken = set(all_names(node))
        self._assignments = assignment_counts(node)
        self._bindings = module_bindings(node, self._assignments)
        self._strings = {name: value.evaluated_value for name, value in self._bindings.items()
                         if isinstance(value, cst.SimpleString)
                         and value.prefix.lower() in ("", "r", "u")}
        self._scope_vars: Dict[str, object] = {}  # `with ... as scope` -> the Scope
        # layer names given more than once (an eval and a target network's `l1`)
        given = [self._const_str(a.value) for n in nodes_of(node, cst.Call)
                 if (self.tf_api_name(n.func) or "").startswith("layers.")
                 for a in n.args if a.keyword is not None and a.keyword.value == "name"]
        self._repeated_layer_names = {g for g in given if g is not None and given.count(g) > 1}
        # functions that make variables when they run, and those whose code is replayed
        self._makers = {id(fn): fn.name.value for fn in nodes_of(node, cst.FunctionDef)
                        if self._makes_variables(fn)}
        # the class of each maker that is a method, and the top-level statement where
        # each class constructed only there is first constructed: a class's methods
        # run once it is, not before
        self._maker_class = {id(fn): cls.name.value for cls in node.body
                             if isinstance(cls, cst.ClassDef)
                             for fn in cls.body.body if isinstance(fn, cst.FunctionDef)}
        self._replayed: Set[int] = set()
        self._called_at_top_only = calls_at_top_only(node)
        self._first_call = first_top_level_calls(node)
        # a Saver keeps variables by their names: every tf.Variable gets its TF1 one
        self._uses_saver = any(self._model_api(n) == "train.Saver"
                               for n in nodes_of(node, cst.Call))
        self._global_steps = [n for n in nodes_of(node, cst.Call) if (
            self.tf_api_name(n.func) or "") in GLOBAL_STEP_APIS]
        try:
            body = self._drop_unused_lists(self._block(list(node.body)))
        except _NotStatic:
            return False
        if self._changed:
            self._new_body = body
            self.shared[MODEL_CODE] = self._facts
            if self._first_layer is not None:
                count = len(self._facts.layers)
                self.report(TS126.code, self._first_layer, f"tf.layers -> {count} tf-keras layer "
                            f"object{'s' * (count != 1)} created once, variables named as in TF1; "
                            "the file needs tf-keras (pip install tf-keras)")
        return False

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if self._new_body is None:
            return updated_node
        if self._keras:
            AddImportsVisitor.add_needed_import(self.context, "tf_keras")
        return updated_node.with_changes(body=self._new_body)

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
            if isinstance(stmt, cst.If) and is_main_guard(stmt) and stmt.orelse is None:
                body = self._block(list(stmt.body.body))
                out.append(stmt.with_changes(body=stmt.body.with_changes(body=body)))
                continue
            if isinstance(stmt, cst.ClassDef) and self._class is None:
                out.append(self._read_class(stmt))
                continue
            if isinstance(stmt, cst.FunctionDef) and self._class is None and self._function is None \
                    and self._has_model_calls(list(stmt.body.body)):
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
                called = method_call(stmt, self._class) if self._class is not None else None
                if called is not None and called not in self._class.bodies:
                    self._class.bodies[called] = self._method(called)
                made = self._model_functions_called(stmt)
                new = [self._renamed(s) for s in self._statement(stmt)]
                if made and new:  # the call's blank lines and comments go before what is made
                    made[0] = made[0].with_changes(leading_lines=new[0].leading_lines)
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

    # -- model functions -----------------------------------------------------
    def _model_functions_called(self, stmt: cst.CSTNode) -> List[cst.BaseStatement]:
        """The statement calls a model function: at its first call its code is read
        (its variables and layers made here, once, under their TF1 names; its def
        rewritten in place to use them); the statements that make them come back."""
        if self._function is not None or self._class is not None:
            return []
        made: List[cst.BaseStatement] = []
        for n in nodes(stmt):
            if not (isinstance(n, cst.Call) and isinstance(n.func, cst.Name)):
                continue
            name = n.func.value
            if name in self._read_functions and self._store.scope.name:
                self._fail(n, f"`{name}` is called in variable scope `{self._store.scope.name}`: "
                           "its variables would be others than at its first call")
            made_before = self._facts.functions.get(name)
            if made_before is not None and any(not e.shared for e in made_before.made):
                self._fail(n, f"`{name}` is called again: TF1 makes new variables at each call "
                           "(or raises, a name taken), the code read at its first call shares "
                           "one set (AUTO_REUSE or a reuse argument would share them in TF1 too)")
            if name not in self._pending:
                continue
            if self._store.scope.name:
                self._fail(n, f"model function `{name}` first called in variable scope "
                           f"`{self._store.scope.name}` is not converted")
            out, index, fn = self._pending.pop(name)
            self._read_functions.add(name)
            ctx = FunctionContext.of(fn)
            self._function = ctx
            saved_env = self._env
            self._env = {}
            self._replayed.add(id(fn))  # (what it makes is in the store as it is read)
            store, first = self._store, self._store.next_order
            try:
                body = self._block(list(fn.body.body))
            finally:
                self._function = None
                self._env = saved_env
            if self._store is not store:  # it reset the graph: what it made is all there is
                store, first = self._store, 0
            self._facts.functions[name] = FunctionFacts(
                [e for e in store.entries.values() if e.order >= first],
                alone=first == 0)
            out[index] = fn.with_changes(body=fn.body.with_changes(body=body))
            for made_stmt in ctx.hoisted:
                reads = names_of(made_stmt)[0] & (ctx.params | ctx.locals)
                if reads:
                    self._fail(fn, f"model function `{name}` makes a variable or layer from "
                               f"`{sorted(reads)[0]}`, a value of the call: not converted")
            self.record_change(n, f"`{name}`'s variables and layers are made once, before its "
                               "first call; the function computes with them")
            made.extend(ctx.hoisted)
        return made

    # -- classes -------------------------------------------------------------
    def _read_class(self, node: cst.ClassDef) -> cst.ClassDef:
        """A class whose ``__init__`` (and the methods only it calls) makes variables:
        read those methods in the order ``__init__`` runs them."""
        if not any(self._has_model_calls(list(fn.body.body)) for fn in node.body.body
                   if isinstance(fn, cst.FunctionDef)):
            return node
        ctx = class_context(node)
        others = [] if ctx is None else [name for name, fn in ctx.methods.items()
                                         if name not in ctx.once
                                         and self._has_model_calls(list(fn.body.body))]
        if ctx is None or others:
            where = f"`{node.name.value}.{others[0]}`" if others else f"class `{node.name.value}`"
            self._fail(node, f"model code in {where}, which may run more than once (only "
                       "`__init__` and the methods only it calls are read)")
        self._class = ctx
        try:
            ctx.bodies["__init__"] = self._method("__init__")
        finally:
            self._class = None
        if not self._changed:
            return node
        body = [fn.with_changes(body=fn.body.with_changes(body=ctx.bodies[fn.name.value]))
                if isinstance(fn, cst.FunctionDef) and fn.name.value in ctx.bodies else fn
                for fn in node.body.body]
        # a method read at each of its calls is gone if nothing else calls it
        used = {n.attr.value for fn in body if isinstance(fn, cst.FunctionDef)
                for n in nodes(fn.body) if isinstance(n, cst.Attribute)
                and isinstance(n.value, cst.Name) and n.value.value == "self"}
        body = [fn for fn in body if not (isinstance(fn, cst.FunctionDef)
                                          and fn.name.value in ctx.inlined - used)]
        return node.with_changes(body=node.body.with_changes(body=body))

    def _makes_variables(self, fn: cst.FunctionDef) -> bool:
        for n in nodes(fn.body):
            if _is_call(n):
                api = self.tf_api_name(n.func) or ""
                if api in ("Variable", "VariableV1", "get_variable") or api.startswith("layers.") \
                        or is_slim_call(self, n):
                    return True
        return False

    def hidden_makers(self) -> List[str]:
        """Functions that make variables where they run, which the store does not see
        (a model function not read yet, whose every call is a statement the rule reads
        later, has not run yet)."""
        return [name for key, name in self._makers.items() if key not in self._replayed
                and not (name in self._pending and name in self._called_at_top_only)
                and not self._constructed_later(self._maker_class.get(key))]

    def _constructed_later(self, owner: Optional[str]) -> bool:
        """The methods of class ``owner`` have not run yet where the class being read
        runs: both are constructed only in top-level statements, ``owner`` first after."""
        if owner is None or self._class is None:
            return False
        current = self._class.node.name.value
        return owner != current and {owner, current} <= self._called_at_top_only \
            and self._first_call.get(owner, -1) > self._first_call.get(current, len(self._first_call))

    def _method(self, name: str) -> List[cst.BaseStatement]:
        ctx = self._class
        self._replayed.add(id(ctx.methods[name]))
        saved = (ctx.renames, self._env, self._collection_lists)
        ctx.renames, self._env, self._collection_lists = {}, {}, set()
        try:
            return self._drop_unused_lists(self._block(list(ctx.methods[name].body.body)))
        finally:
            ctx.renames, self._env, self._collection_lists = saved

    def _drop_unused_lists(self, body: List[cst.BaseStatement]) -> List[cst.BaseStatement]:
        """Lists of collection names that only ``collections=`` read (``c_names =
        ['eval_net_params', tf.GraphKeys.GLOBAL_VARIABLES]``) mean nothing in TF2
        once the collections are lists: their bindings go."""
        loads: Set[str] = set()
        for stmt in body:
            loads |= names_of(stmt)[0]
        unused = self._collection_lists - loads
        if not unused:
            return body
        out: List[cst.BaseStatement] = []
        for stmt in body:
            small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) \
                and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign) \
                and len(stmt.body[0].targets) == 1 else None
            target = small.targets[0].target if small is not None else None
            if isinstance(target, cst.Name) and target.value in unused:
                self.record_change(stmt, f"`{target.value}`, the collections of "
                                   "get_variable(collections=...), removed")
                continue
            if isinstance(target, cst.Tuple) and isinstance(small.value, cst.Tuple) \
                    and len(target.elements) == len(small.value.elements):
                pairs = [(t, v) for t, v in zip(target.elements, small.value.elements)
                         if not (isinstance(t.value, cst.Name) and t.value.value in unused)]
                if len(pairs) < len(target.elements):
                    self.record_change(stmt, "the collections of get_variable(collections=...) "
                                       "removed from the assignment")
                    stmt = _without_pairs(stmt, small, pairs)
            out.append(stmt)
        return out

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

    def _has_model_calls(self, node) -> bool:
        items = node if isinstance(node, (list, tuple)) else [node]
        for item in items:
            for n in nodes(item):
                if _is_definition(n):
                    continue
                if _is_call(n) and self._model_api(n) is not None:
                    return True
        return False

    def _model_api(self, call: cst.Call) -> Optional[str]:
        api = self.tf_api_name(call.func)
        if api is None:
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
        return None

    # -- scope blocks ------------------------------------------------------
    def _scope_items(self, stmt: cst.With):
        """The scope managers of a ``with`` whose every item is one, else None."""
        out = []
        for item in stmt.items:
            call = item.item
            if not isinstance(call, cst.Call):
                return None
            api = self.tf_api_name(call.func)
            if api in ("variable_scope", "name_scope", "name_scope_v1"):
                out.append((api, call, item.asname))
            elif api == "control_dependencies" and self._update_ops_arg(call):
                out.append((api, call, item.asname))
            else:
                return None
        return out

    def _dissolve(self, stmt: cst.With, scopes) -> List[cst.BaseStatement]:
        opened = 0
        guarded = False
        for api, call, asname in scopes:
            if api == "control_dependencies":
                guarded = True
                continue
            scope = self._open(api, call)
            opened += 1
            if asname is not None:
                if not isinstance(asname.name, cst.Name):
                    self._fail(asname, "`with tf.variable_scope(...) as <target>` binds a name only")
                self._scope_vars[asname.name.value] = scope
        body = self._block(list(stmt.body.body))
        for _ in range(opened):
            self._store.close()
        if guarded:
            for inner in body:
                for name in assigned_names(inner):
                    self._facts.update_guarded.add(name)
        self._changed = True
        header = " ".join(code_of(item).rstrip(", ") for item in stmt.items)
        self.record_change(stmt, f"`with {header}:` dissolved" + (
            "; the variables made in it keep its name" if opened else
            "; Keras batch normalization updates its statistics at each training call"))
        if body:
            # the with's blank lines and comments, and its header's comment, go
            # before what was its first statement
            first = body[0]
            kept = list(stmt.leading_lines)
            header = stmt.body.header if isinstance(stmt.body, cst.IndentedBlock) else None
            if header is not None and header.comment is not None:
                kept.append(cst.EmptyLine(indent=True, comment=header.comment))
            kept += [ln for ln in first.leading_lines if ln.comment is not None]
            body[0] = first.with_changes(leading_lines=kept)
        return body

    def _open(self, api: str, call: cst.Call):
        if api in ("name_scope", "name_scope_v1"):
            args = bind(call, ("name", "default_name", "values"))
            name = self._const_str(args.get("name"))
            if name is None:
                self._fail(call, f"`{code_of(call)}`: a name scope named by a computed value")
            return self._store.open_name_scope(name)
        args = bind(call, _VARIABLE_SCOPE)
        for key in ("regularizer", "caching_device", "partitioner", "custom_getter"):
            if key in args and not is_none(args[key]):
                self._fail(call, f"tf.variable_scope({key}=...) is not converted")
        if "auxiliary_name_scope" in args and not is_true(args["auxiliary_name_scope"]):
            self._fail(call, "tf.variable_scope(auxiliary_name_scope=False) is not converted")
        reuse = self._reuse(args.get("reuse"), call)
        initializer = args.get("initializer")
        dtype = args.get("dtype")
        target = args.get("name_or_scope")
        try:
            if isinstance(target, cst.Name) and target.value in self._scope_vars:
                return self._store.reenter(self._scope_vars[target.value], reuse)
            name = None if target is None or is_none(target) else self._const_str(target)
            if name is None and target is not None and not is_none(target):
                self._fail(call, f"`{code_of(call)}`: a variable scope named by a computed value")
            default = self._const_str(args["default_name"]) if "default_name" in args else None
            scope = self._store.open_variable_scope(
                name, default, reuse,
                code_of(initializer) if initializer is not None and not is_none(initializer)
                else None,
                code_of(dtype) if dtype is not None and not is_none(dtype) else None)
            if scope.initializer is not None and initializer is not None:
                scope.initializer_node = initializer
            return scope
        except StoreError as exc:
            self._fail(call, str(exc))

    def _reuse(self, expr: Optional[cst.BaseExpression], call: cst.CSTNode) -> Optional[str]:
        if expr is None or is_none(expr) or (isinstance(expr, cst.Name) and expr.value == "False"):
            return None
        if self._function is not None and isinstance(expr, cst.Name) \
                and expr.value in self._function.params:
            # reuse=reuse of a model function, read at its first call: TF1 created
            # the variables then and reused them at the later calls
            return AUTO
        bound = self.bound(expr)
        if bound is not expr and isinstance(bound, cst.Name) and bound.value in ("True", "False", "None"):
            return self._reuse(bound, call)
        if is_true(expr):
            return REUSE
        if self.tf_api_name(expr) == "AUTO_REUSE" or self.tf_api_name(bound) == "AUTO_REUSE":
            return AUTO
        self._fail(call, f"reuse={code_of(expr)}: whether variables are reused is known only "
                   "when the program runs")
        return None

    def _update_ops_arg(self, call: cst.Call) -> bool:
        if len(call.args) != 1:
            return False
        value = self.bound(call.args[0].value)
        return isinstance(value, cst.Call) and self._collection_key(value) == "update"

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
            self._function.hoisted.extend(before)
            small = new.body[0] if len(new.body) == 1 else None
            if target is not None and "." not in target and isinstance(small, cst.Assign) \
                    and isinstance(small.value, cst.Name) and before and \
                    code_of(before[-1].body[0].targets[0].target) == small.value.value:
                # `w = siamese_w`: the function reads the module name itself
                self._pending_rename = (target, small.value.value)
                return []
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
                if self._slots is None:
                    self._slots = n
                receiver = self.bound(n.func.value)
                api = self.tf_api_name(receiver.func) if isinstance(receiver, cst.Call) else None
                self._optimizer_steps.append((n, api))

    def _graph_reset(self, stmt: cst.SimpleStatementLine) -> bool:
        """``tf.reset_default_graph()``: TF1 starts a new graph, whose variables are
        named afresh (``dense`` again); eager code has no graph, the names live on
        in the variables made after it. Read where the rule reads code once: module
        level, the ``__main__`` guard, a model function at its first call."""
        if not (len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)
                and isinstance(stmt.body[0].value, cst.Call)
                and self.tf_api_name(stmt.body[0].value.func) == "reset_default_graph"):
            return False
        if self._class is not None:
            self._fail(stmt, "tf.reset_default_graph() in a method: which names the variables "
                       "get depends on how often it runs")
        if self._global_steps:
            self._fail(stmt, "tf.reset_default_graph() in a file with a global step: eager "
                       "code has one global step (get_or_create_global_step hands back the "
                       "first graph's)")
        self._store = VariableStore()
        self._scope_vars = {}
        self._slots = None
        self._optimizer_steps = []
        self.record_change(stmt, "tf.reset_default_graph(): the variables made after it are "
                           "named as in a new graph")
        return True

    def _reuse_statement(self, stmt: cst.SimpleStatementLine) -> bool:
        if len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Expr):
            return False
        call = stmt.body[0].value
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                and call.func.attr.value == "reuse_variables" and not call.args):
            return False
        owner = call.func.value
        if isinstance(owner, cst.Call) and self.tf_api_name(owner.func) == "get_variable_scope":
            self._store.reuse_variables()
            return True
        if isinstance(owner, cst.Name) and owner.value in self._scope_vars:
            if self._scope_vars[owner.value] is not self._store.scope:
                self._fail(stmt, f"`{code_of(call)}` outside its own scope is not converted")
            self._store.reuse_variables()
            return True
        return False

    def _update_ops_binding(self, stmt: cst.SimpleStatementLine) -> bool:
        """``update_ops = tf.get_collection(UPDATE_OPS)``, used only by the
        ``control_dependencies`` blocks this rule dissolves."""
        target = single_target(stmt)
        value = stmt.body[0].value if target is not None else None
        if not (isinstance(value, cst.Call) and self._collection_key(value) == "update"):
            return False
        uses = [n for n in nodes(self._module) if isinstance(n, cst.Name) and n.value == target]
        deps = [c for c in nodes(self._module) if isinstance(c, cst.Call)
                and self.tf_api_name(c.func) == "control_dependencies" and len(c.args) == 1
                and isinstance(c.args[0].value, cst.Name) and c.args[0].value.value == target]
        if len(uses) != len(deps) + 1:
            self._fail(stmt, "the UPDATE_OPS collection used other than by "
                       "`with tf.control_dependencies(...)` is not converted")
        self.record_change(stmt, "UPDATE_OPS: Keras batch normalization updates its moving "
                           "statistics at each call with training=True")
        return True

    # -- names ------------------------------------------------------------
    def _const_str(self, expr: Optional[cst.BaseExpression]) -> Optional[str]:
        if isinstance(expr, cst.Name) and expr.value in self._env:
            expr = self._env[expr.value]
        if isinstance(expr, cst.SimpleString) and expr.prefix.lower() in ("", "r", "u"):
            return expr.evaluated_value
        if isinstance(expr, cst.Name) and expr.value in self._strings and (
                self._class is None or expr.value not in self._class.local_counts) and (
                self._function is None
                or expr.value not in self._function.params | self._function.locals):
            return self._strings[expr.value]
        if isinstance(expr, cst.Attribute) and expr.attr.value == "name" \
                and isinstance(expr.value, cst.Name) and expr.value.value in self._scope_vars:
            return self._scope_vars[expr.value.value].name
        if self._class is not None and isinstance(expr, cst.Attribute) \
                and m.matches(expr.value, m.Name("self")) \
                and expr.attr.value in self._object_names():
            # `tf.variable_scope(self.name)`: one name per object, fixed by its
            # constructor's argument; the names under it are written as f-strings
            return f"{{self.{expr.attr.value}}}"
        return None

    def _object_names(self) -> Set[str]:
        """Attributes of the class being read that ``__init__`` binds once to one of its
        parameters and nothing binds again (``self.name = name``)."""
        ctx = self._class
        if ctx is None or "__init__" not in ctx.methods:
            return set()
        init = ctx.methods["__init__"]
        params = {p.name.value for p in init.params.params[1:]}
        bound: Dict[str, int] = {}
        names: Set[str] = set()
        for n in nodes(ctx.node):
            if isinstance(n, cst.AssignTarget) and m.matches(
                    n.target, m.Attribute(value=m.Name("self"))):
                bound[n.target.attr.value] = bound.get(n.target.attr.value, 0) + 1
        for stmt in init.body.body:
            if m.matches(stmt, m.SimpleStatementLine(body=[m.Assign(
                    targets=[m.AssignTarget(target=m.Attribute(value=m.Name("self")))],
                    value=m.Name())])):
                assign = stmt.body[0]
                if assign.value.value in params:
                    names.add(assign.targets[0].target.attr.value)
        return {a for a in names if bound.get(a) == 1}

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


def _without_pairs(stmt: cst.SimpleStatementLine, small: cst.Assign, pairs) -> cst.SimpleStatementLine:
    """``a, b, c = x, y, z`` keeping ``pairs`` of (target, value) elements."""
    if not pairs:
        return stmt.with_changes(body=[cst.Pass()])
    last = len(pairs) - 1
    if len(pairs) == 1:
        target, value = pairs[0][0].value, pairs[0][1].value
    else:
        target = small.targets[0].target.with_changes(elements=[
            t.with_changes(comma=cst.MaybeSentinel.DEFAULT) if k == last else t
            for k, (t, _) in enumerate(pairs)])
        value = small.value.with_changes(elements=[
            v.with_changes(comma=cst.MaybeSentinel.DEFAULT) if k == last else v
            for k, (_, v) in enumerate(pairs)])
    return stmt.with_changes(body=[small.with_changes(
        targets=[small.targets[0].with_changes(target=target)], value=value)])
