"""The feeds rule's fed settings: a placeholder learning rate becomes a variable.

``lr = tf.placeholder(tf.float32, shape=[])`` read by an optimizer made once
(``tf.train.AdamOptimizer(lr)``) is a setting: each sess.run that trains feeds
the value of that step. The optimizer must outlive one step (its slots), so it
cannot take a step function's parameter. The placeholder becomes a non-trainable
``tf.Variable`` under the same name, which the optimizer reads when it applies
gradients (a v1 optimizer converts its learning rate at each ``apply_gradients``),
and each step function that needs it takes the fed value as ``<name>_value`` and
assigns it first: the value of the run, as TF1 had it.

Only a plain ``tf.placeholder`` of a scalar (no shape, or ``[]``) made by a
statement of its own qualifies; a ``placeholder_with_default`` would keep its
default at every run that does not feed it, which a variable does not.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Set

import libcst as cst

from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.walk import nodes
from tapeshift.migrate.rules.feeds_steps import call_argument
from tapeshift.migrate.rules.session import TS108

#: the dtype a tf.Variable(0.0) has already (``tf.float32``, ``"float"``)
_DEFAULT_DTYPES = frozenset({"float32", "float"})


class FedSettings:
    """Part of :class:`tapeshift.migrate.rules.feeds.FeedsToFunctions`: placeholders
    read by optimizers made once (state on the rule)."""

    def _no_settings(self) -> None:
        #: each setting placeholder -> the statement making it
        self._settings: Dict[str, int] = {}
        #: each name bound to an optimizer (or a train op) -> the settings it reads
        self._setting_users: Dict[str, Set[str]] = {}

    def _accept_settings(self, fed: Set[str], i: int, node: cst.CSTNode, what: str) -> None:
        """The names ``fed`` an optimizer made at statement ``i`` reads (``node``: its
        constructor call), which are fed or computed: settings if each is a scalar
        placeholder of a statement of its own, passed as an argument itself (an
        expression of it, ``lr * 2``, would be computed once, from the variable's
        value then), else the file is not converted (TS108)."""
        made = {name: self._setting_statement(name, i) for name in fed}
        bad = sorted(name for name, j in made.items() if j is None)
        if bad:
            self._bail(TS108.code, node, f"{what} built from a fed or computed tensor "
                       f"(`{bad[0]}`, not a scalar tf.placeholder of a statement of its own) "
                       "is not converted")
        passed = {self._ref(arg.value) for arg in getattr(node, "args", ())}
        spelled = [self._ref(n) for n in nodes(node) if self._ref(n) in fed]
        if any(name not in passed for name in fed) or len(spelled) > len(fed):
            self._bail(TS108.code, node, f"{what} built from an expression of the fed "
                       f"`{sorted(fed)[0]}` (computed once in eager code): pass the "
                       "placeholder itself")
        for name, j in made.items():
            if name not in self._settings:
                self._settings[name] = j
                self.record_change(self._placeholders[name], f"placeholder `{name}` read by "
                                   f"{what} -> a non-trainable tf.Variable, assigned the fed value "
                                   f"by each step function that needs it (as `{self._param(name)}`)")
        for target in self._stmts[i].writes:
            self._setting_users.setdefault(target, set()).update(fed)

    def _setting_statement(self, name: str, before: int) -> Optional[int]:
        """The statement ``name = tf.placeholder(dtype, [])`` (before ``before``) when
        ``name`` is such a setting placeholder."""
        call = self._placeholders.get(name)
        if call is None or self.tf_api_name(call.func) != "placeholder":
            return None
        shape = call_argument(call, 1, "shape")
        if shape is not None and not (
                isinstance(shape, (cst.List, cst.Tuple)) and not shape.elements
                or isinstance(shape, cst.Name) and shape.value == "None"):
            return None
        for j in range(before - 1, -1, -1):
            if name in self._stmts[j].writes:
                value, target = self._assignment(self._stmts[j].node)
                return j if value is call and target == name else None
        return None

    def _settings_of(self, reads: Iterable[str]) -> Set[str]:
        """The settings a statement reading ``reads`` needs: read directly, or through an
        optimizer made from them."""
        settings = self._settings
        if not settings:
            return set()
        out: Set[str] = set()
        for name in reads:
            if name in settings:
                out.add(name)
            out |= self._setting_users.get(name, set())
        return out

    def _setting_param(self, ref: str, param: str) -> str:
        """The step functions' parameter for ``ref`` (``param``: its usual spelling)."""
        return f"{param}_value" if ref in self._settings else param

    def _setting_variable(self, i: int) -> Optional[cst.CSTNode]:
        """Statement ``i`` rewritten when it makes a setting: ``lr = tf.Variable(0.0,
        trainable=False)`` (its dtype and name kept). None for any other statement."""
        name = next((n for n, j in self._settings.items() if j == i), None)
        if name is None:
            return None
        node = self._stmts[i].node
        call = self._placeholders[name]
        args: List[str] = ["0.0", "trainable=False"]
        dtype = call_argument(call, 0, "dtype")
        spelled = code_of(dtype).strip("'\"") if dtype is not None else "float32"
        if spelled.rpartition(".")[2] not in _DEFAULT_DTYPES:
            args.append(f"dtype={code_of(dtype)}")
        label = call_argument(call, 2, "name")
        if label is not None:
            args.append(f"name={code_of(label)}")
        made = cst.parse_expression(f"{self._alias}.Variable({', '.join(args)})")
        small = node.body[0]
        return node.with_changes(body=[small.with_changes(value=made)])

    def _setting_assignment(self, ref: str) -> cst.BaseStatement:
        """The line of a step function that gives the setting ``ref`` its fed value."""
        return cst.parse_statement(f"{self._expr_of(ref)}.assign({self._param(ref)})")
