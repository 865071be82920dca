"""The child-process side of ``run-legacy`` and ``verify``.

Started as ``python -c <bootstrap> [--seed N] [--align-random SEED] [--legacy]
[--resource-variables] [--no-graph-rewrites] [--capture DIR]
[--user-path DIR]... -- SCRIPT ARGS...`` (see :func:`tapeshift.migrate.legacy.run_legacy.runner_command`). It runs the
script as ``__main__`` (as a TF1 script with ``--legacy``) and, with
``--capture``, writes what ``verify`` compares:

``DIR/values.npz``
    the script's final module-level numeric values as plain numpy arrays
    (keys ``v0``, ``v1``, ...);
``DIR/meta.json``
    ``names`` and ``dtypes`` of those arrays (a dtype label such as
    ``float32``, ``bfloat16`` or ``py:float`` for a Python float), ``skipped``
    (name -> why it has no value, e.g. a graph tensor), ``random_ops`` (op name
    -> number of times the script created it), ``random_modes`` (``graph``,
    ``function`` or ``eager`` -> how many of those ran that way), ``unseeded`` (random source ->
    first ``file:line`` the script drew from it unseeded, and how often; see
    :class:`~tapeshift.migrate.legacy.watchers.RandomnessWatcher`), ``seed`` and the TensorFlow version.

With ``--seed N``, Python's ``random``, numpy's global generator and
TensorFlow's seeds are set to ``N`` before the script starts. With
``--align-random SEED``, TensorFlow's random draws come from the stateless
stream ``SEED`` (:mod:`tapeshift.migrate.legacy.align`), and ``meta.json`` has
``align``, what :meth:`~tapeshift.migrate.legacy.align.RandomAligner.record` says.

Module globals that are numbers, numpy arrays or scalars, eager tensors,
constant graph tensors (``tf.constant`` and what ``tf.get_static_value`` folds),
variables (eager ones directly; graph ones with the value they had when their
session was closed, or at the end of the script if it is still open), and
lists, tuples and string-keyed dicts of those are captured. Modules,
functions, classes, strings and graph tensors are not.

stdout and stderr are not touched: the parent reads them from the pipe.
"""

from __future__ import annotations

import os
import sys

from tapeshift.migrate.engine.exit_codes import ExitCode
from tapeshift.migrate.legacy.align import RandomAligner
from tapeshift.migrate.legacy.run_legacy import LegacyImports, enable_legacy_behavior, execute_script
from tapeshift.migrate.legacy.snapshot import capture_globals, write_capture
from tapeshift.migrate.legacy.watchers import (
    RandomnessWatcher,
    RandomOpWatcher,
    SessionTracker,
    TensorFlowHooks,
    graph_random_ops,
)


# -- entry point ------------------------------------------------------------

#: --resource-variables: the legacy script's variables are resource variables
_RESOURCE_VARIABLES = False
#: --no-graph-rewrites: the legacy script's sessions run without Grappler
_NO_GRAPH_REWRITES = False

def _parse(argv: list[str]):
    legacy, capture, user_paths, seed, align = False, None, [], None, None
    global _RESOURCE_VARIABLES, _NO_GRAPH_REWRITES
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            i += 1
            break
        if arg == "--legacy":
            legacy = True
        elif arg == "--resource-variables":
            _RESOURCE_VARIABLES = True
        elif arg == "--no-graph-rewrites":
            _NO_GRAPH_REWRITES = True
        elif arg == "--capture":
            i += 1
            capture = argv[i]
        elif arg == "--user-path":
            i += 1
            user_paths.append(argv[i])
        elif arg == "--seed":
            i += 1
            seed = int(argv[i])
        elif arg == "--align-random":
            i += 1
            align = int(argv[i])
        else:
            break
        i += 1
    if i >= len(argv):
        raise SystemExit("tapeshift runner: no script given")
    return legacy, capture, user_paths, seed, align, argv[i], argv[i + 1:]


def _tensorflow_installed() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("tensorflow") is not None
    except (ImportError, ValueError):
        return False


def main(argv: list[str]) -> int:
    legacy, capture, user_paths, seed, align_seed, script, script_args = _parse(argv)
    script_dir = os.path.dirname(os.path.realpath(script))
    roots = [script_dir, *user_paths]
    watcher, sessions = RandomOpWatcher(), SessionTracker()
    hooks = TensorFlowHooks(watcher, sessions, roots)
    randomness = RandomnessWatcher(seed, hooks.scope)
    aligner = None if align_seed is None else RandomAligner(align_seed, legacy)
    if legacy:
        try:
            import tensorflow  # noqa: F401 - must be loaded before its behaviour is changed
        except ImportError as exc:
            print(f"tapeshift run-legacy: TensorFlow is not installed ({exc}); "
                  "install it with: pip install 'tapeshift[tf]'", file=sys.stderr)
            return ExitCode.ERROR
        enable_legacy_behavior(resource_variables=_RESOURCE_VARIABLES,
                               no_graph_rewrites=_NO_GRAPH_REWRITES)
        if aligner is not None:  # before the watcher, which then counts the ops the script asked for
            aligner.install()
        if capture is not None:
            hooks.try_install()
        randomness.seed_tensorflow()
        LegacyImports(roots).install()
    elif (seed is not None or aligner is not None) and _tensorflow_installed():
        # Seeded: TensorFlow is loaded first, as in the legacy run, so that what its
        # import draws from Python's random (rich, under Keras) happens before the seed.
        # Aligned: the random ops are replaced before the script can hold them.
        import tensorflow  # noqa: F401
        if aligner is not None:
            aligner.install()
        if capture is not None:
            hooks.try_install()
        randomness.seed_tensorflow()
    elif capture is not None:
        hooks.install_lazily()
    if capture is not None or seed is not None:
        randomness.seed_python_and_numpy()
    if capture is not None:
        randomness.install()

    code, globs = execute_script(script, [script, *script_args])

    if capture is not None and code == 0:
        sessions.finish()
        values, skipped = capture_globals(globs, sessions)
        random_ops = dict(watcher.counts)
        random_modes = dict(watcher.modes)
        own = aligner.own_types if aligner is not None else set()
        if legacy:
            for op_type, n in graph_random_ops().items():
                if op_type not in random_ops and op_type not in own:
                    random_ops[op_type] = n
                    random_modes["graph"] = random_modes.get("graph", 0) + n
        align = aligner.record() if aligner is not None and aligner.installed else None
        write_capture(capture, values, skipped, random_ops, legacy,
                      unseeded=randomness.finish(), seed=seed, random_modes=random_modes,
                      align=align)
    try:
        sys.stdout.flush()
    except Exception:
        pass
    return code
