"""What one run of the codemod is asked to do, as one value.

:class:`Settings` is read once from the command line (``tapeshift migrate``)
or built by a caller, and handed down unchanged to the batch runner
(:mod:`tapeshift.migrate.engine.batch`), its worker processes and the pipeline
(:mod:`tapeshift.migrate.engine.pipeline`): the options no longer travel by
hand, one argument each, through every function on the way.

*Reference mode* (``Settings.reference``) runs every rule as LibCST runs a
codemod on its own: no shared metadata, no screening, no remembered runs and
none of the shortcuts into LibCST's internals
(:mod:`tapeshift.migrate.engine.libcst_speedups`). It is slower and must give
byte for byte the same output and findings; the tests compare the two. It is
on for a block of code with :func:`reference_mode`, for a whole process (and
its worker processes, which inherit the environment) with the environment
variable ``TAPESHIFT_REFERENCE=1``, and by itself on a LibCST version outside
the range the shortcuts were tested with.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional, Tuple

#: the environment variable that turns reference mode on for a process ("1")
REFERENCE_ENV = "TAPESHIFT_REFERENCE"
#: "tape": convert, falling back to compat per file; "compat": only the fallback
MODES = ("tape", "compat")

# one flag for the process: worker threads see it too (a context variable
# would start empty in each new thread)
_reference = os.environ.get(REFERENCE_ENV) == "1"


def reference() -> bool:
    """True when reference mode was asked for (:func:`reference_mode`, the
    environment); :func:`tapeshift.migrate.engine.libcst_speedups.active`
    also says False on an untested LibCST."""
    return _reference


@contextmanager
def reference_mode(on: bool = True) -> Iterator[None]:
    """Reference mode on (or off, ``on=False``) inside the block, as it was after."""
    global _reference
    before = _reference
    _reference = bool(on)
    try:
        yield
    finally:
        _reference = before


@dataclass(frozen=True)
class Settings:
    """The options of one run. Every field has the default a plain
    ``tapeshift migrate PATH`` uses."""

    #: one of :data:`MODES` (checked where a file is migrated: a batch reports a
    #: wrong one per file, as for any other failure)
    mode: str = "tape"
    #: opt-in behaviours of the tape rules (``tf_function``, ``keras_optimizers``)
    options: Tuple[str, ...] = ()
    #: ``tapeshift check`` codes whose fixes are applied before migrating
    fix: Tuple[str, ...] = ()
    #: worker processes (None: one per core this process may use)
    jobs: Optional[int] = None
    #: where the result cache lives (None: no cache)
    cache_dir: Optional[Path] = None
    #: migrate each output once more and record whether it changed (tests, benchmarks)
    check_idempotent: bool = False
    #: reference mode (see the module's docstring); by default as the process has it
    reference: bool = field(default_factory=reference)
    #: the tree's facts about one file's gradient helpers (engine/tree_helpers.py):
    #: set per file by the batch runner, empty for a file on its own
    tree_helpers: Tuple[tuple, ...] = ()

    def __post_init__(self) -> None:
        # lists from argparse and callers become tuples: the value is hashable and
        # compares equal however it was built
        object.__setattr__(self, "options", tuple(self.options))
        object.__setattr__(self, "fix", tuple(self.fix))

    @contextmanager
    def applied(self) -> Iterator[None]:
        """The process-wide parts of these settings (reference mode) in force
        inside the block: what a worker process does around each file."""
        with reference_mode(self.reference):
            yield
