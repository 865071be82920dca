"""TS2xx: the codes of ``tapeshift check`` (registered in the one registry)."""

from tapeshift.migrate.engine.findings import CodeInfo, Severity, register

CHAIN_RULE = register(CodeInfo(
    code="TS201",
    name="elementwise-chain-rule",
    severity=Severity.ERROR,
    summary="elementwise product of dloss/dh and dh/dW is not the chain rule",
    what="Finds an elementwise product (`*`, `tf.multiply`) of a gradient with "
         "respect to an intermediate tensor `h` and a gradient of `h` with respect "
         "to a source `W`, following values through assignments.",
    why="`tf.gradients(h, W)` (or `tape.gradient(h, W)`) is the gradient of "
        "`sum(h)`, i.e. a vector-Jacobian product with a vector of ones; multiplying "
        "it elementwise by dloss/dh does not compose the two. The result runs, has "
        "plausible values, and is wrong (the shapes only line up by accident).",
    example="g_h = tf.gradients(loss, h)[0]\ng_W = g_h * tf.gradients(h, W)[0]",
    use_instead="g_W = tf.gradients(h, W, grad_ys=g_h)[0]   # TF1\n"
                "g_W = tape.gradient(h, W, output_gradients=g_h)   # TF2",
    fix_safety="Changes numbers, on purpose: the fixed value is the true gradient "
               "(it equals the direct dloss/dW when nothing bypasses h). "
               "`tapeshift check --fix TS201` applies it.",
))

SPLIT_BYPASS = register(CodeInfo(
    code="TS202",
    name="split-bypasses-cut",
    severity=Severity.WARNING,
    summary="the source also reaches the target along a path that bypasses the cut",
    what="For a split gradient loss -> h -> W (a vector-Jacobian product or the "
         "elementwise idiom), follows the assignments that define `loss` and "
         "reports when `W` is reachable without passing through `h`.",
    why="A split through `h` only carries the terms that flow through `h`; a "
        "shared weight or a skip connection adds a term the split misses, so "
        "split != direct.",
    example="h = tf.matmul(x, W)\nloss = tf.reduce_sum(tf.matmul(h, W))\n"
            "g = tf.gradients(h, W, grad_ys=tf.gradients(loss, h)[0])[0]",
    use_instead="Add the bypass term (`tf.gradients(loss, W, stop_gradients=[h])`), "
                "take the direct gradient, or use `compat.split_gradient`, which "
                "detects and adds it.",
    fix_safety="No automatic fix: which term the author meant is not knowable.",
))

GRADIENTS_IN_EAGER = register(CodeInfo(
    code="TS203",
    name="tf-gradients-in-eager",
    severity=Severity.WARNING,
    summary="tf.gradients in eager code raises under TF2",
    what="Finds `tf.gradients` in a module that runs eagerly (it uses "
         "`GradientTape`, `tf.function` or `.numpy()`, and no Session, placeholder "
         "or `disable_v2_behavior`) outside a `tf.function` and a graph block.",
    why="Under eager execution `tf.gradients` raises \"tf.gradients is not supported "
        "when eager execution is enabled. Use tf.GradientTape instead.\", the error "
        "users meet after a half migration.",
    example="with tf.GradientTape() as tape:\n    loss = f(W)\ng = tf.gradients(loss, W)",
    use_instead="g = tape.gradient(loss, W)   (or run `tapeshift migrate` on the file)",
    fix_safety="No automatic fix here; `tapeshift migrate` converts whole files.",
))

TAPE_TWICE = register(CodeInfo(
    code="TS204",
    name="non-persistent-tape-reused",
    severity=Severity.WARNING,
    summary="a non-persistent GradientTape is asked for a gradient twice",
    what="Counts `gradient`/`jacobian` calls on a tape opened without "
         "`persistent=True`; reports the second.",
    why="A non-persistent tape releases its resources after the first call; the "
        "second raises \"A non-persistent GradientTape can only be used to compute "
        "one set of gradients\".",
    example="with tf.GradientTape() as t:\n    y = f(x)\na = t.gradient(y, x)\nb = t.gradient(y, W)",
    use_instead="with tf.GradientTape(persistent=True) as t: ... then `del t` after "
                "the last call, or ask for all sources in one call.",
    fix_safety="Adding persistent=True keeps every number; it holds memory until the "
               "tape is deleted.",
))

OUTSIDE_TAPE = register(CodeInfo(
    code="TS205",
    name="target-computed-outside-tape",
    severity=Severity.WARNING,
    summary="gradient of a tensor computed before the tape started recording (None)",
    what="Finds `tape.gradient(y, ...)` where `y` was last assigned before the "
         "`with GradientTape()` block and not inside it.",
    why="A tape only records operations run inside its block; the gradient of a "
        "tensor computed outside is silently None.",
    example="y = f(x)\nwith tf.GradientTape() as t:\n    t.watch(x)\ng = t.gradient(y, x)  # None",
    use_instead="Compute `y` inside the `with` block.",
    fix_safety="Moving the computation inside the block changes a None into the "
               "gradient.",
))

INSIDE_OWN_BLOCK = register(CodeInfo(
    code="TS206",
    name="gradient-inside-own-tape-block",
    severity=Severity.WARNING,
    summary="tape.gradient called inside the tape's own block",
    what="Finds `t.gradient(...)` inside `with ... as t:` on a tape that is not "
         "persistent (so it cannot be meant for a higher-order gradient from the "
         "same tape).",
    why="Inside its block the tape records the gradient computation itself: "
        "slower and more memory, and a sign that the code was moved by hand.",
    example="with tf.GradientTape() as t:\n    y = f(x)\n    g = t.gradient(y, x)",
    use_instead="Dedent the `t.gradient` call below the block (or use an outer tape "
                "for higher-order gradients).",
    fix_safety="Moving the call keeps every number.",
))

OVERRIDE_MAP_EAGER = register(CodeInfo(
    code="TS207",
    name="gradient-override-map-in-eager",
    severity=Severity.ERROR,
    summary="gradient_override_map is silently ignored under eager execution",
    what="Finds `graph.gradient_override_map(...)` in a module that runs eagerly.",
    why="In eager mode and under a GradientTape the override map has no effect and "
        "raises nothing: a gradient-reversal layer gives the un-reversed gradient "
        "(measured: [-3, -3] in a graph, [3, 3] under a tape).",
    example="with tf.compat.v1.get_default_graph().gradient_override_map({'Identity': 'Rev'}):\n"
            "    y = tf.identity(x)",
    use_instead="`@tf.custom_gradient`, or `tapeshift.compat.custom_gradients.gradient_reversal`, "
                "which behave the same on graph and tape.",
    fix_safety="`tapeshift migrate` rewrites the registered gradient into "
               "`@tf.custom_gradient` where it can see both halves.",
))
