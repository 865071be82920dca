"""The codes of the gradients rule (gradients.py), which its plan (gradients_plan.py)
reports too: a module of their own, which both import."""

from tapeshift.migrate.engine.findings import COMPAT_SAFETY, CodeInfo, Severity

TS102 = CodeInfo(
    code="TS102",
    name="gradients-stop-gradients",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="tf.gradients(..., stop_gradients=...) has no GradientTape equivalent",
    what="Finds `tf.gradients` calls that pass `stop_gradients=`.",
    why="`GradientTape.gradient` has no `stop_gradients` argument; the same "
        "effect needs `tf.stop_gradient` placed in the forward code, which the "
        "codemod cannot do without knowing the author's intent.",
    example="g = tf.gradients(loss, [a, b], stop_gradients=[a, b])",
    use_instead="Put `tf.stop_gradient(a)` where `a` is used in the forward "
                "computation, then take `tape.gradient(loss, [a, b])`.",
    fix_safety=COMPAT_SAFETY,
)

TS103 = CodeInfo(
    code="TS103",
    name="gradients-in-control-flow",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="tf.gradients inside control flow the codemod cannot follow",
    what="Finds `tf.gradients` calls the codemod cannot give a tape: in a lambda or a "
         "comprehension, in a function passed to `tf.scan` / `tf.foldl` / `tf.case` ... "
         "(or to `tf.while_loop` / `tf.map_fn` over nested values), in an `if`/`with` block "
         "that also computes the target, or in a loop pass whose target depends on a "
         "value an earlier pass computed from the sources.",
    why="A tape must be active around the exact forward computation. A tape in each "
        "pass of a loop records that pass only, while TF1's gradient of an unrolled "
        "loop also runs back through the earlier passes the target depends on.",
    example="h = x\nfor step in range(3):\n    h = h * w\n    g = tf.gradients(h, w)[0]",
    use_instead="One tape around the whole loop, the gradient taken inside it from that "
                "tape (`persistent=True` when taken in every pass), written by hand.",
    fix_safety=COMPAT_SAFETY,
)

TS104 = CodeInfo(
    code="TS104",
    name="gradients-unresolved-operand",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="the targets or sources of tf.gradients are not names the codemod can follow",
    what="Finds `tf.gradients` calls whose `ys` or `xs` are not plain names (or "
         "lists of names) defined in the same function or module, for example "
         "`tf.trainable_variables()` or `model.weights`.",
    why="The tape has to be placed around the computation from the sources to "
        "the targets, and TensorFlow's list semantics kept; both need to see "
        "where the operands come from.",
    example="grads = tf.gradients(loss, tf.trainable_variables())",
    use_instead="Name the variables explicitly, or write the tape by hand: "
                "`tape.gradient(loss, model.trainable_variables)`.",
    fix_safety=COMPAT_SAFETY,
)

TS105 = CodeInfo(
    code="TS105",
    name="gradients-interleaved",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="a gradient is taken in the middle of the forward computation it belongs to",
    what="Finds a `tf.gradients` call that sits between statements of the "
         "forward computation another gradient of the same order needs, and cannot "
         "be moved after it (it is not a plain assignment, or a later statement of "
         "the forward computation reads its result or rebinds what it reads).",
    why="A tape answers gradients after its `with` block; moving the statement "
        "could change what it reads.",
    example="h = f(W)\nprint(tf.gradients(h, W)[0])\nloss = g(h)\ng2 = tf.gradients(loss, W)[0]",
    use_instead="Move the forward computation before the first gradient, then migrate.",
    fix_safety=COMPAT_SAFETY,
)

TS110 = CodeInfo(
    code="TS110",
    name="gradients-graph-only-argument",
    severity=Severity.INFO,
    summary="a tf.gradients argument with no meaning in eager mode was dropped",
    what="Drops `gate_gradients`, `aggregation_method`, "
         "`colocate_gradients_with_ops` and `name` when converting `tf.gradients` "
         "to `tape.gradient`.",
    why="They control graph construction and placement; `GradientTape.gradient` "
        "does not take them.",
    example="tf.gradients(loss, W, colocate_gradients_with_ops=True)",
    use_instead="tape.gradient(loss, W)",
    fix_safety="Safe: the migrated code computes what the legacy graph meant. "
               "`aggregation_method` may change float rounding in the last bits. Eager "
               "code always finishes every gradient before any update, as "
               "`gate_gradients=True` does; a legacy graph without it that applies the "
               "gradients to ref variables (TF1's default) can race: an update may land "
               "before a backward op reads the variable, so the legacy run itself is not "
               "reproducible (measured on a DDPG actor update: 8 of 15 runs differed).",
)

TS111 = CodeInfo(
    code="TS111",
    name="gradients-unconnected",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="no forward computation from the sources to the targets was found",
    what="Finds a `tf.gradients` call whose targets do not depend, by the names "
         "in the code, on any of its sources.",
    why="Either the gradient is `None` by design, or the dependency goes "
        "through state the codemod cannot see (an object, a closure); placing a "
        "tape would be a guess.",
    example="loss = model(x)  # model reads W internally\ng = tf.gradients(loss, W)",
    use_instead="Write the tape by hand around the call that uses the variables.",
    fix_safety=COMPAT_SAFETY,
)
