"""The ``tapeshift`` command line.

Each subcommand lives in its own module, which provides ``HELP`` (one line),
``add_arguments(parser)`` and ``run(args) -> int``. Modules are imported when
the parser is built, so none of them may import TensorFlow at module level;
a command line naming a subcommand imports that one only (``demo`` brings in
numpy, whose thread pool would keep ``migrate`` from forking its workers).

Exit codes, shared by every subcommand: :mod:`tapeshift.migrate.engine.exit_codes`.
The commands never import this module (it imports them).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from tapeshift.migrate.engine.exit_codes import run_parsed

# subcommand name -> module implementing it
SUBCOMMANDS = {
    "demo": "tapeshift.compat.demo",
    "migrate": "tapeshift.migrate.commands.migrate",
    "run-legacy": "tapeshift.migrate.legacy.run_legacy",
    "verify": "tapeshift.migrate.legacy.verify",
    "check": "tapeshift.migrate.commands.check",
    "checkpoint": "tapeshift.migrate.commands.checkpoint",
}

def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``command`` (a subcommand's name), only
    that subcommand's module is imported and its options known."""
    parser = argparse.ArgumentParser(
        prog="tapeshift",
        description="Move legacy TensorFlow 1.x gradient code onto TensorFlow 2.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, module_name in SUBCOMMANDS.items():
        if command in SUBCOMMANDS and name != command:
            sub.add_parser(name)  # not the one being run: its options are not needed
            continue
        module = importlib.import_module(module_name)
        sp = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(sp)
        sp.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    return run_parsed(build_parser(argv[0] if argv else None), argv)


if __name__ == "__main__":
    sys.exit(main())
