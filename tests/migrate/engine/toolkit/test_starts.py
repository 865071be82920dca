"""tapeshift.migrate.engine.toolkit.starts.StartPositions gives PositionProvider's ``.start`` for every node.

Rules name the line and column of the nodes they report from this cheaper
print; the pipeline's findings must not move. Compared node by node on the
examples, the reference programs, hand-written awkward layouts and generated
programs.
"""

from pathlib import Path

import hypothesmith
import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from libcst.metadata import MetadataWrapper, PositionProvider

from tapeshift.migrate.engine.toolkit.starts import StartPositions

ROOT = Path(__file__).resolve().parents[4]
FILES = sorted((ROOT / "examples").glob("*.py")) + sorted((ROOT / "tests").rglob("*.py"))[:40]

AWKWARD = [
    "@decorator(arg)\n@other\ndef f(a, b=(1,\n  2), *c, d: int = 3, **e) -> 'x':\n    '''doc\n    string'''\n    return (a\n            + b)\n",
    "x = [  # comment\n    1,\n    (2),\n    ((3)),\n]\nclass C(  B  ):\n    y: int = 1\n\n\n    async def g(self):\n        await h()\n",
    "if a:\n    pass\nelif b:\n    pass\nelse:\n    pass\ntry:\n    pass\nexcept (E, F) as e:\n    pass\nfinally:\n    pass\n",
    "a = 1\r\nb = (a +\r\n     2)\r\nc = f'{a!r:>{b}}'\r\n",
    "with a as b, c as d:\n  for i in range(3):\n    while i:\n      i -= 1\n  lambda x, *y: x\n",
    "s = 'é' + \"ü\"; t = {k: v for k, v in zip(s, s) if k}\n\tx = 1 if s else 2\n".replace("\n\t", "\n"),
    "",
    "\n\n# only comments\n",
    "import tensorflow as tf\nprint(tf.gradients(y, [x], grad_ys=tf.ones_like(y))[0])",
]


def assert_same_starts(source: str) -> int:
    module = cst.parse_module(source)
    ranges = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    starts = StartPositions(module)
    for node, code_range in ranges.items():
        got = starts.line_column(node)
        want = (code_range.start.line, code_range.start.column)
        assert got == want, f"{type(node).__name__} {module.code_for_node(node)!r}: {got} != {want}"
        assert starts.start(node) == code_range.start
    assert all(node in starts for node in ranges)
    return len(ranges)


@pytest.mark.parametrize("source", AWKWARD)
def test_awkward_layouts(source):
    assert_same_starts(source) >= 1


@pytest.mark.slow
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_project_files(path):
    assert assert_same_starts(path.read_text(encoding="utf-8")) > 10


def test_a_node_not_in_the_module_is_a_key_error():
    starts = StartPositions(cst.parse_module("x = 1\n"))
    with pytest.raises(KeyError):
        starts.line_column(cst.Name("x"))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.data_too_large])
@given(st.one_of(hypothesmith.from_grammar(), hypothesmith.from_node()))
def test_generated_programs(source):
    try:
        cst.parse_module(source)
    except cst.ParserSyntaxError:
        return  # the grammar also gives programs LibCST does not parse
    assert_same_starts(source)


class EveryThirdStatement(cst.CSTTransformer):
    """Changes a few top-level parts and keeps the rest (as the rules do):
    rewrites, removes and adds statements, and a header or footer comment."""

    def __init__(self):
        self.seen = 0

    def leave_SimpleStatementLine(self, original_node, updated_node):
        self.seen += 1
        if self.seen % 7 == 0:
            return cst.RemoveFromParent()
        if self.seen % 5 == 0:
            return cst.FlattenSentinel([updated_node, cst.parse_statement("added = 1\n")])
        if self.seen % 3 == 0:
            return updated_node.with_changes(body=[cst.Pass()])
        return updated_node

    def leave_EmptyLine(self, original_node, updated_node):
        self.seen += 1
        if updated_node.comment is not None and self.seen % 2:
            return updated_node.with_changes(comment=cst.Comment("# changed"))
        return updated_node


def assert_spliced_code_is_the_print(source: str) -> None:
    from tapeshift.migrate.engine.toolkit.walk import transform_module

    module = cst.parse_module(source)
    starts = StartPositions(module)
    new = transform_module(module, EveryThirdStatement())
    assert starts.code_of(new) == new.code
    assert starts.code_of(module) == module.code == source


@pytest.mark.parametrize("source", AWKWARD + [
    "# header\n\nimport a\n\nx = 1\n\n# footer\n",
    "x = 1\r\ny = 2\r\nz = 3\r\n",
    "def f():\n\treturn 1\nx = 2\ny = 3\n",
    "x = 1\ny = 2\nz = 3",  # no final newline: printed whole
])
def test_unchanged_parts_are_copied_exactly(source):
    assert_spliced_code_is_the_print(source)


@pytest.mark.slow
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_unchanged_parts_of_project_files(path):
    assert_spliced_code_is_the_print(path.read_text(encoding="utf-8"))


def test_a_module_with_other_defaults_is_printed_whole():
    module = cst.parse_module("if a:\n    b = 1\n")
    starts = StartPositions(module)
    tabs = module.with_changes(default_indent="\t")
    assert starts.code_of(tabs) == tabs.code


def test_a_module_is_reported_where_it_starts_without_a_print():
    """A finding on the whole file (TS118) names 1:1, PositionProvider's start
    of a module, and needs no print of the file."""
    from tapeshift.migrate.engine.toolkit import metadata as _base
    from tapeshift.migrate.engine.pipeline import _Runner, _Tree
    from tapeshift.migrate.rules.contrib_slim import ContribToTfSlim

    source = "\n\n# leading comment\nimport tf_slim as slim\nnet = slim.fully_connected(x, 2)\n"
    module = cst.parse_module(source)
    ranges = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    assert (ranges[module].start.line, ranges[module].start.column) == (1, 0)
    _base.clear_tree_caches()
    tree = _Tree(cst.parse_module(source), source, parsed=True)
    _, findings, _ = _Runner("m.py").run(ContribToTfSlim, tree)
    assert [(f.code, f.line, f.column) for f in findings] == [("TS118", 1, 1)]
    assert _base.printed_start_positions(tree.wrapper) is None  # nothing printed for it
