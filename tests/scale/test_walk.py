"""migrate.codemods._walk gives LibCST's children, in LibCST's visiting order.

The rules' analyses read trees through it; a child missed or out of order
would change what they find. Compared node by node with ``node.children``
and with a LibCST visitor's own order on the project's files, awkward
layouts and generated programs.
"""

from pathlib import Path

import hypothesmith
import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from migrate.codemods._walk import children, nodes, walk

ROOT = Path(__file__).resolve().parents[2]
FILES = [f for f in (sorted((ROOT / "examples").glob("*.py")) + sorted((ROOT / "migrate").rglob("*.py"))
                     + sorted((ROOT / "tests").rglob("*.py"))[:40]) if f.stat().st_size > 500]

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
    return len(want)


@pytest.mark.parametrize("source", AWKWARD)
def test_awkward_layouts(source):
    assert assert_same_as_libcst(source) >= 1


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


def test_a_new_node_gets_its_children_too():
    call = cst.Call(func=cst.Name("f"), args=[cst.Arg(cst.Integer("1"))])
    mine = children(call)
    assert [type(n) for n in mine] == [type(n) for n in call.children]
    assert mine[0] is call.func and mine[-1] is call.args[0] and len(mine) == 4  # two whitespaces


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.data_too_large])
@given(st.one_of(hypothesmith.from_grammar(), hypothesmith.from_node()))
def test_generated_programs(source):
    try:
        cst.parse_module(source)
    except cst.ParserSyntaxError:
        return  # the grammar also gives programs LibCST does not parse
    assert_same_as_libcst(source)
