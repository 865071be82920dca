"""The model-code rule's scopes: ``with`` blocks of variable and name scopes dissolved, and the names they give.

Part of :mod:`tapeshift.migrate.rules.model_code`: ``with tf.variable_scope("G"):``
and ``with tf.name_scope("G"):`` open a scope of the rule's variable store
(``reuse``, ``AUTO_REUSE``, a scope entered again through its ``as`` name) and
dissolve, their statements taking their place; ``with
tf.control_dependencies(update_ops):`` over ``tf.get_collection(UPDATE_OPS)``
dissolves too. Here also the statements that act on the store or on those
blocks: ``scope.reuse_variables()``, ``tf.reset_default_graph()`` (a new
store), ``update_ops = tf.get_collection(UPDATE_OPS)``; and the constant
strings that scopes, variables and layers are named by.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set

import libcst as cst
import libcst.matchers as m

from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.variable_store import AUTO, REUSE, StoreError, VariableStore
from tapeshift.migrate.engine.toolkit.walk import nodes
from tapeshift.migrate.rules.model_code_calls import assigned_names, bind, is_none, is_true, single_target

_VARIABLE_SCOPE = ("name_or_scope", "default_name", "values", "initializer", "regularizer",
                   "caching_device", "partitioner", "custom_getter", "reuse", "dtype",
                   "use_resource", "constraint", "auxiliary_name_scope")


class ScopeBlocks:
    """Part of :class:`tapeshift.migrate.rules.model_code.ModelCode`: scope blocks,
    the statements about them or the store, and constant names (state on the rule:
    its store, the scopes bound by ``as``, the bindings of the block being read)."""

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

    # -- statements about the store or the blocks above ----------------------
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
