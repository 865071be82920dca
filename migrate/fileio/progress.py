"""The progress bar of a run over many files, drawn by tqdm.

:class:`Progress` draws on ``stream`` (stderr) only when all of these hold:
the stream is a terminal, ``quiet`` is false, ``TERM`` is not ``dumb``, the
``CI`` environment variable is unset (GitHub Actions, GitLab CI and most
others set it; their logs are not terminals, but a CI job may run under a
pseudo-terminal), and the run has lasted ``delay`` seconds (short runs show
nothing). Otherwise it only counts, and tqdm is not even imported (it costs
some 60 ms, a large share of a short command's start).

The bar is left on no line once closed (``leave=False``), and its tqdm has no
monitor thread: :func:`tapeshift.migrate.engine.batch.run_tree` forks its workers only from a
process with a single thread.
"""

from __future__ import annotations

import io
import os
import sys
from typing import Any, Optional, TextIO, Tuple


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _size(stream: Any) -> Tuple[int, int]:
    try:
        return tuple(os.get_terminal_size(stream.fileno()))
    except (AttributeError, ValueError, OSError, io.UnsupportedOperation):
        return 0, 0


def bar_wanted(stream: Any, *, quiet: bool = False) -> bool:
    """Whether a progress bar may be drawn on ``stream`` (see the module docstring)."""
    return (not quiet and _isatty(stream) and os.environ.get("TERM") != "dumb"
            and not os.environ.get("CI"))


def _bar_class():
    from tqdm import tqdm

    class Bar(tqdm):
        # no monitor thread: a process with a thread does not fork its workers
        monitor_interval = 0

    return Bar


class Progress:
    """Counts files done; a tqdm bar on ``stream`` (stderr) when :func:`bar_wanted`
    (or ``enabled=True``), shown once the run has lasted ``delay`` seconds."""

    def __init__(self, total: int, *, quiet: bool = False, stream: Optional[TextIO] = None,
                 label: str = "files", delay: float = 0.5, enabled: Optional[bool] = None):
        self.total = total
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.label = label
        if enabled is None:
            enabled = total > 0 and bar_wanted(self.stream, quiet=quiet)
        self.enabled = enabled
        self._bar = None
        if enabled:
            # a terminal of unknown size (a pseudo-terminal nobody sized says
            # 0 x 0, where tqdm would draw nothing) is taken to be 80 x 24
            columns, lines = _size(self.stream)
            width = ({"dynamic_ncols": True} if columns and lines
                     else {"ncols": columns or 80, "nrows": lines or 24})
            self._bar = _bar_class()(
                total=total, file=self.stream, unit=f" {label}", unit_scale=False,
                delay=delay, leave=False, mininterval=0.1, **width,
                bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt}{unit} {elapsed}<{remaining}")

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
