"""The tapeshift codemods: one LibCST command per legacy TF1 idiom, one module each.

Each rule declares its id, phase and order, codes, handled TF1 names, screen
and option on its class and registers itself with
:func:`tapeshift.migrate.engine.registry.register_rule`; the registry finds the
modules of this package and feeds the pipeline, the screen, the TF1-only check,
``docs/codes.md`` and the command line. Adding a rule is a new module here and
its tests. :mod:`tapeshift.migrate.engine.pipeline` decides per file between
tape form and compat form.
"""
