"""tapeshift.migrate.engine.toolkit.names: TensorFlow names from the imports alone, only where that is LibCST's answer.

Each program is compared node by node with LibCST's QualifiedNameProvider
(TensorFlow and tf-slim names), and the test says whether the import-only
path must answer or must leave the file to the full scope analysis.
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

DECLINED = {
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


@pytest.mark.parametrize("source", DECLINED.values(), ids=DECLINED.keys())
def test_declines_where_an_alias_may_mean_something_else(source):
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
