"""How tapeshift starts a child interpreter that runs its own code.

A child is ``python -c SOURCE ARGS...``: :func:`child_source` is that source, one
for every kind of child (the runner of :mod:`tapeshift.migrate.legacy.capture`,
the warm process of :mod:`tapeshift.migrate.legacy.warm`, the variable collector of
:mod:`tapeshift.migrate.checkpoints.collect`). It imports the child's
entry point from the ``tapeshift`` this process runs (a checkout or an
installation, :func:`package_root`), with that directory first on ``sys.path``
for the import only, so that the script the child runs sees the ``sys.path`` a
plain ``python`` gives it. :func:`runner_command` is the runner's command line.
"""

from __future__ import annotations

import os
import sys
from typing import Sequence


def package_root() -> str:
    """The directory that holds the ``tapeshift`` package (a checkout or site-packages)."""
    import tapeshift

    return os.path.dirname(os.path.dirname(os.path.realpath(tapeshift.__file__)))


def child_source(module: str, function: str, call: str) -> str:
    """The ``python -c`` source that imports ``function`` from ``module`` (of this
    process's ``tapeshift``, see above) and then runs the statement ``call``."""
    return (
        "import sys\n"
        f"sys.path.insert(0, {package_root()!r})\n"
        "try:\n"
        f"    from {module} import {function}\n"
        "finally:\n"
        "    del sys.path[0]\n"
        f"{call}\n"
    )


def runner_command(
    script: str | os.PathLike,
    script_args: Sequence[str] = (),
    *,
    legacy: bool,
    capture_dir: str | os.PathLike | None = None,
    user_paths: Sequence[str | os.PathLike] = (),
    python: str | None = None,
    resource_variables: bool = False,
    no_graph_rewrites: bool = False,
) -> list[str]:
    """The command line that runs ``script`` in a child Python.

    ``legacy=True`` runs it as a TF1 script (run-legacy); ``capture_dir``
    makes the child write the script's final numeric globals there (see
    :mod:`tapeshift.migrate.legacy.capture`). With ``legacy``, ``resource_variables``
    and ``no_graph_rewrites`` add ``--resource-variables`` and ``--no-graph-rewrites``
    (as run-legacy's). Works from a checkout and when installed.
    """
    source = child_source("tapeshift.migrate.legacy.capture", "main", "sys.exit(main(sys.argv[1:]))")
    cmd = [python or sys.executable, "-c", source]
    if legacy:
        cmd.append("--legacy")
        if resource_variables:
            cmd.append("--resource-variables")
        if no_graph_rewrites:
            cmd.append("--no-graph-rewrites")
    if capture_dir is not None:
        cmd += ["--capture", os.fspath(capture_dir)]
    for p in user_paths:
        cmd += ["--user-path", os.fspath(p)]
    cmd += ["--", os.fspath(script), *map(str, script_args)]
    return cmd
