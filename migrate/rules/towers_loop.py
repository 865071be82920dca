"""Reading a TF1 tower loop: its parts, its reuse, its splits, its average, its config.

The towers rule (:mod:`tapeshift.migrate.rules.towers`) converts one pattern and
nothing near it. This mixin reads that pattern off the tree, part by part, and
raises :class:`NotTowers` with the node and the reason at the first part that is
not it: the loop ``for i in range(N):`` (possibly inside ``with
tf.variable_scope(tf.get_variable_scope()):``), its ``with`` items (``tf.device``,
``tf.name_scope``, ``tf.variable_scope(tf.get_variable_scope(), reuse=...)``), its
four statements (the tower's call on ``parts[i]`` of ``parts = tf.split(x, N)``,
``reuse_variables()``, ``compute_gradients``, the list's ``append``), the list made
empty before it, one averaging helper
(:mod:`tapeshift.migrate.rules.towers_average`) and one ``apply_gradients`` after
it, nothing else reading the loop's names, and a session config that only places
ops softly. What the tower computes is read by
:mod:`tapeshift.migrate.rules.towers_rows`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst

from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.walk import nodes
from tapeshift.migrate.rules.towers_average import average_reason
from tapeshift.migrate.rules.towers_rows import AUTO, CONST, REUSE, ROWS, Reading, TowerReader, Value

#: ``compute_gradients`` arguments kept, and those dropped (graph placement only)
KEPT_GRADIENT_ARGS = frozenset({"var_list"})
DROPPED_GRADIENT_ARGS = frozenset({"colocate_gradients_with_ops", "gate_gradients",
                                   "aggregation_method"})
_CONFIG_FIELDS = frozenset({"allow_soft_placement", "log_device_placement"})
_DATA = frozenset({"placeholder", "placeholder_with_default", "sparse_placeholder",
                   "train.batch", "train.shuffle_batch", "train.batch_join",
                   "train.shuffle_batch_join"})

class NotTowers(Exception):
    def __init__(self, node: cst.CSTNode, reason: str) -> None:
        super().__init__(reason)
        self.node = node
        self.reason = reason


@dataclass
class Loop:
    """The parts of a recognised tower loop."""

    index: int  # of the statement (the loop, or the scope around it) in its block
    statement: cst.BaseStatement
    loop: cst.For
    var: str
    count: cst.BaseExpression
    tower_call: cst.Call
    loss: str
    grads_call: cst.Call
    per_tower_grads: Optional[str]
    tower_grads: str
    optimizer: str
    loop_reuse: Optional[str]  # the reuse of towers after the first: REUSE, AUTO or None
    devices: List[str] = field(default_factory=list)
    splits: Dict[str, str] = field(default_factory=dict)  # split list -> its source
    dropped: List[str] = field(default_factory=list)
    #: ``reuse_variables()`` in the loop, no scope around it: the root scope reuses after it
    reuse_at_root: bool = False


class LoopReader:
    """The reading half of the towers rule (a mixin of a :class:`TapeshiftCodemod` that
    sets ``_module``, ``_functions`` and ``_average`` before it reads)."""

    _module: cst.Module
    _functions: Dict[str, cst.FunctionDef]
    _average: str

    def _read_loop(self, body: List[cst.BaseStatement], index: int) -> Loop:
        stmt = body[index]
        outer_reuse = None
        if isinstance(stmt, cst.With):  # `with tf.variable_scope(tf.get_variable_scope()):`
            if len(stmt.items) != 1 or not self._root_scope(stmt.items[0]) \
                    or stmt.items[0].asname is not None:
                raise NotTowers(stmt, f"`with {code_of(stmt.items[0].item)}` around the towers: "
                                 "only `tf.variable_scope(tf.get_variable_scope())` is read")
            outer_reuse = self._scope_reuse(stmt.items[0].item, "0")
            if outer_reuse is not None:
                raise NotTowers(stmt, "a reuse set around the whole loop (the first tower "
                                 "would look its variables up before they exist)")
        loop = unwrapped(stmt)
        assert isinstance(loop, cst.For)
        if not isinstance(loop.target, cst.Name) or loop.orelse is not None or loop.asynchronous:
            raise NotTowers(loop, "the tower loop must be `for i in range(N):` (no else)")
        it = loop.iter
        if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Name)
                and it.func.value == "range" and len(it.args) == 1 and it.args[0].keyword is None
                and _simple(it.args[0].value)):
            raise NotTowers(loop.iter, f"`{code_of(loop.iter)}`: the towers must be counted "
                             "by `range(N)`, N a name, an attribute or a number")
        var = loop.target.value
        count = it.args[0].value
        devices: List[str] = []
        reuse: Optional[Tuple[Optional[str], Optional[str]]] = None
        statements = list(loop.body.body) if isinstance(loop.body, cst.IndentedBlock) else []
        while len(statements) == 1 and isinstance(statements[0], cst.With):
            w = statements[0]
            for item in w.items:
                call = item.item
                api = self.tf_api_name(call.func) if isinstance(call, cst.Call) else None
                if api == "device":
                    devices.append(code_of(call))
                elif api == "name_scope":
                    if item.asname is not None:
                        scope = code_of(item.asname.name)
                        if any(reads(s, scope) for s in w.body.body):
                            raise NotTowers(item, f"the tower's name scope `{scope}` is used "
                                             "in the tower (its summaries or losses per tower "
                                             "are not converted)")
                elif self._root_scope(item) and item.asname is None:
                    reuse = (self._scope_reuse(item.item, "0", var),
                             self._scope_reuse(item.item, "1", var))
                else:
                    raise NotTowers(item, f"`with {code_of(call)}` in the tower loop: only "
                                     "tf.device, tf.name_scope and "
                                     "tf.variable_scope(tf.get_variable_scope(), reuse=...) are "
                                     "read")
            statements = list(w.body.body) if isinstance(w.body, cst.IndentedBlock) else []
        parts = self._read_tower_statements(statements, var, loop)
        tower_call, loss, grads_call, per_tower, tower_grads, reused = parts
        if reuse is not None and reuse[0] == REUSE:
            raise NotTowers(loop, "the first tower reuses its variables (reuse is true for i = "
                             "0): they would have to exist before the loop")
        loop_reuse = REUSE if reused else reuse[1] if reuse is not None else None
        optimizer = grads_call.func.value.value  # type: ignore[attr-defined]
        splits = self._read_splits(tower_call, var, count, body[:body.index(stmt)])
        dropped = [code_of(a).strip(", ") for a in grads_call.args
                   if a.keyword is not None and a.keyword.value in DROPPED_GRADIENT_ARGS]
        grads_call = grads_call.with_changes(args=clean_args([
            a for a in grads_call.args
            if a.keyword is None or a.keyword.value not in DROPPED_GRADIENT_ARGS]))
        return Loop(index, stmt, loop, var, count, tower_call, loss, grads_call, per_tower,
                     tower_grads, optimizer, loop_reuse, devices, splits, dropped,
                     reuse_at_root=reused and stmt is loop)

    def _root_scope(self, item: cst.WithItem) -> bool:
        call = item.item
        return isinstance(call, cst.Call) and self.is_tf(call.func, "variable_scope") \
            and bool(call.args) and call.args[0].keyword is None \
            and isinstance(call.args[0].value, cst.Call) \
            and self.is_tf(call.args[0].value.func, "get_variable_scope") \
            and all(a.keyword is not None and a.keyword.value == "reuse" for a in call.args[1:])

    def _scope_reuse(self, call: cst.BaseExpression, index: str,
                     var: Optional[str] = None) -> Optional[str]:
        """The reuse of ``tf.variable_scope(tf.get_variable_scope(), reuse=...)`` for tower
        ``index`` ("0": the first, "1": any other) of the loop over ``var``, None when it
        sets none."""
        assert isinstance(call, cst.Call)
        value = next((a.value for a in call.args if a.keyword is not None), None)
        if value is None:
            return None
        if isinstance(value, cst.Name) and value.value in ("None", "False"):
            return None
        if isinstance(value, cst.Name) and value.value == "True":
            return REUSE
        if self.is_tf(value, "AUTO_REUSE"):
            return AUTO
        if var is None or not _fold_reuse(value, var):
            raise NotTowers(value, f"`reuse={code_of(value)}`: only True, tf.AUTO_REUSE and "
                             "the forms of `i > 0` (`bool(i)`, `i != 0`, `True if i > 0 else "
                             "None` ...) of the loop's variable are read")
        return REUSE if index != "0" else None

    def _read_tower_statements(self, statements: Sequence[cst.BaseStatement], var: str,
                               loop: cst.For):
        tower_call = loss = grads_call = per_tower = tower_grads = None
        reused = False
        for stmt in statements:
            if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
                raise NotTowers(stmt, f"`{code_of(stmt).strip()}` in the tower loop: only the "
                                 "tower's call, compute_gradients, the list's append and "
                                 "reuse_variables() are read")
            small = stmt.body[0]
            value = small.value if isinstance(small, (cst.Assign, cst.Expr)) else None
            target = small.targets[0].target if isinstance(small, cst.Assign) \
                and len(small.targets) == 1 else None
            if isinstance(target, cst.Name) and isinstance(value, cst.Call) \
                    and isinstance(value.func, cst.Name) and value.func.value in self._functions \
                    and tower_call is None:
                tower_call, loss = value, target.value
                continue
            if isinstance(target, cst.Name) and self._is_compute_gradients(value, loss) \
                    and grads_call is None:
                grads_call, per_tower = value, target.value
                continue
            if isinstance(small, cst.Expr) and isinstance(value, cst.Call) \
                    and isinstance(value.func, cst.Attribute) \
                    and value.func.attr.value == "append" and isinstance(value.func.value, cst.Name) \
                    and len(value.args) == 1 and tower_grads is None:
                arg = value.args[0].value
                if isinstance(arg, cst.Name) and arg.value == per_tower and per_tower is not None:
                    tower_grads = value.func.value.value
                    continue
                if grads_call is None and self._is_compute_gradients(arg, loss):
                    grads_call, tower_grads = arg, value.func.value.value
                    continue
            if isinstance(small, cst.Expr) and self._is_reuse_variables(value) \
                    and tower_call is not None and not reused:
                reused = True
                continue
            raise NotTowers(stmt, f"`{code_of(stmt).strip()}` in the tower loop: only the "
                             "tower's call (a function of this module), compute_gradients of "
                             "its value, the list's append and reuse_variables() after the "
                             "call are read")
        if tower_call is None or grads_call is None or tower_grads is None:
            raise NotTowers(loop, "the tower loop does not call a tower function of this "
                             "module, pass its value to compute_gradients and append the "
                             "gradients to a list")
        return tower_call, loss, grads_call, per_tower, tower_grads, reused

    def _is_compute_gradients(self, value, loss: Optional[str]) -> bool:
        if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
                and value.func.attr.value == "compute_gradients"
                and isinstance(value.func.value, cst.Name) and loss is not None):
            return False
        first = value.args[0] if value.args else None
        if first is None or not (isinstance(first.value, cst.Name) and first.value.value == loss
                                 and (first.keyword is None or first.keyword.value == "loss")):
            return False
        return all(a.keyword is not None and (a.keyword.value in KEPT_GRADIENT_ARGS
                                              or a.keyword.value in DROPPED_GRADIENT_ARGS)
                   for a in value.args[1:])

    def _is_reuse_variables(self, value) -> bool:
        return isinstance(value, cst.Call) and not value.args \
            and isinstance(value.func, cst.Attribute) \
            and value.func.attr.value == "reuse_variables" \
            and isinstance(value.func.value, cst.Call) \
            and self.is_tf(value.func.value.func, "get_variable_scope")

    def _read_splits(self, call: cst.Call, var: str, count: cst.BaseExpression,
                     before: Sequence[cst.BaseStatement]) -> Dict[str, str]:
        splits: Dict[str, str] = {}
        for arg in call.args:
            if arg.star:
                raise NotTowers(arg, "*args in the tower's call")
            value = arg.value
            if isinstance(value, cst.Subscript) and len(value.slice) == 1 \
                    and isinstance(value.slice[0].slice, cst.Index) \
                    and isinstance(value.slice[0].slice.value, cst.Name) \
                    and value.slice[0].slice.value.value == var \
                    and isinstance(value.value, cst.Name):
                name = value.value.value
                splits[name] = self._split_source(name, count, before, value)
            elif reads(value, var):
                raise NotTowers(value, f"`{code_of(value)}`: a tower's argument that depends on "
                                 f"`{var}` must be `parts[{var}]` of `parts = tf.split(x, N)`")
        if not splits:
            raise NotTowers(call, "the tower's call takes no split of the batch (`parts[i]` "
                             "of `parts = tf.split(x, N)`)")
        return splits

    def _split_source(self, name: str, count: cst.BaseExpression,
                      before: Sequence[cst.BaseStatement], where: cst.CSTNode) -> str:
        bound = [s for s in before if isinstance(s, cst.SimpleStatementLine)
                 and any(isinstance(t.target, cst.Name) and t.target.value == name
                         for small in s.body if isinstance(small, cst.Assign)
                         for t in small.targets)]
        if len(bound) != 1 or len(bound[0].body) != 1:
            raise NotTowers(where, f"`{name}` must be bound once, before the loop, to "
                             "`tf.split(x, N)`")
        value = bound[0].body[0].value  # type: ignore[union-attr]
        if not (isinstance(value, cst.Call) and self.is_tf(value.func, "split")):
            raise NotTowers(bound[0], f"`{name}` is not `tf.split(x, N)`")
        args: Dict[str, cst.BaseExpression] = {}
        for k, a in enumerate(value.args):
            key = a.keyword.value if a.keyword is not None else \
                ("value", "num_or_size_splits", "axis")[k] if k < 3 else "?"
            args[key] = a.value
        source, parts, axis = args.get("value"), args.get("num_or_size_splits"), args.get("axis")
        if set(args) - {"value", "num_or_size_splits", "axis"}:
            raise NotTowers(value, "tf.split with arguments other than the value, the number of "
                             "parts and axis=0")
        if not isinstance(source, cst.Name):
            raise NotTowers(value, "the batch split must be a name (`tf.split(x, N)`)")
        if parts is None or code_of(parts) != code_of(count):
            raise NotTowers(value, f"`{code_of(value)}` does not split into "
                             f"`{code_of(count)}` equal parts, one per tower (a split into "
                             "sizes is not an equal split)")
        if axis is not None and not (isinstance(axis, cst.Integer) and axis.value == "0"):
            raise NotTowers(value, "tf.split along another axis than the batch's (0)")
        return source.value

    def _read_average(self, after: Sequence[cst.BaseStatement], loop: Loop):
        """(index of `grads = average(tower_grads)` or None, index of the apply, its name)."""
        average_at = apply_at = None
        average_name = None
        for j, stmt in enumerate(after):
            for n in nodes(stmt):
                if isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and len(n.args) == 1 \
                        and isinstance(n.args[0].value, cst.Name) \
                        and n.args[0].value.value == loop.tower_grads:
                    if average_at is not None or apply_at is not None:
                        raise NotTowers(stmt, f"`{loop.tower_grads}` is averaged twice")
                    self._average = n.func.value
                    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 \
                            and isinstance(stmt.body[0], cst.Assign) and stmt.body[0].value is n \
                            and len(stmt.body[0].targets) == 1 \
                            and isinstance(stmt.body[0].targets[0].target, cst.Name):
                        average_at = j
                        average_name = stmt.body[0].targets[0].target.value
                    elif self._is_apply(stmt, loop, n):
                        apply_at = j
                    else:
                        raise NotTowers(stmt, "the towers' gradients are averaged in a "
                                         "statement the rule does not read (it reads `grads = "
                                         "average_gradients(tower_grads)` and "
                                         "`opt.apply_gradients(grads, ...)`)")
        if average_at is None and apply_at is None:
            raise NotTowers(loop.loop, f"`{loop.tower_grads}` is not averaged by a helper "
                             "of this module after the loop")
        fn = self._functions.get(self._average)
        reason = "it is not a function of this module" if fn is None else \
            average_reason(fn, self.tf_api_name)
        if reason is not None:
            raise NotTowers(fn or loop.loop, f"`{self._average}` is not read as the mean of each "
                             f"variable's gradients across the towers: {reason}")
        if average_name is not None:
            for j, stmt in enumerate(after):
                if j == average_at:
                    continue
                if reads(stmt, average_name):
                    if apply_at is None and self._is_apply(stmt, loop, cst.Name(average_name)):
                        apply_at = j
                        continue
                    raise NotTowers(stmt, f"the averaged gradients `{average_name}` are used "
                                     "other than by one apply_gradients")
            if apply_at is None:
                raise NotTowers(after[average_at], f"`{average_name}` is not applied by "
                                 f"`{loop.optimizer}.apply_gradients`")
        return average_at, apply_at, average_name

    def _is_apply(self, stmt: cst.CSTNode, loop: Loop, argument: cst.CSTNode) -> bool:
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
            return False
        small = stmt.body[0]
        value = small.value if isinstance(small, (cst.Assign, cst.Expr)) else None
        if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
                and value.func.attr.value == "apply_gradients"
                and isinstance(value.func.value, cst.Name)
                and value.func.value.value == loop.optimizer and value.args):
            return False
        first = value.args[0].value
        return first is argument or (isinstance(first, cst.Name) and isinstance(argument, cst.Name)
                                     and first.value == argument.value)

    def _read_init(self, before: Sequence[cst.BaseStatement], name: str) -> int:
        for k in range(len(before) - 1, -1, -1):
            stmt = before[k]
            if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 \
                    and isinstance(stmt.body[0], cst.Assign) \
                    and len(stmt.body[0].targets) == 1 \
                    and isinstance(stmt.body[0].targets[0].target, cst.Name) \
                    and stmt.body[0].targets[0].target.value == name:
                if isinstance(stmt.body[0].value, cst.List) and not stmt.body[0].value.elements:
                    return k
                break
        raise NotTowers(before[-1] if before else self._module,
                         f"`{name} = []` is not the statement before the loop that makes the "
                         "towers' list")

    def _check_later_uses(self, after: Sequence[cst.BaseStatement], loop: Loop,
                          average_at: Optional[int]) -> None:
        """The loop's index and each tower's gradients mean nothing once the towers are one."""
        for name in (loop.var, loop.per_tower_grads, loop.tower_grads):
            if name is None:
                continue
            for j, stmt in enumerate(after):
                if j == average_at:
                    if name != loop.tower_grads and reads(stmt, name):
                        raise NotTowers(stmt, f"`{name}` of the towers is read after the loop")
                    if binds(stmt, name):
                        break
                    continue
                if binds(stmt, name) and not reads(stmt, name):
                    break
                if reads(stmt, name) and not (name == loop.tower_grads and any(
                        isinstance(n, cst.Call) and is_call_of(n, self._average)
                        for n in nodes(stmt))):
                    raise NotTowers(stmt, f"`{name}` of the towers is read after the loop")

    def _read_tower(self, loop: Loop, program: Sequence[cst.BaseStatement]) -> Reading:
        batch, ranks, placeholder_ranks = self._module_facts(program)
        args: List[Tuple[Optional[str], Value]] = []
        for arg in loop.tower_call.args:
            keyword = arg.keyword.value if arg.keyword is not None else None
            value = arg.value
            if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name) \
                    and value.value.value in loop.splits:
                source = loop.splits[value.value.value]
                args.append((keyword, Value(ROWS, placeholder_ranks.get(source))))
            elif any(isinstance(n, cst.Name) and n.value in batch for n in nodes(value)):
                raise NotTowers(value, f"`{code_of(value)}`: every tower is given the whole of "
                                 "it (made from the fed batch): not one tower's share")
            else:
                args.append((keyword, Value(CONST, 0 if isinstance(value, (cst.Integer, cst.Float))
                                            else ranks.get(code_of(value)))))
        reader = TowerReader(self.tf_api_name, self._functions, batch, ranks, loop.loop_reuse)
        return reader.read(loop.tower_call, args)

    def _module_facts(self, program: Sequence[cst.BaseStatement]):
        """Names made from fed data (transitively), names of numbers, placeholders' ranks."""
        batch: Set[str] = set()
        ranks: Dict[str, int] = {}
        placeholder_ranks: Dict[str, int] = {}
        for stmt in program:
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                if not isinstance(small, cst.Assign):
                    continue
                targets = [n.value for t in small.targets for n in nodes(t.target)
                           if isinstance(n, cst.Name)]
                value = small.value
                data = any(isinstance(n, cst.Call) and self.tf_api_name(n.func) in _DATA
                           or isinstance(n, cst.Attribute) and n.attr.value == "get_next"
                           or isinstance(n, cst.Name) and n.value in batch
                           for n in nodes(value))
                for t in targets:
                    batch.discard(t)
                    ranks.pop(t, None)
                if data:
                    batch.update(targets)
                if len(targets) == 1 and isinstance(value, (cst.Integer, cst.Float)):
                    ranks[targets[0]] = 0
                if len(targets) == 1 and isinstance(value, cst.Call) \
                        and self.tf_api_name(value.func) == "placeholder":
                    shape = next((a.value for k, a in enumerate(value.args)
                                  if (a.keyword is None and k == 1)
                                  or (a.keyword is not None and a.keyword.value == "shape")), None)
                    if isinstance(shape, (cst.List, cst.Tuple)):
                        placeholder_ranks[targets[0]] = len(shape.elements)
        return batch, ranks, placeholder_ranks

    def _soft_placement(self, body: Sequence[cst.BaseStatement]) -> Dict[int, str]:
        """Statements that only make a session config placing ops softly (index -> name)."""
        out: Dict[int, str] = {}
        for k, stmt in enumerate(body):
            if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
                continue
            small = stmt.body[0]
            if isinstance(small, cst.Assign) and len(small.targets) == 1 \
                    and isinstance(small.targets[0].target, cst.Name) \
                    and isinstance(small.value, cst.Call) \
                    and self.is_tf(small.value.func, "ConfigProto") \
                    and all(a.keyword is not None and a.keyword.value in _CONFIG_FIELDS
                            for a in small.value.args):
                out[k] = small.targets[0].target.value
        for k, stmt in enumerate(body):  # `config.allow_soft_placement = True`
            if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 \
                    and isinstance(stmt.body[0], cst.Assign) \
                    and len(stmt.body[0].targets) == 1:
                target = stmt.body[0].targets[0].target
                if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) \
                        and target.value.value in out.values() \
                        and target.attr.value in _CONFIG_FIELDS:
                    out[k] = target.value.value
        for name in set(out.values()):
            allowed = {id(n) for k in out for n in nodes(body[k])}
            for n in nodes(self._module):
                if isinstance(n, cst.Arg) and n.keyword is not None \
                        and n.keyword.value == "config" and isinstance(n.value, cst.Name) \
                        and n.value.value == name:
                    allowed.add(id(n.value))
                    allowed.add(id(n.keyword))
            if any(isinstance(n, cst.Name) and n.value == name and id(n) not in allowed
                   for n in nodes(self._module)):
                out = {k: v for k, v in out.items() if v != name}  # used otherwise: it stays
        return out

    # -- names ---------------------------------------------------------------------
    def _read_elsewhere(self, name: str, module: cst.Module, loop: cst.For) -> bool:
        """``name`` is spelled outside ``loop``."""
        inside = {id(n) for n in nodes(loop)}
        return any(isinstance(n, cst.Name) and n.value == name and id(n) not in inside
                   for n in nodes(module))


def unwrapped(stmt: cst.CSTNode) -> cst.CSTNode:
    """The loop inside ``with tf.variable_scope(tf.get_variable_scope()):``, if that is all."""
    if isinstance(stmt, cst.With) and isinstance(stmt.body, cst.IndentedBlock) \
            and len(stmt.body.body) == 1 and isinstance(stmt.body.body[0], cst.For):
        return stmt.body.body[0]
    return stmt


def reads(stmt: cst.CSTNode, name: str) -> bool:
    """``name`` is read in ``stmt`` (spelled other than as a target it is bound to)."""
    stored = {id(n) for t in nodes(stmt) if isinstance(t, (cst.AssignTarget, cst.For))
              for n in nodes(t.target) if isinstance(n, cst.Name)}
    return any(isinstance(n, cst.Name) and n.value == name and id(n) not in stored
               for n in nodes(stmt))


def binds(stmt: cst.CSTNode, name: str) -> bool:
    """``stmt`` assigns ``name`` (``name = ...``, or ``for name in ...``)."""
    if isinstance(stmt, cst.For):
        return isinstance(stmt.target, cst.Name) and stmt.target.value == name
    return isinstance(stmt, cst.SimpleStatementLine) and any(
        isinstance(small, cst.Assign) and any(
            isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets)
        for small in stmt.body)


def _simple(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.Name, cst.Integer)):
        return True
    return isinstance(expr, cst.Attribute) and _simple(expr.value)


def is_call_of(call: cst.Call, name: str) -> bool:
    return isinstance(call.func, cst.Name) and call.func.value == name


#: reuse expressions of the loop variable that are false for the first tower, true after
_LATER_TOWERS = ("{i}>0", "{i}!=0", "{i}>=1", "0<{i}", "bool({i})", "{i}", "Trueif{i}>0elseNone",
                 "Trueif{i}>0elseFalse", "Trueif{i}elseNone", "Trueif{i}elseFalse",
                 "{i}>0orNone")


def _fold_reuse(value: cst.BaseExpression, var: str) -> bool:
    """``value`` is one of the ``i > 0`` forms of the loop variable ``var``."""
    bare = value.with_changes(lpar=[], rpar=[]) if getattr(value, "lpar", None) else value
    code = code_of(bare).replace(" ", "")
    return any(code == pattern.format(i=var) for pattern in _LATER_TOWERS)


def clean_args(args: List[cst.Arg]) -> List[cst.Arg]:
    if args:
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return args
