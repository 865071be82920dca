"""Placeholders, ``feed_dict`` and training ops -> functions of the fed values.

A fed TF1 graph is a program that ``sess.run`` evaluates again at every call,
with the feeds of that call and the variables' values of that moment. Eager
code computes a tensor once, when its line runs (docs/tf1-vs-tf2.md, section 1). So, for a
file that builds a graph and then runs it in a session:

* variables, optimizers and learning-rate schedules stay where they are:
  created once (an optimizer created inline, ``tf.train.AdamOptimizer(lr)
  .minimize(loss)``, is hoisted into a name of its own: its slots and Adam's
  step counters must outlive one step);
* each distinct set of fetches becomes a function, placed just before the
  session, that recomputes exactly the graph statements those fetches depend
  on, from the fed values (its parameters are the placeholders it needs, each
  converted to the placeholder's dtype as a feed is; a
  ``placeholder_with_default`` parameter defaults to None and then to its
  default), and returns the fetched structure with NumPy values (``None``
  for a train op, as ``sess.run`` returns);
* ``opt.minimize(loss, var_list=VL)`` becomes
  ``opt.apply_gradients(zip(tf.gradients(loss, VL), VL))`` and
  ``opt.compute_gradients(loss, VL)`` becomes
  ``list(zip(tf.gradients(loss, VL), VL))``, with ``VL`` the explicit list
  (TF1's default: every trainable variable created before that line); the
  gradients rule then puts the tape around the forward statements. Train ops
  run after everything else the function computes, so a loss fetched with its
  train op is the loss before the update, as in TF1;
* ``sess.run(fetches, feed_dict={x: a})`` (and ``t.eval(feed_dict=...)``,
  ``op.run(feed_dict=...)``) becomes ``run_<fetches>(x=a)``.

The session itself, the initializer and fetches of plain variables are left
to the session rule. Anything the rule cannot follow is reported (TS107 for
feeds, TS108 for state changes) and the file keeps its compat form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst

from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.kinds import VARIABLE_MAKERS, KindMixin
from tapeshift.migrate.engine.toolkit.tf_names import all_names, fresh_name, tf_module_alias
from tapeshift.migrate.engine.toolkit.dataflow import Stmt, backward_slice, block_info, names_of
from tapeshift.migrate.engine.toolkit.walk import children, instance_test
from tapeshift.migrate.rules.contrib_slim import is_slim_call, slim_calls_only_in, spells

#: the option (in the shared scratch of one migration) that makes each step
#: function a ``tf.function``: it returns tensors, ``numpy_values`` converts them
TF_FUNCTION = "tf_function"

SESSIONS = frozenset({"Session", "InteractiveSession"})
PLACEHOLDERS = frozenset({"placeholder", "placeholder_with_default"})
TRAIN_METHODS = frozenset({"minimize", "apply_gradients", "compute_gradients"})
#: TF calls that create variables when the statement runs: such a call in a
#: statement that depends on a fed value would create new variables at every
#: step (docs/tf1-vs-tf2.md, section 4).
LAYER_PREFIXES = ("layers.", "keras.layers.", "contrib.")
#: State changes other than optimizer steps: not converted (yet).
ASSIGNS = frozenset({
    "assign", "assign_add", "assign_sub", "scatter_update", "scatter_add", "scatter_sub",
    "scatter_nd_update", "scatter_nd_add", "count_up_to",
})
GRAPH_ONLY = frozenset({
    "Print", "print", "py_func", "control_dependencies", "summary", "train.Saver",
    "FIFOQueue", "RandomShuffleQueue", "PaddingFIFOQueue", "train.batch",
    "train.shuffle_batch", "train.string_input_producer", "train.start_queue_runners",
    "train.Coordinator",
})
RANDOM_PREFIXES = ("random", "truncated_normal", "multinomial", "nn.dropout", "layers.dropout")
SEEDING = frozenset({"set_random_seed", "random.set_seed"})
TRAINABLE_LISTS = frozenset({"trainable_variables"})
GLOBAL_STEPS = frozenset({"train.get_or_create_global_step", "train.create_global_step"})
INITIALIZERS = frozenset({
    "global_variables_initializer", "initialize_all_variables",
    "local_variables_initializer", "initialize_local_variables",
    "variables_initializer", "initialize_variables",
})
#: Python literal -> the dtype TensorFlow gives it.
_LITERAL_DTYPES = {cst.Float: "float32", cst.Integer: "int32"}
# the analysis walk's per-node test (memoized isinstance: node classes are ABCs)
_is_call = instance_test(cst.Call)


class _Bail(Exception):
    """The file cannot be converted; the reason was reported."""


@dataclass
class _Run:
    """One ``sess.run`` (or ``.eval`` / ``.run``) in the session region."""
    call: cst.Call
    fetch: cst.BaseExpression
    feeds: List[Tuple[str, cst.BaseExpression]]
    names: List[str]
    feed_name: Optional[str] = None  # feed_dict=<name> of a dict the rule rewrites
    optional: List[str] = field(default_factory=list)  # fed by some bindings of it only
    function: str = ""


@dataclass
class _Step:
    name: str
    fetch: cst.BaseExpression
    names: List[str]
    statements: List[int] = field(default_factory=list)
    params: List[str] = field(default_factory=list)
    used: Set[str] = field(default_factory=set)  # params the statements read
    required: Set[str] = field(default_factory=set)


class FeedsToFunctions(KindMixin, TapeshiftCodemod):
    DESCRIPTION = "Turn fed graphs and training ops into functions of the fed values."
    RULE = "feeds"

    def __init__(self, context) -> None:
        super().__init__(context)
        self._block: Optional[cst.CSTNode] = None
        self._new_body: Optional[List[cst.CSTNode]] = None

    # ------------------------------------------------------------------
    def visit_Module(self, node: cst.Module) -> bool:
        try:
            self._analyse(node)
        except _Bail:
            self._new_body = None
        return False

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        if self._new_body is None:
            return updated_node
        if self._block is original_node:
            return updated_node.with_changes(body=self._new_body)
        block = self._block
        return updated_node.deep_replace(block, block.with_changes(body=self._new_body))

    # ------------------------------------------------------------------
    # analysis
    # ------------------------------------------------------------------
    def _bail(self, code: str, node: cst.CSTNode, message: str) -> None:
        self.report(code, node, message)
        raise _Bail()

    def _analyse(self, module: cst.Module) -> None:
        sessions: List[Tuple[cst.Call, List[cst.CSTNode]]] = []
        fed = False
        seeded = False

        def walk(n: cst.CSTNode, stack: List[cst.CSTNode]) -> None:
            nonlocal fed, seeded
            if _is_call(n):
                name = self.tf_api_name(n.func)
                if name in SESSIONS:
                    sessions.append((n, list(stack)))
                elif name in PLACEHOLDERS or name == "sparse_placeholder":
                    fed = True
                elif name in SEEDING:
                    seeded = True
                elif isinstance(n.func, cst.Attribute) and n.func.attr.value in TRAIN_METHODS:
                    fed = True
                for arg in n.args:
                    if arg.keyword is not None and arg.keyword.value == "feed_dict":
                        fed = True
            stack.append(n)
            for child in children(n):
                walk(child, stack)
            stack.pop()

        walk(module, [])
        if not sessions or not fed:
            return  # nothing fed or trained: the session rule's business
        self._seeded = seeded
        self._tf_function = bool(self.shared.get(TF_FUNCTION))
        self._alias = tf_module_alias(module)
        call, stack = sessions[0]
        if self._alias is None:
            self._bail("TS107", call, "fed graphs are converted only in files that "
                       "`import tensorflow as <name>`")
        if len(sessions) > 1:
            self._bail("TS107", sessions[1][0], "more than one Session: the codemod converts "
                       "fed graphs run by one session")
        block, index = self._session_block(call, stack)
        if block is not module and self._placeholders_outside(module, block):
            self._bail("TS107", call, "the graph is built outside the block that opens the "
                       "Session (module level vs a function or the `__main__` guard): "
                       "not converted")
        self._block = block
        body = list(block.body)
        self._kinds, self._elements = self.infer_kinds(module)
        self._classify(body, index)
        runs = self._runs(body, index, module)
        steps = self._steps(runs, body, index)
        self._check_free_uses(module, body, index, runs)
        taken = all_names(module)
        self._new_body = self._rewrite(body, index, runs, steps, taken)
        self.shared.setdefault("step_functions", set()).update(s.name for s in steps)
        if self._slim_only_in_templates(module) and not spells(self.context, module, "batch_norm"):
            # (tf-slim 1.1.0's batch_norm fails on TF >= 2.16 in any mode: TS118 says how)
            # the contrib rule's TS118 (slim keeps graph mode) no longer applies
            self.shared.setdefault("resolved", set()).add("TS118")

    def _placeholders_outside(self, module: cst.Module, block: cst.CSTNode) -> bool:
        owner = self
        found = False

        class _V(cst.CSTVisitor):
            def visit_IndentedBlock(self, node: cst.IndentedBlock) -> bool:
                return node is not block

            def visit_Call(self, call: cst.Call) -> None:
                nonlocal found
                found = found or owner.tf_api_name(call.func) in PLACEHOLDERS

        module.visit(_V())
        return found

    def _session_block(self, call: cst.Call, stack: List[cst.CSTNode]):
        """(block, index of the statement opening the session)."""
        for k in range(len(stack) - 1, -1, -1):
            n = stack[k]
            if isinstance(n, (cst.SimpleStatementLine, cst.With)) and k > 0:
                parent = stack[k - 1]
                owner = stack[k - 2] if k > 1 else None
                if isinstance(parent, cst.Module) or (
                        isinstance(parent, cst.IndentedBlock)
                        and isinstance(owner, (cst.FunctionDef, cst.If))):
                    if isinstance(owner, cst.If) and "__name__" not in code_of(owner.test):
                        break
                    return parent, parent.body.index(n)
                break
        self._bail("TS107", call, "the Session is opened inside a block the codemod cannot "
                   "follow (graph and session must share the module, a function or the "
                   "`__main__` guard)")

    # -- the graph region -------------------------------------------------
    def _classify(self, body: List[cst.CSTNode], end: int) -> None:
        """Sort the statements before the session: placeholders, variables,
        optimizers, graph computations (recomputed per step) and the rest."""
        self._stmts: List[Stmt] = block_info(body)
        self._placeholders: Dict[str, cst.Call] = {}
        self._variables: List[str] = []  # trainable, in creation order
        self._var_names: Set[str] = set()
        self._graph: Set[int] = set()
        self._train: Set[int] = set()  # statements whose value is a train op
        self._hoist: Dict[int, Tuple[str, cst.BaseExpression, cst.Call]] = {}
        self._optimizers: Set[str] = set()
        self._schedules: Set[str] = set()
        self._rewrites: Dict[int, cst.CSTNode] = {}
        self._stateful_calls: Dict[int, List[cst.Call]] = {}
        self._randoms: Dict[int, List[cst.Call]] = {}
        self._builders: Dict[str, cst.FunctionDef] = {}  # model functions making variables
        self._templates: Dict[str, int] = {}  # builder -> first statement calling it
        self._plain_builders: Dict[str, cst.Call] = {}  # functions calling tf.Variable
        self._created_at: Dict[str, int] = {}  # trainable variable -> statement creating it
        self._unnamed: Dict[int, cst.Call] = {}  # trainable variables bound to no name
        tainted: Set[str] = set()
        for i in range(end):
            st = self._stmts[i]
            node = body[i]
            value, target = self._assignment(node)
            api = self.tf_api_name(value.func) if isinstance(value, cst.Call) else None
            if api in PLACEHOLDERS and target is not None:
                self._placeholders[target] = value
                tainted.add(target)
                continue
            if api == "sparse_placeholder":
                self._bail("TS107", value, "tf.sparse_placeholder: feeding sparse values is "
                           "not converted")
            if isinstance(node, cst.FunctionDef):
                self._builder(node)
                continue
            if isinstance(node, cst.ClassDef):
                continue  # checked with the free uses
            makes_var = self._makes_variable(node)
            if makes_var:
                if st.reads & (tainted - self._var_names):
                    self._bail("TS107", node, "a variable whose initial value depends on a "
                               "fed or computed tensor is not converted")
                tainted |= st.writes
                self._var_names |= st.writes
                self._note_variables(i, node)
                continue
            if api is not None and api.startswith("train.") and api.endswith("Optimizer"):
                if st.reads & (tainted - self._var_names):
                    self._bail("TS108", node, "an optimizer built from a fed or computed "
                               "tensor (a placeholder learning rate) is not converted")
                self._optimizers |= st.writes
                continue
            if api is not None and (api.startswith("train.") and api.endswith("_decay")
                                    or api in ("train.piecewise_constant",)):
                if st.reads & (tainted - self._var_names):
                    self._bail("TS108", node, "a learning-rate schedule of a fed or computed "
                               "tensor is not converted")
                self._schedules |= st.writes
                continue
            if api in INITIALIZERS:
                continue
            if _names_only(value) and names_of(value)[0] <= self._var_names:
                continue  # a list of variables (var_list): nothing to recompute
            if not st.reads & tainted:
                continue  # does not depend on anything fed or mutable: stays
            if not isinstance(node, cst.SimpleStatementLine) or target is None and not (
                    len(node.body) == 1 and isinstance(node.body[0], cst.Assign)):
                kind = type(node).__name__
                self._bail("TS107", node, f"graph code in a `{kind}` statement that is not a "
                           "plain assignment (it would run once, not at each sess.run)")
            self._graph_statement(i, node)
            tainted |= st.writes

    def _assignment(self, node: cst.CSTNode):
        """(value, single target name) of ``name = value``; (value, None) for
        other single assignments; (None, None) otherwise."""
        if isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1:
            small = node.body[0]
            if isinstance(small, cst.Assign):
                if len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
                    return small.value, small.targets[0].target.value
                return small.value, None
        return None, None

    def _makes_variable(self, node: cst.CSTNode) -> bool:
        found = False
        owner = self

        class _V(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                nonlocal found
                name = owner.tf_api_name(call.func)
                if name in VARIABLE_MAKERS or name in GLOBAL_STEPS:
                    found = True

        node.visit(_V())
        return found

    def _slim_only_in_templates(self, module: cst.Module) -> bool:
        """Every tf-slim layer call sits in a function wrapped in make_template."""
        wrapped = {id(self._builders[t]) for t in self._templates}
        return bool(wrapped) and slim_calls_only_in(self, module, lambda fn: id(fn) in wrapped)

    def _builder(self, node: cst.FunctionDef) -> None:
        """Note a function that creates variables through variable scopes (tf-slim
        layers, get_variable): wrapped in make_template, it creates them once."""
        makes = False
        plain: Optional[cst.Call] = None
        owner = self

        class _V(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                nonlocal makes, plain
                name = owner.tf_api_name(call.func) or ""
                if is_slim_call(owner, call) or name == "get_variable" \
                        or name.startswith("layers."):
                    makes = True
                elif name in VARIABLE_MAKERS:
                    plain = call

        node.body.visit(_V())
        if plain is not None:
            self._plain_builders[node.name.value] = plain
        elif makes:
            self._builders[node.name.value] = node

    def _note_variables(self, i: int, node: cst.CSTNode) -> None:
        """Trainable variables the statement creates, in order: ``name =
        tf.Variable(...)`` anywhere in it (a ``with`` block too) is listed by
        name; one not bound to a name (``Ws = [tf.Variable(...), ...]``) is
        noted, so TF1's default var_list cannot be written out."""
        owner = self
        named: Set[int] = set()

        class _V(cst.CSTVisitor):
            def visit_Assign(self, a: cst.Assign) -> None:
                if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name) \
                        and isinstance(a.value, cst.Call) \
                        and owner.tf_api_name(a.value.func) in VARIABLE_MAKERS:
                    named.add(id(a.value))
                    if owner._trainable(a.value, owner.tf_api_name(a.value.func)):
                        owner._variables.append(a.targets[0].target.value)
                        owner._created_at[a.targets[0].target.value] = i

            def visit_Call(self, call: cst.Call) -> None:
                api = owner.tf_api_name(call.func)
                if api in VARIABLE_MAKERS and id(call) not in named \
                        and owner._trainable(call, api):
                    owner._unnamed.setdefault(i, call)

        node.visit(_V())

    @staticmethod
    def _trainable(call: cst.Call, api: Optional[str]) -> bool:
        # trainable= by keyword, or by position: tf.Variable(initial_value, trainable),
        # tf.get_variable(name, shape, dtype, initializer, regularizer, trainable)
        position = 5 if api == "get_variable" else 1
        for k, arg in enumerate(call.args):
            if arg.keyword is not None and arg.keyword.value == "trainable" \
                    or arg.keyword is None and k == position:
                return isinstance(arg.value, cst.Name) and arg.value.value == "True"
        return True

    def _graph_statement(self, i: int, node: cst.SimpleStatementLine) -> None:
        """Check and record one statement recomputed in the step functions."""
        self._graph.add(i)
        calls: List[Tuple[cst.Call, List[cst.CSTNode]]] = []

        def walk(n: cst.CSTNode, stack: List[cst.CSTNode]) -> None:
            if isinstance(n, cst.Call):
                calls.append((n, list(stack)))
            if isinstance(n, (cst.Lambda, cst.FunctionDef)):
                return
            stack.append(n)
            for child in children(n):
                walk(child, stack)
            stack.pop()

        walk(node, [])
        small = node.body[0]
        for call, stack in calls:
            if isinstance(call.func, cst.Name) and call.func.value in self._builders:
                self._templates.setdefault(call.func.value, i)
                continue
            if isinstance(call.func, cst.Name) and call.func.value in self._plain_builders:
                self._bail("TS107", call, f"`{call.func.value}` creates a tf.Variable at every "
                           "call (make_template shares only variables made through variable "
                           "scopes: get_variable, tf-slim layers): not converted")
            if is_slim_call(self, call):
                self._bail("TS107", call, f"`{code_of(call.func)}` creates variables from a fed "
                           "value outside a model function; put the layers in a function (the "
                           "codemod then shares its variables with tf.compat.v1.make_template)")
            name = self.tf_api_name(call.func) or ""
            if name in VARIABLE_MAKERS or name.startswith(LAYER_PREFIXES) \
                    or name in GLOBAL_STEPS:
                self._bail("TS107", call, f"tf.{name} creates variables from a fed value; "
                           "recomputing it at each step would create new variables "
                           "(docs/tf1-vs-tf2.md, section 4): not converted")
            if name in ASSIGNS or name.split(".")[0] in GRAPH_ONLY or name in GRAPH_ONLY:
                self._bail("TS108", call, f"tf.{name} in fed graph code is not converted")
            if name.startswith(RANDOM_PREFIXES):
                self._randoms.setdefault(i, []).append(call)
            if name in ("group", "no_op") and isinstance(small, cst.Assign) \
                    and small.value is call:
                # train = tf.group(train_a, train_b): an op, run after what it groups
                self._train.add(i)
            if isinstance(call.func, cst.Attribute):
                attr = call.func.attr.value
                if attr in ASSIGNS:
                    self._bail("TS108", call, f"`.{attr}(...)` in fed graph code is not converted")
                if attr in TRAIN_METHODS:
                    self._train_call(i, node, small, call, stack)

    def _train_call(self, i: int, node, small, call: cst.Call, stack) -> None:
        attr = call.func.attr.value
        receiver = call.func.value
        if not (isinstance(small, cst.Assign) and small.value is call):
            self._bail("TS108", call, f"`.{attr}(...)` is converted only as the whole "
                       "right-hand side of an assignment")
        if isinstance(receiver, cst.Name) and receiver.value in self._optimizers:
            opt: cst.BaseExpression = receiver
        elif isinstance(receiver, cst.Call) and (self.tf_api_name(receiver.func) or "") \
                .startswith("train.") and (self.tf_api_name(receiver.func) or "").endswith("Optimizer"):
            if names_of(receiver)[0] & (set(self._placeholders) | self._names_of_graph()):
                self._bail("TS108", receiver, "an optimizer built from a fed or computed tensor "
                           "is not converted")
            target = small.targets[0].target
            base = "optimizer"
            if isinstance(target, cst.Name):
                stem = target.value
                for suffix in ("train_op", "_op", "_train", "train_step", "_step"):
                    stem = stem[: -len(suffix)] if stem.endswith(suffix) else stem
                base = f"{stem.rstrip('_')}_optimizer" if stem.rstrip("_") else "optimizer"
            opt = cst.Name(base)  # the final fresh name is chosen in _rewrite
            self._hoist[i] = (base, receiver, call)
        else:
            self._bail("TS108", call, f"`{code_of(call.func)}(...)`: the optimizer is not a "
                       "tf.train optimizer created once in this block")
        args = self._call_args(call, attr)
        if attr == "apply_gradients":
            if i in self._hoist:
                self._rewrites[i] = node.with_changes(body=[small.with_changes(
                    value=call.with_changes(func=call.func.with_changes(value=opt)))])
            self._train.add(i)
            return
        loss = args.pop("loss", None)
        if loss is None:
            self._bail("TS108", call, f"`.{attr}(...)` without a loss")
        var_list = self._var_list(args.pop("var_list", None), call, i)
        grad_loss = args.pop("grad_loss", None)
        grads_args = [cst.Arg(loss), cst.Arg(var_list)]
        if grad_loss is not None:
            grads_args.append(cst.Arg(grad_loss))
        grads = cst.Call(func=cst.parse_expression(f"{self._alias}.gradients"), args=grads_args)
        pairs = cst.Call(func=cst.Name("zip"), args=[cst.Arg(grads), cst.Arg(var_list)])
        dropped = sorted(k for k in args if k in ("gate_gradients", "aggregation_method",
                                                   "colocate_gradients_with_ops"))
        unknown = sorted(k for k in args if k not in dropped and k not in ("global_step", "name"))
        if unknown:
            self._bail("TS108", call, f"`.{attr}(...)` with {', '.join(unknown)} is not converted")
        if attr == "minimize":
            keep = [cst.Arg(args[k], keyword=cst.Name(k),
                            equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
                    for k in ("global_step", "name") if k in args]
            new = cst.Call(func=cst.Attribute(value=opt, attr=cst.Name("apply_gradients")),
                           args=[cst.Arg(pairs), *keep])
            self._train.add(i)
        else:
            if "global_step" in args or "name" in args:
                self._bail("TS108", call, "compute_gradients(global_step=/name=) is not converted")
            new = cst.Call(func=cst.Name("list"), args=[cst.Arg(pairs)])
        self._rewrites[i] = node.with_changes(body=[small.with_changes(value=new)])
        line, _ = self.position(call)
        self.record_change(call, f"`.{attr}(...)` -> " + (
            "`apply_gradients` of the tape's gradients" if attr == "minimize"
            else "the tape's (gradient, variable) pairs") + (
            f"; dropped {', '.join(dropped)} (no meaning in eager mode)" if dropped else ""))

    def _names_of_graph(self) -> Set[str]:
        out: Set[str] = set()
        for j in self._graph:
            out |= self._stmts[j].writes
        return out

    def _call_args(self, call: cst.Call, attr: str) -> Dict[str, cst.BaseExpression]:
        params = {
            "minimize": ("loss", "global_step", "var_list", "gate_gradients",
                         "aggregation_method", "colocate_gradients_with_ops", "name", "grad_loss"),
            "compute_gradients": ("loss", "var_list", "gate_gradients", "aggregation_method",
                                  "colocate_gradients_with_ops", "grad_loss"),
            "apply_gradients": ("grads_and_vars", "global_step", "name"),
        }[attr]
        out: Dict[str, cst.BaseExpression] = {}
        for k, arg in enumerate(call.args):
            if arg.star:
                self._bail("TS108", call, f"`.{attr}(*args)` is not converted")
            key = arg.keyword.value if arg.keyword is not None else (
                params[k] if k < len(params) else None)
            if key is None or key not in params:
                self._bail("TS108", call, f"`.{attr}(...)` called with unknown arguments")
            out[key] = arg.value
        return out

    def _var_list(self, given: Optional[cst.BaseExpression], call: cst.Call,
                  i: int) -> cst.BaseExpression:
        created = [v for v in self._variables if self._created_at[v] < i]
        unnamed = [call for j, call in self._unnamed.items() if j < i]
        templates = [t for t, j in self._templates.items() if j < i]
        if given is None or (isinstance(given, cst.Call)
                             and self.tf_api_name(given.func) in TRAINABLE_LISTS
                             and not given.args):
            if unnamed:
                line, _ = self.position(unnamed[0])
                self._bail("TS108", call, "TF1's default var_list includes a variable bound to "
                           f"no name (line {line}): pass var_list explicitly")
            if templates and (created or len(templates) > 1):
                self._bail("TS108", call, "the default var_list mixes the variables of "
                           f"`{templates[0]}` with others: pass var_list explicitly")
            if templates:
                self.record_change(call, f"var_list: the trainable variables of `{templates[0]}`")
                return cst.Attribute(value=cst.Name(templates[0]),
                                     attr=cst.Name("trainable_variables"))
            if not created:
                self._bail("TS108", call, "no trainable variable is created before this line")
            self.record_change(call, "var_list: the trainable variables created before this "
                               f"line, [{', '.join(created)}]")
            return cst.List([cst.Element(cst.Name(v)) for v in created])
        if isinstance(given, (cst.List, cst.Tuple)) and all(
                isinstance(e.value, cst.Name) and e.value.value in self._var_names
                for e in given.elements):
            return cst.List([cst.Element(e.value) for e in given.elements])
        if isinstance(given, cst.Name) and all(
                n in self._var_names for n in self._elements.get(given.value, [None])):
            return given
        self._bail("TS108", call, f"var_list `{code_of(given)}` is not a list of this "
                   "file's variables the codemod can read (list them explicitly)")
        raise AssertionError  # unreachable

    # -- the session region -----------------------------------------------
    def _runs(self, body: List[cst.CSTNode], start: int, module: cst.Module) -> List[_Run]:
        graph_names = self._names_of_graph() | set(self._placeholders) | self._schedules
        session = self._session_name(body[start])
        runs: List[_Run] = []
        self._feed_dicts = self._named_feed_dicts(body[start:])

        def walk(n: cst.CSTNode) -> None:
            if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute):
                recv, attr = n.func.value, n.func.attr.value
                if attr == "run" and isinstance(recv, cst.Name) and recv.value == session:
                    run = self._run_of(n, n.args, ("fetches", "feed_dict", "options",
                                                   "run_metadata"), None)
                    if run is not None and (run.feeds or set(run.names) & graph_names):
                        runs.append(run)
                    return
                if attr in ("eval", "run") and isinstance(recv, cst.Name) \
                        and recv.value in graph_names:
                    run = self._run_of(n, n.args, ("feed_dict", "session"), recv)
                    if run is not None:
                        runs.append(run)
                    return
            for child in children(n):
                walk(child)

        for stmt in body[start:]:
            walk(stmt)
        for stmt in body[:start]:
            for run in self._collect_session_runs(stmt, session):
                self._bail("TS107", run, "sess.run before the session is opened (in a function "
                           "defined earlier) is not converted")
        return runs

    @staticmethod
    def _collect_session_runs(stmt: cst.CSTNode, session: Optional[str]) -> List[cst.Call]:
        found: List[cst.Call] = []

        class _V(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                f = call.func
                if isinstance(f, cst.Attribute) and f.attr.value == "run" \
                        and isinstance(f.value, cst.Name) and f.value.value == session:
                    found.append(call)

        if session:
            stmt.visit(_V())
        return found

    def _session_name(self, stmt: cst.CSTNode) -> Optional[str]:
        if isinstance(stmt, cst.With):
            item = stmt.items[0]
            if item.asname is not None and isinstance(item.asname.name, cst.Name):
                return item.asname.name.value
            return None
        value, target = self._assignment(stmt)
        return target

    def _run_of(self, call: cst.Call, args: Sequence[cst.Arg], params: Tuple[str, ...],
                receiver: Optional[cst.Name]) -> Optional[_Run]:
        fetch: Optional[cst.BaseExpression] = receiver
        feed: Optional[cst.BaseExpression] = None
        for k, arg in enumerate(args):
            key = arg.keyword.value if arg.keyword is not None else (
                params[k] if k < len(params) and not arg.star else None)
            if key == "fetches":
                fetch = arg.value
            elif key == "feed_dict":
                feed = arg.value
            elif key == "session":
                continue
            else:
                self._bail("TS107", call, f"`{code_of(call.func)}(...)` with "
                           f"`{code_of(arg)}` is not converted")
        if fetch is None:
            self._bail("TS107", call, "sess.run without fetches")
        names = self._fetch_names(fetch, call)
        if names is None:
            return None
        feeds: List[Tuple[str, cst.BaseExpression]] = []
        if isinstance(feed, cst.Name) and feed.value in self._feed_dicts:
            # feed = {x: a, y: b} ... sess.run(f, feed_dict=feed) -> run_f(**feed)
            bindings = self._feed_dicts[feed.value]
            common = set.intersection(*(set(_dict_keys(d)) for d in bindings))
            every = [k for d in bindings for k in _dict_keys(d)]
            run = _Run(call, fetch, [(k, None) for k in dict.fromkeys(every) if k in common],
                       names, feed_name=feed.value)
            run.optional = [k for k in dict.fromkeys(every) if k not in common]
            return run
        if feed is not None:
            if not isinstance(feed, cst.Dict):
                self._bail("TS107", feed, f"feed_dict `{code_of(feed)}` is not a dict literal "
                           "(write the feeds at the call)")
            for el in feed.elements:
                if not isinstance(el, cst.DictElement) or not isinstance(el.key, cst.Name) \
                        or el.key.value not in self._placeholders:
                    key = code_of(el.key) if isinstance(el, cst.DictElement) else "**"
                    self._bail("TS107", el, f"feeding `{key}`, which is not a placeholder of "
                               "this graph, is not converted")
                feeds.append((el.key.value, el.value))
        return _Run(call, fetch, feeds, names)

    def _named_feed_dicts(self, stmts: Sequence[cst.CSTNode]) -> Dict[str, List[cst.Dict]]:
        """Names bound only to dict literals keyed by placeholders and used only
        as ``feed_dict=name``: they become keyword dicts, ``run_f(**name)``."""
        bindings: Dict[str, List[cst.Dict]] = {}
        other: Set[str] = set()
        uses: Dict[str, int] = {}
        placeholders = set(self._placeholders)

        class _V(cst.CSTVisitor):
            def visit_Assign(self, node: cst.Assign) -> None:
                for t in node.targets:
                    if isinstance(t.target, cst.Name):
                        value = node.value
                        if isinstance(value, cst.Dict) and value.elements and all(
                                isinstance(e, cst.DictElement) and isinstance(e.key, cst.Name)
                                and e.key.value in placeholders for e in value.elements) \
                                and len(node.targets) == 1:
                            bindings.setdefault(t.target.value, []).append(value)
                        else:
                            other.add(t.target.value)

            def visit_Arg(self, node: cst.Arg) -> None:
                if node.keyword is not None and node.keyword.value == "feed_dict" \
                        and isinstance(node.value, cst.Name):
                    uses[node.value.value] = uses.get(node.value.value, 0) + 1

        for stmt in stmts:
            stmt.visit(_V())
        loads: Dict[str, int] = {}
        for stmt in stmts:
            for n in _loaded_names(stmt):
                loads[n.value] = loads.get(n.value, 0) + 1
        return {name: dicts for name, dicts in bindings.items()
                if name not in other and loads.get(name, 0) == uses.get(name, 0)}

    def _fetch_names(self, fetch: cst.BaseExpression, call: cst.Call) -> Optional[List[str]]:
        if isinstance(fetch, cst.Name):
            return [fetch.value]
        if isinstance(fetch, (cst.List, cst.Tuple)):
            out: List[str] = []
            for el in fetch.elements:
                sub = self._fetch_names(el.value, call) if not isinstance(
                    el, cst.StarredElement) else None
                if sub is None:
                    self._bail("TS107", call, f"the fetches `{code_of(fetch)}` are not names, "
                               "lists or dicts of names")
                out.extend(sub)
            return out
        if isinstance(fetch, cst.Dict):
            out = []
            for el in fetch.elements:
                if not isinstance(el, cst.DictElement):
                    self._bail("TS107", call, "`**` in a fetch dict")
                sub = self._fetch_names(el.value, call)
                if sub is None:
                    self._bail("TS107", call, f"the fetches `{code_of(fetch)}` are not names, "
                               "lists or dicts of names")
                out.extend(sub)
            return out
        if isinstance(fetch, cst.Call) and self.tf_api_name(fetch.func) in INITIALIZERS:
            return None
        self._bail("TS107", call, f"the fetches `{code_of(fetch)}` are not names, lists or "
                   "dicts of names")
        return None

    def _steps(self, runs: List[_Run], body: List[cst.CSTNode], end: int) -> List[_Step]:
        steps: Dict[str, _Step] = {}
        for run in runs:
            key = " ".join(code_of(run.fetch).split())
            step = steps.get(key)
            if step is None:
                step = _Step(name="", fetch=run.fetch, names=run.names)
                fetched = set(run.names) - self._var_names
                needed = backward_slice(self._stmts, fetched, end)
                step.statements = sorted(needed & self._graph)
                used = set()
                for j in step.statements:
                    used |= self._stmts[j].reads
                used |= fetched
                step.params = [p for p in self._placeholders if p in used]
                step.used = set(step.params)
                step.required = {p for p in step.params
                                 if self.tf_api_name(self._placeholders[p].func) == "placeholder"}
                steps[key] = step
            fed = {name for name, _ in run.feeds}
            missing = sorted(step.required - fed)
            for name in run.optional:
                if name in step.required:
                    self._bail("TS107", run.call, f"placeholder `{name}` is needed by these "
                               f"fetches but not every value of `{run.feed_name}` feeds it")
            if missing:
                self._bail("TS107", run.call, f"placeholder `{missing[0]}` is needed by these "
                           "fetches but not fed (TF1 raises here)")
            for name in [*fed, *run.optional]:
                if name not in step.params:
                    step.params.append(name)  # fed but unused: still evaluated, as in TF1
            run.function = key
        order = list(self._placeholders)
        for step in steps.values():
            step.params.sort(key=order.index)
        return list(steps.values())

    def _check_free_uses(self, module: cst.Module, body: List[cst.CSTNode], start: int,
                         runs: List[_Run]) -> None:
        """Names that leave module level (placeholders, graph values) may be read
        only where a run fetches or feeds them."""
        moved = self._names_of_graph() | set(self._placeholders)
        allowed: Set[int] = set()
        for run in runs:
            for n in _names_in(run.fetch):
                allowed.add(id(n))
            for arg in run.call.args:
                if isinstance(arg.value, cst.Dict):
                    for el in arg.value.elements:
                        if isinstance(el, cst.DictElement):
                            allowed.add(id(el.key))
            if isinstance(run.call.func, cst.Attribute) and isinstance(run.call.func.value, cst.Name):
                allowed.add(id(run.call.func.value))
        for dicts in self._feed_dicts.values():
            for d in dicts:
                for el in d.elements:
                    allowed.add(id(el.key))
        stores: Set[str] = set()
        for stmt in body[start:]:
            stores |= names_of(stmt)[1]
        for i, stmt in enumerate(body):
            if i < start and (i in self._graph or self._placeholder_stmt(i)):
                continue
            for name in _loaded_names(stmt):
                if name.value in moved and id(name) not in allowed and name.value not in stores:
                    where = "after the graph is run" if i >= start else "outside the graph code"
                    self._bail("TS107", name, f"`{name.value}` is a graph value used {where} "
                               "other than by sess.run: not converted")

    def _placeholder_stmt(self, i: int) -> bool:
        return bool(self._stmts[i].writes & set(self._placeholders)) and not (
            self._stmts[i].writes - set(self._placeholders))

    # ------------------------------------------------------------------
    # rewriting
    # ------------------------------------------------------------------
    def _rewrite(self, body: List[cst.CSTNode], start: int, runs: List[_Run],
                 steps: List[_Step], taken: Set[str]) -> List[cst.CSTNode]:
        taken = set(taken)
        hoisted: Dict[int, cst.CSTNode] = {}
        for i, (base, expr, call) in sorted(self._hoist.items()):
            name = fresh_name(base, taken)
            taken.add(name)
            hoisted[i] = cst.SimpleStatementLine(
                [cst.Assign([cst.AssignTarget(cst.Name(name))], expr)],
                leading_lines=body[i].leading_lines)
            node = self._rewrites.get(i, body[i])
            small = node.body[0]
            new_call = small.value
            if isinstance(new_call.func, cst.Attribute):
                new_call = new_call.with_changes(func=new_call.func.with_changes(value=cst.Name(name)))
            self._rewrites[i] = node.with_changes(body=[small.with_changes(value=new_call)])
            self.record_change(body[i], f"optimizer `{code_of(expr)}` created once, as `{name}`")
        by_key: Dict[str, str] = {}
        for step in steps:
            base = "run_" + "_".join(dict.fromkeys(step.names))
            step.name = fresh_name(base[:60], taken)
            taken.add(step.name)
            by_key[" ".join(code_of(step.fetch).split())] = step.name
        for run in runs:
            run.function = by_key[run.function]
        self._run_calls = {run.call: run for run in runs}

        out: List[cst.CSTNode] = []
        gap = False  # a removed statement's blank line goes to the next one kept
        for i in range(start):
            if i in hoisted:
                out.append(hoisted[i])
            if i in self._graph or self._placeholder_stmt(i):
                gap = gap or any(ln.comment is None for ln in body[i].leading_lines)
                continue
            stmt = body[i]
            if gap and out and not stmt.leading_lines:
                stmt = stmt.with_changes(leading_lines=[cst.EmptyLine(indent=False)])
            gap = False
            out.append(stmt)
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value in self._templates:
                name = stmt.name.value
                out.append(cst.parse_statement(
                    f'{name} = {self._alias}.compat.v1.make_template("{name}", {name})'))
                self.record_change(stmt, f"`{name}` wrapped in tf.compat.v1.make_template: its "
                                   "variables are created at the first call and reused after "
                                   "(docs/tf1-vs-tf2.md, section 4); needs tf-slim (pip install tf-slim)")
        defs = [self._function(step, body) for step in steps]
        wrap = None
        if self._tf_function and defs:
            wrap = fresh_name("numpy_values", taken)
            taken.add(wrap)
            defs.insert(0, cst.parse_statement(
                f"def {wrap}(fetched):\n"
                f'    """What sess.run returned: NumPy values, None for an op."""\n'
                f"    return {self._alias}.nest.map_structure("
                f"lambda t: None if t is None else t.numpy(), fetched)\n"))
        for k, d in enumerate(defs):
            lines = [cst.EmptyLine(indent=False)] * (2 if k or start else 0) if self._block_is_module() \
                else [cst.EmptyLine(indent=False)] if k or start else []
            out.append(d.with_changes(leading_lines=lines))
        named = [d for run in runs if run.feed_name for d in self._feed_dicts[run.feed_name]]
        rest = [stmt.visit(_RunReplacer(self._run_calls, wrap, named)) for stmt in body[start:]]
        if rest and defs:
            first = rest[0]
            blank = 2 if self._block_is_module() else 1
            rest[0] = first.with_changes(leading_lines=[
                *([cst.EmptyLine(indent=False)] * blank),
                *[ln for ln in first.leading_lines if ln.comment is not None]])
        out.extend(rest)
        for i in sorted(self._graph | {j for j in range(start) if self._placeholder_stmt(j)}):
            if not any(i in s.statements for s in steps) and not self._placeholder_stmt(i):
                self.record_change(body[i], "graph code no sess.run fetches: removed")
        for i in self._randoms:
            for call in self._randoms[i]:
                if self._seeded:
                    self.report("TS113", call, "seeded random ops give a different stream in "
                                "eager TF2 (tf.set_random_seed vs tf.random.set_seed)")
                    raise _Bail()
                self.report("TS116", call, "random op recomputed at each step: the legacy run "
                            "and the migrated run draw different numbers", changes_numbers=True)
        for p, call in self._placeholders.items():
            self.record_change(call, f"placeholder `{p}` -> a parameter of the step functions")
        for run in runs:
            fed = f"**{run.feed_name}" if run.feed_name else ", ".join(f"{n}=..." for n, _ in run.feeds)
            self.record_change(run.call, f"`{' '.join(code_of(run.call.func).split())}(...)` -> "
                               f"`{run.function}({fed})`")
        return out

    def _block_is_module(self) -> bool:
        return isinstance(self._block, cst.Module)

    def _function(self, step: _Step, body: List[cst.CSTNode]) -> cst.FunctionDef:
        params = []
        for p in step.params:
            default = None if p in step.required else cst.Name("None")
            params.append(cst.Param(cst.Name(p), default=default,
                                    equal=cst.AssignEqual(cst.SimpleWhitespace(""),
                                                          cst.SimpleWhitespace(""))
                                    if default is not None else cst.MaybeSentinel.DEFAULT))
        lines: List[cst.BaseStatement] = []
        lines.append(cst.SimpleStatementLine([cst.Expr(cst.SimpleString(
            f'"""sess.run({" ".join(code_of(step.fetch).split())}) as a function of the '
            'fed values."""'))]))
        for p in step.params:
            if p in step.used:  # a placeholder fed but never read stays as passed
                lines.extend(self._conversion(p, self._placeholders[p]))
        plain = [j for j in step.statements if j not in self._train]
        train = [j for j in step.statements if j in self._train]
        read_later: Set[str] = set()
        for j in train:
            read_later |= self._stmts[j].reads
        self._snapshots = {}
        for n, j in enumerate(plain + train):
            if j == (train[0] if train else None):
                # a tensor fetched with the train op is its value before the update
                for name in dict.fromkeys(step.names):
                    if name in self._schedules:
                        self._snapshots[name] = f"{name}_value"
                        lines.append(cst.parse_statement(f"{name}_value = {name}()"))
            node = self._rewrites.get(j, body[j]).deep_clone()
            if j in self._train and not (self._stmts[j].writes & read_later):
                small = node.body[0]
                node = node.with_changes(body=[cst.Expr(small.value)])  # its value is never read
            keep = [ln for ln in node.leading_lines if ln.comment is not None]
            if n and any(ln.comment is None for ln in node.leading_lines) and not keep:
                keep = [cst.EmptyLine(indent=False)]
            lines.append(node.with_changes(leading_lines=keep))
        lines.append(cst.SimpleStatementLine([cst.Return(self._returned(step.fetch))]))
        decorators = [cst.Decorator(cst.parse_expression(f"{self._alias}.function"))] \
            if self._tf_function else []
        return cst.FunctionDef(
            name=cst.Name(step.name),
            params=cst.Parameters(params=params),
            body=cst.IndentedBlock(body=lines),
            decorators=decorators,
        )

    def _conversion(self, p: str, call: cst.Call) -> List[cst.BaseStatement]:
        tf = self._alias
        api = self.tf_api_name(call.func)
        if api == "placeholder":
            dtype = _arg(call, 0, "dtype")
            conv = f"{p} = {tf}.convert_to_tensor({p}, {code_of(dtype)})" if dtype is not None \
                else f"{p} = {tf}.convert_to_tensor({p})"
            return [cst.parse_statement(conv)]
        default = _arg(call, 0, "input")
        dtype = _literal_dtype(default)
        if dtype is not None:
            return [cst.parse_statement(
                f"{p} = {tf}.convert_to_tensor({code_of(default)} if {p} is None else {p}, "
                f"{tf}.{dtype})")]
        return [cst.parse_statement(f"{p}_default = {tf}.convert_to_tensor({code_of(default)})"),
                cst.parse_statement(f"{p} = {p}_default if {p} is None else "
                                    f"{tf}.convert_to_tensor({p}, {p}_default.dtype)")]

    def _returned(self, fetch: cst.BaseExpression) -> cst.BaseExpression:
        if isinstance(fetch, cst.Name):
            return self._value_of(fetch)
        if isinstance(fetch, (cst.List, cst.Tuple)):
            return fetch.with_changes(elements=[
                el.with_changes(value=self._returned(el.value)) for el in fetch.elements])
        if isinstance(fetch, cst.Dict):
            return fetch.with_changes(elements=[
                el.with_changes(value=self._returned(el.value)) for el in fetch.elements])
        raise AssertionError(code_of(fetch))

    def _value_of(self, name: cst.Name) -> cst.BaseExpression:
        n = name.value
        tf = self._alias
        defs = [j for j in self._graph if n in self._stmts[j].writes]
        if defs and max(defs) in self._train:
            return cst.Name("None")
        if n in self._snapshots:
            snap = self._snapshots[n]
            return cst.parse_expression(snap if self._tf_function else f"{snap}.numpy()")
        if self._tf_function:
            # a tf.function returns tensors; the caller takes their NumPy values
            if n in self._schedules:
                return cst.parse_expression(f"{n}()")
            if n in self._var_names:
                return cst.parse_expression(f"{tf}.identity({n})")  # the value now
            return cst.Name(n)
        if n in self._schedules:
            return cst.parse_expression(f"{n}().numpy()")
        kind = self._kinds.get(n, "unknown")
        if n in self._placeholders or n in self._var_names or kind in ("tensor", "variable"):
            return cst.parse_expression(f"{n}.numpy()")
        return cst.parse_expression(f"{tf}.nest.map_structure(lambda t: t.numpy(), {n})")


class _RunReplacer(cst.CSTTransformer):
    def __init__(self, runs: Dict[cst.Call, _Run], wrap: Optional[str],
                 feed_dicts: Sequence[cst.Dict] = ()) -> None:
        super().__init__()
        self._runs = runs
        self._wrap = wrap
        self._feed_dicts = set(feed_dicts)

    def leave_Dict(self, original_node: cst.Dict, updated_node: cst.Dict):
        if original_node not in self._feed_dicts:
            return updated_node
        # {x: a} -> {"x": a}: the keys name the step functions' parameters
        return updated_node.with_changes(elements=[
            el.with_changes(key=cst.SimpleString(f'"{el.key.value}"'))
            for el in updated_node.elements])

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        run = self._runs.get(original_node)
        if run is None:
            return updated_node
        if run.feed_name is not None:
            args = [cst.Arg(cst.Name(run.feed_name), star="**")]
        else:
            args = [cst.Arg(value, keyword=cst.Name(name),
                            equal=cst.AssignEqual(cst.SimpleWhitespace(""),
                                                  cst.SimpleWhitespace("")))
                    for name, value in run.feeds]
        call = cst.Call(func=cst.Name(run.function), args=args)
        if self._wrap:
            return cst.Call(func=cst.Name(self._wrap), args=[cst.Arg(call)])
        return call


def _arg(call: cst.Call, index: int, keyword: str) -> Optional[cst.BaseExpression]:
    for k, arg in enumerate(call.args):
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
        if arg.keyword is None and k == index:
            return arg.value
    return None


def _literal_dtype(expr: Optional[cst.BaseExpression]) -> Optional[str]:
    if expr is None:
        return None
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        expr = expr.expression
    for kind, dtype in _LITERAL_DTYPES.items():
        if isinstance(expr, kind):
            return dtype
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return "bool"
    return None


def _dict_keys(d: cst.Dict) -> List[str]:
    return [el.key.value for el in d.elements]


def _names_only(expr: Optional[cst.BaseExpression]) -> bool:
    """A name, or a list / tuple of names."""
    if isinstance(expr, cst.Name):
        return True
    return isinstance(expr, (cst.List, cst.Tuple)) and bool(expr.elements) and all(
        isinstance(el.value, cst.Name) for el in expr.elements)


def _names_in(node: cst.CSTNode) -> List[cst.Name]:
    found: List[cst.Name] = []

    class _V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            found.append(n)

    node.visit(_V())
    return found


def _loaded_names(node: cst.CSTNode) -> List[cst.Name]:
    """Names read in ``node`` (not assignment targets, attributes or keywords)."""
    found: List[cst.Name] = []

    class _V(cst.CSTVisitor):
        def visit_AssignTarget(self, n: cst.AssignTarget) -> bool:
            if not isinstance(n.target, cst.Name):
                n.target.visit(self)
            return False

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            n.value.visit(self)
            return False

        def visit_Arg(self, n: cst.Arg) -> bool:
            n.value.visit(self)
            return False

        def visit_Param(self, n: cst.Param) -> bool:
            if n.default is not None:
                n.default.visit(self)
            return False

        def visit_Name(self, n: cst.Name) -> None:
            found.append(n)

    node.visit(_V())
    return found
