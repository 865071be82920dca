"""tapeshift.migrate.engine.toolkit.dataflow: the names a statement reads and binds.

``names_of`` walks the statement with the fields LibCST visits instead of
LibCST's own visit (which builds every node again): the same hooks on the
same nodes, so the same loads and stores, compared here with LibCST's visit
(reference mode) on every statement of the examples, the test data and (in the
full run: they are large) the codemod's own sources.
"""

from pathlib import Path

import libcst as cst
import pytest

from tapeshift.migrate.engine.settings import reference_mode
from tapeshift.migrate.engine.toolkit.dataflow import block_info, names_of
from tapeshift.migrate.engine.toolkit.statements import statements

ROOT = Path(__file__).resolve().parents[4]
FILES = [*sorted([*ROOT.glob("examples/*.py"), *ROOT.glob("tests/migrate/data/**/*.py")]),
         *(pytest.param(p, marks=pytest.mark.slow)
           for p in sorted((ROOT / "migrate" / "rules").glob("*.py")))]


def test_loads_and_stores():
    module = cst.parse_module(
        "def f(a, b=c):\n    x, y = g(a.b, z=q)\n    for i in r:\n        s[i] += t\n"
        "self.w = self.v + u\nclass K(B, metaclass=M):\n    n = [j for j in k if j]\n"
        "import p.q as pq, o\nfrom m import (n1, n2 as nn)\nw: T = (v := 3)\n")
    got = [names_of(s, "self") for s in module.body]
    assert got == [
        ({"c", "g", "a", "q", "r", "s", "i", "t"}, {"f", "x", "y", "s", "i"}),
        ({"self.v", "u"}, {"self.w"}),
        ({"B", "M", "k", "j"}, {"K", "n", "j"}),
        (set(), {"pq", "o"}),
        (set(), {"n1", "nn"}),
        (set(), {"w", "v"}),  # the annotation is not read
    ]


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_names_are_those_of_libcst_s_visit(path):
    module = cst.parse_module(path.read_text(encoding="utf-8"))
    found = [s for s in statements(module) if isinstance(s, (cst.BaseStatement, cst.BaseSmallStatement))]
    assert found
    for base in (None, "self"):
        fast = [names_of(s, base) for s in found]
        with reference_mode():  # LibCST's visit
            slow = [names_of(s, base) for s in found]
        assert fast == slow
    body = list(module.body)
    fast = block_info(body)
    with reference_mode():
        assert [(i.reads, i.writes) for i in block_info(body)] == [(i.reads, i.writes) for i in fast]
