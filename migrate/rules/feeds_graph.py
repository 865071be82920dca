"""The feeds rule's reading of a fed graph: which statement is a placeholder, a variable, a train op or graph code."""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import QualifiedNameProvider

from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.kinds import VARIABLE_MAKERS, trainable_flag, variable_factory
from tapeshift.migrate.engine.toolkit.dataflow import Stmt, block_info, names_of
from tapeshift.migrate.engine.toolkit.variable_store import MODEL_CODE
from tapeshift.migrate.engine.toolkit.walk import children, instance_test, nodes, release, visit
from tapeshift.migrate.engine.toolkit.walk import walk as in_order
from tapeshift.migrate.engine.tf1_api import DENSE_PLACEHOLDERS, INITIALIZERS
from tapeshift.migrate.rules.contrib_slim import is_slim_call, slim_calls_only_in
from tapeshift.migrate.rules.model_code_calls import SUMMARY_OPS
from tapeshift.migrate.rules.session import RANDOM, TS107, TS108

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
TRAINABLE_LISTS = frozenset({"trainable_variables"})
GLOBAL_STEPS = frozenset({"train.get_or_create_global_step", "train.create_global_step"})
# the analysis walk's per-node test (memoized isinstance: node classes are ABCs)
_is_call = instance_test(cst.Call)
_defines_function = instance_test((cst.Lambda, cst.FunctionDef))


class FedGraph:
    """Part of ``FeedsToFunctions``: the statements before the session, classified."""

    def _placeholders_outside(self, module: cst.Module, blocks: List[cst.CSTNode]) -> bool:
        """A placeholder is made outside every one of ``blocks``."""
        owner = self
        found = False
        inside = {id(b) for b in blocks}

        class _V(cst.CSTVisitor):
            def visit_IndentedBlock(self, node: cst.IndentedBlock) -> bool:
                return id(node) not in inside

            def visit_Call(self, call: cst.Call) -> None:
                nonlocal found
                found = found or owner.tf_api_name(call.func) in DENSE_PLACEHOLDERS

        visit(module, _V())
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
                    owners = getattr(self, "_block_owners", None)
                    if owners is not None:
                        owners[id(parent)] = owner if isinstance(owner, cst.FunctionDef) else None
                    return parent, parent.body.index(n)
                break
        self._bail(TS107.code, call, "the Session is opened inside a block the codemod cannot "
                   "follow (graph and session must share the module, a function or the "
                   "`__main__` guard)")

    # -- the graph region -------------------------------------------------
    def _classify(self, body: List[cst.CSTNode], end: int) -> None:
        """Sort the statements before the session: placeholders, variables, optimizers,
        graph computations (recomputed per step) and the rest."""
        self._stmts: List[Stmt] = block_info(body, self.BASE)
        self._placeholders: Dict[str, cst.Call] = {}
        self._no_settings()  # placeholders an optimizer reads (feeds_settings.py)
        self._variables: List[str] = []  # trainable, in creation order
        self._var_names: Set[str] = set()
        self._graph: Set[int] = set()
        self._train: Set[int] = set()  # statements whose value is a train op
        self._moving_averages: Set[int] = set()  # ema.apply(...): made where written too
        self._groupings: Set[int] = set()  # with tf.control_dependencies(...): op = tf.no_op()
        self._assigns: Set[int] = set()  # `u = W.assign(...)`: run last, value W's new value
        self._grouped_updates: Set[int] = set()  # `step = tf.group(W.assign(...))`: value None
        self._assign_lists: Dict[int, int] = {}  # `[t.assign(e) for ...]`: 1; of rows: 2
        self._hoist: Dict[int, Tuple[str, cst.BaseExpression, cst.Call]] = {}
        self._iterators: Set[str] = set()  # one-shot iterators of datasets (feeds_datasets.py)
        self._kept_rewrites: Dict[int, cst.BaseExpression] = {}  # new values of kept statements
        self._optimizers: Set[str] = set()
        self._schedules: Set[str] = set()
        self._rewrites: Dict[int, cst.CSTNode] = {}
        self._stateful_calls: Dict[int, List[cst.Call]] = {}
        self._randoms: Dict[int, List[cst.Call]] = {}
        self._builders: Dict[str, cst.FunctionDef] = {}  # model functions making variables
        self._templates: Dict[str, int] = {}  # builder -> first statement calling it
        self._plain_builders: Dict[str, cst.Call] = self._known_builders()  # making tf.Variable
        self._factories: Dict[str, cst.Call] = {}  # ... that only return a new one
        self._created_at: Dict[str, int] = {}  # trainable variable -> statement creating it
        self._unnamed: Dict[int, cst.Call] = {}  # trainable variables bound to no name
        self._var_lists: Set[str] = set()  # names bound to lists of variables
        self._var_dicts: Set[str] = set()  # names bound to dicts of trainable variables
        # layer objects the model-code rule made: created once, here; their
        # variables exist from their first call (in a step function), so what
        # reads them is recomputed there too
        facts = self.shared.get(MODEL_CODE)
        self._layers: Dict[str, int] = {}
        self._layer_order: Dict[str, int] = {}  # of the layers made before the block
        self._layer_facts = facts
        self._savers: Set[int] = set()  # `saver = tf.train.Saver(var_list=...)`: made once, here
        self._saver_reads: Set[str] = set()  # layers whose variables a Saver lists
        self._average_reads: Set[str] = set()  # layers whose variables a moving average keeps
        self._outer_default: Optional[str] = None  # why TF1's default var_list is not known
        tainted: Set[str] = self._made_by_function(facts)
        for i in range(end):
            st = self._stmts[i]
            node = body[i]
            value, target = self._assignment(node)
            if isinstance(value, cst.Call) and self.tf_api_name(value.func) == "train.Saver":
                # the Saver rule's v1 Saver: made once where TF1 made it, given the
                # variables TF1's would save (the layers among them built before it)
                if st.reads & (tainted - self._var_names - set(self._layers)):
                    self._bail(TS108.code, node, "a Saver of fed or computed values is not "
                               "converted")
                self._savers.add(i)
                self._saver_reads |= self._layer_reads(node)
                continue
            if facts is not None and target in facts.layers and isinstance(value, cst.Call):
                self._layers[target] = i
                if facts.layers[target].trainable and facts.layers[target].info.get("variables", True):
                    # (dropout, flatten, pooling: no variables to train)
                    self._variables.append(target)
                    self._created_at[target] = i
                tainted.add(target)
                continue
            if isinstance(node, cst.With) and self._scope_items_only(node):
                scoped = self._scoped_placeholders(i, node)
                tainted |= scoped
                if scoped and i not in self._rewrites:
                    continue  # placeholders only: removed, as the others are
            api = self.tf_api_name(value.func) if isinstance(value, cst.Call) else None
            if api in DENSE_PLACEHOLDERS and target is not None:
                self._placeholders[target] = value
                tainted.add(target)
                continue
            if api == "sparse_placeholder":
                self._bail(TS107.code, value, "tf.sparse_placeholder: feeding sparse values is "
                           "not converted")
            if isinstance(node, cst.FunctionDef):
                self._builder(node)
                continue
            if isinstance(node, cst.ClassDef):
                continue  # checked with the free uses
            makes_var = self._makes_variable(node)
            if makes_var:
                if st.reads & (tainted - self._var_names):
                    self._bail(TS107.code, node, "a variable whose initial value depends on a "
                               "fed or computed tensor is not converted")
                tainted |= st.writes
                self._var_names |= st.writes
                self._note_variables(i, node)
                continue
            if api == "train.ExponentialMovingAverage":  # made once, as an optimizer is
                if st.reads & (tainted - self._var_names):
                    self._bail(TS108.code, node, "a moving average whose decay is a fed or "
                               "computed tensor is not converted")
                continue
            if api is not None and api.startswith("train.") and api.endswith("Optimizer"):
                if st.reads & (tainted - self._var_names):  # lr = tf.placeholder(...)
                    self._accept_settings(st.reads & (tainted - self._var_names), i, value,
                                          "an optimizer")
                self._optimizers |= st.writes
                continue
            if api is not None and (api.startswith("train.") and api.endswith("_decay")
                                    or api in ("train.piecewise_constant",)):
                if st.reads & (tainted - self._var_names):
                    self._bail(TS108.code, node, "a learning-rate schedule of a fed or computed "
                               "tensor is not converted")
                self._schedules |= st.writes
                continue
            if api in INITIALIZERS:
                continue
            if self._one_shot_iterator(i, value, target, st.reads & tainted):
                continue  # made once, here (feeds_datasets.py)
            if self._next_element(i, node, value, st.reads & tainted):
                tainted |= st.writes  # an element per run: recomputed, as fed code is
                continue
            if self._refs_only(value) and names_of(value, self.BASE)[0] <= self._var_names:
                self._var_lists |= st.writes
                continue  # a list of variables (var_list): nothing to recompute
            if self._moving_average_op(i, node, small_value=value):
                self._graph_statement(i, node)
                tainted |= st.writes
                continue
            if not st.reads & tainted and not self._draws(node) and not (
                    st.reads & (self._var_lists | self._var_names) and self._changes_state(node)):
                continue  # does not depend on anything fed, drawn or mutable: stays
            if isinstance(node, (cst.If, cst.For, cst.While, cst.With)):
                # graph code under Python control flow: recomputed with it
                self._compound_graph_statement(i, node, body, tainted)
                tainted |= st.writes
                continue
            if not isinstance(node, cst.SimpleStatementLine) or target is None and not (
                    len(node.body) == 1 and isinstance(node.body[0], cst.Assign)):
                said = " ".join(code_of(node).split())
                said = said if len(said) <= 60 else said[:57] + "..."
                self._bail(TS107.code, node, f"`{said}` computes with graph values but is not "
                           "a plain assignment (it would run once, not at each sess.run)")
            self._graph_statement(i, node)
            tainted |= st.writes

    def _made_by_function(self, facts) -> Set[str]:
        """The block is the body of a model function the model-code rule read at its
        first call: what it made there, before the call, exists when the body runs
        (made at index -1). Their names come back."""
        owner = getattr(self, "_block_owner", None)
        made = facts.functions.get(owner.name.value) if facts is not None \
            and isinstance(owner, cst.FunctionDef) else None
        if made is None:
            return set()
        names: Set[str] = set()
        for entry in made.made:
            if not entry.handle:
                continue
            if entry.kind == "layer" and entry.handle in facts.layers:
                self._layers[entry.handle] = -1
                self._layer_order[entry.handle] = entry.order
            elif entry.kind != "variable":
                continue
            else:
                self._var_names.add(entry.handle)
            if entry.trainable and entry.info.get("variables", True):
                self._variables.append(entry.handle)
                self._created_at[entry.handle] = -1
            names.add(entry.handle)
        if not made.alone:
            self._outer_default = (f"TF1's default var_list also holds the variables made before "
                                   f"`{owner.name.value}` was first called")
        return names

    def _changes_state(self, node: cst.CSTNode) -> bool:
        """The statement builds an op that changes a variable when it runs."""
        for n in nodes(node):
            if _is_call(n):
                if isinstance(n.func, cst.Attribute) and n.func.attr.value in (
                        *ASSIGNS, *TRAIN_METHODS):
                    return True
                if (self.tf_api_name(n.func) or "") in ASSIGNS:
                    return True
        return False

    def _draws(self, node: cst.CSTNode) -> bool:
        """The statement draws random numbers (``z = tf.random_normal([n, 100])``):
        TF1 draws again at each sess.run that needs them, so it is recomputed in the
        step functions as fed code is (a variable's initial value is not asked here:
        variables are sorted out first). A draw in a lambda or a nested function
        (``ds.map(lambda v: v + tf.random_normal([2]))``) runs where the function is
        called, not once per statement."""
        return any(_is_call(n) and self.tf_api_name(n.func) in RANDOM
                   for n, _ in in_order(node, _defines_function))

    def _assignment(self, node: cst.CSTNode):
        """(value, single target name) of ``name = value``; (value, None) for
        other single assignments; (None, None) otherwise."""
        if isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1:
            small = node.body[0]
            if isinstance(small, cst.Assign):
                if len(small.targets) == 1 and self._ref(small.targets[0].target) is not None:
                    return small.value, self._ref(small.targets[0].target)
                return small.value, None
        return None, None

    def _makes_variable(self, node: cst.CSTNode) -> bool:
        found = False
        owner = self

        class _V(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                nonlocal found
                name = owner.tf_api_name(call.func)
                if name in VARIABLE_MAKERS or name in GLOBAL_STEPS or owner._factory(call):
                    found = True

        visit(node, _V())
        return found

    def _factory(self, call: cst.Call) -> Optional[cst.Call]:
        """The variable maker of the function ``call`` calls, when that function only
        returns a new variable (``init_weights(shape)``)."""
        if isinstance(call.func, cst.Name):
            return getattr(self, "_factories", {}).get(call.func.value)
        return None

    def _slim_only_in_templates(self, module: cst.Module) -> bool:
        """Every tf-slim layer call sits in a function wrapped in make_template (in
        any block converted)."""
        wrapped = getattr(self, "_wrapped", None) or {
            id(self._builders[t]) for t in self._templates}
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

        visit(node.body, _V())
        if plain is not None:
            self._plain_builders[node.name.value] = plain
            made = variable_factory(node, self.tf_api_name)
            if made is not None:  # W1 = init_weights([D, M]): a variable made there
                self._factories[node.name.value] = made
        elif makes:
            self._builders[node.name.value] = node

    def _note_variables(self, i: int, node: cst.CSTNode) -> None:
        """Trainable variables the statement creates, in order: ``name =
        tf.Variable(...)`` anywhere in it (a ``with`` block too) and ``a, b =
        [tf.Variable(p) for p in init]`` are listed by name; one not bound to a
        name (``Ws = [tf.Variable(...), ...]``) is noted, so TF1's default
        var_list cannot be written out."""
        owner = self
        named: Set[int] = set()

        class _V(cst.CSTVisitor):
            def visit_Assign(self, a: cst.Assign) -> None:
                target = owner._ref(a.targets[0].target) if len(a.targets) == 1 else None
                made = owner._factory(a.value) if isinstance(a.value, cst.Call) else None
                if target is not None and made is not None:
                    named.add(id(a.value))  # W1 = init_weights([D, M])
                    if owner._trainable(made, owner.tf_api_name(made.func)):
                        owner._variables.append(target)
                        owner._created_at[target] = i
                if target is not None and isinstance(a.value, cst.Call) \
                        and owner.tf_api_name(a.value.func) in VARIABLE_MAKERS:
                    named.add(id(a.value))
                    if owner._trainable(a.value, owner.tf_api_name(a.value.func)):
                        owner._variables.append(target)
                        owner._created_at[target] = i
                # weights = {'h1': tf.Variable(...), ...}: listed as *weights.values(), in the
                # order the dict makes them (when all of them are trainable)
                if target is not None and isinstance(a.value, cst.Dict) and a.value.elements \
                        and all(isinstance(e, cst.DictElement) and isinstance(e.value, cst.Call)
                                and owner.tf_api_name(e.value.func) in VARIABLE_MAKERS
                                and owner._trainable(e.value, owner.tf_api_name(e.value.func))
                                for e in a.value.elements):
                    named.update(id(e.value) for e in a.value.elements)
                    owner._variables.append(target)
                    owner._created_at[target] = i
                    owner._var_dicts.add(target)
                # a, b = [tf.Variable(p) for p in init], a, b = tf.Variable(1.), tf.Variable(2.):
                # created in the order of the names
                targets = a.targets[0].target if len(a.targets) == 1 else None
                makers = _unpacked_makers(owner, a.value)
                if isinstance(targets, (cst.Tuple, cst.List)) and makers and all(
                        isinstance(e.value, cst.Name) for e in targets.elements) and (
                        len(makers) == len(targets.elements) or isinstance(a.value, cst.ListComp)):
                    trainable = [owner._trainable(m, owner.tf_api_name(m.func)) for m in makers]
                    if len(set(trainable)) == 1:
                        for m in makers:
                            named.add(id(m))
                        if trainable[0]:
                            for e in targets.elements:
                                owner._variables.append(e.value.value)
                                owner._created_at[e.value.value] = i

            def visit_Call(self, call: cst.Call) -> None:
                api = owner.tf_api_name(call.func)
                made = owner._factory(call)
                if made is not None and id(call) not in named \
                        and owner._trainable(made, owner.tf_api_name(made.func)):
                    owner._unnamed.setdefault(i, call)
                if api in VARIABLE_MAKERS and id(call) not in named \
                        and owner._trainable(call, api):
                    owner._unnamed.setdefault(i, call)

        visit(node, _V())

    @staticmethod
    def _trainable(call: cst.Call, api: Optional[str]) -> bool:
        # trainable= by keyword, or by position: tf.Variable(initial_value, trainable),
        # tf.get_variable(name, shape, dtype, initializer, regularizer, trainable)
        position = 5 if api == "get_variable" else 1
        for k, arg in enumerate(call.args):
            if arg.keyword is not None and arg.keyword.value == "trainable" \
                    or arg.keyword is None and k == position:
                return trainable_flag(arg.value) is True
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

        try:
            walk(node, [])
        finally:
            release(walk)
        # (a compound statement holds no assign or train op: checked before)
        small = node.body[0] if isinstance(node, cst.SimpleStatementLine) else None
        if isinstance(node, cst.With):  # with tf.control_dependencies([...]): eager runs in order
            scopes = {id(item.item) for item in node.items}
            calls = [(c, st) for c, st in calls if id(c) not in scopes]
        grouped: Set[int] = set()  # step = tf.group(W.assign(value)): the update it groups
        for call, stack in calls:
            if id(call) in grouped:
                continue
            if isinstance(call.func, cst.Name) and call.func.value in self._builders:
                self._templates.setdefault(call.func.value, i)
                continue
            if self._ref(call.func) in self._plain_builders:
                self._bail(TS107.code, call, f"`{self._ref(call.func)}` creates a tf.Variable at every "
                           "call, in a shape the codemod does not read at each call (there: "
                           "`local = tf.Variable(...)` statements of its own body, from its "
                           "parameters and module names, each call a module-level statement; "
                           "docs/migrate.md, \"Model code\"): not converted")
            if is_slim_call(self, call):
                self._bail(TS107.code, call, f"`{code_of(call.func)}` creates variables from a fed "
                           "value outside a model function; put the layers in a function (the "
                           "codemod then shares its variables with tf.compat.v1.make_template)")
            name = self.tf_api_name(call.func) or ""
            if name in VARIABLE_MAKERS or name.startswith(LAYER_PREFIXES) \
                    or name in GLOBAL_STEPS:
                self._bail(TS107.code, call, f"tf.{name} creates variables from a fed value; "
                           "recomputing it at each step would create new variables "
                           "(docs/tf1-vs-tf2.md, section 4): not converted")
            if name in ASSIGNS and self._assign_op(i, node, small, call, name):
                continue
            if name == "raw_ops.MergeSummary" or name in SUMMARY_OPS and any(
                    q.name.startswith("tensorflow.compat.v1.") for q in
                    self.get_metadata(QualifiedNameProvider, call.func, set())):
                continue  # v1 summary ops (the summaries rule): pure ops, TF1's bytes out
            if name in ASSIGNS or name.split(".")[0] in GRAPH_ONLY or name in GRAPH_ONLY:
                self._bail(TS108.code, call, f"tf.{name} in fed graph code is not converted")
            if name.startswith(RANDOM_PREFIXES):
                self._randoms.setdefault(i, []).append(call)
            if name == "group":
                inner = self._grouped_assign(i, node, small, call)
                if inner is not None:
                    grouped.add(id(inner))
                    continue
            if name in ("group", "no_op") and isinstance(small, cst.Assign) \
                    and small.value is call:
                # train = tf.group(train_a, train_b): an op, run after what it groups
                # (not written in the step functions, which run what it groups anyway)
                self._train.add(i)
                self._groupings.add(i)
                self._note_unordered(node, call, i)
            if isinstance(call.func, cst.Attribute):
                attr = call.func.attr.value
                if attr in ASSIGNS and not self._assign_op(i, node, small, call, None):
                    self._bail(TS108.code, call, f"`.{attr}(...)` in fed graph code is not converted")
                if attr in TRAIN_METHODS:
                    self._train_call(i, node, small, call, stack)

    def _var_element(self, name: str) -> cst.BaseElement:
        if name in self._var_dicts:
            return cst.StarredElement(cst.parse_expression(f"{name}.values()"))
        if name in self._layers:
            return cst.StarredElement(cst.Attribute(cst.parse_expression(name),
                                                    cst.Name("trainable_variables")))
        return cst.Element(cst.parse_expression(name))

    def _variable_list(self, expr: cst.BaseExpression) -> bool:
        """A list (or tuple) of this file's variables and layers' variable lists."""
        if not isinstance(expr, (cst.List, cst.Tuple)) or not expr.elements:
            return False
        for e in expr.elements:
            if isinstance(e, cst.StarredElement):
                v = e.value
                if not (isinstance(v, cst.Attribute) and self._ref(v.value) in self._layers
                        and v.attr.value in ("trainable_variables", "variables")):
                    return False
            elif self._ref(e.value) not in self._var_names:
                return False
        return True

    def _bound_list(self, given: Optional[cst.BaseExpression], i: int):
        """The list ``given`` names, when it was bound once, before ``i``, to a list
        of variables and layers' variable lists."""
        name = self._ref(given)
        if name is None:
            return None
        defs = [j for j in range(i) if name in self._stmts[j].writes]
        if len(defs) != 1:
            return None
        value, target = self._assignment(self._stmts[defs[0]].node)
        return value if target == name and self._variable_list(value) else None

    def _refs_only(self, expr: Optional[cst.BaseExpression]) -> bool:
        """A name, or a list / tuple of names (``self.x`` counts as one in a class)."""
        if self._ref(expr) is not None:
            return True
        return isinstance(expr, (cst.List, cst.Tuple)) and bool(expr.elements) and all(
            self._ref(el.value) is not None for el in expr.elements)

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
                self._bail(TS108.code, call, f"`.{attr}(*args)` is not converted")
            key = arg.keyword.value if arg.keyword is not None else (
                params[k] if k < len(params) else None)
            if key is None or key not in params:
                self._bail(TS108.code, call, f"`.{attr}(...)` called with unknown arguments")
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
            if self._outer_default:
                self._bail(TS108.code, call, f"{self._outer_default}: pass var_list explicitly")
            if unnamed:
                line, _ = self.position(unnamed[0])
                self._bail(TS108.code, call, "TF1's default var_list includes a variable bound to "
                           f"no name (line {line}): pass var_list explicitly")
            if templates and (created or len(templates) > 1):
                self._bail(TS108.code, call, "the default var_list mixes the variables of "
                           f"`{templates[0]}` with others: pass var_list explicitly")
            if templates:
                self.record_change(call, f"var_list: the trainable variables of `{templates[0]}`")
                return cst.Attribute(value=cst.Name(templates[0]),
                                     attr=cst.Name("trainable_variables"))
            if not created:
                self._bail(TS108.code, call, "no trainable variable is created before this line")
            listed = cst.List([self._var_element(v) for v in created])
            self.record_change(call, "var_list: the trainable variables created before this "
                               f"line, {code_of(listed)}")
            return listed
        if isinstance(given, cst.Call) and not given.args and isinstance(given.func, cst.Attribute) \
                and given.func.attr.value == "values" and self._ref(given.func.value) in self._var_dicts:
            return cst.List([cst.StarredElement(given)])  # var_list=weights.values()
        if isinstance(given, (cst.List, cst.Tuple)) and self._variable_list(given):
            return cst.List([e.with_changes(comma=cst.MaybeSentinel.DEFAULT)
                             for e in given.elements])
        if isinstance(given, cst.Name) and self.BASE is None and all(
                n in self._var_names for n in self._elements.get(given.value, [None])):
            return given
        bound = self._bound_list(given, i)
        if bound is not None:
            # a list that holds layers' variables is read where it is used (the layers
            # make their variables at their first call): a graph statement binding it
            # is recomputed before this one, else the list is written here
            defs = [j for j in range(i) if self._ref(given) in self._stmts[j].writes]
            return given if defs and defs[-1] in self._graph else bound.deep_clone()
        self._bail(TS108.code, call, f"var_list `{code_of(given)}` is not a list of this "
                   "file's variables the codemod can read (list them explicitly)")
        raise AssertionError  # unreachable


def _unpacked_makers(owner, value: cst.BaseExpression) -> List[cst.Call]:
    """The variable makers of ``[maker(...) for ...]`` (one, made once per item) or of
    ``maker(...), maker(...)`` (one per element); [] for anything else."""
    def maker(expr) -> bool:
        return isinstance(expr, cst.Call) and owner.tf_api_name(expr.func) in VARIABLE_MAKERS

    if isinstance(value, cst.ListComp) and maker(value.elt) and value.for_in.inner_for_in is None \
            and not value.for_in.ifs:
        return [value.elt]
    if isinstance(value, (cst.List, cst.Tuple)) and value.elements and all(
            maker(e.value) for e in value.elements):
        return [e.value for e in value.elements]
    return []
