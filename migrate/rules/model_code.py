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
  updates its moving statistics itself, at that call.

Only module-level model code (and the ``__main__`` guard) is converted here;
model functions are left to the feeds rule (``make_template``). Whatever
cannot be replayed without running the program (a scope named by a computed
string, layers made in a loop, a regulariser, a collection of other keys) is
reported (TS125) and the file keeps its compat form.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst
from libcst.codemod.visitors import AddImportsVisitor

from tapeshift.migrate.engine.findings import COMPAT_SAFETY, CodeInfo, Severity
from tapeshift.migrate.engine.registry import register_rule
from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.tf_names import all_names, fresh_name, tf_module_alias
from tapeshift.migrate.engine.toolkit.variable_store import (
    AUTO, MODEL_CODE, REUSE, ModelCodeFacts, StoreError, VariableStore)
from tapeshift.migrate.engine.toolkit.walk import nodes
from tapeshift.migrate.rules.model_code_layers import LAYERS, STORE_ARGS

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


#: ``tf.get_variable``'s parameters, in order
_GET_VARIABLE = ("name", "shape", "dtype", "initializer", "regularizer", "trainable",
                 "collections", "caching_device", "partitioner", "validate_shape",
                 "use_resource", "custom_getter", "constraint", "synchronization", "aggregation")
_VARIABLE_SCOPE = ("name_or_scope", "default_name", "values", "initializer", "regularizer",
                   "caching_device", "partitioner", "custom_getter", "reuse", "dtype",
                   "use_resource", "constraint", "auxiliary_name_scope")
_FLOAT_DTYPES = ("float16", "float32", "float64", "bfloat16", "half", "double")
_COLLECTION_KEYS = {"GraphKeys.TRAINABLE_VARIABLES": "trainable",
                    "GraphKeys.GLOBAL_VARIABLES": "global", "GraphKeys.UPDATE_OPS": "update",
                    "trainable_variables": "trainable", "variables": "global",
                    "update_ops": "update"}
def _is_initializer_api(api: str) -> bool:
    last = api.rpartition(".")[2]
    return (last.endswith("_initializer") or api.startswith(("initializers.", "keras.initializers."))
            or last in ("glorot_uniform", "glorot_normal", "he_normal", "he_uniform",
                        "lecun_normal", "lecun_uniform", "variance_scaling", "orthogonal"))


@register_rule
class ModelCode(TapeshiftCodemod):
    DESCRIPTION = "Variable scopes, get_variable and tf.layers -> TF2 variables and layers made once."
    RULE = "model-code"
    #: before the feeds rule, which then sees variables and layer objects made once
    PHASE = "pre"
    ORDER = 25
    CODES = (TS125, TS126)
    SCREEN_NAMES = frozenset({"variable_scope", "get_variable", "layers", "get_collection",
                              "trainable_variables", "global_variables", "name_scope"})

    def __init__(self, context) -> None:
        super().__init__(context)
        self._new_body: Optional[List[cst.BaseStatement]] = None
        self._changed = False
        self._keras = False
        self._first_layer: Optional[cst.Call] = None
        self._slots: Optional[cst.Call] = None  # the first optimizer step seen

    # ------------------------------------------------------------------
    def visit_Module(self, node: cst.Module) -> bool:
        self._alias = tf_module_alias(node)
        if self._alias is None:
            return False
        self._module = node
        self._store = VariableStore()
        self._facts = ModelCodeFacts()
        self._taken = set(all_names(node))
        self._assignments = _assignment_counts(node)
        self._bindings = _module_bindings(node, self._assignments)
        self._strings = {name: value.evaluated_value for name, value in self._bindings.items()
                         if isinstance(value, cst.SimpleString)
                         and value.prefix.lower() in ("", "r", "u")}
        self._scope_vars: Dict[str, object] = {}  # `with ... as scope` -> the Scope
        try:
            body = self._block(list(node.body))
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
            if isinstance(stmt, cst.If) and _is_main_guard(stmt) and stmt.orelse is None:
                body = self._block(list(stmt.body.body))
                out.append(stmt.with_changes(body=stmt.body.with_changes(body=body)))
                continue
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                out.append(stmt)  # model functions: the feeds rule's make_template
                continue
            if isinstance(stmt, cst.SimpleStatementLine):
                out.extend(self._statement(stmt))
                continue
            if self._has_model_calls(stmt):
                kind = type(stmt).__name__.lower()
                self._fail(stmt, f"model code inside a `{kind}` block: how many variables it "
                           "makes is known only when it runs")
            out.append(stmt)
        return out

    def _has_model_calls(self, node) -> bool:
        items = node if isinstance(node, (list, tuple)) else [node]
        for item in items:
            for n in nodes(item):
                if isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                    continue
                if isinstance(n, cst.Call) and self._model_api(n) is not None:
                    return True
        return False

    def _model_api(self, call: cst.Call) -> Optional[str]:
        api = self.tf_api_name(call.func)
        if api is None:
            return None
        if api in ("get_variable", "get_collection", "trainable_variables", "global_variables",
                   "variable_scope", "get_variable_scope", "Variable", "VariableV1"):
            return api
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
                for name in _assigned_names(inner):
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
            args = _bind(call, ("name", "default_name", "values"))
            name = self._const_str(args.get("name"))
            if name is None:
                self._fail(call, f"`{code_of(call)}`: a name scope named by a computed value")
            return self._store.open_name_scope(name)
        args = _bind(call, _VARIABLE_SCOPE)
        for key in ("regularizer", "caching_device", "partitioner", "custom_getter"):
            if key in args and not _is_none(args[key]):
                self._fail(call, f"tf.variable_scope({key}=...) is not converted")
        if "auxiliary_name_scope" in args and not _is_true(args["auxiliary_name_scope"]):
            self._fail(call, "tf.variable_scope(auxiliary_name_scope=False) is not converted")
        reuse = self._reuse(args.get("reuse"), call)
        initializer = args.get("initializer")
        dtype = args.get("dtype")
        target = args.get("name_or_scope")
        try:
            if isinstance(target, cst.Name) and target.value in self._scope_vars:
                return self._store.reenter(self._scope_vars[target.value], reuse)
            name = None if target is None or _is_none(target) else self._const_str(target)
            if name is None and target is not None and not _is_none(target):
                self._fail(call, f"`{code_of(call)}`: a variable scope named by a computed value")
            default = self._const_str(args["default_name"]) if "default_name" in args else None
            scope = self._store.open_variable_scope(
                name, default, reuse,
                code_of(initializer) if initializer is not None and not _is_none(initializer)
                else None,
                code_of(dtype) if dtype is not None and not _is_none(dtype) else None)
            if scope.initializer is not None and initializer is not None:
                scope.initializer_node = initializer
            return scope
        except StoreError as exc:
            self._fail(call, str(exc))

    def _reuse(self, expr: Optional[cst.BaseExpression], call: cst.CSTNode) -> Optional[str]:
        if expr is None or _is_none(expr) or (isinstance(expr, cst.Name) and expr.value == "False"):
            return None
        if _is_true(expr):
            return REUSE
        if self.tf_api_name(expr) == "AUTO_REUSE":
            return AUTO
        self._fail(call, f"reuse={code_of(expr)}: whether variables are reused is known only "
                   "when the program runs")
        return None

    def _update_ops_arg(self, call: cst.Call) -> bool:
        if len(call.args) != 1:
            return False
        value = call.args[0].value
        if isinstance(value, cst.Name):
            bound = self._bindings.get(value.value)
            value = bound if bound is not None else value
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
        target = _single_target(stmt)
        rewriter = _CallRewriter(self, target)
        new = stmt.visit(rewriter)
        self._note_optimizer_steps(stmt)
        if not rewriter.changed:
            return [stmt]
        self._changed = True
        before = list(rewriter.before)
        if before:
            before[0] = before[0].with_changes(leading_lines=stmt.leading_lines)
            new = new.with_changes(leading_lines=[])
        return [*before, new]

    def _note_optimizer_steps(self, stmt: cst.CSTNode) -> None:
        """An optimizer step built here makes slot variables (Adam's moments) that
        TF1's GLOBAL_VARIABLES collection lists from then on; TF2 keeps them in
        the optimizer."""
        if self._slots is None:
            for n in nodes(stmt):
                if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) \
                        and n.func.attr.value in ("minimize", "apply_gradients"):
                    self._slots = n
                    return

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
        target = _single_target(stmt)
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
        if isinstance(expr, cst.SimpleString) and expr.prefix.lower() in ("", "r", "u"):
            return expr.evaluated_value
        if isinstance(expr, cst.Name) and expr.value in self._strings:
            return self._strings[expr.value]
        if isinstance(expr, cst.Attribute) and expr.attr.value == "name" \
                and isinstance(expr.value, cst.Name) and expr.value.value in self._scope_vars:
            return self._scope_vars[expr.value.value].name
        return None

    def _collection_key(self, call: cst.Call) -> Optional[str]:
        api = self.tf_api_name(call.func)
        if api != "get_collection" or not call.args:
            return None
        key = call.args[0].value
        key_api = self.tf_api_name(key)
        if key_api in _COLLECTION_KEYS:
            return _COLLECTION_KEYS[key_api]
        literal = self._const_str(key)
        return _COLLECTION_KEYS.get(literal) if literal is not None else None

    def handle(self, base: str) -> str:
        base = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in base).strip("_") or "var"
        if base[0].isdigit():
            base = "v" + base
        name = fresh_name(base, self._taken)
        self._taken.add(name)
        return name

    def reserve(self, name: str) -> None:
        self._taken.add(name)


class _CallRewriter(cst.CSTTransformer):
    """Rewrites the model calls of one statement, innermost first (the order Python
    evaluates them, so the order TF1 created the variables); creation statements
    that must come before it collect in ``before``."""

    def __init__(self, rule: ModelCode, target: Optional[str]) -> None:
        super().__init__()
        self.rule = rule
        self.store = rule._store
        self.target = target
        self.before: List[cst.SimpleStatementLine] = []
        self.changed = False
        self._top: Optional[cst.Call] = None

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        if len(node.body) == 1 and isinstance(node.body[0], cst.Assign) \
                and isinstance(node.body[0].value, cst.Call):
            self._top = node.body[0].value
        return True

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        rule = self.rule
        api = rule._model_api(original_node)
        if api is None:
            return updated_node
        top = original_node is self._top and self.target is not None
        self.changed = True
        try:
            if api == "get_variable":
                return self._get_variable(original_node, updated_node, top)
            if api in ("Variable", "VariableV1"):
                return self._variable(original_node, updated_node, top)
            if api.startswith("layers."):
                return self._layer(api[len("layers."):], original_node, updated_node, top)
            if api in ("get_collection", "trainable_variables", "global_variables"):
                return self._collection(api, original_node)
        except StoreError as exc:
            rule._fail(original_node, str(exc))
        rule._fail(original_node, f"`{code_of(original_node.func)}(...)` is not converted here")
        raise AssertionError

    # -- tf.get_variable ----------------------------------------------------
    def _get_variable(self, original: cst.Call, call: cst.Call, top: bool) -> cst.BaseExpression:
        rule = self.rule
        args = _bind(call, _GET_VARIABLE)
        name = rule._const_str(args.get("name"))
        if name is None:
            rule._fail(original, f"`{code_of(original)}`: a variable named by a computed value")
        for key in ("regularizer", "collections", "caching_device", "partitioner", "custom_getter"):
            if key in args and not _is_none(args[key]):
                rule._fail(original, f"tf.get_variable({key}=...) is not converted")
        trainable = "trainable" not in args or not _is_false(args["trainable"])
        handle = self.target if top and _bound_once(rule, self.target) else None
        entry, created = self.store.get_variable(name, handle or "", trainable)
        if not created:
            rule.record_change(original, f"tf.get_variable(\"{name}\") reuses `{entry.handle}` "
                               f"({entry.name})")
            return cst.Name(entry.handle)
        value = self._initial_value(original, args, _bind(original, _GET_VARIABLE))
        kwargs = [("name", cst.SimpleString(f'"{entry.name}"'))]
        if not trainable:
            kwargs.append(("trainable", cst.Name("False")))
        for key in ("validate_shape", "constraint", "synchronization", "aggregation"):
            if key in args:
                kwargs.append((key, args[key]))
        new = _call(f"{rule._alias}.Variable", [value], kwargs)
        rule.record_change(original, f"tf.get_variable -> tf.Variable named \"{entry.name}\", "
                           "created once")
        if handle is not None:
            return new
        entry.handle = rule.handle(name.rpartition("/")[2])
        self.before.append(_assign(entry.handle, new))
        return cst.Name(entry.handle)

    def _initial_value(self, original: cst.Call, args, source) -> cst.BaseExpression:
        """``args``: the call's arguments as rewritten so far (what is written out);
        ``source``: the original ones (what TensorFlow names are read from)."""
        rule = self.rule
        scope = self.store.scope
        shape = args.get("shape")
        dtype = args.get("dtype")
        init = args.get("initializer")
        init_source = source.get("initializer")
        if init is not None and _is_none(init):
            init = init_source = None
        if init is None and scope.initializer is not None:
            init = cst.parse_expression(scope.initializer)
            init_source = scope.initializer_node
        if dtype is None and scope.dtype is not None:
            dtype = cst.parse_expression(scope.dtype)
        tf = rule._alias
        if init is None:
            if shape is None:
                rule._fail(original, "tf.get_variable without a shape or an initializer")
            dtype_name = code_of(dtype).rpartition(".")[2] if dtype is not None else "float32"
            if dtype_name not in _FLOAT_DTYPES:  # TF1's default for integers and booleans
                return _call(f"{tf}.zeros", [shape, dtype], [])
            init = cst.parse_expression(f"{tf}.compat.v1.glorot_uniform_initializer()")
            return cst.Call(func=init, args=[cst.Arg(shape)] + (
                [cst.Arg(dtype)] if dtype is not None else []))
        kind = self._initializer_kind(init_source)
        if kind == "initializer":
            if shape is None:
                rule._fail(original, "tf.get_variable with an initializer and no shape")
            if isinstance(init, (cst.Name, cst.Attribute)) and self._is_class(init_source):
                init = cst.Call(func=init)
            return cst.Call(func=init, args=[cst.Arg(shape)] + (
                [cst.Arg(dtype)] if dtype is not None else []))
        if kind == "value":
            if shape is not None:
                rule._fail(original, "tf.get_variable with a value initializer and a shape "
                           "(TF1 raises here)")
            return init
        rule._fail(original, f"initializer={code_of(init)}: the codemod cannot tell whether it is "
                   "an initializer or a value")
        raise AssertionError

    def _is_class(self, expr: cst.BaseExpression) -> bool:
        api = self.rule.tf_api_name(expr)
        return api is not None and _is_initializer_api(api)

    def _initializer_kind(self, expr: cst.BaseExpression) -> Optional[str]:
        rule = self.rule
        if isinstance(expr, cst.Name) and expr.value in rule._bindings \
                and rule.tf_api_name(expr) is None:
            expr = rule._bindings[expr.value]
        if isinstance(expr, (cst.Integer, cst.Float, cst.List, cst.Tuple, cst.UnaryOperation)):
            return "value"
        if isinstance(expr, (cst.Name, cst.Attribute)):
            return "initializer" if self._is_class(expr) else None
        if isinstance(expr, cst.Call):
            api = rule.tf_api_name(expr.func)
            if api is not None:
                return "initializer" if _is_initializer_api(api) else "value"
            func = code_of(expr.func)
            if func.startswith(("np.", "numpy.")):
                return "value"
            if "initializer" in func.rpartition(".")[2]:
                return "initializer"  # tf_slim.xavier_initializer() and the like
        return None

    # -- tf.Variable in a scope -------------------------------------------
    def _variable(self, original: cst.Call, call: cst.Call, top: bool) -> cst.BaseExpression:
        rule = self.rule
        named = next((a for a in call.args if a.keyword is not None and a.keyword.value == "name"),
                     None)
        given = rule._const_str(named.value) if named is not None else None
        if named is not None and given is None:
            rule._fail(original, f"`{code_of(original)}`: a variable named by a computed value")
        full = self.store.variable_name(given)
        trainable = not any(a.keyword is not None and a.keyword.value == "trainable"
                            and _is_false(a.value) for a in call.args)
        handle = self.target if top and _bound_once(rule, self.target) else ""
        self.store.add_variable(full, handle, trainable)
        if full == (given or "Variable") or full.rpartition("/")[0] == "":
            self.changed = bool(self.before)
            return call  # no scope: TF2 names it as TF1 did
        rule.record_change(original, f"tf.Variable named \"{full}\", as TF1 named it in its scope")
        new_name = cst.SimpleString(f'"{full}"')
        if named is not None:
            return call.with_changes(args=[a.with_changes(value=new_name) if a is named else a
                                           for a in call.args])
        return call.with_changes(args=[*call.args, _kwarg("name", new_name)])

    # -- tf.layers ----------------------------------------------------------
    def _layer(self, fn: str, original: cst.Call, call: cst.Call, top: bool) -> cst.BaseExpression:
        rule = self.rule
        spec = LAYERS.get(fn)
        if spec is None:
            rule._fail(original, f"tf.layers.{fn} is not converted to a layer object")
        params = ("inputs", *spec.params)
        args = _bind(call, params)
        if any(a.star for a in call.args):
            rule._fail(original, f"`tf.layers.{fn}(*args)` is not converted")
        if "inputs" not in args:
            rule._fail(original, f"tf.layers.{fn} without inputs")
        name = None
        if "name" in args and not _is_none(args["name"]):
            name = rule._const_str(args["name"])
            if name is None:
                rule._fail(original, f"`{code_of(original)}`: a layer named by a computed value")
        reuse = None
        if "reuse" in args:
            mode = rule._reuse(_bind(original, params)["reuse"], original)
            reuse = True if mode == REUSE else None
            if mode == AUTO:
                rule._fail(original, f"tf.layers.{fn}(reuse=tf.AUTO_REUSE) is not converted")
        ctor = [(k, v) for k, v in args.items()
                if k not in ("inputs", *STORE_ARGS, *spec.call)]
        signature = " ".join(f"{k}={code_of(v)}" for k, v in ctor)
        entry, created = self.store.layer(name, fn, "", reuse, {"signature": signature})
        if not created:
            if entry.info.get("signature") != signature:
                rule._fail(original, f"layer {entry.name} is reused with other arguments "
                           "(TF1 would reuse the variables, not the configuration)")
        else:
            base = name.rpartition("/")[2] if name else (
                self.target if top and self.target else fn)
            if name and base in rule._taken or not name:
                base = f"{base}_layer" if not base.endswith("layer") else base
            entry.handle = rule.handle(base)
            # the arguments written by position stay so where the class takes them there
            written = sum(1 for a in call.args if a.keyword is None) - 1
            kept = params[1:1 + max(0, min(written, spec.positional))]
            pos = [args[k] for k in kept]
            kw = [(k, v) for k, v in ctor if k not in kept]
            if spec.variables or name is not None:
                kw = [*kw, ("name", cst.SimpleString(f'"{entry.name}"'))]
            self.before.append(_assign(entry.handle, _call(f"tf_keras.layers.{spec.cls}", pos, kw)))
            rule._keras = True
            rule._facts.layers[entry.handle] = entry
            if fn == "batch_normalization":
                rule._facts.batch_norm.add(entry.handle)
            rule.record_change(original, f"tf.layers.{fn} -> `{entry.handle} = tf_keras.layers."
                               f"{spec.cls}(...)`, created once" + (
                                   f" (variables {entry.name}/...)" if spec.variables else ""))
            if rule._first_layer is None:
                rule._first_layer = original
        extra = [(k, args[k]) for k in spec.call if k in args]
        if not created:
            rule.record_change(original, f"tf.layers.{fn} reuses `{entry.handle}` ({entry.name})")
        return _call(entry.handle, [args["inputs"]], extra)

    # -- collections --------------------------------------------------------
    def _collection(self, api: str, original: cst.Call) -> cst.BaseExpression:
        rule = self.rule
        if api == "get_collection":
            key = rule._collection_key(original)
            if key is None or key == "update":
                rule._fail(original, f"`{code_of(original)}`: only the variable collections "
                           "are converted")
            args = _bind(original, ("key", "scope"))
        else:
            key = "trainable" if api == "trainable_variables" else "global"
            args = _bind(original, ("scope",))
        scope = None
        if "scope" in args and not _is_none(args["scope"]):
            scope = rule._const_str(args["scope"])
            if scope is None:
                rule._fail(original, f"`{code_of(original)}`: a scope named by a computed value")
        if key == "global" and rule._slots is not None:
            line, _ = rule.position(rule._slots)
            rule._fail(original, f"`{code_of(original)}` also holds the slot variables of the "
                       f"optimizer step on line {line}, which TF2 keeps in the optimizer "
                       "(list the variables before the optimizer, or the trainable ones)")
        entries = self.store.collection(scope, trainable_only=key == "trainable")
        elements: List[cst.BaseElement] = []
        for entry in entries:
            if not entry.handle:
                rule._fail(original, f"the collection holds {entry.name}, which is bound to no "
                           "name the codemod can use")
            if entry.kind == "variable":
                elements.append(cst.Element(cst.Name(entry.handle)))
            else:
                attr = "trainable_variables" if key == "trainable" else "variables"
                elements.append(cst.StarredElement(cst.Attribute(cst.Name(entry.handle),
                                                                 cst.Name(attr))))
        rule.record_change(original, f"`{' '.join(code_of(original).split())}` -> the "
                           f"{len(entries)} variable(s)/layer(s) TF1's collection held here")
        return cst.List(elements)


# ----------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------
def _bind(call: cst.Call, params: Sequence[str]) -> Dict[str, cst.BaseExpression]:
    """Arguments by parameter name (positional ones by place); keeps call order."""
    out: Dict[str, cst.BaseExpression] = {}
    for k, arg in enumerate(call.args):
        if arg.star:
            continue
        if arg.keyword is not None:
            out[arg.keyword.value] = arg.value
        elif k < len(params):
            out[params[k]] = arg.value
    return out


def _kwarg(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(value, keyword=cst.Name(name),
                   equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))


def _call(func: str, positional: Sequence[cst.BaseExpression],
          keywords: Sequence[Tuple[str, cst.BaseExpression]]) -> cst.Call:
    args = [cst.Arg(v) for v in positional] + [_kwarg(k, v) for k, v in keywords]
    return cst.Call(func=cst.parse_expression(func), args=args)


def _assign(name: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(name))], value)])


def _single_target(stmt: cst.SimpleStatementLine) -> Optional[str]:
    if len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign) \
            and len(stmt.body[0].targets) == 1 \
            and isinstance(stmt.body[0].targets[0].target, cst.Name):
        return stmt.body[0].targets[0].target.value
    return None


def _assigned_names(stmt: cst.CSTNode) -> Set[str]:
    out: Set[str] = set()
    for n in nodes(stmt):
        if isinstance(n, cst.AssignTarget) and isinstance(n.target, cst.Name):
            out.add(n.target.value)
    return out


def _bound_once(rule: ModelCode, name: Optional[str]) -> bool:
    return name is not None and rule._assignments.get(name, 0) == 1


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def _is_true(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "True"


def _is_false(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "False"


def _is_main_guard(stmt: cst.If) -> bool:
    return "__name__" in code_of(stmt.test) and "__main__" in code_of(stmt.test)


def _assignment_counts(module: cst.Module) -> Dict[str, int]:
    """How often each name is bound anywhere in the module (a loop, augmented
    assignment or parameter counts twice: bound more than once when it runs)."""
    counts: Dict[str, int] = {}
    for n in nodes(module):
        if isinstance(n, cst.AssignTarget):
            for name in _target_names(n.target):
                counts[name] = counts.get(name, 0) + 1
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign)):
            for name in _target_names(n.target):
                counts[name] = counts.get(name, 0) + 2
        elif isinstance(n, (cst.For, cst.CompFor)):
            for name in _target_names(n.target):
                counts[name] = counts.get(name, 0) + 2
        elif isinstance(n, (cst.FunctionDef, cst.ClassDef)):
            counts[n.name.value] = counts.get(n.name.value, 0) + 1
        elif isinstance(n, cst.AsName) and isinstance(n.name, cst.Name):
            counts[n.name.value] = counts.get(n.name.value, 0) + 1
        elif isinstance(n, cst.Param):
            counts[n.name.value] = counts.get(n.name.value, 0) + 2
    return counts


def _module_bindings(module: cst.Module, counts: Dict[str, int]) -> Dict[str, cst.BaseExpression]:
    """Names bound exactly once in the whole module, at module level, to their value."""
    out: Dict[str, cst.BaseExpression] = {}
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1 \
                        and isinstance(small.targets[0].target, cst.Name) \
                        and counts.get(small.targets[0].target.value) == 1:
                    out[small.targets[0].target.value] = small.value
    return out


def _target_names(target: cst.CSTNode) -> List[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in _target_names(el.value)]
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return []
