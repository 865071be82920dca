"""The feeds rules' runs: what each ``sess.run`` is, and the call it becomes.

A :class:`Run` records one ``sess.run`` (or ``.eval`` / ``.run``) and its feeds, a
:class:`Step` one distinct set of fetches (the function they become), :class:`Bail` the
exception that stops a conversion once its reason is reported. :class:`RunReplacer`
rewrites each run into a call of its step function (``run_<fetches>(x=...)``; the class
rule's ``self._run_<fetches>``), :func:`described_feeds` spells its arguments for the
change record. The feeds rule (feeds.py, step functions in feeds_steps.py) and the class
rule (class_feeds.py) share them; feeds_steps.py re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst
import libcst.matchers as m

from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.dataflow import names_of
from tapeshift.migrate.engine.toolkit.walk import children, nodes


#: feed_dict=dict(zip(KEYS, VALUES))
DICT_OF_ZIP = m.Call(func=m.Name("dict"), args=[m.Arg(m.Call(
    func=m.Name("zip"), args=[m.Arg(keyword=None, star=""), m.Arg(keyword=None, star="")]),
    keyword=None, star="")])


class Bail(Exception):
    """The file cannot be converted; the reason was reported."""


@dataclass
class Run:
    """One ``sess.run`` (or ``.eval`` / ``.run``) in the session region."""
    call: cst.Call
    fetch: cst.BaseExpression
    feeds: List[Tuple[str, cst.BaseExpression]]
    names: List[str]
    feed_name: Optional[str] = None  # feed_dict=<name> of a dict the rule rewrites
    #: {**<feed_name>, x: a}: the feeds given beside the named dict
    extra: List[Tuple[str, cst.BaseExpression]] = field(default_factory=list)
    optional: List[str] = field(default_factory=list)  # fed by some bindings of it only
    #: feed_dict=dict(zip(KEYS, VALUES)): VALUES, passed as ``run_f(*VALUES)`` to a
    #: function whose parameters are KEYS in their order (``feeds`` holds KEYS)
    positional: Optional[cst.BaseExpression] = None
    function: str = ""
    #: the index of the statement of the session's block that holds it (None: in a
    #: function defined before the session)
    at: Optional[int] = None


@dataclass
class Step:
    name: str
    fetch: cst.BaseExpression
    names: List[str]
    statements: List[int] = field(default_factory=list)
    params: List[str] = field(default_factory=list)
    used: Set[str] = field(default_factory=set)  # params the statements read
    required: Set[str] = field(default_factory=set)
    key: str = ""  # the fetches as code, and the graph values fed in their place
    fed_values: List[str] = field(default_factory=list)
    #: graph values some runs feed, the others compute (``init_s=None``)
    maybe_fed: List[str] = field(default_factory=list)


class RunReplacer(cst.CSTTransformer):
    """``sess.run(fetches, feed_dict=...)`` -> ``run_<fetches>(x=...)``; ``param``
    names a placeholder's parameter, ``owner`` the object the functions are
    methods of (the class rule: ``self``)."""

    def __init__(self, runs: Dict[cst.Call, Run], wrap: Optional[str],
                 feed_dicts: Sequence[cst.Dict] = (), param=lambda ref: ref,
                 owner: Optional[str] = None, drop: Sequence[cst.Assign] = (),
                 values: Optional[Dict[cst.Call, cst.BaseExpression]] = None) -> None:
        super().__init__()
        self._values = values or {}  # runs of eager values -> what replaces them
        self._drop = set(drop)  # `keys = [x, y]` read only by dict(zip(keys, ...)) feeds
        self._runs = runs
        self._wrap = wrap
        self._feed_dicts = set(feed_dicts)
        self._param = param
        self._owner = owner

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine,
                                  updated_node: cst.SimpleStatementLine):
        if len(original_node.body) == 1 and original_node.body[0] in self._drop:
            return cst.RemoveFromParent()
        return updated_node

    def leave_Dict(self, original_node: cst.Dict, updated_node: cst.Dict):
        if original_node not in self._feed_dicts:
            return updated_node
        # {x: a} -> {"x": a}: the keys name the step functions' parameters
        return updated_node.with_changes(elements=[
            el.with_changes(key=cst.SimpleString(f'"{self._param(code_of(el.key))}"'))
            for el in updated_node.elements])

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call):
        if original_node in self._values:
            return self._values[original_node]
        run = self._runs.get(original_node)
        if run is None:
            return updated_node
        if run.positional is not None:
            return self._call(run, [cst.Arg(run.positional, star="*")])
        given = run.extra if run.feed_name is not None else run.feeds
        args = [cst.Arg(value, keyword=cst.Name(self._param(name)),
                        equal=cst.AssignEqual(cst.SimpleWhitespace(""),
                                              cst.SimpleWhitespace("")))
                for name, value in given]
        if run.feed_name is not None:
            args.insert(0, cst.Arg(cst.Name(run.feed_name), star="**"))
        return self._call(run, args)

    def _call(self, run: Run, args: List[cst.Arg]) -> cst.BaseExpression:
        func = cst.Name(run.function) if self._owner is None else cst.Attribute(
            cst.Name(self._owner), cst.Name(run.function))
        call = cst.Call(func=func, args=args)
        if self._wrap:
            return cst.Call(func=cst.Name(self._wrap), args=[cst.Arg(call)])
        return call


def described_feeds(run: Run, param=lambda ref: ref) -> str:
    """The arguments of the call a run becomes, for the change record."""
    if run.positional is not None:
        return f"*{code_of(run.positional)}"
    if run.feed_name:
        return ", ".join([f"**{run.feed_name}", *(f"{param(n)}=..." for n, _ in run.extra)])
    return ", ".join(f"{param(n)}=..." for n, _ in run.feeds)


def dominating_bindings(stmts: Sequence[cst.CSTNode],
                        names: Set[str]) -> Dict[Tuple[int, str], cst.Dict]:
    """``(id(call), name)`` -> the dict literal bound to ``name`` by an earlier statement
    of the same block, ``name = {...}``, with no other binding of ``name`` between them:
    the one binding every run of ``call`` sees (``feed = {x: a, lr: r}`` and then
    ``sess.run(f, feed_dict=feed)`` in a loop's body, where another binding of ``feed``
    elsewhere feeds other placeholders)."""
    out: Dict[Tuple[int, str], cst.Dict] = {}

    def inner_blocks(node: cst.CSTNode):
        for child in children(node):
            if isinstance(child, (cst.IndentedBlock, cst.SimpleStatementSuite)):
                yield child
            elif not isinstance(child, cst.BaseSmallStatement):
                yield from inner_blocks(child)

    def block(body: Sequence[cst.CSTNode]) -> None:
        current: Dict[str, cst.Dict] = {}
        for stmt in body:
            for inner in inner_blocks(stmt):
                block(inner.body)
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                current = {}  # (its calls run later, after whatever binding)
                continue
            rebound = names_of(stmt)[1] & names
            if current:
                for call in nodes(stmt):
                    if isinstance(call, cst.Call):
                        for name, value in current.items():
                            if name not in rebound:
                                out.setdefault((id(call), name), value)
            for name in rebound:
                current.pop(name, None)
            small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) \
                and len(stmt.body) == 1 else None
            if isinstance(small, cst.Assign) and len(small.targets) == 1 \
                    and isinstance(small.targets[0].target, cst.Name) \
                    and small.targets[0].target.value in names and isinstance(small.value, cst.Dict):
                current[small.targets[0].target.value] = small.value

    block(stmts)
    return out


def given(values: Sequence[str]) -> str:
    """`` with self.a fed (not computed)``: a step function's docstring words for the
    graph values its runs feed."""
    return f" with {', '.join(values)} fed (not computed)" if values else ""
