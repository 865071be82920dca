"""The model-code rule's rewrite of one statement's calls: get_variable, tf.Variable, tf.layers, collections.

Part of :mod:`tapeshift.migrate.rules.model_code`: the rule walks the statements
in the order the TF1 program runs them and hands each to :class:`CallRewriter`,
which asks the rule's :class:`~tapeshift.migrate.engine.toolkit.variable_store.VariableStore`
what each call means and writes its TF2 form. The syntax it reads and builds
with the other model-code modules (``bind``, ``assign``, ``is_none`` ...) is
:mod:`~tapeshift.migrate.rules.model_code_syntax`; they stay importable from here.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Set, Tuple

import libcst as cst

from tapeshift.migrate.engine.toolkit.builders import appended, code_of
from tapeshift.migrate.engine.toolkit.variable_store import AUTO, REUSE, StoreError
from tapeshift.migrate.rules.model_code_layers import LAYERS, STORE_ARGS
from tapeshift.migrate.rules.model_code_slim import as_dense, why_not_dense
from tapeshift.migrate.rules.model_code_syntax import (  # noqa: F401 - also imported from here
    assign, assigned_names, bind, is_false, is_none, is_true, single_target)

#: ``tf.get_variable``'s parameters, in order
GET_VARIABLE = ("name", "shape", "dtype", "initializer", "regularizer", "trainable",
                "collections", "caching_device", "partitioner", "validate_shape",
                "use_resource", "custom_getter", "constraint", "synchronization", "aggregation")
_FLOAT_DTYPES = ("float16", "float32", "float64", "bfloat16", "half", "double")
#: ``tf.train.Saver``'s parameters, in order
SAVER = ("var_list", "reshape", "sharded", "max_to_keep", "keep_checkpoint_every_n_hours", "name",
         "restore_sequentially", "saver_def", "builder", "defer_build", "allow_empty",
         "write_version", "pad_step_number", "save_relative_paths", "filename")
#: the v1 optimizers that make no slot variables (every other one does: Adam's
#: ``w/Adam``, ``w/Adam_1``, ``beta1_power``, Momentum's ``w/Momentum`` ...)
NO_SLOTS = frozenset({"train.GradientDescentOptimizer", "train.ProximalGradientDescentOptimizer"})
GLOBAL_STEP_MAKERS = frozenset({"train.get_or_create_global_step", "train.create_global_step"})
#: v1 summary ops: ``(name, tensor, ...)``; their tag is the op's name, name scope included
SUMMARY_OPS = frozenset({"summary.scalar", "summary.histogram", "summary.image", "summary.audio",
                         "summary.text", "summary.tensor_summary"})


#: a TF1 name that starts in a scope named by an attribute of the object (``{self.name}``)
OBJECT_SCOPE = "{self."


def name_literal(name: str) -> cst.BaseExpression:
    """A TF1 name as a string literal: an f-string when a scope in it is named by the
    object (``f"{self.name}/W4"``, one name per object as in TF1)."""
    if OBJECT_SCOPE in name:
        return cst.parse_expression(f'f"{name}"')
    return cst.SimpleString(f'"{name}"')


def is_initializer_api(api: str) -> bool:
    last = api.rpartition(".")[2]
    return (last.endswith("_initializer") or api.startswith(("initializers.", "keras.initializers."))
            or last in ("glorot_uniform", "glorot_normal", "he_normal", "he_uniform",
                        "lecun_normal", "lecun_uniform", "variance_scaling", "orthogonal"))


class CallRewriter(cst.CSTTransformer):
    """Rewrites the model calls of one statement, innermost first (the order Python
    evaluates them, so the order TF1 created the variables); creation statements
    that must come before it collect in ``before``."""

    def __init__(self, rule: Any, target: Optional[str]) -> None:
        # rule: the ModelCode rule (its module imports this one)
        super().__init__()
        self.rule = rule
        self.store = rule._store
        self.target = target
        #: what the statement's own target becomes (a local made an attribute in a class)
        self.target_handle: Optional[str] = None
        self.before: List[cst.SimpleStatementLine] = []
        self.changed = False
        self._top: Optional[cst.Call] = None
        #: global collections that are a Saver's var_list (its semantics: slots left out)
        self._saver_lists: Set[int] = set()
        self._cell_calls: List[cst.Call] = []  # the RNN cell constructors being visited

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def cell_argument(self, call: cst.Call) -> bool:
        """``call`` is in the arguments of another cell's constructor (``MultiRNNCell([...])``)."""
        return any(c is not call for c in self._cell_calls)

    def visit_Call(self, node: cst.Call) -> bool:
        if (self.rule.rnn_kind(node) or "").startswith("cell."):
            self._cell_calls.append(node)
        if self.rule._model_api(node) == "train.Saver":
            # Saver(tf.global_variables()) is Saver(): the optimizer's slots are left out
            given = bind(node, SAVER).get("var_list")
            if isinstance(given, cst.Call) and self.rule._model_api(given) in (
                    "global_variables", "get_collection"):
                self._saver_lists.add(id(given))
        return True

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
        if self._cell_calls and self._cell_calls[-1] is original_node:
            self._cell_calls.pop()
        kind = rule.rnn_kind(original_node)
        if kind is not None:
            return rule.rewrite_rnn(self, kind, original_node, updated_node, top)
        try:
            if api == "get_variable":
                return self._get_variable(original_node, updated_node, top)
            if api in ("Variable", "VariableV1"):
                return self._variable(original_node, updated_node, top)
            if api == "layers.fully_connected":
                return self._slim_dense(original_node, updated_node, top)
            if api.startswith("layers."):
                return self._layer(api[len("layers."):], original_node, updated_node, top)
            if api in ("get_collection", "trainable_variables", "global_variables"):
                return self._collection(api, original_node)
            if api == "train.Saver":
                return self._saver(original_node, updated_node)
            if api in GLOBAL_STEP_MAKERS:
                return self._global_step(api, original_node, updated_node, top)
            if api in SUMMARY_OPS:
                return self._summary(api, original_node, updated_node)
        except StoreError as exc:
            rule._fail(original_node, str(exc))
        rule._fail(original_node, f"`{code_of(original_node.func)}(...)` is not converted here")
        raise AssertionError

    # -- tf.get_variable ----------------------------------------------------
    def _get_variable(self, original: cst.Call, call: cst.Call, top: bool) -> cst.BaseExpression:
        rule = self.rule
        args = bind(call, GET_VARIABLE)
        name = rule._const_str(args.get("name"))
        if name is None:
            rule._fail(original, f"`{code_of(original)}`: a variable named by a computed value")
        for key in ("regularizer", "caching_device", "partitioner", "custom_getter"):
            if key in args and not is_none(args[key]):
                rule._fail(original, f"tf.get_variable({key}=...) is not converted")
        trainable = "trainable" not in args or not is_false(rule.bound(args["trainable"]))
        handle = self._own_handle(top, name)
        collections = self._collections(original, bind(original, GET_VARIABLE).get("collections"))
        entry, created = self.store.get_variable(name, handle or "", trainable,
                                                 {"collections": collections})
        if not created:
            rule.record_change(original, f"tf.get_variable(\"{name}\") reuses `{entry.handle}` "
                               f"({entry.name})")
            return cst.parse_expression(entry.handle)
        value = self._initial_value(original, args, bind(original, GET_VARIABLE))
        kwargs = [("name", name_literal(entry.name))]
        if not trainable:
            kwargs.append(("trainable", cst.Name("False")))
        for key in ("validate_shape", "constraint", "synchronization", "aggregation"):
            if key in args:
                kwargs.append((key, args[key]))
        new = _call(f"{rule._alias}.Variable", [value], kwargs)
        rule.record_change(original, f"tf.get_variable -> tf.Variable named \"{entry.name}\", "
                           "created once")
        if handle is not None:
            entry.handle = handle
            return new
        entry.handle = rule.handle(name.rpartition("/")[2], None, entry.name)
        self.before.append(assign(entry.handle, new))
        return cst.parse_expression(entry.handle)

    def _own_handle(self, top: bool, tf1_name: str) -> Optional[str]:
        """The statement's own target as the variable's handle, when it can be one:
        a module name bound once, ``self.x``, or (in a class) a local made an attribute."""
        rule = self.rule
        if not top or rule._function is not None:
            return None  # (what a model function makes is made before its first call)
        if self.target.startswith("self."):
            return self.target
        if rule._class is not None:
            self.target_handle = rule.handle(self.target, self.target,
                                             rule._store.scope.name + "/" + tf1_name
                                             if rule._store.scope.name else tf1_name)
            return self.target_handle
        return self.target if _bound_once(rule, self.target) else None

    def _collections(self, original: cst.Call, expr: Optional[cst.BaseExpression]) -> Set[str]:
        """The custom collections ``collections=[...]`` puts a variable in (TF1 adds
        it to those instead of GLOBAL_VARIABLES, which must be listed too)."""
        rule = self.rule
        if expr is None or is_none(expr):
            return set()
        value = rule.bound(expr)
        if isinstance(expr, cst.Name) and value is not expr:
            rule._collection_lists.add(expr.value)
        if not isinstance(value, (cst.List, cst.Tuple)):
            rule._fail(original, f"collections={code_of(expr)} is not a list the codemod can read")
        keys = [rule.collection_key(e.value) for e in value.elements]
        if None in keys or "global" not in keys:
            rule._fail(original, f"collections={code_of(value)}: only lists of named collections "
                       "with tf.GraphKeys.GLOBAL_VARIABLES are converted")
        return {k[len("custom:"):] for k in keys if k is not None and k.startswith("custom:")}

    def _initial_value(self, original: cst.Call, args, source) -> cst.BaseExpression:
        """``args``: the call's arguments as rewritten so far (what is written out);
        ``source``: the original ones (what TensorFlow names are read from)."""
        rule = self.rule
        scope = self.store.scope
        shape = args.get("shape")
        dtype = args.get("dtype")
        init = args.get("initializer")
        init_source = source.get("initializer")
        if init is not None and is_none(init):
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
        return api is not None and is_initializer_api(api)

    def _initializer_kind(self, expr: cst.BaseExpression) -> Optional[str]:
        rule = self.rule
        if isinstance(expr, cst.Name) and rule.tf_api_name(expr) is None:
            expr = rule.bound(expr)
        if isinstance(expr, (cst.Integer, cst.Float, cst.List, cst.Tuple, cst.UnaryOperation)):
            return "value"
        if isinstance(expr, (cst.Name, cst.Attribute)):
            return "initializer" if self._is_class(expr) else None
        if isinstance(expr, cst.Call):
            api = rule.tf_api_name(expr.func)
            if api is not None:
                return "initializer" if is_initializer_api(api) else "value"
            func = code_of(expr.func)
            if func.startswith(("np.", "numpy.")):
                return "value"
            if "initializer" in func.rpartition(".")[2]:
                return "initializer"  # tf_slim.xavier_initializer() and the like
        return None

    # -- tf.Variable in a scope -------------------------------------------
    def _variable(self, original: cst.Call, call: cst.Call, top: bool) -> cst.BaseExpression:
        rule = self.rule
        # weight_variable([4, 8]): the tf.Variable(...) the factory returns names it
        factory = rule._factories.get(original.func.value) \
            if isinstance(original.func, cst.Name) else None
        made = factory if factory is not None else call
        named = next((a for a in made.args if a.keyword is not None and a.keyword.value == "name"),
                     None)
        given = rule._const_str(named.value) if named is not None else None
        if named is not None and given is None:
            rule._fail(original, f"`{code_of(original)}`: a variable named by a computed value")
        full = self.store.variable_name(given)
        trainable = not any(a.keyword is not None and a.keyword.value == "trainable"
                            and is_false(a.value) for a in made.args)
        if factory is not None and full != (given or "Variable") and (
                "/" in full or rule._uses_saver):
            rule._fail(original, f"`{code_of(original)}`: TF1 names the variable `{full}` "
                       "(a scope or a repeated name), which the factory does not take: not "
                       "converted")
        if rule._function is not None:
            # a model function's variable is made at module level before its call (a
            # second call, which would make another, is reported there), under the
            # function's name for it; the function reads that
            if not top or "." in self.target:
                rule._fail(original, "tf.Variable in a model function other than bound to a "
                           "name of its own is not converted")
            handle = rule.function_handle(self.target)
            self.store.add_variable(full, handle, trainable)
            self.before.append(assign(handle, self._tf1_named(original, call, named, full)))
            return cst.Name(handle)
        handle = self._own_handle(top, full.rpartition("/")[2]) or ""
        self.store.add_variable(full, handle, trainable)
        return self._tf1_named(original, call, named, full)

    def _tf1_named(self, original: cst.Call, call: cst.Call, named: Optional[cst.Arg],
                   full: str) -> cst.Call:
        """``tf.Variable(...)`` named ``full``, as TF1 named it, where that matters."""
        rule = self.rule
        if full == (rule._const_str(named.value) if named is not None else "Variable") \
                or full.rpartition("/")[0] == "" and not rule._uses_saver:
            self.changed = bool(self.before) or rule._function is not None
            return call  # TF2 names it as TF1 did, or its name is never looked up
        rule.record_change(original, f"tf.Variable named \"{full}\", as TF1 named it" + (
            " in its scope" if "/" in full else " (a Saver keeps variables by name)"))
        new_name = name_literal(full)
        if named is not None:
            return call.with_changes(args=[a.with_changes(value=new_name) if a is named else a
                                           for a in call.args])
        return call.with_changes(args=[*call.args, _kwarg("name", new_name)])

    # -- tf.layers ----------------------------------------------------------
    def _slim_dense(self, original: cst.Call, call: cst.Call, top: bool) -> cst.BaseExpression:
        """tf-slim's fully_connected, read as ``tf.layers.dense`` (model_code_slim.py)."""
        rule = self.rule
        why = why_not_dense(call)
        if why is not None:
            rule._fail(original, why)
        if rule._uses_saver:
            rule._fail(original, f"`{code_of(original.func)}`: a Saver finds tf-slim's variables "
                       "by their names (weights, biases), a Dense layer's are kernel and bias; "
                       "not converted")
        rule._slim_dense_made += 1
        return self._layer("dense", original, as_dense(call, rule._alias), top,
                           tf1_base="fully_connected")

    def _layer(self, fn: str, original: cst.Call, call: cst.Call, top: bool,
               tf1_base: Optional[str] = None) -> cst.BaseExpression:
        """``tf.layers.<fn>`` (``tf1_base``: the TF1 name of an unnamed one, if not ``fn``)."""
        rule = self.rule
        spelled = f"tf.layers.{fn}" if tf1_base is None else code_of(original.func)
        spec = LAYERS.get(fn)
        if spec is None:
            rule._fail(original, f"{spelled} is not converted to a layer object")
        params = ("inputs", *spec.params)
        args = bind(call, params)
        if any(a.star for a in call.args):
            rule._fail(original, f"`{spelled}(*args)` is not converted")
        if "inputs" not in args:
            rule._fail(original, f"{spelled} without inputs")
        name = None
        if "name" in args and not is_none(args["name"]):
            name = rule._const_str(args["name"])
            if name is None:
                rule._fail(original, f"`{code_of(original)}`: a layer named by a computed value")
        reuse = None
        if "reuse" in args:
            mode = rule._reuse(bind(original, params)["reuse"], original)
            reuse = True if mode == REUSE else None
            if mode == AUTO:
                rule._fail(original, f"{spelled}(reuse=tf.AUTO_REUSE) is not converted")
        ctor = [(k, v) for k, v in args.items()
                if k not in ("inputs", *STORE_ARGS, *spec.call)]
        signature = " ".join(f"{k}={code_of(v)}" for k, v in ctor)
        trainable = "trainable" not in args or not is_false(rule.bound(args["trainable"]))
        entry, created = self.store.layer(name, tf1_base or fn, "", reuse, {"signature": signature},
                                          trainable)
        if not created:
            if entry.info.get("signature") != signature:
                rule._fail(original, f"layer {entry.name} is reused with other arguments "
                           "(TF1 would reuse the variables, not the configuration)")
        else:
            target = self.target.rpartition(".")[2] if top and self.target else None
            base = name.rpartition("/")[2] if name else (target or tf1_base or fn)
            if name and name in rule._repeated_layer_names:
                # one name in several scopes (eval/target): the scope tells them apart
                base = "_".join(entry.name.split("/")[-2:])
            elif not name and rule._class is None and rule._function is None and (
                    target is None or rule._assignments.get(target, 0) > 1):
                # `h = tf.layers.dense(h, ...)` again and again: TF1's own name
                # (net/dense_1) tells the layers apart, not h_layer_3
                base = entry.name.replace("/", "_")
            elif name and base in rule._taken or not name:
                base = f"{base}_layer" if not base.endswith("layer") else base
            entry.handle = rule.handle(base, None, entry.name)
            # a layer without variables keeps TF1's name in a scope too: its random
            # draws are keyed by it (verify --align-random)
            named = spec.variables or name is not None or "/" in entry.name
            ctor_call = call.with_changes(
                func=cst.parse_expression(f"tf_keras.layers.{spec.cls}"),
                args=_constructor_args(call, params, spec.positional,
                                       ("inputs", *STORE_ARGS, *spec.call),
                                       name_literal(entry.name) if named else None))
            self.before.append(assign(entry.handle, ctor_call))
            rule._keras = True
            rule._facts.layers[entry.handle] = entry
            entry.info["cls"] = spec.cls
            entry.info["variables"] = spec.variables
            if spec.params[0] in ("units", "filters") and spec.params[0] in args:
                entry.info["size"] = code_of(args[spec.params[0]])  # its output's last dimension
            if fn == "batch_normalization":
                rule._facts.batch_norm.add(entry.handle)
            names = f" (variables {entry.name}/...)" if tf1_base is None else (
                f" (variables {entry.name}/kernel and /bias; tf-slim named them weights and biases)")
            rule.record_change(original, f"{spelled} -> `{entry.handle} = tf_keras.layers."
                               f"{spec.cls}(...)`, created once" + (names if spec.variables else ""))
            if rule._first_layer is None:
                rule._first_layer = original
        extra = [(k, args[k]) for k in spec.call if k in args]
        if not created:
            rule.record_change(original, f"{spelled} reuses `{entry.handle}` ({entry.name})")
        call = _call("layer", [args["inputs"]], extra)
        return call.with_changes(func=cst.parse_expression(entry.handle))

    # -- summaries in a scope ----------------------------------------------
    def _summary(self, api: str, original: cst.Call, call: cst.Call) -> cst.BaseExpression:
        """``tf.summary.histogram("W1", w)`` under ``name_scope("Layer1")`` is tagged
        ``Layer1/W1`` (made unique as TF1 makes op names); the scope dissolves, so
        the tag is written out."""
        rule = self.rule
        args = bind(call, ("name", "tensor"))
        name = rule._const_str(args.get("name"))
        if name is None or any(a.keyword is not None and a.keyword.value == "family"
                               for a in call.args):
            rule._fail(original, f"`{code_of(original)}`: a summary in a scope with a computed "
                       "name or a family is not converted")
        tag = self.store.op_name(name)
        rule.record_change(original, f"summary `{name}` tagged \"{tag}\", its TF1 tag")
        first = call.args[0]
        return call.with_changes(args=[first.with_changes(value=name_literal(tag)),
                                       *call.args[1:]])

    # -- collections --------------------------------------------------------
    def _collection(self, api: str, original: cst.Call) -> cst.BaseExpression:
        rule = self.rule
        if api == "get_collection":
            key = rule._collection_key(original)
            if key is None or key == "update" or (key.startswith("custom:") and not any(
                    key[len("custom:"):] in e.info.get("collections", ())
                    for e in self.store.entries.values())):
                rule._fail(original, f"`{code_of(original)}`: only the variable collections "
                           "are converted")
            args = bind(original, ("key", "scope"))
        else:
            key = "trainable" if api == "trainable_variables" else "global"
            args = bind(original, ("scope",))
        scope = None
        if "scope" in args and not is_none(args["scope"]):
            scope = rule._const_str(args["scope"])
            if scope is None:
                rule._fail(original, f"`{code_of(original)}`: a scope named by a computed value")
        saver = id(original) in self._saver_lists
        if key == "global" and rule._slots is not None and not saver:
            line, _ = rule.position(rule._slots)
            rule._fail(original, f"`{code_of(original)}` also holds the slot variables of the "
                       f"optimizer step on line {line}, which TF2 keeps in the optimizer "
                       "(list the variables before the optimizer, or the trainable ones)")
        entries = self.store.collection(scope, trainable_only=key == "trainable")
        # made by `agent = Agent(...)`: agent's
        owner, entries = rule.module_collection(original, entries, key == "trainable")
        if owner is not None and (scope is not None or key.startswith("custom:")):
            rule._fail(original, f"`{code_of(original)}`: a scope or collection of the "
                       f"variables `{owner}` made is not converted")
        if key.startswith("custom:"):  # collections=[...] of get_variable
            entries = [e for e in entries if key[len("custom:"):] in e.info.get("collections", ())]
        listed = self._listed(original, entries, "trainable_variables" if key == "trainable"
                              else "variables", owner)
        rule.record_change(original, f"`{' '.join(code_of(original).split())}` -> the "
                           f"{len(entries)} variable(s)/layer(s) TF1's collection held here")
        return listed

    def _listed(self, original: cst.Call, entries, attr: str,
                owner: Optional[str] = None) -> cst.List:
        """The list of ``entries`` (a layer stands for ``layer.<attr>``); ``owner``: the
        object whose attributes they are (``self.w`` -> ``agent.w``)."""
        rule = self.rule
        hidden = rule.hidden_makers()
        if hidden:
            rule._fail(original, f"`{code_of(original)}` would also hold the variables "
                       f"`{hidden[0]}` makes when it runs, which the codemod does not replay")
        # (a layer without variables, dropout or flatten, adds none)
        entries = [e for e in entries if e.info.get("variables", True)]
        elements: List[cst.BaseElement] = []
        for entry in entries:
            handle = entry.handle
            if owner is not None and handle.startswith("self."):
                handle = f"{owner}.{handle[len('self.'):]}"
            if not handle and entry.info.get("global_step"):
                # made in a model function: eager code has one global step, this one
                elements.append(cst.Element(cst.parse_expression(
                    f"{rule._alias}.compat.v1.train.get_global_step()")))
            elif not handle:
                rule._fail(original, f"the collection holds {entry.name}, which is bound to no "
                           "name the codemod can use")
            elif entry.kind == "variable":
                elements.append(cst.Element(cst.parse_expression(handle)))
            else:
                elements.append(cst.StarredElement(cst.Attribute(
                    cst.parse_expression(handle), cst.Name(attr))))
        return cst.List(elements)

    # -- tf.train.Saver, the global step -------------------------------------
    def _saver(self, original: cst.Call, call: cst.Call) -> cst.BaseExpression:
        """``tf.train.Saver()`` saves TF1's global variables of that line; the eager
        Saver needs them listed: ``var_list=[...]``, what the collection holds here
        (the variables, the layers' variables, the global step). An optimizer's
        slots are not in the list: the v1 optimizer makes them at its first step,
        after this line, when it runs eagerly (what is left out is noted, and
        the Saver rule reports it)."""
        rule = self.rule
        if rule._class is not None:
            self.changed = bool(self.before)
            return call  # a Saver of an object: the Saver rule reports it
        args = bind(call, SAVER)
        slots = [f"tf.{api}" if api else f"the optimizer of line {rule.position(step)[0]}"
                 for step, api in rule._optimizer_steps if api not in NO_SLOTS]
        key = f"{rule._function.node.name.value if rule._function else ''}:{self.target or ''}"
        given = args.get("var_list")
        if given is not None and not is_none(given):
            if id(bind(original, SAVER).get("var_list")) in self._saver_lists:
                rule._facts.savers[key] = slots  # Saver(tf.global_variables())
                if slots:
                    rule.note_saver_slots(original, slots)
            self.changed = bool(self.before) or call is not original
            return call
        listed = self._listed(original, self.store.collection(None), "variables")
        rule._facts.savers[key] = slots
        if slots:
            rule.note_saver_slots(original, slots)
        if rule._saver_line is None:
            rule._saver_line = original
        rule.record_change(original, f"tf.train.Saver(): var_list= the {len(listed.elements)} "
                           "variable(s)/layer(s) TF1's GLOBAL_VARIABLES held here" + (
                               f" (not the slots of {', '.join(dict.fromkeys(slots))}: the "
                               "optimizer makes them at its first step)" if slots else ""))
        value = _kwarg("var_list", listed)
        rest = [a for a in call.args if not (a.keyword is not None and a.keyword.value == "var_list")]
        if rest:
            value = value.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        return call.with_changes(args=[value, *rest])

    def _global_step(self, api: str, original: cst.Call, call: cst.Call,
                     top: bool) -> cst.BaseExpression:
        """``tf.train.get_or_create_global_step()`` stays (it runs eagerly and hands
        back one global step, named ``global_step``); the store notes it, so that
        GLOBAL_VARIABLES and a Saver list it."""
        rule = self.rule
        if self.store.scope.name:
            rule._fail(original, f"`{code_of(original)}` in variable scope "
                       f"`{self.store.scope.name}`: TF1 names it {self.store.scope.name}/"
                       "global_step, eager code global_step")
        handle = self._own_handle(top, "global_step") or ""
        inline = not top and rule._class is None
        if inline:
            # made in an expression (``minimize(loss, global_step=tf.train.
            # get_or_create_global_step())``): a statement of its own before it, so that
            # the step that trains reads it, made once
            handle = rule.handle("global_step")
        entry, created = self.store.global_step(handle)
        if api == "train.create_global_step" and not created:
            rule._fail(original, "tf.train.create_global_step(): the global step already exists "
                       "(TF1 raises here)")
        if created and handle:
            entry.handle = handle
        if inline:
            if not created:  # the one made before: read it
                return cst.parse_expression(entry.handle) if entry.handle else call
            self.before.append(assign(handle, call))
            rule.record_change(original, f"`{code_of(original)}` made by a statement of its "
                               f"own, `{handle}`, before this one")
            return cst.Name(handle)
        self.changed = bool(self.before)
        return call


# ----------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------
def _constructor_args(call: cst.Call, params: Sequence[str], positional: int,
                      dropped: Sequence[str], name: Optional[cst.BaseExpression]) -> List[cst.Arg]:
    """The arguments of a ``tf.layers`` function call that its class takes, as the
    call wrote them (layout and comments kept): ``dropped`` ones go, positional ones
    past the class's ``positional`` count get their keyword, and ``name=`` holds
    ``name`` (the TF1 name; None: no name)."""
    out: List[cst.Arg] = []
    named = False
    for k, arg in enumerate(call.args):
        key = arg.keyword.value if arg.keyword is not None else params[k]
        if key == "name" and name is not None:
            out.append(arg.with_changes(value=name))
            named = True
            continue
        if key in dropped:
            continue
        if arg.keyword is None and params.index(key) > positional:
            arg = arg.with_changes(keyword=cst.Name(key), equal=cst.AssignEqual(
                cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
        out.append(arg)
    if name is not None and not named:
        out = appended(out, _kwarg("name", name))
    if out and not any(isinstance(a.comma, cst.Comma) and "\n" in code_of(a.comma)
                       for a in out):
        out[-1] = out[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return out


def _kwarg(name: str, value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(value, keyword=cst.Name(name),
                   equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))


def _call(func: str, positional: Sequence[cst.BaseExpression],
          keywords: Sequence[Tuple[str, cst.BaseExpression]]) -> cst.Call:
    args = [cst.Arg(v) for v in positional] + [_kwarg(k, v) for k, v in keywords]
    return cst.Call(func=cst.parse_expression(func), args=args)


def _bound_once(rule: Any, name: Optional[str]) -> bool:
    return name is not None and rule._assignments.get(name, 0) == 1
