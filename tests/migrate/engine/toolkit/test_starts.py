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


@pytest.mark.slow  # every program, both ways: the full run has it
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.data_too_large])
@given(st.deferred(lambda: st.one_of(hypothesmith.from_grammar(), hypothesmith.from_node())))
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


# -- a rule's output: positions composed from its input's ---------------------------
def assert_derived_is_the_print(old_module: cst.Module, new: cst.Module) -> int:
    """StartPositions.derived gives what a print of ``new`` gives, node for node:
    the same code, nodes in the same order, the same starts, labels and parts.
    Returns how many of ``new``'s parts were copied from ``old_module``'s print."""
    from tapeshift.migrate.engine.toolkit.walk import distinct_nodes

    old = StartPositions(old_module)
    old.code_of(new)  # as the pipeline does first: the changed parts printed there
    new = distinct_nodes(new, old.part_nodes)
    derived = StartPositions.derived(old, new)
    assert derived is not None
    printed = StartPositions(new)
    assert derived.code == printed.code == new.code
    assert len(derived._nodes) == len(printed._nodes)
    assert all(a is b for a, b in zip(derived._nodes, printed._nodes))
    for node in printed:
        assert derived.line_column(node) == printed.line_column(node), type(node).__name__
    assert derived.labels == printed.labels
    for part in (*new.header, *new.body, *new.footer):
        assert derived.part_code(part) == printed.part_code(part)
        assert list(derived.part_nodes(part)) == list(printed.part_nodes(part))
    return sum(1 for part in new.body if part in set(old_module.body))


@pytest.mark.parametrize("source", [s for s in AWKWARD if s.endswith("\n") and s.strip()] + [
    "# header\n\nimport a\n\nx = 1\n\n# footer\n",
    "x = 1\r\ny = f(a=1).b\r\nz = 3\r\n",
    "def f():\n\treturn g(k=1).attr\nx = 2\ny = 3\nw = 4\nv = 5\nu = 6\nt = 7\n",
])
def test_a_rule_output_s_positions_are_those_of_its_print(source):
    from tapeshift.migrate.engine.toolkit.walk import transform_module

    module = cst.parse_module(source)
    assert_derived_is_the_print(module, transform_module(module, EveryThirdStatement()))


def test_a_statement_placed_twice_is_copied_and_printed():
    module = cst.parse_module("x = f(a, k=b.c)\ny = 2\nz = 3\n")
    twice = module.with_changes(body=[module.body[0], module.body[1], module.body[0]])
    kept = assert_derived_is_the_print(module, twice)
    assert kept == 2  # the first two are the input's statements; the repeat, a copy, is printed


@pytest.mark.slow
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_rule_outputs_of_project_files(path):
    from tapeshift.migrate.engine.toolkit.walk import transform_module

    module = cst.parse_module(path.read_text(encoding="utf-8"))
    if not module.has_trailing_newline or not module.body:
        return
    new = transform_module(module, EveryThirdStatement())
    assert assert_derived_is_the_print(module, new) > 0 or len(module.body) < 3


def test_no_composition_across_other_defaults():
    module = cst.parse_module("if a:\n    b = 1\n")
    assert StartPositions.derived(StartPositions(module),
                                  module.with_changes(default_indent="\t")) is None
    assert StartPositions.derived(StartPositions(module),
                                  module.with_changes(has_trailing_newline=False)) is None


def test_the_pipeline_prints_a_file_once_and_composes_its_outputs_positions(monkeypatch):
    """The original is printed for its positions; a rule's output read by the
    next rule gets positions composed from it (no whole print), and the
    findings are those of reference mode, where LibCST computes every position."""
    from tapeshift.migrate.engine import libcst_speedups
    from tapeshift.migrate.engine.pipeline import migrate_source
    from tapeshift.migrate.engine.settings import reference_mode
    from tapeshift.migrate.engine.toolkit import starts as starts_module

    source = ("import tensorflow as tf\n\n# a model\nx = tf.placeholder(tf.float32, [None, 3])\n"
              "w = tf.get_variable('w', [3, 1])\ny = tf.layers.dense(x, 4)\n"
              "loss = tf.reduce_sum(tf.matmul(x, w)) + tf.reduce_sum(y)\n"
              "g = tf.gradients(loss, [w])\nprint(tf.arg_max(y, 1))\n")
    printed = []
    whole = libcst_speedups.print_with_starts
    monkeypatch.setattr(starts_module, "print_with_starts",
                        lambda module: printed.append(module) or whole(module))
    fast = migrate_source(source, "m.py", mode="compat")
    assert len(printed) == 1  # the original only
    with reference_mode():
        slow = migrate_source(source, "m.py", mode="compat")
    assert fast.output == slow.output and fast.findings == slow.findings
    assert any(f.line > 1 for f in fast.findings)


# -- a changed part: the statements it kept are copied from the input's print ----------
class OneInnerStatement(cst.CSTTransformer):
    """Rewrites ``y = ...`` wherever it is (in functions, blocks), keeping the rest."""

    def leave_Assign(self, original_node, updated_node):
        target = updated_node.targets[0].target
        if isinstance(target, cst.Name) and target.value == "y":
            return updated_node.with_changes(value=cst.Integer("3"))
        return updated_node


class IntoWith(cst.CSTTransformer):
    """Puts the body of every function in a ``with`` block: the same statements, one
    indent deeper (not what the input's print printed)."""

    def leave_FunctionDef(self, original_node, updated_node):
        block = cst.With(items=[cst.WithItem(cst.Name("scope"))], body=updated_node.body)
        return updated_node.with_changes(body=cst.IndentedBlock(body=[block]))


NESTED = (
    "import a\n\n\ndef f(k=g(a.b)):\n    # comment\n    x = h(k, key=a.c)\n    y = 2\n"
    "    if x:\n        z = x.attr\n        y = 4\n    else:\n        w = [\n            1,\n"
    "        ]\n    return x\n\n\nclass C:\n    def m(self):\n        y = 5\n        return self.q\n"
)


@pytest.mark.parametrize("transformer", [OneInnerStatement, IntoWith])
def test_statements_a_changed_part_kept_are_copied_from_the_input_s_print(transformer):
    from tapeshift.migrate.engine.toolkit.walk import distinct_nodes, transform_module

    module = cst.parse_module(NESTED)
    new = transform_module(module, transformer())
    assert StartPositions(module).code_of(new) == new.code
    assert_derived_is_the_print(module, new)
    # and again on the output, whose positions were composed (its statements' records too)
    old = StartPositions(module)
    old.code_of(new)
    new = distinct_nodes(new, old.part_nodes)
    middle = StartPositions.derived(old, new)
    newer = transform_module(new, transformer())
    assert middle.code_of(newer) == newer.code
    newer = distinct_nodes(newer, middle.part_nodes)
    derived = StartPositions.derived(middle, newer)
    printed = StartPositions(newer)
    assert derived.code == printed.code
    assert all(a is b for a, b in zip(derived._nodes, printed._nodes))
    assert len(derived._nodes) == len(printed._nodes)
    for node in printed:
        assert derived.line_column(node) == printed.line_column(node), type(node).__name__
    assert derived.labels == printed.labels


def test_a_kept_statement_is_copied_not_printed(monkeypatch):
    from tapeshift.migrate.engine import libcst_speedups
    from tapeshift.migrate.engine.toolkit.walk import transform_module

    module = cst.parse_module(NESTED)
    new = transform_module(module, OneInnerStatement())
    copied = []
    original = libcst_speedups._StartsState.copy_statement

    def copy(self, node):
        done = original(self, node)
        if done:
            copied.append(node)
        return done

    monkeypatch.setattr(libcst_speedups._StartsState, "copy_statement", copy)
    assert StartPositions(module).code_of(new) == new.code
    from tapeshift.migrate.engine.toolkit.walk import nodes

    kept = {id(n) for n in nodes(module) if isinstance(n, cst.BaseStatement)}
    # `x = h(...)`, `return x` of f, `z = x.attr` in its `if`, the else block, `return self.q`
    assert len(copied) == 5 and all(id(node) in kept for node in copied)
