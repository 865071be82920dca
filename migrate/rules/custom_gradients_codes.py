"""The codes of the custom-gradients rule (custom_gradients.py), which its reading of
an override (custom_gradients_read.py) reports too: a module of their own, which both
import."""

from tapeshift.migrate.engine.findings import CodeInfo, Severity

_OVERRIDE_SAFETY = (
    "The override is left as it was and the whole file is migrated in compat "
    "mode (`tensorflow.compat.v1` with v2 behaviour disabled), where the graph "
    "honours `gradient_override_map`: every number is kept."
)

TS120 = CodeInfo(
    code="TS120",
    name="override-map-not-static",
    severity=Severity.ERROR,
    blocks_tape=True,
    summary="a gradient_override_map the codemod cannot read statically",
    what="Finds `gradient_override_map(...)` whose argument is not a literal dict of "
         "string literals (a map built at run time), or that is not used as the "
         "context manager of a `with` statement.",
    why="The rewrite has to know, when it reads the file, which op types get which "
        "gradient; a map built at run time could say anything.",
    example="overrides = {\"Identity\": name}\nwith g.gradient_override_map(overrides):\n"
            "    y = tf.identity(x)",
    use_instead="with g.gradient_override_map({\"Identity\": \"FlipGradient\"}):\n"
                "    y = tf.identity(x)",
    fix_safety=_OVERRIDE_SAFETY,
)

TS121 = CodeInfo(
    code="TS121",
    name="override-op-not-visible",
    severity=Severity.ERROR,
    blocks_tape=True,
    summary="an overridden op type the codemod cannot find or rewrite in its scope",
    what="Finds an op type in a `gradient_override_map` that no call in the `with` "
         "block visibly builds, that the codemod has no tape form for, or a block "
         "that calls a function whose ops it cannot see (a layer, a helper).",
    why="The override applies to every op of that type built in the block, also "
        "inside called functions; the codemod rewrites only calls it can map to an "
        "op type (`migrate/rules/custom_gradients_ops.py`).",
    example="with g.gradient_override_map({\"Relu\": \"GuidedRelu\"}):\n"
            "    h = tf.layers.dense(x, 10, activation=tf.nn.relu)",
    use_instead="Call the op inside the scope yourself: "
                "`h = tf.nn.relu(tf.matmul(x, W) + b)`, or write the "
                "`@tf.custom_gradient` function by hand.",
    fix_safety=_OVERRIDE_SAFETY,
)

TS122 = CodeInfo(
    code="TS122",
    name="registered-gradient-not-found",
    severity=Severity.ERROR,
    blocks_tape=True,
    summary="the gradient an override map names is not registered in the file in a readable form",
    what="Finds a `gradient_override_map` value with no `@tf.RegisterGradient(...)` "
         "function of that name in the file (decorator form, registered before the "
         "scope, in the same or the module scope), other than TensorFlow's own "
         "\"Identity\" gradient.",
    why="The tape form calls the gradient function itself; one registered in another "
        "module, or under a name computed at run time, cannot be found.",
    example="from mylib import gradients  # registers \"FlipGradient\"\n"
            "with g.gradient_override_map({\"Identity\": \"FlipGradient\"}):\n"
            "    y = tf.identity(x)",
    use_instead="Register the gradient in the same file, or write the "
                "`@tf.custom_gradient` function by hand.",
    fix_safety=_OVERRIDE_SAFETY,
)

TS123 = CodeInfo(
    code="TS123",
    name="registered-gradient-op-use",
    severity=Severity.ERROR,
    blocks_tape=True,
    summary="a registered gradient function uses its op in a way the codemod cannot map",
    what="Finds a gradient function whose `op` argument is used other than as "
         "`op.inputs[0]` or `op.outputs[0]` (for example `op.get_attr(...)`, `op.type`, "
         "`op.inputs` as a list), that takes other than `(op, grad)`, or that is "
         "also called directly.",
    why="Under a tape there is no op: the backward function receives the forward "
        "input, the forward output and the upstream gradient, nothing else.",
    example="@tf.RegisterGradient(\"Scaled\")\ndef _scaled(op, grad):\n"
            "    return grad * op.get_attr(\"T\").max",
    use_instead="Pass what the gradient needs as a Python value closed over by a "
                "hand-written `@tf.custom_gradient` function.",
    fix_safety=_OVERRIDE_SAFETY,
)
