"""The tapeshift codemods: one LibCST command per legacy TF1 idiom.

Tape form runs :class:`CustomGradientsToTape` first, as a pre-pass whose output
the others read; then, in order, :class:`SessionToEager`,
:class:`GradientsToTape`, :class:`RenameTF1Names`, :class:`CompatV1ToTF2Imports`;
then :class:`TF1OnlyNames` checks nothing TF1-only is left. Compat form runs
:class:`CompatFallback` alone. :mod:`tapeshift.migrate.engine.pipeline` decides per file.
"""
