"""The tapeshift codemods: one LibCST command per legacy TF1 idiom, one module each.

A rule declares its id, phase, order, codes, handled names, screen and option
on its class and registers itself (``engine.registry.register_rule``); the
registry finds this package's modules. A new rule is a module here and its tests.
"""
