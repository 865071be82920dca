"""CustomGradientsToTape: RegisterGradient + gradient_override_map -> @tf.custom_gradient."""

import textwrap
from pathlib import Path

import libcst as cst
import pytest
from libcst.codemod import CodemodContext, CodemodTest

from tapeshift.migrate.engine.rule import findings_of
from tapeshift.migrate.rules.custom_gradients import CustomGradientsToTape
from tapeshift.migrate.rules.custom_gradients_ops import (
    NEUTRAL,
    OVERRIDABLE,
    OVERRIDABLE_TYPES,
)
from tapeshift.migrate.engine.findings import REGISTRY, Severity
from tapeshift.migrate.engine.pipeline import migrate_source

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"


def transform(source: str):
    """(output, findings) of the codemod alone on a dedented source."""
    context = CodemodContext(filename="t.py")
    module = cst.parse_module(textwrap.dedent(source))
    out = CustomGradientsToTape(context).transform_module(module)
    return out.code, findings_of(context)


def migrate(source: str, path: str = "t.py"):
    """The codemod, then the rest of the tape pipeline (the order the pipeline uses)."""
    context = CodemodContext(filename=path)
    module = cst.parse_module(source)
    first = CustomGradientsToTape(context).transform_module(module).code
    return migrate_source(first, path), findings_of(context)


class TestCustomGradients(CodemodTest):
    TRANSFORM = CustomGradientsToTape

    def test_noop_without_override(self) -> None:
        before = """
            import tensorflow as tf

            @tf.custom_gradient
            def flip(x):
                return tf.identity(x), lambda dy: -dy

            y = flip(tf.constant(1.0))
        """
        self.assertCodemod(before, before)

    def test_local_name_tf_is_not_tensorflow(self) -> None:
        before = """
            import mylib as tf

            @tf.RegisterGradient("FlipGradient")
            def _flip(op, grad):
                return [-grad]

            class Graph:
                def gradient_map(self, m):
                    return m
            y = tf.identity(1.0)
        """
        self.assertCodemod(before, before)

    def test_gradient_reversal(self) -> None:
        before = """
            import tensorflow as tf

            l = 3.0


            @tf.RegisterGradient("FlipGradient")
            def _flip(op, grad):
                return [tf.negative(grad) * l]


            x = tf.constant([1.0, 2.0])
            g = tf.get_default_graph()
            # the reversal layer
            with g.gradient_override_map({"Identity": "FlipGradient"}):
                y = tf.identity(x, name="flip")
            z = tf.reduce_sum(y)
        """
        after = """
            import tensorflow as tf

            l = 3.0


            def _flip(op_input, op_output, grad):
                return [tf.negative(grad) * l]


            @tf.custom_gradient
            def identity_with_flip_gradient(x):
                y = tf.identity(x)

                def grad(dy):
                    return _flip(x, y, dy)

                return y, grad


            x = tf.constant([1.0, 2.0])
            # the reversal layer
            y = identity_with_flip_gradient(x)
            z = tf.reduce_sum(y)
        """
        self.assertCodemod(before, after)

    def test_alias_ops_register_gradient_guided_relu(self) -> None:
        before = """
            import tensorflow as tf
            from tensorflow.python.framework import ops


            @ops.RegisterGradient("GuidedRelu")
            def _guided_relu(op, grad):
                return tf.where(0. < grad, grad * tf.cast(op.outputs[0] > 0., tf.float32),
                                tf.zeros_like(grad))


            def net(x, W):
                with tf.get_default_graph().gradient_override_map({"Relu": "GuidedRelu"}):
                    h = tf.nn.relu(tf.matmul(x, W))
                    return tf.nn.relu(features=h)
        """
        after = """
            import tensorflow as tf


            def _guided_relu(op_input, op_output, grad):
                return tf.where(0. < grad, grad * tf.cast(op_output > 0., tf.float32),
                                tf.zeros_like(grad))


            @tf.custom_gradient
            def relu_with_guided_relu(x):
                y = tf.nn.relu(x)

                def grad(dy):
                    return _guided_relu(x, y, dy)

                return y, grad


            def net(x, W):
                h = relu_with_guided_relu(tf.matmul(x, W))
                return relu_with_guided_relu(h)
        """
        self.assertCodemod(before, after)

    def test_alias_compat_v1_and_op_inputs(self) -> None:
        before = """
            import tensorflow.compat.v1 as tf
            tf.disable_v2_behavior()


            @tf.RegisterGradient("ClipBackward")
            def _clip(op, grad):
                return grad * tf.cast(tf.abs(op.inputs[0]) <= 1.0, grad.dtype)


            x = tf.constant([0.5, 2.0])
            with tf.get_default_graph().gradient_override_map({"Sign": "ClipBackward"}):
                q = tf.sign(x)
        """
        after = """
            import tensorflow.compat.v1 as tf
            tf.disable_v2_behavior()


            def _clip(op_input, op_output, grad):
                return grad * tf.cast(tf.abs(op_input) <= 1.0, grad.dtype)


            @tf.custom_gradient
            def sign_with_clip_backward(x):
                y = tf.sign(x)

                def grad(dy):
                    return _clip(x, y, dy)

                return y, grad


            x = tf.constant([0.5, 2.0])
            q = sign_with_clip_backward(x)
        """
        self.assertCodemod(before, after)

    def test_alias_T_and_name_clashes(self) -> None:
        before = """
            import tensorflow as T

            @T.RegisterGradient("Rev")
            def grad(op, x):
                return -x

            y = T.constant(2.0)
            with T.get_default_graph().gradient_override_map({"Identity": "Rev"}):
                identity_with_rev = T.identity(y)
        """
        after = """
            import tensorflow as T

            def grad(op_input, op_output, x):
                return -x


            @T.custom_gradient
            def identity_with_rev_1(x):
                y = T.identity(x)

                def grad_1(dy):
                    return grad(x, y, dy)

                return y, grad_1


            y = T.constant(2.0)
            identity_with_rev = identity_with_rev_1(y)
        """
        self.assertCodemod(before, after)

    def test_straight_through_uses_the_builtin_identity_gradient(self) -> None:
        before = """
            import tensorflow as tf

            x = tf.constant([0.3, -0.2])
            with tf.compat.v1.get_default_graph().gradient_override_map({"Sign": "Identity"}):
                q = tf.sign(x)
        """
        after = """
            import tensorflow as tf

            x = tf.constant([0.3, -0.2])


            @tf.custom_gradient
            def sign_with_identity_gradient(x):
                y = tf.sign(x)

                def grad(dy):
                    return dy

                return y, grad


            q = sign_with_identity_gradient(x)
        """
        self.assertCodemod(before, after)

    def test_flip_gradient_builder_with_a_local_name(self) -> None:
        # the DANN FlipGradientBuilder: the name is computed, but the decorator
        # and the map read the same local variable
        before = """
            import tensorflow as tf
            from tensorflow.python.framework import ops


            class FlipGradientBuilder(object):
                def __init__(self):
                    self.num_calls = 0

                def __call__(self, x, l=1.0):
                    grad_name = "FlipGradient%d" % self.num_calls

                    @ops.RegisterGradient(grad_name)
                    def _flip_gradients(op, grad):
                        return [tf.negative(grad) * l]

                    g = tf.get_default_graph()
                    with g.gradient_override_map({"Identity": grad_name}):
                        y = tf.identity(x)

                    self.num_calls += 1
                    return y
        """
        after = """
            import tensorflow as tf


            class FlipGradientBuilder(object):
                def __init__(self):
                    self.num_calls = 0

                def __call__(self, x, l=1.0):
                    def _flip_gradients(op_input, op_output, grad):
                        return [tf.negative(grad) * l]

                    @tf.custom_gradient
                    def identity_with_flip_gradients(x):
                        y = tf.identity(x)

                        def grad(dy):
                            return _flip_gradients(x, y, dy)

                        return y, grad

                    y = identity_with_flip_gradients(x)

                    self.num_calls += 1
                    return y
        """
        self.assertCodemod(before, after)

    def test_other_context_managers_and_other_graph_uses_are_kept(self) -> None:
        before = """
            import tensorflow as tf

            @tf.RegisterGradient("Rev")
            def _rev(op, grad):
                return -grad

            g = tf.get_default_graph()
            x = tf.constant(1.0)
            with g.gradient_override_map({"Identity": "Rev"}), tf.name_scope("rev"):
                y = tf.identity(x)
            print(g.get_operations())
        """
        after = """
            import tensorflow as tf

            def _rev(op_input, op_output, grad):
                return -grad


            @tf.custom_gradient
            def identity_with_rev(x):
                y = tf.identity(x)

                def grad(dy):
                    return _rev(x, y, dy)

                return y, grad


            g = tf.get_default_graph()
            x = tf.constant(1.0)
            with tf.name_scope("rev"):
                y = identity_with_rev(x)
            print(g.get_operations())
        """
        self.assertCodemod(before, after)

    def test_warns_and_skips_a_map_built_at_run_time(self) -> None:
        before = """
            import tensorflow as tf

            @tf.RegisterGradient("Rev")
            def _rev(op, grad):
                return -grad

            overrides = {"Identity": "Rev"}
            with tf.get_default_graph().gradient_override_map(overrides):
                y = tf.identity(1.0)
        """
        self.assertCodemod(before, before, expected_warnings=[
            "TS120 8:6: gradient_override_map(...) takes a map built at run time; only a "
            "literal dict of string literals can be rewritten"])


# --------------------------------------------------------------------------
# every override the codemod cannot map: an error-level finding that blocks
# tape form, the codemod's output unchanged, and the pipeline in compat mode
# --------------------------------------------------------------------------
_HEAD = '''\
import tensorflow as tf

@tf.RegisterGradient("Rev")
def _rev(op, grad):
    return -grad

x = tf.constant([1.0, -2.0])
g = tf.get_default_graph()
'''

UNMAPPABLE = {
    "map-in-a-variable": ("TS120", _HEAD + '''\
m = {"Identity": "Rev"}
with g.gradient_override_map(m):
    y = tf.identity(x)
'''),
    "map-with-computed-value": ("TS120", _HEAD + '''\
with g.gradient_override_map({"Identity": "R" + "ev"}):
    y = tf.identity(x)
'''),
    "map-entered-by-hand": ("TS120", _HEAD + '''\
scope = g.gradient_override_map({"Identity": "Rev"})
scope.__enter__()
y = tf.identity(x)
'''),
    "op-type-without-tape-form": ("TS121", _HEAD + '''\
with g.gradient_override_map({"MatMul": "Rev"}):
    y = tf.matmul([[1.0]], [[2.0]])
'''),
    "op-type-not-visible": ("TS121", _HEAD + '''\
with g.gradient_override_map({"Relu": "Rev"}):
    y = tf.layers.dense(x[None], 2, activation=tf.nn.relu)
'''),
    "op-type-with-no-call": ("TS121", _HEAD + '''\
with g.gradient_override_map({"Identity": "Rev"}):
    y = x * 2.0
'''),
    "helper-call-in-scope": ("TS121", _HEAD + '''\
def layer(t):
    return tf.identity(t)

with g.gradient_override_map({"Identity": "Rev"}):
    y = layer(tf.identity(x))
'''),
    "gradient-registered-elsewhere": ("TS122", _HEAD + '''\
with g.gradient_override_map({"Identity": "FlipGradient"}):
    y = tf.identity(x)
'''),
    "gradient-registered-after-use": ("TS122", '''\
import tensorflow as tf

x = tf.constant([1.0, -2.0])
with tf.get_default_graph().gradient_override_map({"Identity": "Late"}):
    y = tf.identity(x)

@tf.RegisterGradient("Late")
def _late(op, grad):
    return -grad
'''),
    "gradient-uses-get-attr": ("TS123", '''\
import tensorflow as tf

@tf.RegisterGradient("Scaled")
def _scaled(op, grad):
    return grad * op.get_attr("T").max

x = tf.constant([1.0, -2.0])
with tf.get_default_graph().gradient_override_map({"Identity": "Scaled"}):
    y = tf.identity(x)
'''),
    "gradient-uses-op-inputs-list": ("TS123", '''\
import tensorflow as tf

@tf.RegisterGradient("First")
def _first(op, grad):
    return [grad * op.inputs[1]]

x = tf.constant([1.0, -2.0])
with tf.get_default_graph().gradient_override_map({"Identity": "First"}):
    y = tf.identity(x)
'''),
    "gradient-of-a-multi-output-op": ("TS123", '''\
import tensorflow as tf

@tf.RegisterGradient("Two")
def _two(op, grad_a, grad_b):
    return grad_a + grad_b

x = tf.constant([1.0, -2.0])
with tf.get_default_graph().gradient_override_map({"Identity": "Two"}):
    y = tf.identity(x)
'''),
    "gradient-also-called-directly": ("TS123", '''\
import tensorflow as tf

@tf.RegisterGradient("Rev")
def _rev(op, grad):
    return -grad

x = tf.constant([1.0, -2.0])
with tf.get_default_graph().gradient_override_map({"Identity": "Rev"}):
    y = tf.identity(x)
helper = _rev
'''),
}


@pytest.mark.parametrize("case", sorted(UNMAPPABLE))
def test_unmappable_override_is_an_error_and_falls_back(case):
    code, source = UNMAPPABLE[case]
    out, findings = transform(source)
    assert out == source, "a file with an unmappable override must not be rewritten"
    assert code in [f.code for f in findings], findings
    for f in findings:
        assert f.severity is Severity.ERROR and REGISTRY[f.code].blocks_tape
        assert f.line > 0 and f.message
    result, _ = migrate(source)
    assert result.mode == "compat", result.findings
    assert "gradient_override_map" in result.output and "custom_gradient" not in result.output


def test_an_unused_registration_is_left_for_the_other_rules():
    source = textwrap.dedent("""
        import tensorflow as tf

        @tf.RegisterGradient("UsedElsewhere")
        def _g(op, grad):
            return -grad
    """)
    out, findings = transform(source)
    assert out == source and findings == []
    result, _ = migrate(source)
    assert result.mode == "compat"  # SessionToEager: TS112


def test_the_codes_are_documented_and_block_tape_form():
    for code in ("TS120", "TS121", "TS122", "TS123"):
        info = REGISTRY[code]
        assert info.blocks_tape and info.severity is Severity.ERROR
        assert info.what and info.why and info.example and info.use_instead


# --------------------------------------------------------------------------
# the op-type table, against the installed TensorFlow
# --------------------------------------------------------------------------
def _resolve(tf1, api):
    obj = tf1
    for part in api.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.tf
def test_op_table_matches_tensorflow():
    tf = pytest.importorskip("tensorflow")
    tf1 = tf.compat.v1
    graph = tf.Graph()
    wrong = []
    with graph.as_default():
        a = tf1.placeholder(tf.float32, [2, 2])
        b = tf1.placeholder(tf.float32, [2, 2])
        bias = tf1.placeholder(tf.float32, [2])
        table = {api: ((op,), 1) for api, op in OVERRIDABLE.items()}
        table.update(NEUTRAL)
        for api, (types, arity) in sorted(table.items()):
            before = set(graph.get_operations())
            args = [a] if arity == 1 else [a, bias if api == "nn.bias_add" else b]
            _resolve(tf1, api)(*args)
            built = sorted({op.type for op in graph.get_operations() if op not in before} - {"Const"})
            if built != sorted(types):
                wrong.append((api, types, built))
        # an overridable call builds exactly one op, so nothing else in the scope is touched
        for api in OVERRIDABLE:
            before = set(graph.get_operations())
            _resolve(tf1, api)(a, name="n")
            assert len([op for op in graph.get_operations() if op not in before]) == 1, api
    assert not wrong, wrong
    assert not OVERRIDABLE_TYPES & {t for types, _ in NEUTRAL.values() for t in types}


# --------------------------------------------------------------------------
# numbers: docs/tf1-vs-tf2.md, section 8, in process
# --------------------------------------------------------------------------
OVERRIDE_IGNORED_UNDER_TAPE = """\
import tensorflow as tf

@tf.RegisterGradient("Reverse")
def _reverse(op, grad):
    return [-3.0 * grad]

x = tf.constant([1.0, 2.0])
with tf.get_default_graph().gradient_override_map({"Identity": "Reverse"}):
    y = tf.identity(x)
"""


@pytest.mark.tf
def test_migrated_reversal_keeps_its_gradient_under_a_tape_and_tf_function():
    tf = pytest.importorskip("tensorflow")
    out, findings = transform(OVERRIDE_IGNORED_UNDER_TAPE)
    assert findings == [] and "custom_gradient" in out
    namespace = {}
    exec(compile(out, "migrated.py", "exec"), namespace)
    reverse = namespace["identity_with_reverse"]
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(reverse(x))
    assert tape.gradient(y, x).numpy().tolist() == [-3.0, -3.0]

    @tf.function
    def traced(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(reverse(x))
        return tape.gradient(y, x)

    assert traced(x).numpy().tolist() == [-3.0, -3.0]
    # the legacy override under a tape: silently ignored (why the rewrite exists)
    tf.RegisterGradient("ReverseLegacyProbe")(lambda op, grad: [-3.0 * grad])
    with tf.GradientTape() as tape:
        tape.watch(x)
        with tf.compat.v1.get_default_graph().gradient_override_map(
                {"Identity": "ReverseLegacyProbe"}):
            y = tf.reduce_sum(tf.identity(x))
    assert tape.gradient(y, x).numpy().tolist() == [1.0, 1.0]


# --------------------------------------------------------------------------
# acceptance: the example pairs
# --------------------------------------------------------------------------
PAIRS = ["gradient_reversal", "guided_backprop"]


@pytest.mark.parametrize("name", PAIRS)
def test_example_migrates_to_the_committed_tf2_script(name):
    legacy = EXAMPLES / f"{name}_tf1.py"
    result, findings = migrate(legacy.read_text(), str(legacy))
    assert findings == []
    assert result.mode == "tape", result.findings
    out = result.output
    code = out[out.index("import numpy"):]  # the docstring still tells the legacy story
    assert "gradient_override_map" not in code and "RegisterGradient" not in code
    assert "@tf.custom_gradient" in out and "GradientTape" in out
    assert out == (EXAMPLES / f"{name}_tf2.py").read_text()
    # the migrated file is a fixed point
    assert not migrate(out, str(legacy))[0].changed


@pytest.mark.parametrize("name", PAIRS)
def test_pipeline_alone_migrates_the_example(name):
    from tapeshift.migrate.engine import registry

    assert CustomGradientsToTape in registry.phase("pre")
    legacy = EXAMPLES / f"{name}_tf1.py"
    result = migrate_source(legacy.read_text(), str(legacy))
    assert result.mode == "tape", result.findings
    assert result.output == (EXAMPLES / f"{name}_tf2.py").read_text()
    for source in UNMAPPABLE.values():
        fallback = migrate_source(source[1], "t.py")
        assert fallback.mode == "compat" and source[0] in [f.code for f in fallback.findings]


@pytest.mark.slow
@pytest.mark.tf
@pytest.mark.parametrize("name,gradients", [
    ("gradient_reversal", ["grad_values_1[0]", "grad_values_2[0]", "domain_grad"]),
    ("guided_backprop", ["guided", "plain"]),
])
def test_example_pair_verifies(name, gradients):
    pytest.importorskip("tensorflow")
    from tapeshift.migrate.legacy.verify import verify_scripts

    report = verify_scripts(EXAMPLES / f"{name}_tf1.py", EXAMPLES / f"{name}_tf2.py",
                            timeout=300)
    assert report.exit_code == 0, report.to_text()
    compared = {r.name for r in report.rows if r.compared and r.kind == "value"}
    assert set(gradients) <= compared, report.to_text()
    assert any(r.kind == "printed" and r.compared for r in report.rows)
