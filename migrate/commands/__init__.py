"""The ``tapeshift`` command line: argument parsing and printing, nothing else.

Each subcommand reads its arguments into :class:`~tapeshift.migrate.engine.settings.Settings`
or calls the engine, the I/O layer or the legacy runner, and returns an exit
code from :mod:`tapeshift.migrate.engine.exit_codes`.
"""
