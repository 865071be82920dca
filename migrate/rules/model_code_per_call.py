"""The model-code rule's functions that make new variables at each call: a set per call, passed in.

The layer helper of many TF1 tutorials::

    def add_layer(inputs, in_size, out_size, activation_function=None):
        Weights = tf.Variable(tf.random_normal([in_size, out_size]))
        biases = tf.Variable(tf.zeros([1, out_size]) + 0.1)
        Wx_plus_b = tf.matmul(inputs, Weights) + biases
        ...
        return outputs

    l1 = add_layer(xs, 1, 10, activation_function=tf.nn.relu)
    prediction = add_layer(l1, 10, 1, activation_function=None)

TF1 makes a new pair of variables at each call. The calls read fed values, so the
feeds rule runs them at each step; the variables are made before each call instead,
once, as module names after the call's target, their initial values reading the
call's arguments; the function takes them as parameters in place of the ones only
they read::

    def add_layer(inputs, Weights, biases, activation_function=None):
        Wx_plus_b = tf.matmul(inputs, Weights) + biases
        ...

    l1_Weights = tf.Variable(tf.random_normal([1, 10]))
    l1_biases = tf.Variable(tf.zeros([1, 10]) + 0.1)
    l1 = add_layer(xs, l1_Weights, l1_biases, activation_function=tf.nn.relu)

Only that plain shape is read (:func:`per_call_function`): each variable is
``local = tf.Variable(...)``, a statement of the function's own body, whose initial
value reads parameters and module names only; every use of the function is a call
in a module-level statement (or the ``__main__`` guard's); the arguments those
initial values read are plain expressions (names, numbers, arithmetic) of no fed
value. Another function making variables keeps its reading at its first call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Set, Tuple

import libcst as cst

from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.dataflow import names_of
from tapeshift.migrate.engine.toolkit.walk import nodes, nodes_of
from tapeshift.migrate.rules.model_code_calls import CallRewriter
from tapeshift.migrate.rules.model_code_order import run_once_statements
from tapeshift.migrate.rules.model_code_syntax import assign, name_assignment

#: what an argument the initial values read must not hold: evaluated again before the
#: call, it must give the same value and do nothing else
_EFFECTS = (cst.Call, cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp,
            cst.Await, cst.Yield, cst.NamedExpr)


@dataclass
class PerCall:
    """A function read at each of its calls (see the module's docstring)."""

    fn: cst.FunctionDef
    #: its variables, in order: (the local, the statement making it)
    variables: List[Tuple[str, cst.SimpleStatementLine]]
    #: the parameters only the variables' initial values read: they go
    dropped: Set[str]
    #: the parameters after the rewrite, in order (the variables' in place of dropped)
    params: List[str]

    @property
    def name(self) -> str:
        return self.fn.name.value


def per_call_function(rule, fn: cst.FunctionDef, module: cst.Module) -> Optional[PerCall]:
    """``fn`` as a function read at each call, if it has that shape (None otherwise)."""
    if fn.name.value not in rule._fed_callees or not isinstance(fn.body, cst.IndentedBlock) \
            or fn.params.posonly_params or fn.params.kwonly_params \
            or isinstance(fn.params.star_arg, cst.Param) or fn.params.star_kwarg is not None \
            or fn.asynchronous is not None or fn.decorators:
        return None
    made = [c for c in nodes(fn.body) if isinstance(c, cst.Call) and rule._model_api(c, False)]
    made_by = [(local, stmt, value) for local, stmt, value in _assignments(rule, fn.body.body)
               if isinstance(value, cst.Call)
               and rule._model_api(value, False) in ("Variable", "VariableV1")]
    if not made or {id(c) for c in made} != {id(value) for _, _, value in made_by}:
        return None  # other model code, or a variable made otherwise
    variables = [(local, stmt) for local, stmt, _ in made_by]
    scoped = any(all(stmt is not top for top in fn.body.body) for _, stmt in variables)
    if scoped and (rule._uses_saver or "get_collection" in {
            n.value for n in nodes_of(module, cst.Name)}):
        return None  # (their TF1 names carry the name scopes, which a Saver would look up)
    params = [p.name.value for p in fn.params.params]
    writes = [w for stmt in fn.body.body for w in names_of(stmt)[1]]
    locals_ = set(writes) - set(params)
    mine = {local for local, _ in variables}
    if any(writes.count(local) != 1 for local in mine) or mine & set(params):
        return None
    read_by_variables: Set[str] = set()
    inside: Set[int] = set()
    for _, stmt in variables:
        reads = names_of(stmt.body[0].value)[0]
        if reads & locals_:
            return None  # (a value computed in the function: not known before the call)
        read_by_variables |= reads & set(params)
        inside |= {id(n) for n in nodes(stmt)}
    read_elsewhere = {n.value for n in nodes(fn.body) if isinstance(n, cst.Name)
                      and id(n) not in inside}
    dropped = {p for p in read_by_variables if p not in read_elsewhere}
    calls = _calls(module, fn.name.value)
    if calls is None or not calls or len(calls) < 2 and not read_by_variables:
        return None  # (called once and reading no argument: made before its first call)
    first = min((params.index(p) for p in dropped), default=None)
    if first is None:  # before the first parameter with a default
        first = next((k for k, p in enumerate(fn.params.params) if p.default is not None),
                     len(params))
    if any(p.default is not None for p in fn.params.params[:first]):
        return None
    kept = [p for p in params if p not in dropped]
    at = len([p for p in params[:first] if p not in dropped])
    return PerCall(fn, variables, dropped, kept[:at] + [local for local, _ in variables] + kept[at:])


def _assignments(rule, body) -> List[Tuple[str, cst.SimpleStatementLine, cst.BaseExpression]]:
    """(name, statement, value) of the ``name = value`` statements of ``body`` and of
    the ``with tf.name_scope("...")`` blocks in it."""
    out: List[Tuple[str, cst.SimpleStatementLine, cst.BaseExpression]] = []
    for stmt in body:
        found = name_assignment(stmt)
        if found is not None:
            out.append((found[0], stmt, found[1]))
        elif isinstance(stmt, cst.With) and _name_scopes(rule, stmt):
            out += _assignments(rule, stmt.body.body)
    return out


def _name_scopes(rule, stmt: cst.With) -> bool:
    """``with tf.name_scope("layer"):`` (constant names only)."""
    return isinstance(stmt.body, cst.IndentedBlock) and all(
        isinstance(item.item, cst.Call) and rule.tf_api_name(item.item.func) == "name_scope"
        and item.asname is None and item.item.args
        and isinstance(item.item.args[0].value, cst.SimpleString) for item in stmt.items)


def _calls(module: cst.Module, name: str) -> Optional[List[cst.Call]]:
    """The calls of ``name``, in module-level statements (the guard's, and those of
    ``with`` blocks there); None if the name is used otherwise."""
    top = list(run_once_statements(module, into_functions=False))
    calls: List[cst.Call] = []
    for stmt in top:
        calls += [c for c in nodes_of(stmt, cst.Call)
                  if isinstance(c.func, cst.Name) and c.func.value == name]
    uses = [n for n in nodes_of(module, cst.Name) if n.value == name]
    defs = [fn.name for fn in nodes_of(module, cst.FunctionDef) if fn.name.value == name]
    if len(defs) != 1 or len(uses) != len(calls) + 1:
        return None
    return calls


class _Substitute(cst.CSTTransformer):
    """Each parameter name read in ``expr`` -> the call's argument (in parentheses
    where it must be); not a keyword (``stddev=stddev``) or an attribute's name."""

    def __init__(self, expr: cst.BaseExpression, values: Dict[str, cst.BaseExpression]) -> None:
        super().__init__()
        self.values = values
        self.names = {id(a.keyword) for a in nodes_of(expr, cst.Arg) if a.keyword is not None} \
            | {id(a.attr) for a in nodes_of(expr, cst.Attribute)}

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.BaseExpression:
        value = self.values.get(original_node.value)
        if value is None or id(original_node) in self.names:
            return updated_node
        value = value.deep_clone()
        if isinstance(value, (cst.BinaryOperation, cst.UnaryOperation)) and not value.lpar:
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return value


class PerCallFunctions:
    """Part of :class:`tapeshift.migrate.rules.model_code.ModelCode`: functions
    read at each call (state on the rule: ``_per_call``)."""

    def _per_call_functions(self, module: cst.Module) -> Dict[str, PerCall]:
        out: Dict[str, PerCall] = {}
        for stmt in module.body:
            if isinstance(stmt, cst.FunctionDef):
                found = per_call_function(self, stmt, module)
                if found is not None:
                    out[found.name] = found
                    self._replayed.add(id(stmt))  # (every call is read)
        return out

    def _per_call_def(self, found: PerCall) -> cst.FunctionDef:
        """The def computing with the variables it is passed."""
        fn = found.fn
        body = list(fn.body.with_changes(body=fn.body.body).visit(
            _WithoutStatements({id(stmt) for _, stmt in found.variables})).body)
        if not body:
            body = [cst.SimpleStatementLine([cst.Pass()])]
        first = fn.body.body[0]
        if body[0] is not first and first.leading_lines \
                and any(stmt is first for _, stmt in found.variables):
            # (the first statement's comments say what the function does)
            body[0] = body[0].with_changes(leading_lines=[*first.leading_lines,
                                                          *body[0].leading_lines])
        old = {p.name.value: p for p in fn.params.params}
        params = [old[name] if name in old else cst.Param(cst.Name(name))
                  for name in found.params]
        params = [p.with_changes(comma=cst.MaybeSentinel.DEFAULT) for p in params]
        self.record_change(fn, f"`{found.name}` makes new variables at each call: it takes "
                           f"them as parameters ({', '.join(f'`{v}`' for v, _ in found.variables)}"
                           "), made before each call")
        return fn.with_changes(params=fn.params.with_changes(params=params),
                               body=fn.body.with_changes(body=body))

    def _per_call_made(self, stmt: cst.SimpleStatementLine
                       ) -> Tuple[cst.SimpleStatementLine, List[cst.BaseStatement]]:
        """A statement calling such functions: (the statement passing each call's
        variables, the statements making them, before it, in the order Python makes
        the calls: ``add_layer(add_layer(xs, 2, 5), 5, 1)``'s inner one first)."""
        if not any(isinstance(c.func, cst.Name) and c.func.value in self._per_call
                   for c in nodes_of(stmt, cst.Call)):
            return stmt, []
        target = name_assignment(stmt)
        made: List[cst.BaseStatement] = []
        owner = self

        class _EachCall(cst.CSTTransformer):
            def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
                if not (isinstance(original_node.func, cst.Name)
                        and original_node.func.value in owner._per_call):
                    return updated_node
                base = target[0] if target is not None and target[1] is original_node \
                    else original_node.func.value
                before, call = owner._per_call_one(original_node, updated_node, base)
                made.extend(before)
                return call

        new = stmt.visit(_EachCall())
        if made:  # (the call's blank lines and comments head what is made for it)
            made[0] = made[0].with_changes(leading_lines=stmt.leading_lines)
            new = new.with_changes(leading_lines=[])
        return new, made

    def _per_call_one(self, original: cst.Call, call: cst.Call, base: str
                      ) -> Tuple[List[cst.BaseStatement], cst.Call]:
        """One call (``original``, its arguments as rewritten so far in ``call``): the
        statements making its variables, named ``<base>_<local>``, and the call
        passing them."""
        found = self._per_call[original.func.value]
        fn = found.fn
        names = [p.name.value for p in fn.params.params]
        values: Dict[str, cst.BaseExpression] = {}
        for k, arg in enumerate(original.args):
            if arg.star:
                self._fail(original, f"`{found.name}(*args)`: the variables it makes are not "
                           "read from such a call")
            if arg.keyword is None and k >= len(names):
                self._fail(original, f"`{found.name}` is called with more arguments than it takes")
            name = arg.keyword.value if arg.keyword is not None else names[k]
            values[name] = arg.value
        defaults = set()
        for p in fn.params.params:
            if p.name.value not in values and p.default is not None:
                values[p.name.value] = p.default
                defaults.add(p.name.value)
        read = set()
        for _, stmt in found.variables:
            read |= names_of(stmt.body[0].value)[0] & set(names)
        for name in sorted(read):
            value = values.get(name)
            # (a default is the value of when the def ran: a name bound again since differs)
            if value is None or any(isinstance(n, _EFFECTS) for n in nodes(value)) \
                    or names_of(value)[0] & self._fed_names or name in defaults and any(
                        self._assignments.get(n, 0) != 1 for n in names_of(value)[0]):
                self._fail(original, f"`{found.name}` makes its variables from "
                           f"`{code_of(value) if value is not None else name}`, which the "
                           "codemod cannot evaluate again before the call: not converted")
        made: List[cst.BaseStatement] = []
        handles: Dict[str, str] = {}
        for local, stmt in found.variables:
            handle = self.handle(f"{base}_{local}")
            self._assignments[handle] = 1  # (a module name of its own)
            handles[local] = handle
            # the function's statement, read as module code's making `handle` (its
            # nodes are the module's: their TF names are known), the call's values
            # in place of the parameters
            rewriter = CallRewriter(self, handle)
            new = stmt.visit(rewriter)
            made.extend(rewriter.before)
            value = new.body[0].value
            substitute = _Substitute(value, {n: values[n] for n in read})
            made.append(assign(handle, value.visit(substitute)))
        positional = True
        args: List[cst.Arg] = []
        given = {(a.keyword.value if a.keyword is not None else names[k]): a
                 for k, a in enumerate(call.args)}
        dropped_positional = any(a.keyword is None for n, a in given.items() if n in found.dropped)
        for name in found.params:
            if name in handles:
                if not dropped_positional and found.dropped:
                    positional = False
                value = cst.Name(handles[name])
                args.append(cst.Arg(value) if positional else
                            cst.Arg(value, keyword=cst.Name(name),
                                    equal=cst.AssignEqual(cst.SimpleWhitespace(""),
                                                          cst.SimpleWhitespace(""))))
                continue
            arg = given.get(name)
            if arg is None:
                positional = False
                continue
            if arg.keyword is not None:
                positional = False
            elif not positional:
                arg = arg.with_changes(keyword=cst.Name(name), equal=cst.AssignEqual(
                    cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
            args.append(arg)
        args = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in args]
        self._changed = True
        self.record_change(original, f"`{found.name}(...)`: the variables this call made are "
                           f"made before it ({', '.join(f'`{h}`' for h in handles.values())}) "
                           "and passed to it")
        return made, call.with_changes(args=args)


class _WithoutStatements(cst.CSTTransformer):
    """The statements of ``gone`` (by id) removed, and the ``with`` blocks they empty."""

    def __init__(self, gone: Set[int]) -> None:
        super().__init__()
        self.gone = gone

    def leave_SimpleStatementLine(self, original_node, updated_node):
        return cst.RemoveFromParent() if id(original_node) in self.gone else updated_node

    def leave_With(self, original_node, updated_node):
        if not updated_node.body.body:  # (a name scope around a variable alone)
            return cst.RemoveFromParent()
        return updated_node
