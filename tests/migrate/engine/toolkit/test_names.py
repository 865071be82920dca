"""tapeshift.migrate.engine.toolkit.names: TensorFlow names from the imports alone, only where that is LibCST's answer.

Each program is compared node by node with LibCST's QualifiedNameProvider
(TensorFlow and tf-slim names), and the test says whether the import-only
path must answer (an alias that may mean something else answered by LibCST
on the statements that spell it) or must leave the file to the full scope
analysis.
"""

from textwrap import dedent

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, QualifiedNameProvider

from tapeshift.migrate.engine.toolkit.names import PACKAGES, import_qualified_names
from tapeshift.migrate.engine.toolkit.starts import StartPositions
from tapeshift.migrate.engine.pipeline import migrate_source

FAST = {
    "plain alias": "import tensorflow as tf\nx = tf.gradients(y, [w])\n",
    "dotted import": "import tensorflow.compat.v1\nx = tensorflow.compat.v1.gradients(y, w)\n"
                     "z = tensorflow.nn.relu(x)\n",
    "two imports, one name": "try:\n    import tensorflow.compat.v1 as tf\nexcept ImportError:\n"
                             "    import tensorflow as tf\nx = tf.train.AdamOptimizer(0.1)\n",
    "from import": "from tensorflow import train as t, nn\nopt = t.AdamOptimizer(0.1)\ny = nn.relu(1)\n",
    "mixed statement": "import numpy as np, tensorflow as tf\nx = tf.constant(np.ones(2))\n",
    "used in scopes": dedent("""\
        import tensorflow as tf
        import tf_slim as slim
        class C:
            v = tf.float32
            def f(self, x=tf.zeros([1]), *a: tf.Tensor) -> tf.Tensor:
                g = lambda q: tf.nn.relu(q)
                return [slim.conv2d(i, 1, [3, 3]) for i in tf.unstack(x)], g
        @tf.function
        def step(x):
            return tf.gradients(x, x)[0]
    """),
    "labels": "import tensorflow as tf\nx = obj.tf\ny = f(tf=tf.nn)\nz = tf.gradients(a, b).tf\n",
    "chains through calls": "import tensorflow as tf\nx = tf.compat.v1.get_default_graph().get_tensor_by_name('a')\n"
                            "y = tf.nn.relu(x)[0].shape\n",
    "other names": "import os\nimport tensorflow as tf\nfrom . import sibling\nfrom os.path import *\n"
                   "x = os.path.join(sibling.f(), tf.__version__)\nprint(len(x))\n",
    "no tensorflow": "import numpy as np\nx = np.ones(3)\n",
    "the word match": 'import re\nimport tensorflow as tf\n"""\nmatch.\n"""\nmatch = re.match("a", "b")\n'
                      "x = tf.ones(1)\n",
}

#: an alias that may mean something else somewhere: LibCST answers for it, on
#: the top-level statements that spell it
ANSWERED_BY_LIBCST = {
    "rebound": "import tensorflow as tf\ntf = tf.compat.v1\nx = tf.gradients(y, w)\n",
    "parameter": "import tensorflow as tf\ndef f(tf):\n    return tf.gradients(y, w)\n",
    "imported in a function": "import numpy\ndef f():\n    import tensorflow as tf\n    return tf.ones(1)\n"
                              "tf = None\n",
    "imported in a class": "import tensorflow as tf\nclass C:\n    import tensorflow.compat.v1 as tf\n"
                           "    x = tf.ones(1)\n",
    "another package's tf": "import tensorflow as tf\nif old:\n    import tf1_shim as tf\nx = tf.ones(1)\n",
    "read before import": "x = tf.ones(1)\nimport tensorflow as tf\ny = tf.ones(1)\n",
    "global": "import tensorflow as tf\ndef f():\n    global tf\n    return tf.ones(1)\n",
    "comprehension variable": "import tensorflow as tf\nx = [tf for tf in range(3)]\ny = tf.ones(1)\n",
    "deleted": "import tensorflow as tf\nx = tf.ones(1)\ndel tf\n",
    # one alias imported in a function (tensor2tensor's common_layers.py), the others clean
    "a function's own import": dedent("""\
        import tensorflow as tf
        def layers():
            module = tf.layers
            try:
                from tensorflow.python import tf2
                if tf2.enabled():
                    module = tf.keras.layers
            except ImportError:
                pass
            return module
        def other():
            return tf2.enabled(), tf.nn.relu
        y = tf.gradients(a, b)
    """),
    "bound by a try's fallback": dedent("""\
        import tensorflow as tf
        try:
            from tensorflow.python.distribute import summary_op_util as util
        except ImportError:
            util = tf.summary
        def f():
            return util.skip_summary(), tf.ones(1)
    """),
    "set through global in another function": dedent("""\
        import tensorflow as tf
        tfe = None
        def load():
            global tfe
            from tensorflow.contrib.eager.python import tfe
        def use():
            return tfe.metrics.Mean(), tf.zeros(1)
    """),
    "closures and nonlocal": dedent("""\
        import tensorflow as tf
        def outer():
            from tensorflow import nn
            def inner():
                nonlocal nn
                nn = nn.relu
                return nn
            class K:
                nn = tf.nn
                def m(self):
                    return nn.softmax, tf.ones(1)
            return inner, K, lambda nn=nn: nn.elu
    """),
    "annotations and a decorator": dedent("""\
        import tensorflow as tf
        def f():
            from tensorflow import keras as k
            def g(x: k.Model) -> tf.Tensor:
                return x
            @k.utils.register_keras_serializable()
            class L(k.layers.Layer):
                pass
            return g, L
        k = 3
    """),
}

DECLINED = {
    "match": "import tensorflow as tf\nmatch x:\n    case tf.Tensor():\n        pass\n",
    "not this Python": "import tensorflow as tf\ndef f[T](x: T) -> T:\n    return tf.identity(x)\n",
}


def _tf(names):
    return {q.name for q in names if q.name.split(".")[0] in PACKAGES}


def compare(source: str):
    module = cst.parse_module(source)
    libcst_names = MetadataWrapper(module, unsafe_skip_copy=True).resolve(QualifiedNameProvider)
    starts = StartPositions(module)
    fast = import_qualified_names(module, starts)
    if fast is not None:
        for node in starts:
            names = libcst_names.get(node, set())
            names = names() if callable(names) else names
            assert _tf(fast[node]) == _tf(names), (type(node).__name__, module.code_for_node(node))
    return fast, libcst_names


@pytest.mark.parametrize("source", FAST.values(), ids=FAST.keys())
def test_import_only_names_are_libcst_s(source):
    fast, libcst_names = compare(source)
    assert fast is not None
    if "tensorflow" in source:
        assert any(_tf(fast[n]) for n in libcst_names)  # something was resolved


@pytest.mark.parametrize("source", ANSWERED_BY_LIBCST.values(), ids=ANSWERED_BY_LIBCST.keys())
def test_an_alias_that_may_mean_something_else_is_libcst_s_answer(source):
    fast, _ = compare(source)  # node by node
    assert fast is not None


def test_libcst_reads_only_the_statements_that_spell_such_an_alias(monkeypatch):
    from tapeshift.migrate.engine.toolkit import names

    read = []
    real = names.MetadataWrapper

    def wrapper(module, **kwargs):
        read.append(module)
        return real(module, **kwargs)

    monkeypatch.setattr(names, "MetadataWrapper", wrapper)
    source = ANSWERED_BY_LIBCST["a function's own import"]
    fast, _ = compare(source)
    assert [[s.name.value for s in m.body] for m in read] == [["layers", "other"]]


@pytest.mark.parametrize("source", DECLINED.values(), ids=DECLINED.keys())
def test_declines_where_the_file_needs_the_whole_analysis(source):
    try:
        cst.parse_module(source)
    except cst.ParserSyntaxError:
        pytest.fail("LibCST should parse every program here")
    fast, _ = compare(source)
    assert fast is None


def test_nodes_not_in_the_tree_and_in_imports_are_empty():
    module = cst.parse_module("import tensorflow as tf\nx = tf.ones(1)\n")
    fast = import_qualified_names(module, StartPositions(module))
    assert not fast[cst.parse_expression("tf.ones")]  # a rule's new node
    alias = module.body[0].body[0].names[0]
    assert not fast[alias.asname.name] and not fast[alias.name]


def test_migration_is_the_same_either_way():
    from tapeshift.migrate.engine.settings import reference_mode

    source = FAST["used in scopes"] + dedent("""\
        with tf.Session() as sess:
            print(sess.run(tf.gradients(step(tf.ones(2)), [tf.ones(2)])))
    """)
    fast = migrate_source(source, "f.py")
    with reference_mode():  # qualified names from LibCST's scope analysis (and no other shortcut)
        full = migrate_source(source, "f.py")
    assert (fast.output, fast.mode, fast.findings, fast.changes) == \
        (full.output, full.mode, full.findings, full.changes)
    assert fast.changed


# -- a rule's output: its input's analysis and the statements the rule changed ------------
def _libcst_tf_names(module):
    resolved = MetadataWrapper(module, unsafe_skip_copy=True).resolve(QualifiedNameProvider)
    return {node: _tf(names() if callable(names) else names) for node, names in resolved.items()}


def _derived(source: str, change):
    """(input module, output module, the output's composed start positions):
    ``change(body)`` gives the output's body from the input's."""
    module = cst.parse_module(source)
    starts = StartPositions(module)
    assert import_qualified_names(module, starts) is not None  # the input's analysis
    out = module.with_changes(body=change(list(module.body)))
    derived = StartPositions.derived(starts, out)
    assert derived is not None and derived.kept_from is module
    return module, out, derived


def _whole_parses(monkeypatch):
    """The texts names.py gives Python's parser and symbol table as a whole module."""
    from tapeshift.migrate.engine.toolkit import names

    seen = []
    for name in ("parse", "symbols"):
        real = getattr(names, name)
        monkeypatch.setattr(names, name, lambda code, *a, _real=real: seen.append(code) or _real(code, *a))
    return seen


def _same_as_libcst(out, fast):
    expected = _libcst_tf_names(out)
    for node in StartPositions(out):
        assert _tf(fast[node]) == expected.get(node, set()), out.code_for_node(node)


def test_a_rule_output_is_analysed_from_its_input_and_the_changed_statements(monkeypatch):
    source = ('"""Doc."""\nfrom __future__ import division\nimport tensorflow as tf\n\n'
              "def f(x):\n    return tf.nn.relu(x)\n\ny = tf.ones(2)\n")
    _, out, starts = _derived(source, lambda body: [
        *body[:3], cst.parse_statement("def f(x, tf_arg=None):\n    return tf.nn.elu(x)\n"), body[4]])
    assert [type(s).__name__ for s in starts.changed] == ["FunctionDef"]
    whole = _whole_parses(monkeypatch)
    fast = import_qualified_names(out, starts)
    assert fast is not None
    assert out.code not in whole  # read from the changed statement alone
    _same_as_libcst(out, fast)


CHANGED_STATEMENTS = {
    # the changed statement binds the alias otherwise: LibCST answers for it
    "rebound": lambda body: [*body, cst.parse_statement("tf = None\n")],
    "a parameter": lambda body: [*body, cst.parse_statement("def g(tf):\n    return tf.ones(1)\n")],
    # read before the import that binds it, in a new head
    "read before import": lambda body: [cst.parse_statement("x = tf.ones(1)\n"), *body],
    # a new import of the alias from another package
    "another package": lambda body: [*body, cst.parse_statement("import tf_shim as tf\n")],
}


@pytest.mark.parametrize("change", CHANGED_STATEMENTS.values(), ids=CHANGED_STATEMENTS.keys())
def test_what_a_changed_statement_does_to_an_alias_is_read(change, monkeypatch):
    """Read from the changed statement (or the new head) alone, the alias is
    found to mean something else somewhere, as the whole analysis finds it."""
    source = "import tensorflow as tf\nx = tf.nn.relu(1)\n"
    _, out, starts = _derived(source, change)
    whole = _whole_parses(monkeypatch)
    fast = import_qualified_names(out, starts)
    assert out.code not in whole
    assert fast._dirty == {"tf"}
    _same_as_libcst(out, fast)


def test_where_only_the_whole_module_tells_it_is_analysed_whole(monkeypatch):
    source = '"""Doc."""\nimport tensorflow as tf\nx = tf.nn.relu(1)\n'
    whole = _whole_parses(monkeypatch)
    # a global declaration at module level: Python checks it against the other statements
    # (here after an assignment to the name: the module's symbol table fails)
    _, out, starts = _derived(source, lambda body: [*body, cst.parse_statement("global x\n")])
    whole.clear()
    assert import_qualified_names(out, starts) is None
    assert out.code in whole
    # a match statement in the changed statement: no import-only names
    _, out, starts = _derived(source, lambda body: [
        *body, cst.parse_statement("match x:\n    case tf.Tensor():\n        pass\n")])
    assert import_qualified_names(out, starts) is None
    # an input whose alias is bound otherwise: the output is analysed whole
    _, out, starts = _derived("import tensorflow as tf\ntf = tf.compat.v1\nx = tf.ones(1)\n",
                              lambda body: [*body, cst.parse_statement("y = tf.zeros(1)\n")])
    whole.clear()
    fast = import_qualified_names(out, starts)
    assert out.code in whole
    _same_as_libcst(out, fast)
