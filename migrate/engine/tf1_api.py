"""TF1 API names the rules share, each set declared once (API names: ``train.Saver``, no ``tensorflow.``).

The generated table of every TF1-only name is :mod:`tapeshift.migrate.engine.tf1_api_table`.
"""

from __future__ import annotations

SESSIONS = frozenset({"Session", "InteractiveSession"})
#: Every op that makes a placeholder.
PLACEHOLDERS = frozenset({"placeholder", "placeholder_with_default", "sparse_placeholder"})
#: The placeholders the feeds rule turns into parameters of step functions (a
#: sparse one it reports instead).
DENSE_PLACEHOLDERS = PLACEHOLDERS - {"sparse_placeholder"}
INITIALIZERS = frozenset({
    "global_variables_initializer", "initialize_all_variables",
    "local_variables_initializer", "initialize_local_variables",
    "variables_initializer", "initialize_variables",
})
#: Graph-level seeds (TF1's and TF2's spelling).
SEEDING = frozenset({"set_random_seed", "random.set_seed"})
#: Switches between TF1 and TF2 behaviour, meaningless once a file is in tape form.
BEHAVIOUR_SWITCHES = frozenset({
    "disable_v2_behavior", "enable_v2_behavior", "disable_eager_execution",
    "enable_eager_execution",
})
#: Graph housekeeping with no meaning in eager code; the statement goes.
GRAPH_HOUSEKEEPING = frozenset({"reset_default_graph"})
