"""The imports a rule asks for, added on the head of the module only, and the
metadata wrapper made without LibCST's copy where no node appears twice:
both must give exactly what LibCST gives."""

import libcst as cst
import pytest
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor

from tapeshift.migrate.engine import pipeline
from tapeshift.migrate.engine.libcst_speedups import add_imports_at_head
from tapeshift.migrate.engine.rule import TapeshiftCodemod
from tapeshift.migrate.engine.settings import reference_mode

HEADS = [
    "",
    "x = 1\n",
    '"""Doc."""\n',
    '"""Doc."""\nimport os\n',
    '"""Doc."""\n\nimport os\nimport sys\n\n# a comment\ndef f():\n    import json\n    return 1\n',
    "__strict__ = True\nimport os\nx = 1\n",
    "from __future__ import annotations\nimport os\n\n\nx = 1\n",
    "import os\nfrom typing import List\n# comment first\nclass A:\n    pass\n",
    "import os; import sys\nx = 1\nimport json\n",
    "from typing import Dict\nfrom typing import List\nif True:\n    from typing import Set\n",
    "from a.b import c\nimport tensorflow as tf\ny = tf.constant(1)\nz = 2\n",
    "#!/usr/bin/env python\n# coding: utf-8\nimport os\r\nx = 1\r\n",
    "import os\n",
    "def f():\n    pass\n",
    "from . import sibling\nfrom .pkg import thing\nx = 1\n",
    # the statement after the import block: LibCST's visitor walks it whole, the
    # head-only run gives it a one-line stand-in with its leading lines
    "import os\n@dec(1)\nclass A(B):\n    def f(self):\n        import json\n        return json\n",
    "import os\n\n# about A\n@dec\nclass A:\n    x = 1\ny = 2\n",
    '"""Doc."""\nif True:\n    import os\n',
]
#: (module, obj, asname) requests, as rules make them
REQUESTS = [
    ("tf_keras.api._v1.keras.__internal__.legacy.layers", None, "tf_layers"),
    ("os", None, None),
    ("typing", "List", None),
    ("typing", "Optional", None),
    ("typing", "Set", "S"),
    ("a.b", "d", None),
    ("__future__", "annotations", None),
    ("tensorflow", None, "tf"),
]


def _added(module, requests, head_only):
    context = CodemodContext()
    for request in requests:
        AddImportsVisitor.add_needed_import(context, *request)
    if head_only:
        return add_imports_at_head(context, module)
    return AddImportsVisitor(context).transform_module(module)


@pytest.mark.slow
@pytest.mark.parametrize("source", HEADS)
def test_head_only_imports_give_libcst_s_module(source):
    module = cst.parse_module(source)
    changed = 0
    # each request alone, and pairs that merge into one import or land apart
    # (LibCST's AddImportsVisitor costs tens of ms to build: a few, not all pairs)
    for requests in [*((r,) for r in REQUESTS), (REQUESTS[2], REQUESTS[3]),
                     (REQUESTS[0], REQUESTS[6]), (REQUESTS[4], REQUESTS[5])]:
        expected = _added(module, requests, head_only=False).code
        got = _added(module, requests, head_only=True).code
        assert got == expected, (source, requests)
        changed += expected != source
    assert changed > 0  # the requests add something to every head


def test_head_only_imports_keep_the_rest_of_the_body():
    module = cst.parse_module("import os\nx = 1\ny = 2\ndef f():\n    return os\n")
    out = _added(module, [("sys", None, None)], head_only=True)
    assert out.code == "import os\nimport sys\n\nx = 1\ny = 2\ndef f():\n    return os\n"
    assert out.body[-2] is module.body[-2] and out.body[-1] is module.body[-1]


def test_the_statement_after_the_import_block_is_not_walked():
    """The visitor gets a one-line stand-in for it: the output holds the
    input's own statement (a walked copy would be another object)."""
    module = cst.parse_module("import os\n\nclass A:\n    x = 1\ny = 2\n")
    out = _added(module, [("sys", None, None)], head_only=True)
    assert out.code == "import os\nimport sys\n\nclass A:\n    x = 1\ny = 2\n"
    assert out.body[2] is module.body[1]
    # without an empty line before it, it gets one, and keeps its own children
    module = cst.parse_module("import os\nclass A:\n    x = 1\ny = 2\n")
    out = _added(module, [("sys", None, None)], head_only=True)
    assert out.code == "import os\nimport sys\n\nclass A:\n    x = 1\ny = 2\n"
    assert out.body[2].body is module.body[1].body


def test_rules_add_imports_as_libcst_does():
    """A rule that schedules an import: the same code with the head-only run
    and with LibCST's own (reference mode)."""
    class AddsImport(TapeshiftCodemod):
        def leave_Name(self, original_node, updated_node):
            if updated_node.value == "layers_here":
                AddImportsVisitor.add_needed_import(self.context, "tf_keras", "layers",
                                                    asname="tf_layers")
                return updated_node.with_changes(value="tf_layers")
            return updated_node

    source = ('"""Doc."""\nfrom __future__ import division\nimport tensorflow as tf\n\n'
              "def f(x):\n    return layers_here.dense(x, 3)\n")

    def run():
        return AddsImport(CodemodContext()).transform_module(cst.parse_module(source)).code

    fast = run()
    assert "from tf_keras import layers as tf_layers\n" in fast
    with reference_mode():
        assert run() == fast


def test_each_node_once():
    module = cst.parse_module("x = f(a, b)\ny = 2\n")
    assert pipeline._each_node_once(module)
    twice = module.with_changes(body=[module.body[0], module.body[0]])
    assert not pipeline._each_node_once(twice)
    name = cst.Name("a")
    shared_leaf = cst.parse_module("x = 1\n").with_changes(body=[
        cst.SimpleStatementLine([cst.Expr(cst.Tuple([cst.Element(name), cst.Element(name)]))])])
    assert not pipeline._each_node_once(shared_leaf)


def test_a_tree_with_a_node_twice_is_copied_for_its_metadata():
    module = cst.parse_module("x = 1\n")
    once = pipeline._Tree(module.with_changes(body=[module.body[0]]))
    assert once.module.body[0] is module.body[0]  # no copy needed
    twice = pipeline._Tree(module.with_changes(body=[module.body[0], module.body[0]]))
    wrapped = twice.module
    assert wrapped.body[0] is not wrapped.body[1]  # LibCST's copy: two nodes
    assert wrapped.code == "x = 1\nx = 1\n"


def test_libcst_import_visitors_skip_only_a_scan_that_finds_nothing():
    """AddImportsVisitor and its gatherer are built without LibCST's look at
    every attribute for matcher decorators: that look finds none on them, and
    other classes still get it."""
    from libcst import matchers as m
    from libcst.codemod.visitors._add_imports import _GatherTopImportsBeforeStatements
    from libcst.matchers import _visitors

    for kind in ("visit", "leave"):
        gather = getattr(_visitors, f"_gather_constructed_{kind}_funcs")
        for cls in (AddImportsVisitor, _GatherTopImportsBeforeStatements):
            instance = cls(CodemodContext())
            assert gather.__wrapped__(instance) == {} == gather(instance)

    class Decorated(m.MatcherDecoratableTransformer):
        @m.visit(m.Name("x"))
        def _saw_x(self, node):
            self.seen = True

    visitor = Decorated()
    assert len(visitor._extra_visit_funcs) == 1
    cst.parse_module("y = x\n").visit(visitor)
    assert visitor.seen
