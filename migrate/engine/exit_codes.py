"""The exit codes of every ``tapeshift`` command, and how a command line becomes one.

    0  success, nothing to report
    1  the command found something (a change it would make, a finding of
       error level, a mismatch)
    2  usage error, or input that could not be processed
  130  interrupted (Ctrl-C), as a shell reports SIGINT
"""

from __future__ import annotations

import argparse
import os
import sys
from enum import IntEnum
from typing import Sequence


class ExitCode(IntEnum):
    OK = 0
    #: a change the command would make, a finding of error level, a mismatch
    FOUND = 1
    #: a usage error, or input that could not be processed
    ERROR = 2
    INTERRUPTED = 130


def run_parsed(parser: argparse.ArgumentParser, argv: Sequence[str]) -> int:
    """Parse ``argv`` with ``parser`` and call the ``_run`` default it sets
    (``set_defaults(_run=run)``): its exit code, argparse's on a usage error
    or ``--help``, :attr:`ExitCode.INTERRUPTED` on Ctrl-C."""
    # TensorFlow's C++ start-up chatter (CPU features, oneDNN notes) is not ours
    # to print; a user who wants it sets TF_CPP_MIN_LOG_LEVEL themselves.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    try:
        return int(args._run(args))
    except KeyboardInterrupt:
        print("tapeshift: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED


def standalone_main(name: str, help_text: str, add_arguments, run,
                    argv: Sequence[str] | None = None) -> int:
    """``tapeshift NAME ARGS`` for a command run on its own (``python -m``, a
    test): the same parsing and exit codes as the ``tapeshift`` command line."""
    parser = argparse.ArgumentParser(prog=f"tapeshift {name}", description=help_text)
    add_arguments(parser)
    parser.set_defaults(_run=run)
    return run_parsed(parser, sys.argv[1:] if argv is None else argv)
