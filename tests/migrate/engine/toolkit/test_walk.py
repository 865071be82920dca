"""tapeshift.migrate.engine.toolkit.walk gives LibCST's children, in LibCST's visiting order.

The rules' analyses read trees through it; a child missed or out of order
would change what they find. Compared node by node with ``node.children``
and with a LibCST visitor's own order on the project's files, awkward
layouts and generated programs.
"""

import contextlib
import re
from pathlib import Path

import hypothesmith
import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tapeshift.migrate.engine.toolkit.statements import statements
from tapeshift.migrate.engine.toolkit.walk import (children, distinct_nodes, instance_test, nodes,
                                                   nodes_of, remembered, remembering,
                                                   subtree_classes, transform_module, untouched, walk)

ROOT = Path(__file__).resolve().parents[4]
FILES = [f for f in (sorted((ROOT / "examples").glob("*.py")) + sorted((ROOT / "migrate").rglob("*.py"))
                     + sorted((ROOT / "tests").rglob("*.py"))[:40]) if f.stat().st_size > 500]

#: generated programs; hypothesmith builds its grammar's parser (seconds) on the first draw,
#: not when the module is collected
GENERATED = st.deferred(lambda: st.one_of(hypothesmith.from_grammar(), hypothesmith.from_node()))

AWKWARD = [
    "@decorator(arg)\n@other\nasync def f(a, /, b=(1,\n  2), *c, d: int = 3, **e) -> 'x':\n"
    "    '''doc'''\n    return (a\n            + b)\n",
    "from . import (a as b,\n  c)\nfrom x import *\nimport a.b.c as d\nglobal g\n",
    "try:\n    pass\nexcept* (E, F) as e:\n    pass\nelse:\n    x = 1\nfinally:\n    del x\n",
    "match p:\n    case [1, *rest] | {'k': v, **kw} if v:\n        pass\n"
    "    case Point(x=0, y=_) as q:\n        pass\n",
    "c = f'{a!r:>{b}}' f\"{x=}\" 'a' 'b'\ne = rb'\\x00' b'1'\nd = {**a, 'k': [*b], 'j': (yield)}\n",
    "type T[K: int, *V, **P] = dict[K, V]\ndef g[X](x: X) -> X: ...\nclass C[T](B, metaclass=M): pass\n",
    "with (a as b, c):\n  for i in range(3):\n    while i := i - 1:\n      i -= 1\n"
    "  lambda x, *y, z=1, **w: x[1:2, ::3, ...]\n",
    "x = not a if b else -c ** ~d @ e\nassert x, 'm'\nraise E from None\n"
    "print(*a, **b, c=[i async for i in j if i], d={i: j for i, j in k})\n",
    "",
    "\n\n# only comments\n",
]


def visit_order(module: cst.Module):
    """(node, ancestors) in the order LibCST's own visitor visits them."""
    out = []
    stack = []

    class Order(cst.CSTVisitor):
        def on_visit(self, node):
            out.append((node, tuple(stack)))
            stack.append(node)
            return True

        def on_leave(self, original_node):
            stack.pop()

    module.visit(Order())
    return out


def assert_same_as_libcst(source: str) -> int:
    module = cst.parse_module(source)
    want = visit_order(module)
    got = [(node, tuple(ancestors)) for node, ancestors in walk(module)]
    assert len(got) == len(want)
    for (g, g_up), (w, w_up) in zip(got, want):
        assert g is w, f"{type(g).__name__} visited where LibCST visits {type(w).__name__}"
        assert len(g_up) == len(w_up) and all(a is b for a, b in zip(g_up, w_up))
        mine, theirs = children(g), g.children
        assert len(mine) == len(theirs) and all(a is b for a, b in zip(mine, theirs)), \
            f"children of {type(g).__name__} {module.code_for_node(g)!r}"
    assert {id(n) for n in nodes(module)} == {id(n) for n, _ in want}
    # what the walks remember while a file is migrated: the same answers
    alone = list(nodes(module))
    with remembering():
        for _ in range(2):  # learnt, then read back
            assert list(nodes(module)) == alone
            assert all(children(n) == list(n.children) for n, _ in want)
    # the statements, in LibCST's order: every statement and small statement
    found = list(statements(module))
    ids = {id(n) for n in found}
    assert [n for n, _ in want if id(n) in ids] == found
    assert {id(n) for n, _ in want if isinstance(n, (cst.BaseStatement, cst.BaseSmallStatement))} <= ids
    # a node's children are of the classes LibCST's annotations allow below it
    for node, _ in want:
        below = subtree_classes(type(node))
        assert below is not None and all(type(c) in below for c in node.children), type(node).__name__
    return len(want)


@pytest.mark.parametrize("source", AWKWARD)
def test_awkward_layouts(source):
    assert assert_same_as_libcst(source) >= 1


@pytest.mark.slow
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_project_files(path):
    assert assert_same_as_libcst(path.read_text(encoding="utf-8")) > 10


def test_prune_skips_a_subtree_but_not_the_node():
    module = cst.parse_module("def f():\n    a = 1\nb = 2\n")
    seen = [n.value for n, _ in walk(module, prune=lambda n: isinstance(n, cst.FunctionDef))
            if isinstance(n, cst.Name)]
    assert seen == ["b"]  # f's name and body are under the pruned FunctionDef
    defs = [n for n, _ in walk(module, prune=lambda n: isinstance(n, cst.FunctionDef))
            if isinstance(n, cst.FunctionDef)]
    assert len(defs) == 1
    assert [n for n, _ in walk(module, prune=lambda n: True)] == [module]


def test_a_field_visited_only_when_set_is_learnt_when_first_set(monkeypatch):
    """LibCST visits ``format_spec`` of an f-string part only when it is set:
    learnt from a part without one first, the children of one with it are whole."""
    from tapeshift.migrate.engine.toolkit import walk as _walk

    monkeypatch.setattr(_walk, "_FIELDS", {})  # nothing learnt yet
    module = cst.parse_module('a = f"{x}"\nb = f"{y!r:>{w}}"\nc = f"{z}"\n')
    x, y, z = (stmt.body[0].value.parts[0] for stmt in module.body)
    for part in (x, y, z, y):
        mine, theirs = children(part), part.children
        assert len(mine) == len(theirs) and all(a is b for a, b in zip(mine, theirs))
    assert len(children(y)) == 5 and len(children(x)) == 3


def test_a_new_node_gets_its_children_too():
    call = cst.Call(func=cst.Name("f"), args=[cst.Arg(cst.Integer("1"))])
    mine = children(call)
    assert [type(n) for n in mine] == [type(n) for n in call.children]
    assert mine[0] is call.func and mine[-1] is call.args[0] and len(mine) == 4  # two whitespaces


@pytest.mark.parametrize("classes", [
    cst.Call, cst.Name, cst.BaseExpression, cst.BaseSmallStatement, cst.CSTNode,
    (cst.Import, cst.ImportFrom), (cst.BaseStatement, cst.BaseSuite, cst.Module),
], ids=repr)
def test_instance_test_answers_as_isinstance(classes):
    test = instance_test(classes)
    module = cst.parse_module((ROOT / "migrate" / "engine" / "pipeline.py").read_text() + "".join(AWKWARD))
    values = list(nodes(module)) + [None, cst.MaybeSentinel.DEFAULT, cst.RemoveFromParent(),
                                    "x", (), []]
    for value in values + values:  # the second time from what it remembers
        assert test(value) is isinstance(value, classes), (type(value), classes)
    assert any(test(v) for v in values) and not all(test(v) for v in values)


@pytest.mark.slow
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.data_too_large])
@given(GENERATED)
def test_generated_programs(source):
    try:
        cst.parse_module(source)
    except cst.ParserSyntaxError:
        return  # the grammar also gives programs LibCST does not parse
    assert_same_as_libcst(source)


class Scrambler(cst.CSTTransformer):
    """Changes, removes and flattens nodes of every kind of field, and notes
    every hook call (the order and the nodes a rule would see)."""

    def __init__(self):
        self.calls = []

    def on_visit(self, node):
        self.calls.append(("visit", id(node)))
        return not isinstance(node, cst.Lambda)  # a subtree not visited, as rules do

    def on_visit_attribute(self, node, attribute):
        self.calls.append(("visit", id(node), attribute))

    def on_leave_attribute(self, original_node, attribute):
        self.calls.append(("leave", id(original_node), attribute))

    def on_leave(self, original_node, updated_node):
        self.calls.append(("leave", id(original_node)))
        if isinstance(updated_node, cst.Integer):  # a required field's node replaced
            return updated_node.with_changes(value=str(int(updated_node.value, 0) + 1))
        if isinstance(updated_node, cst.Comma) and len(self.calls) % 3 == 0:
            return cst.RemoveFromParent()  # a sentinel field: MaybeSentinel.DEFAULT
        if isinstance(updated_node, cst.AsName):
            return cst.RemoveFromParent()  # an optional field: None
        if isinstance(updated_node, cst.Arg) and len(self.calls) % 2 == 0:
            return cst.RemoveFromParent()  # a sequence
        if isinstance(updated_node, cst.SimpleStatementLine):
            body = updated_node.body
            if len(body) == 1 and isinstance(body[0], cst.Pass):
                return cst.RemoveFromParent()  # a body: LibCST's own rule for it
            if len(body) == 1 and isinstance(body[0], cst.Expr):
                return cst.FlattenSentinel([updated_node, updated_node.deep_clone()])
        return updated_node


def assert_transform_is_libcst_s(source: str) -> None:
    module = cst.parse_module(source)
    theirs, mine = Scrambler(), Scrambler()
    try:
        want = module.visit(theirs)
    except (cst.CSTValidationError, TypeError, ValueError) as exc:
        # LibCST refuses the scrambled tree (a comma ParamStar requires removed,
        # as the hook-call count happens to pick it): the same refusal
        with pytest.raises(type(exc), match=re.escape(str(exc))):
            transform_module(module, mine)
        return
    got = transform_module(module, mine)
    assert got.code == want.code
    assert mine.calls == theirs.calls
    assert got.deep_equals(want)


def test_a_transform_that_changes_nothing_gives_the_tree_back():
    module = cst.parse_module(AWKWARD[0] + AWKWARD[2])
    assert transform_module(module, cst.CSTTransformer()) is module


def test_only_the_changed_path_is_new():
    module = cst.parse_module("a = 1\nb = [x, y]\ndef f():\n    return z\n")

    class One(cst.CSTTransformer):
        def leave_Integer(self, original_node, updated_node):
            return updated_node.with_changes(value="2")

    out = transform_module(module, One())
    assert out.code == "a = 2\nb = [x, y]\ndef f():\n    return z\n"
    assert out is not module and out.body[0] is not module.body[0]
    assert out.body[1] is module.body[1] and out.body[2] is module.body[2]
    assert out.body[0].body[0].targets[0] is module.body[0].body[0].targets[0]


def test_removing_the_module_empties_it():
    class Gone(cst.CSTTransformer):
        def leave_Module(self, original_node, updated_node):
            return cst.RemoveFromParent()

    module = cst.parse_module("# head\nx = 1\n")
    emptied = transform_module(module, Gone())
    assert emptied.code == module.visit(Gone()).code and not emptied.body and not emptied.header


def test_a_leave_method_returning_something_else_is_an_error():
    class Bad(cst.CSTTransformer):
        def leave_Name(self, original_node, updated_node):
            return "x"

    with pytest.raises(cst.CSTValidationError, match="got a return value of str"):
        transform_module(cst.parse_module("y = 1\n"), Bad())


@pytest.mark.parametrize("source", AWKWARD)
def test_transform_awkward_layouts(source):
    assert_transform_is_libcst_s(source)


@pytest.mark.slow
@pytest.mark.parametrize("path", FILES[::3], ids=lambda p: str(p.relative_to(ROOT)))
def test_transform_project_files(path):
    assert_transform_is_libcst_s(path.read_text(encoding="utf-8"))


@pytest.mark.slow
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.data_too_large])
@given(GENERATED)
def test_transform_generated_programs(source):
    try:
        cst.parse_module(source)
    except cst.ParserSyntaxError:
        return
    try:
        cst.parse_module(source).visit(Scrambler())
    except (cst.CSTValidationError, TypeError, ValueError):
        return  # the scrambling made something LibCST refuses to build
    assert_transform_is_libcst_s(source)


def test_remembered_facts_are_computed_once_while_remembering():
    module = cst.parse_module("x = 1\n")
    calls = []

    def compute():
        calls.append(1)
        return len(calls)

    assert remembered(module, "k", compute) == 1 and remembered(module, "k", compute) == 2
    with remembering():
        assert remembered(module, "k", compute) == 3
        assert remembered(module, "k", compute) == 3
        assert remembered(module, "other", compute) == 4
    assert remembered(module, "k", compute) == 5  # let go on leaving


@pytest.mark.parametrize("path", [p if p.parent.name == "examples" else pytest.param(p, marks=pytest.mark.slow)
                                  for p in FILES[::4]], ids=lambda p: p.name)
def test_nodes_of_are_the_instances_among_nodes_in_their_order(path):
    module = cst.parse_module(path.read_text())
    kinds = (cst.Name, cst.Call, cst.FunctionDef, (cst.FunctionDef, cst.ClassDef, cst.Lambda),
             cst.BaseExpression, cst.BaseSmallStatement)
    for remember in (False, True):
        with remembering() if remember else contextlib.nullcontext():
            for kind in kinds:
                expected = [n for n in nodes(module) if isinstance(n, kind)]
                got = nodes_of(module, kind)
                assert len(got) == len(expected)
                assert all(a is b for a, b in zip(got, expected))
                assert nodes_of(module, kind) == got  # asked again: the same


def test_a_walk_stopped_early_is_not_remembered_as_whole():
    module = cst.parse_module("a = 1\nb = 2\n")
    with remembering():
        first = next(iter(nodes(module)))
        assert first is module
        assert len(list(nodes(module))) == len([n for n, _ in visit_order(module)])


def test_whitespace_and_names_hold_no_expression():
    assert subtree_classes(cst.SimpleWhitespace) == {cst.SimpleWhitespace}
    assert cst.Call not in subtree_classes(cst.Name) and cst.Name in subtree_classes(cst.Name)
    assert cst.Name in subtree_classes(cst.Call)
    skip = untouched(frozenset({cst.Call}))
    assert cst.Name in skip and cst.Comma in skip and cst.Call not in skip
    assert cst.Attribute not in skip  # an attribute's value may be a call
    assert cst.Module not in untouched(frozenset({cst.Import}))


class Counting(cst.CSTTransformer):
    """Hooks for two classes only: notes what it sees, changes some names."""

    def __init__(self):
        self.calls = []

    def visit_Call(self, node):
        self.calls.append(("visit", id(node)))

    def leave_Call(self, original_node, updated_node):
        self.calls.append(("leave", id(original_node)))
        return updated_node

    def leave_Name(self, original_node, updated_node):
        self.calls.append(("name", id(original_node)))
        return updated_node.with_changes(value=updated_node.value + "_") \
            if len(updated_node.value) == 1 else updated_node


@pytest.mark.parametrize("source", [*AWKWARD, *(f.read_text(encoding="utf-8") for f in FILES[:6])])
def test_skipping_what_no_hook_can_see_changes_nothing(source):
    module = cst.parse_module(source)
    theirs, mine = Counting(), Counting()
    want = module.visit(theirs)
    got = transform_module(module, mine, untouched(frozenset({cst.Call, cst.Name})))
    assert got.code == want.code and mine.calls == theirs.calls


# -- every node object in one place ---------------------------------------------------
def _ids(module):
    return [id(n) for n in nodes(module)]


def test_distinct_nodes_copies_only_what_is_met_again():
    module = cst.parse_module("x = f(a, b)\ny = 2\ndef g():\n    return 3\n")
    assert distinct_nodes(module) is module  # every node once: the module itself
    name = cst.Name("a")
    shared = cst.SimpleStatementLine([cst.Expr(cst.Tuple([cst.Element(name), cst.Element(name)]))])
    repeated = module.with_changes(body=[module.body[0], shared, module.body[0], module.body[2]])
    out = distinct_nodes(repeated)
    assert len(set(_ids(out))) == len(_ids(out))  # no object twice any more
    assert out.code == repeated.code
    # the first place of each node is kept; the places after it hold copies
    assert out.body[0] is module.body[0] and out.body[3] is module.body[2]
    assert out.body[2] is not module.body[0] and out.body[2].deep_equals(module.body[0])
    first, second = (e.value for e in out.body[1].body[0].value.elements)
    assert first is name and second is not name and second.deep_equals(name)


def test_distinct_nodes_keeps_the_parts_it_is_told_hold_each_node_once():
    module = cst.parse_module("x = f(a)\ny = g(x)\n")
    call = module.body[0].body[0].value
    # a rule moved the call of the first statement into a new one, and kept that statement
    new_stmt = cst.SimpleStatementLine([cst.Expr(call)])
    output = module.with_changes(body=[new_stmt, *module.body])
    kept = {id(part): list(nodes(part)) for part in module.body}
    out = distinct_nodes(output, lambda part: kept.get(id(part), ()))
    assert out.body[1] is module.body[0] and out.body[2] is module.body[1]  # kept as they are
    assert out.body[0].body[0].value is not call  # the copy went to the other place
    assert len(set(_ids(out))) == len(_ids(out))
    assert out.code == output.code


def test_release_breaks_the_cycle_of_a_recursive_closure():
    import gc
    import weakref

    from tapeshift.migrate.engine.toolkit.walk import release

    class Tree:  # something a walk's closure holds, weakly referable
        pass

    def run(with_release):
        tree = Tree()
        seen = []

        def walk(n):
            seen.append(tree)
            return 0 if n == 0 else walk(n - 1)

        walk(3)
        if with_release:
            release(walk)
        return weakref.ref(tree)

    gc.disable()
    try:
        assert run(with_release=True)() is None  # freed at once
        kept = run(with_release=False)
        assert kept() is not None  # held by the function's own cell until collected
        gc.collect()
        assert kept() is None
    finally:
        gc.enable()


class _Recorder(cst.CSTVisitor):
    """Notes every hook call; skips the children of calls and of lambdas."""

    def __init__(self):
        self.calls = []

    def visit_Name(self, node):
        self.calls.append(("visit Name", id(node)))

    def visit_Call(self, node):
        self.calls.append(("visit Call", id(node)))
        return False

    def visit_Lambda(self, node):
        self.calls.append(("visit Lambda", id(node)))
        return False

    def leave_Call(self, node):
        self.calls.append(("leave Call", id(node)))

    def leave_FunctionDef(self, node):
        self.calls.append(("leave FunctionDef", id(node)))

    def visit_Attribute(self, node):
        self.calls.append(("visit Attribute", id(node)))


class _WithAttributeHook(_Recorder):
    def visit_Call_func(self, node):
        self.calls.append(("visit Call.func", id(node)))


@pytest.mark.parametrize("path", FILES[:12], ids=lambda p: str(p.relative_to(ROOT)))
def test_a_read_only_visit_makes_libcst_s_calls(path):
    from tapeshift.migrate.engine.toolkit.walk import visit

    module = cst.parse_module(path.read_text(encoding="utf-8"))
    for cls in (_Recorder, _WithAttributeHook):
        ours, libcst_s = cls(), cls()
        visit(module, ours)
        module.visit(libcst_s)
        assert ours.calls == libcst_s.calls and ours.calls
