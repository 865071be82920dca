"""The session rule's codes, which the feeds rules report too.

TS106 (a session the codemod cannot see whole), TS107 (fed placeholders the feeds
rules cannot turn into functions), TS108 (an op that changes state when run), TS112
(gradient overrides), TS113 and TS116 (seeded and unseeded random numbers), TS115 (a
fetch that is not a value): documented here, registered by
:class:`tapeshift.migrate.rules.session.SessionToEager` (its ``CODES``), and reported
by it and by the feeds, class-feeds, summaries and TF1-only rules, which import them
from session.py.
"""

from __future__ import annotations

from tapeshift.migrate.engine.findings import COMPAT_SAFETY, CodeInfo, Severity


# Codes the session rule reports (docs/codes.md is generated from them)

TS106 = CodeInfo(
    code="TS106",
    name="session-not-visible",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="a Session is used in a way the codemod cannot see whole",
    what="Finds Sessions built on another graph (`graph=`, `target=`), passed "
         "to or returned from functions, reached through "
         "`tf.get_default_session()`, or run with options the codemod does not model.",
    why="Replacing `sess.run(x)` by the value of `x` is right only when the "
        "codemod sees every use of the session and the graph it runs.",
    example="def evaluate(sess, loss):\n    return sess.run(loss)",
    use_instead="Keep graph code in one place; after migrating, pass values "
                "(`loss.numpy()`) rather than sessions.",
    fix_safety=COMPAT_SAFETY,
)

TS107 = CodeInfo(
    code="TS107",
    name="session-feeds-placeholders",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="a fed graph the feeds rule cannot turn into functions of the fed values",
    what="Reports placeholders and `feed_dict=` the feeds rule cannot follow: a "
         "feed_dict that is not a dict literal, feeding a computed tensor, a placeholder "
         "needed but not fed, variables created from fed values (`tf.layers.dense(x)`), "
         "graph code in a loop or `with` block, a graph value used outside `sess.run`, "
         "more than one Session, `tf.sparse_placeholder`, placeholders without a Session.",
    why="A fed graph is a function of its feeds; straight-line eager code would "
        "compute each tensor once, with whatever value existed when the line ran "
        "(docs/tf1-vs-tf2.md, section 1). The feeds rule turns each distinct set of fetches into "
        "a function of the placeholders it needs; what it cannot place exactly stays "
        "in compat form.",
    example="x = tf.placeholder(tf.float32)\nfeed = {x: 2.0}\nprint(sess.run(y, feed_dict=feed))",
    use_instead="print(sess.run(y, feed_dict={x: 2.0}))  # a dict literal at the call "
                "becomes run_y(x=2.0)",
    fix_safety=COMPAT_SAFETY,
)

TS108 = CodeInfo(
    code="TS108",
    name="session-stateful-op",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="the graph holds an op whose value changes when it runs and the codemod cannot place it",
    what="Finds state changes the rules cannot place: optimizer steps outside a file "
         "that runs them in a Session (or in forms the feeds rule does not convert: "
         "`var_list` from a collection, an optimizer built from a computed tensor or a "
         "defaulted placeholder, `minimize` not assigned), assignments, `tf.Print`, "
         "`py_func`, dataset iterators and random ops outside variable initialisers.",
    why="In a graph these run each time `sess.run` fetches them; in eager code "
        "they would run once, when the line is reached, so losses read later "
        "would see different variable values (docs/tf1-vs-tf2.md, section 1). Train ops the "
        "feeds rule converts run inside the step function of their `sess.run`.",
    example="train = opt.minimize(loss, var_list=tf.get_collection('actor'))",
    use_instead="train = opt.minimize(loss, var_list=[W1, b1])  # an explicit list is converted",
    fix_safety=COMPAT_SAFETY,
)

TS112 = CodeInfo(
    code="TS112",
    name="gradient-override",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="gradient_override_map / RegisterGradient is ignored in eager mode",
    what="Finds `@tf.RegisterGradient` and `graph.gradient_override_map(...)`.",
    why="In eager mode the override map is silently ignored: a gradient-reversal "
        "layer gave [-3, -3] in a graph and [3, 3] under a tape (docs/tf1-vs-tf2.md, section 8).",
    example="with g.gradient_override_map({\"Identity\": \"Reverse\"}):\n    y = tf.identity(x)",
    use_instead="@tf.custom_gradient\ndef reverse(x):\n    return tf.identity(x), lambda dy: -dy",
    fix_safety=COMPAT_SAFETY,
)

TS113 = CodeInfo(
    code="TS113",
    name="seeded-random-stream",
    severity=Severity.INFO,
    summary="seeded random ops: TF2 draws another stream from the same seed",
    what="Notes a file that sets a graph-level seed (`tf.set_random_seed`) or gives random "
         "ops or initialisers an op-level seed. The file is converted: the seed becomes "
         "`tf.random.set_seed`, op seeds are kept.",
    why="`tf.set_random_seed(0)` and `tf.random.set_seed(0)` give different streams "
        "(docs/tf1-vs-tf2.md, section 5): the migrated program is as reproducible as the "
        "legacy one, run after run, but starts from other random numbers, so a "
        "number-by-number comparison of the two differs unless both draw from one stream "
        "(`tapeshift verify --align-random`).",
    example="tf.set_random_seed(0)\nW = tf.Variable(tf.random_normal([2, 2]))",
    use_instead="tf.random.set_seed(0)\nW = tf.Variable(tf.random.normal([2, 2]))   "
                "# compare with: tapeshift verify --align-random legacy.py migrated.py",
    fix_safety="Changes numbers: the random draws differ from the legacy run's (as the draws "
               "of two differently seeded runs do); everything computed from them follows.",
)

TS115 = CodeInfo(
    code="TS115",
    name="unsupported-fetch",
    severity=Severity.WARNING,
    blocks_tape=True,
    summary="a sess.run fetch the codemod cannot turn into a value",
    what="Finds `sess.run` fetches that are strings (tensor names), operations "
         "run for their effect, or expressions whose definition is not in the file.",
    why="The fetch must be a tensor (or a structure of tensors) built in the "
        "same file for its value to be computed eagerly.",
    example="sess.run(\"loss:0\")",
    use_instead="Fetch the Python name of the tensor: `sess.run(loss)`.",
    fix_safety=COMPAT_SAFETY,
)

TS116 = CodeInfo(
    code="TS116",
    name="unseeded-random-init",
    severity=Severity.INFO,
    summary="random initial values: the legacy and the migrated run draw different numbers",
    what="Notes a random op in a variable initialiser in a file that sets no seed. "
         "The file is converted.",
    why="Unseeded, the legacy program draws new numbers on every run too; the "
        "migrated program is as correct, but a number-by-number comparison of the "
        "two runs (`tapeshift verify`) will differ (docs/tf1-vs-tf2.md, section 5).",
    example="W = tf.Variable(tf.random_normal([2, 2]))",
    use_instead="For a comparable run, start from fixed values: "
                "`W = tf.Variable(np.load(\"W0.npy\"))`, or stateless random ops with a fixed seed.",
    fix_safety="The rewrite keeps the semantics (one random draw at creation); only "
               "the drawn values differ, as between any two unseeded runs.",
)
