"""Part of the feeds rules: a ``tf.data`` one-shot iterator and its ``get_next()``.

TF1 builds ``batch = dataset.make_one_shot_iterator().get_next()`` once; each
sess.run that needs ``batch`` takes the next element, and the run after the last
raises ``tf.errors.OutOfRangeError``. Eager code that kept the line where it is
would take one element, once. So the iterator is made once where TF1 made it,
``iterator = iter(dataset)``, and ``batch = iterator.get_next()`` is recomputed
in the step functions that need it, as fed code is: one element per run, and
TF2's iterator raises the same ``OutOfRangeError`` at the end (``next()`` would
raise ``StopIteration``, which the script's ``except`` would not catch).

Read: ``it = dataset.make_one_shot_iterator()`` (or
``tf.data.make_one_shot_iterator(dataset)``, its compat.v1 spelling) with ``it``
read only by ``it.get_next()`` calls, and the chained
``dataset.make_one_shot_iterator().get_next()``. Not converted (TS108): an
initializable iterator (its dataset fed through placeholders at the initializer's
run), a one-shot iterator of a dataset made from fed or drawn values, an iterator's
name bound again.
"""

from __future__ import annotations

from typing import Optional, Set, Tuple

import libcst as cst

from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.rules.session import TS108

#: the functions that make a one-shot iterator of their argument
ONE_SHOT = frozenset({"data.make_one_shot_iterator", "compat.v1.data.make_one_shot_iterator"})


class DatasetIterators:
    """Part of ``FeedsToFunctions``: one-shot iterators, made once; their
    ``get_next()``, recomputed at each run (state on the rule)."""

    def _dataset_of(self, call: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """The dataset ``call`` makes a one-shot iterator of (None: not such a call)."""
        if not isinstance(call, cst.Call):
            return None
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "make_one_shot_iterator" \
                and not call.args:
            return call.func.value
        if self.tf_api_name(call.func) in ONE_SHOT and len(call.args) == 1 \
                and call.args[0].keyword is None and not call.args[0].star:
            return call.args[0].value
        return None

    def _one_shot_iterator(self, i: int, value, target: Optional[str], fed: Set[str]) -> bool:
        """``it = dataset.make_one_shot_iterator()``: made once, here, as ``iter(dataset)``
        (``fed``: the fed, drawn or computed values the statement reads)."""
        dataset = self._dataset_of(value)
        if dataset is None or target is None:
            return False
        self._check_dataset(value, dataset, fed)
        if sum(target in st.writes for st in self._stmts) > 1:
            # (get_next() is read by name: which binding a step would reach is not followed)
            self._bail(TS108.code, value, f"`{target}` is bound to an iterator and bound again: "
                       "not converted")
        self._iterators.add(target)
        self._kept_rewrites[i] = cst.Call(func=cst.Name("iter"), args=[cst.Arg(dataset)])
        self.record_change(value, f"`{code_of(value)}` -> `iter({code_of(dataset)})`: TF2's "
                           "iterator of the dataset, made once")
        return True

    def _check_dataset(self, call: cst.Call, dataset: cst.BaseExpression, fed: Set[str]) -> None:
        """A one-shot iterator of a dataset made from fed or drawn values: TF1 cannot
        capture them either (it raises at the run); not converted (TS108)."""
        if fed:
            self._bail(TS108.code, call, f"a one-shot iterator of `{code_of(dataset)}` reads "
                       f"{', '.join(f'`{n}`' for n in sorted(fed))}, computed from fed or drawn "
                       "values (which TF1 cannot capture in a dataset either): not converted")

    def _next_element(self, i: int, node: cst.CSTNode, value, fed: Set[str]) -> bool:
        """``batch = it.get_next()`` of an iterator read above, or the chained
        ``dataset.make_one_shot_iterator().get_next()`` (whose iterator is then made
        once, before it): recomputed in the step functions, an element per run."""
        if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
                and value.func.attr.value == "get_next" and not value.args
                and isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1
                and isinstance(node.body[0], cst.Assign) and node.body[0].value is value):
            return False
        receiver = value.func.value
        dataset = self._dataset_of(receiver)
        if dataset is not None:
            self._check_dataset(receiver, dataset, fed)
            self._hoist[i] = ("iterator", cst.Call(func=cst.Name("iter"), args=[cst.Arg(dataset)]),
                              value)
        elif self._ref(receiver) not in self._iterators:
            return False
        self._graph_statement(i, node)
        return True


def hoist(statement: cst.SimpleStatementLine, rewritten: cst.SimpleStatementLine,
            expr: cst.BaseExpression, target: cst.BaseExpression
            ) -> Tuple[cst.SimpleStatementLine, cst.SimpleStatementLine]:
    """``statement`` (``rewritten`` so far) calls a method of ``expr``, an optimizer
    or iterator made in it: ``target = expr``, made once where ``statement`` was
    (with its comments), and the statement calling ``target``'s method instead
    (without them: they head what is made once, not also each step's call)."""
    made = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(target)], expr)],
                                   leading_lines=statement.leading_lines)
    small = rewritten.body[0]
    call = small.value
    if isinstance(call.func, cst.Attribute):
        call = call.with_changes(func=call.func.with_changes(value=target))
    return made, rewritten.with_changes(
        body=[small.with_changes(value=call)],
        leading_lines=[ln for ln in rewritten.leading_lines if ln.comment is None])


def hoisted_what(expr: cst.BaseExpression) -> str:
    """What a hoisted statement makes once: the dataset's iterator or an optimizer."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "iter":
        return "the dataset's iterator"
    return "optimizer"
