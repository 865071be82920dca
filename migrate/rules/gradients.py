"""``tf.gradients(ys, xs, ...)`` -> ``tape.gradient(ys, xs, ...)`` inside a GradientTape.

The tape is placed around exactly the forward computation the gradients need:
the statements that lie on a name-level path from a source to a target. More
than one gradient from a tape makes it ``persistent=True`` (and it is deleted
after its last use); a gradient of a gradient gets a nested, outer tape; a
source that is not a variable and is not computed from one inside the tape is
``tape.watch``-ed.

TensorFlow's list semantics are kept exactly (docs/tf1-vs-tf2.md, section 2):
``tf.gradients(l, W)[0]`` -> ``tape.gradient(l, W)``; a bare
``tf.gradients(l, W)`` stays a one-element list; ``g, = tf.gradients(l, W)``
becomes ``g = tape.gradient(l, W)``; a list of sources gives a list; several
targets are summed by both. ``grad_ys`` (keyword or third positional argument)
becomes ``output_gradients=``.

What cannot be placed safely is left as it was, with a finding saying why.

This module finds and reads the calls; where the tapes go is gradients_plan.py, the
rewrite that places them gradients_rewrite.py (both mixins of the rule).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from tapeshift.migrate.engine.registry import register_rule
from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.kinds import VARIABLE_DICT, KindMixin
from tapeshift.migrate.engine.toolkit.tf_names import all_names, fresh_name, tf_module_alias
from tapeshift.migrate.engine.toolkit.dataflow import names_of
from tapeshift.migrate.engine.toolkit.statements import is_main_guard
from tapeshift.migrate.engine.tree_helpers import TREE_HELPERS
from tapeshift.migrate.engine.toolkit.gradient_helpers import (
    TAPE_PARAM, GradientHelper, gradient_helpers, imported_helper,
)
from tapeshift.migrate.engine.toolkit.walk import children, instance_test, nodes_of, release
from tapeshift.migrate.rules.gradients_codes import TS102, TS103, TS104, TS105, TS110, TS111
from tapeshift.migrate.rules.gradients_plan import TapePlans, _GradCall, _Plan
# the rewrite, and tf.gradients' parameters it shares with the analysis here
from tapeshift.migrate.rules.gradients_rewrite import GRADIENTS_PARAMS, TapeRewriting

#: ``isinstance(node, cst.Call)``, answered once per type (LibCST's classes are ABCs)
_is_call = instance_test(cst.Call)

#: TF functions that call Python functions inside graph control flow.
CONTROL_FLOW_FUNCS = frozenset({
    "while_loop", "map_fn", "cond", "case", "switch_case", "scan", "foldl", "foldr",
    "py_func", "py_function", "numpy_function", "vectorized_map",
})

#: (positional parameter names of the control-flow calls whose functions eager TF2
#: calls as plain Python functions)
_EAGER_CALLED = {"while_loop": ("cond", "body", "loop_vars"), "map_fn": ("fn", "elems"),
                 "cond": ("pred", "true_fn", "false_fn")}


def _eager_called(api: str, call: cst.Call) -> Dict[str, bool]:
    """The functions a control-flow call runs that eager TF2 calls as plain Python
    functions, and a tape inside them records as tf.gradients inside them saw:
    name -> whether its parameters are tensors. ``tf.while_loop(cond, body, [v1,
    v2])``'s body over single loop variables (called once per pass on that pass's
    tensors), ``tf.map_fn(fn, elems)``'s fn over one tensor (called on each
    element), ``tf.cond(pred, true_fn, false_fn)``'s branches (no parameters)."""
    names = _EAGER_CALLED.get(api)
    if names is None:
        return {}
    args = {a.keyword.value if a.keyword is not None else (names + ("",))[min(k, len(names))]:
            a.value for k, a in enumerate(call.args) if not a.star}

    def single(value) -> bool:
        return value is not None and not isinstance(value, (cst.List, cst.Tuple, cst.Dict))

    found: Dict[str, bool] = {}
    if api == "while_loop":
        body, loop_vars = args.get("body"), args.get("loop_vars")
        if isinstance(body, cst.Name) and isinstance(loop_vars, (cst.List, cst.Tuple)) and all(
                isinstance(e, cst.Element) and single(e.value) for e in loop_vars.elements):
            found[body.value] = True
    elif api == "map_fn":
        fn = args.get("fn")
        if isinstance(fn, cst.Name) and single(args.get("elems")):
            found[fn.value] = True
    else:
        for key in ("true_fn", "false_fn"):
            if isinstance(args.get(key), cst.Name):
                found[args[key].value] = False
    return found


_SCOPES = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def _module_function_reads(module: cst.Module) -> Dict[str, Set[str]]:
    """Module-level function -> the module names its body and its parameters'
    defaults read (through the functions it calls too); a method, as ``self.<name>``
    (of any class: a union where two define it), -> the attributes of ``self`` it
    reads (``self.forward`` computing with ``self.W1``)."""
    defs = {s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef)}
    own: Dict[str, Set[str]] = {}
    for cls in module.body:
        for fn in cls.body.body if isinstance(cls, cst.ClassDef) else ():
            if isinstance(fn, cst.FunctionDef):
                key = f"self.{fn.name.value}"
                own[key] = own.get(key, set()) | {
                    n for n in names_of(fn.body, "self")[0] if n.startswith("self.")}
    for name, fn in defs.items():
        loads, stores = names_of(fn.body)
        declared = (*fn.params.params, *fn.params.posonly_params, *fn.params.kwonly_params)
        params = {p.name.value for p in declared}
        # def D(x, w=d_weights): a call that leaves `w` out computes with d_weights
        defaults = set().union(*(names_of(p.default)[0] for p in declared
                                 if p.default is not None))
        own[name] = (loads - stores - params) | defaults
    changed = True
    while changed:  # what the functions it calls read
        changed = False
        for name in own:
            more = set().union(*(own[f] for f in own[name] & set(own))) - own[name]
            if more:
                own[name] |= more
                changed = True
    return own


def _self_attribute(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) \
        and expr.value.value == "self"


def _owned_variables(element: cst.BaseElement, kinds: Optional[dict] = None) -> bool:
    """``*owner.trainable_variables`` (or ``.variables``) in a list of sources; with
    ``kinds``, ``*weights.values()`` of a dict of variables too."""
    v = element.value
    if not isinstance(element, cst.StarredElement):
        return False
    if isinstance(v, cst.Call) and not v.args and isinstance(v.func, cst.Attribute) \
            and v.func.attr.value == "values" and kinds is not None:
        return kinds.get(code_of(v.func.value)) == VARIABLE_DICT
    return isinstance(v, cst.Attribute) \
        and (isinstance(v.value, cst.Name) or _self_attribute(v.value)) \
        and v.attr.value in ("trainable_variables", "variables")


def _owner(element: cst.BaseElement) -> str:
    """What holds the variables of an element ``_owned_variables`` accepts."""
    v = element.value
    return code_of(v.func.value if isinstance(v, cst.Call) else v.value)


@register_rule
class GradientsToTape(TapeRewriting, TapePlans, KindMixin, TapeshiftCodemod):
    DESCRIPTION = "Rewrite tf.gradients into tape.gradient with a GradientTape around the forward computation."
    RULE = "gradients"
    PHASE = "tape"
    ORDER = 20
    CODES = (TS102, TS103, TS104, TS105, TS110, TS111)
    #: nothing without a TensorFlow gradients(...) call, or a call of a helper of
    #: another file of the tree (which the tree's facts name)
    SCREEN_NAMES = frozenset({"gradients"})
    SCREEN_FACTS = frozenset({TREE_HELPERS})

    def __init__(self, context) -> None:
        super().__init__(context)
        self._call_mode: Dict[cst.Call, Tuple[str, str]] = {}  # call -> (tape, "bare"|"list")
        self._subscripts: Set[cst.Subscript] = set()
        self._unpacks: Set[cst.Assign] = set()
        self._plans: Dict[cst.CSTNode, _Plan] = {}
        self._alias = "tf"
        self._variable_owners: Set[str] = set()  # names whose .trainable_variables are sources
        self._helpers: Dict[str, GradientHelper] = {}
        self._imported: Dict[str, GradientHelper] = {}  # ref -> a helper of another file
        self._helper_defs: Dict[cst.FunctionDef, GradientHelper] = {}
        self._loop_bodies: Set[cst.CSTNode] = set()  # blocks that are a loop's body
        self._planned_tapes: Set[str] = set()

    # ------------------------------------------------------------------
    # analysis
    # ------------------------------------------------------------------
    def visit_Module(self, node: cst.Module) -> bool:
        found: List[Tuple[cst.Call, List[cst.CSTNode]]] = []
        cf_funcs: Set[str] = set()
        # functions of tf.while_loop, tf.map_fn, tf.cond that eager TF2 calls as plain
        # Python functions: a tape inside one records what tf.gradients inside it saw
        eager_called: Dict[str, bool] = {}

        # helpers that differentiate what their caller built: the caller's tape
        # records it, the helper takes the tape (toolkit/gradient_helpers.py)
        # (in a tree, helpers of this file other files call, and helpers of other
        # files this one calls: engine/tree_helpers.py)
        facts = self.shared.get(TREE_HELPERS, ())
        helpers = gradient_helpers(node, lambda c: self.tf_api_name(c.func) == "gradients",
                                   exported={ref for kind, ref, _, _ in facts if kind == "def"})
        inner = {h.call: h for h in helpers.values()}
        self._helpers = helpers
        self._imported = {ref: imported_helper(ys, xs) for kind, ref, ys, xs in facts
                          if kind == "call"}

        def walk(n: cst.CSTNode, stack: List[cst.CSTNode]) -> None:
            if _is_call(n):
                name = self.tf_api_name(n.func)
                if n in inner:
                    self._call_mode[n] = (TAPE_PARAM, "bare")
                    self._helper_defs[inner[n].fn] = inner[n]
                elif self._helper_of(n) is not None:
                    found.append((n, list(stack)))
                elif name == "gradients":
                    found.append((n, list(stack)))
                elif name in CONTROL_FLOW_FUNCS:
                    called = _eager_called(name, n)
                    for arg in n.args:
                        if isinstance(arg.value, cst.Name) and arg.value.value not in called:
                            cf_funcs.add(arg.value.value)
                    eager_called.update(called)
            stack.append(n)
            for child in children(n):
                walk(child, stack)
            stack.pop()

        try:
            walk(node, [])
        finally:
            release(walk)
        if not found:
            return True
        self._closures = _module_function_reads(node)
        kinds, elements = self.infer_kinds(node)
        by_block: Dict[cst.CSTNode, List[_GradCall]] = {}
        failed: Set[cst.CSTNode] = set()
        broken: Set[str] = set()  # helpers with a call site that is not converted
        owners = {id(fn.body): fn for fn in nodes_of(node, cst.FunctionDef)}
        scoped: Dict[int, Tuple[dict, dict]] = {}  # a function body -> its names' kinds
        for call, stack in found:
            located = self._locate(call, stack, cf_funcs)
            if located is None:
                helper = self._helper_of(call)
                if helper is not None and helper.fn is not None:
                    broken.add(helper.fn.name.value)
                continue
            block, index, enclosing = located
            if id(block) in owners and id(block) not in scoped:
                fn = owners[id(block)]
                scoped[id(block)] = self._function_kinds(
                    fn, kinds, elements,
                    tensors=eager_called.get(fn.name.value, False) and fn.name.value not in cf_funcs)
            gc = _GradCall(call=call, parent=stack[-1],
                           grand=stack[-2] if len(stack) > 1 else None, stmt_index=index,
                           helper=self._helper_of(call), enclosing=enclosing)
            by_block.setdefault(block, []).append(gc)
            if not self._parse(gc, *scoped.get(id(block), (kinds, elements))):
                failed.add(block)
        taken = all_names(node)
        alias = tf_module_alias(node)
        if alias is None:
            alias = "tf" if "tf" not in taken else fresh_name("tensorflow_", taken)
            self._needs_import = alias
        else:
            self._needs_import = None
        self._alias = alias
        # a loop body's tapes run inside the region of the block around the loop:
        # their names must differ from that block's tapes (planned first)
        for block, calls in sorted(by_block.items(), key=lambda b: b[0] in self._loop_bodies):
            plan = self._plan(block, calls, kinds, taken) if block not in failed else None
            if plan is not None:
                self._plans[block] = plan
                if self._loop_bodies:
                    taken = taken | set(plan.tapes)
                    self._planned_tapes |= set(plan.tapes)
            else:
                broken |= {gc.helper.fn.name.value for gc in calls
                           if gc.helper is not None and gc.helper.fn is not None}
        for name in broken:  # its body stays TF1's: no caller passes a tape
            del self._call_mode[helpers[name].call]
            self._helper_defs.pop(helpers[name].fn, None)
        return True

    def _function_kinds(self, fn: cst.FunctionDef, kinds: dict, elements: dict,
                        tensors: bool = False):
        """The kinds of names in ``fn``: its locals (parameters and what it binds) are
        its own, read from its body alone; the others are the module's. ``tensors``:
        its parameters are tensors (a while_loop body), unless its body binds them."""
        loads, stores = names_of(fn.body)
        params = {p.name.value for p in (*fn.params.posonly_params, *fn.params.params,
                                         *fn.params.kwonly_params)}
        own, own_elements = self.infer_kinds(fn.body)
        if tensors:
            own = {**{p: "tensor" for p in params - stores}, **own}
        local = stores | params
        return ({**{k: v for k, v in kinds.items() if k not in local},
                 **{n: own.get(n, "unknown") for n in local}},
                {**{k: v for k, v in elements.items() if k not in local},
                 **{n: own_elements[n] for n in local if n in own_elements}})

    def _locate(self, call: cst.Call, stack: List[cst.CSTNode], cf_funcs: Set[str]):
        """(block, statement index, enclosing statements) of the statement holding
        ``call``, or None. Under ``if``/``for``/``with`` statements of the block, the
        statement is the outermost of them, and the enclosing ones come back (inner
        first): the gradient runs with them, after the tape that records its target."""
        for k in range(len(stack) - 1, -1, -1):
            n = stack[k]
            if isinstance(n, _SCOPES):
                self.report(TS103.code, call, "tf.gradients inside a lambda or comprehension")
                return None
            if isinstance(n, cst.BaseCompoundStatement):
                self.report(TS103.code, call, "tf.gradients in the header of a compound statement")
                return None
            if isinstance(n, cst.SimpleStatementLine):
                enclosing: List[cst.BaseCompoundStatement] = []
                stmt, j = n, k
                while True:
                    parent = stack[j - 1]
                    if isinstance(parent, cst.Module):
                        return parent, parent.body.index(stmt), enclosing
                    owner = stack[j - 2]
                    if isinstance(owner, cst.FunctionDef):
                        if owner.name.value in cf_funcs:
                            self.report(TS103.code, call,
                                        f"tf.gradients inside `{owner.name.value}`, which is run "
                                        "by TensorFlow control flow (while_loop, map_fn, ...)")
                            return None
                        return parent, parent.body.index(stmt), enclosing
                    if is_main_guard(owner) and owner.body is parent:
                        return parent, parent.body.index(stmt), enclosing
                    if isinstance(owner, cst.Else) and j >= 3 and isinstance(stack[j - 3], cst.If):
                        owner, j = stack[j - 3], j - 1  # the else branch of an if
                    loop = isinstance(owner, (cst.For, cst.While)) and owner.body is parent
                    if loop and self._computes_target(call, owner.body):
                        # the pass computes the target: a tape in each pass (the loop
                        # body is the block)
                        self._loop_bodies.add(parent)
                        return parent, parent.body.index(stmt), enclosing
                    if not (isinstance(owner, (cst.If, cst.With)) or loop):
                        kind = type(owner).__name__.lower()
                        self.report(TS103.code, call, f"tf.gradients inside a `{kind}` block")
                        return None
                    enclosing.append(owner)
                    stmt, j = owner, j - 2
        return None

    def _helper_of(self, call: cst.Call) -> Optional[GradientHelper]:
        """The gradient helper ``call`` calls: a function of this file by its name, or
        one of another file of the tree by the name this file imports it as."""
        func = call.func
        if isinstance(func, cst.Name):
            return self._helpers.get(func.value) or self._imported.get(func.value)
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and self._imported:
            return self._imported.get(f"{func.value.value}.{func.attr.value}")
        return None

    def _computes_target(self, call: cst.Call, body: cst.BaseSuite) -> bool:
        """Whether the loop body ``body`` binds a name the targets of ``call`` read."""
        helper = self._helper_of(call)
        if helper is not None:
            ys = helper.operand(call, "ys")
        else:
            ys = next((a.value for k, a in enumerate(call.args)
                       if (a.keyword is None and k == 0 and not a.star)
                       or (a.keyword is not None and a.keyword.value == "ys")), None)
        return ys is not None and bool(names_of(ys)[0] & names_of(body)[1])

    def _parse(self, gc: _GradCall, kinds: dict, elements: dict) -> bool:
        call = gc.call
        if gc.helper is not None:
            gc.args = {"ys": gc.helper.operand(call, "ys"), "xs": gc.helper.operand(call, "xs")}
            if not self._parse_operands(gc, kinds, elements):
                return False
            if not gc.xs_is_list:
                self.report(TS104.code, call, f"`{code_of(call.func)}` differentiates with "
                            f"respect to `{code_of(gc.args['xs'])}`, not known to be a list here "
                            "(TF1 gives a list, the tape the sources' structure)")
                return False
            return True
        for i, arg in enumerate(call.args):
            if arg.star:
                self.report(TS104.code, call, "tf.gradients called with *args or **kwargs")
                return False
            key = arg.keyword.value if arg.keyword is not None else (
                GRADIENTS_PARAMS[i] if i < len(GRADIENTS_PARAMS) else None)
            if key is None or key not in GRADIENTS_PARAMS:
                self.report(TS104.code, call, "tf.gradients called with unknown arguments")
                return False
            gc.args[key] = arg.value
        if "ys" not in gc.args or "xs" not in gc.args:
            self.report(TS104.code, call, "tf.gradients called without ys and xs")
            return False
        if "stop_gradients" in gc.args:
            self.report(TS102.code, call, "tf.gradients(..., stop_gradients=...) has no "
                        "GradientTape equivalent; put tf.stop_gradient in the forward code")
            return False
        return self._parse_operands(gc, kinds, elements)

    def _parse_operands(self, gc: _GradCall, kinds: dict, elements: dict) -> bool:
        call = gc.call
        ys = gc.args["ys"]
        if isinstance(ys, cst.Subscript) and isinstance(ys.value, cst.Name) \
                and len(ys.slice) == 1 and isinstance(ys.slice[0].slice, cst.Index) \
                and not names_of(ys.slice[0].slice.value)[0]:
            ys = ys.value  # losses[0]: an element of what the tape records as `losses`
        if isinstance(ys, cst.Name):
            gc.ys = [ys.value]
        elif isinstance(ys, (cst.List, cst.Tuple)) and all(
                isinstance(e.value, cst.Name) for e in ys.elements):
            gc.ys = [e.value.value for e in ys.elements]
        else:
            self.report(TS104.code, call, f"the targets `{code_of(ys)}` are not a name or a list of names")
            return False
        xs = gc.args["xs"]
        if isinstance(xs, cst.Name):
            kind = kinds.get(xs.value, "unknown")
            if kind in ("variable", "tensor"):
                gc.xs = [xs.value]
            elif kind == "list" and xs.value in elements:
                # a layer's variables (*dense): made by the calls the tape records
                gc.xs = [x.lstrip("*") for x in elements[xs.value]]
                gc.xs_is_list = True
                self._variable_owners.update(x[1:] for x in elements[xs.value] if x[0] == "*")
                if any(x.startswith(("self.", "*self.")) for x in elements[xs.value]):
                    gc.base = "self"
            else:
                self.report(TS104.code, call, f"cannot tell whether the sources `{xs.value}` "
                            "are a tensor or a list (TensorFlow's list semantics would be lost)")
                return False
        elif isinstance(xs, (cst.List, cst.Tuple)) and all(
                isinstance(e.value, cst.Name) for e in xs.elements):
            gc.xs = [e.value.value for e in xs.elements]
            gc.xs_is_list = True
        elif isinstance(xs, (cst.List, cst.Tuple)) and xs.elements and all(
                _owned_variables(e, kinds) or isinstance(e.value, cst.Name)
                or _self_attribute(e.value) for e in xs.elements):
            # [w, *dense.trainable_variables]: layers' variables, made by the
            # calls the tape records (so never watched by hand), beside variables
            # (in a method, both may be kept on the object: self.w, *self.fc.trainable_variables)
            gc.xs = [_owner(e) if _owned_variables(e, kinds) else code_of(e.value)
                     for e in xs.elements]
            gc.xs_is_list = True
            self._variable_owners.update(_owner(e) for e in xs.elements
                                         if _owned_variables(e, kinds))
            if any(x.startswith("self.") for x in gc.xs):
                gc.base = "self"
        elif isinstance(xs, cst.Attribute) and isinstance(xs.value, cst.Name) \
                and xs.attr.value == "trainable_variables":
            # a make_template function's variables: a list of trainable variables,
            # created by the calls the tape records (so never watched by hand)
            gc.xs = [xs.value.value]
            gc.xs_is_list = True
            self._variable_owners.add(xs.value.value)
        else:
            self.report(TS104.code, call, f"the sources `{code_of(xs)}` are not a name or a list of names")
            return False
        return True
