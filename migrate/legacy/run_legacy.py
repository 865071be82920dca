"""``tapeshift run-legacy``: run an unmodified TF1 script on a TF2 installation.

The script runs in a child Python process (so that disabling TF2 behaviour
never leaks into the caller) through :mod:`tapeshift.migrate.legacy.capture`. Inside the
child, the machinery in this module:

* calls ``tf.compat.v1.disable_v2_behavior()`` before the script runs;
* redirects the imports *made by the user's code* (the script and modules
  under its directory, never site-packages, TensorFlow, Keras or tf_slim) so
  that ``import tensorflow as tf`` and ``from tensorflow import ...`` see
  ``tensorflow.compat.v1`` plus a ``contrib`` attribute;
* resolves ``tf.contrib.slim`` / ``tf.contrib.layers`` / ``tf.contrib.framework``
  to ``tf_slim`` and raises an error naming the maintained replacement for
  any other ``tf.contrib`` module;
* resolves ``tf.layers`` (also spelled ``tf.compat.v1.layers``, ``from
  tensorflow.layers import dense``, ``import tensorflow.compat.v1 as tf``) to
  tf-keras' legacy layers when the installed Keras is 3, where
  ``tf.compat.v1.layers`` is gone (:func:`legacy_layers`), and
  ``tf.nn.rnn_cell`` to tf-keras' legacy RNN cells likewise
  (:func:`legacy_rnn_cell`); ``tf.contrib.rnn`` is those cells plus
  ``tf.nn.static_rnn`` and its two siblings, which TF 1.x re-exported there;
* runs the script as ``__main__`` with its own ``sys.argv`` and exit code.

This module imports nothing heavy at module level: the child imports
TensorFlow only when it is about to run the script.

Why not ``TF_USE_LEGACY_KERAS=1`` in the child: it would bring
``tf.compat.v1.layers`` back too, but it also turns the script's ``tf.keras``
into Keras 2 (tf-keras) and passes on to every process the script starts,
while the compat-mode output of ``tapeshift migrate`` (which must run without
an environment variable) keeps ``tf.keras`` as installed; ``tapeshift verify``
compares the two, so they must see the same Keras. It would also fall back
to Keras 3 with a log line only when tf-keras is missing, where this says
``pip install tf-keras``. So only ``tf.layers`` is redirected, to the module
TensorFlow itself would load for it under that variable.
"""

from __future__ import annotations

import argparse
import builtins
import functools
import importlib
import os
import subprocess
import sys
import sysconfig
import types
from pathlib import Path
from typing import Callable, Iterable, Sequence

from tapeshift.migrate.engine.exit_codes import ExitCode, standalone_main
from tapeshift.migrate.legacy.bootstrap import package_root, runner_command
from tapeshift.migrate.rules.layers_compat_table import TF_KERAS_LEGACY_LAYERS
from tapeshift.migrate.rules.rnn_cells_table import (
    CONTRIB_RNN_FUNCTIONS, RNN_CELLS, TF_KERAS_LEGACY_RNN_CELL)
from tapeshift.migrate.engine.contrib_table import CONTRIB_REPLACEMENTS, CONTRIB_TF_SLIM

HELP = ("run an unmodified TF1 script on TensorFlow 2 (tf -> tf.compat.v1, tf.contrib.slim -> "
        "tf_slim, tf.layers and RNN cells -> tf-keras on Keras 3)")

#: the tf.contrib modules run-legacy provides: tf-slim's, and rnn (tf-keras' cells, tf.nn's)
CONTRIB_PROVIDED = (*CONTRIB_TF_SLIM, "rnn")


def contrib_message(name: str, full: str | None = None) -> str:
    """The error message for ``tf.contrib.<name>`` (one that tf_slim does not provide),
    or for ``full``, a name in that module."""
    full = full or f"tf.contrib.{name}"
    replacement = CONTRIB_REPLACEMENTS.get(name)
    if replacement is None:
        advice = "tapeshift knows no maintained replacement for it"
    elif replacement.startswith("no maintained replacement"):
        advice = replacement
    else:
        advice = f"use {replacement} instead"
    provided = ", ".join(f"tf.contrib.{n}" for n in CONTRIB_TF_SLIM)
    return (
        f"{full} does not exist in TensorFlow 2 (tf.contrib was removed): {advice}. "
        f"run-legacy provides only {provided} (from tf_slim) and tf.contrib.rnn's core cells "
        f"and static_rnn functions."
    )


class _ContribRemoved:
    """Mixin carrying which ``tf.contrib`` module was asked for."""

    def __init__(self, name: str, full: str | None = None):
        super().__init__(contrib_message(name, full))
        self.module = f"tf.contrib.{name}"
        self.replacement = CONTRIB_REPLACEMENTS.get(name)


class ContribModuleError(_ContribRemoved, ModuleNotFoundError):
    """``import tensorflow.contrib.X`` for a removed contrib module."""


class ContribAttributeError(_ContribRemoved, AttributeError):
    """``tf.contrib.X`` for a removed contrib module."""


def _import_slim(target: str, name: str) -> types.ModuleType:
    try:
        module = importlib.import_module(target)
    except ModuleNotFoundError as exc:
        if exc.name != "tf_slim":
            raise
        raise ModuleNotFoundError(
            f"tf.contrib.{name} is provided by the tf-slim package, which is not installed: "
            "pip install tf-slim (or pip install 'tapeshift[tf]')", name="tf_slim") from None
    # tf-slim 1.1.0's batch_norm does not run on current TensorFlow as shipped
    from tapeshift.compat.slim import install_tf_slim_fixes

    install_tf_slim_fixes()
    return module


class LegacyContrib(types.ModuleType):
    """What the legacy script sees as ``tf.contrib``."""

    def __init__(self) -> None:
        super().__init__("tensorflow.contrib", "tf.contrib, provided by tapeshift run-legacy")

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if name == "rnn":
            value = self.__dict__["rnn"] = LegacyContribRnn()
            return value
        target = CONTRIB_TF_SLIM.get(name)
        if target is None:
            raise ContribAttributeError(name)
        return _import_slim(target, name)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(CONTRIB_PROVIDED))


class LegacyLayersError(ModuleNotFoundError):
    """``tf.layers`` (or ``tf.nn.rnn_cell``) on Keras 3 without the tf-keras package."""


def _from_tf_keras(native: types.ModuleType | None, probe: str, target: str, module: str,
                   v1: types.ModuleType) -> types.ModuleType:
    """TensorFlow's own lazily loaded Keras module ``native`` (``tf.compat.v1.<module>``)
    where it works (Keras 2, or ``TF_USE_LEGACY_KERAS`` set), else ``target``, the
    module TensorFlow routes it to with tf-keras: the same classes. ``probe`` is a
    name ``native`` must give."""
    label = f"tf.{module}"
    if native is not None:
        try:
            getattr(native, probe)  # with Keras 3: "`<probe>` is not available with Keras 3."
            return native
        except (AttributeError, ImportError) as exc:
            reason = str(exc)
    else:
        reason = f"tf.compat.v1 has no {module}"
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        if exc.name is None or not target.startswith(exc.name):
            raise
        version = ".".join(str(getattr(v1, "__version__", "")).split(".")[:2])
        raise LegacyLayersError(
            f"{label} needs the tf-keras package, which is not installed: with Keras 3, "
            f"TensorFlow's tf.compat.v1.{module} is gone ({reason}). "
            f"pip install tf-keras{'~=' + version + '.0' if version else ''} "
            "(or pip install 'tapeshift[tf]')", name="tf_keras") from None


def legacy_layers(v1: types.ModuleType) -> types.ModuleType:
    """What the legacy script sees as ``tf.layers``: TensorFlow's own
    ``tf.compat.v1.layers`` where it works, else tf-keras' legacy layers."""
    return _from_tf_keras(getattr(v1, "layers", None), "Layer", TF_KERAS_LEGACY_LAYERS,
                          "layers", v1)


def legacy_rnn_cell(v1: types.ModuleType) -> types.ModuleType:
    """What the legacy script sees as ``tf.nn.rnn_cell``: TensorFlow's own where it
    works, else tf-keras' legacy RNN cells."""
    return _from_tf_keras(getattr(v1.nn, "rnn_cell", None), "RNNCell",
                          TF_KERAS_LEGACY_RNN_CELL, "nn.rnn_cell", v1)


class LegacyNN(types.ModuleType):
    """What the legacy script sees as ``tf.nn``: ``tf.compat.v1.nn`` with ``rnn_cell``
    that works on Keras 3."""

    def __init__(self, v1: types.ModuleType) -> None:
        super().__init__("tensorflow.nn", v1.nn.__doc__)
        self.__dict__["_v1"] = v1

    def __getattr__(self, name: str):
        v1 = self.__dict__["_v1"]
        if name == "rnn_cell":
            value = self.__dict__["rnn_cell"] = legacy_rnn_cell(v1)
            return value
        return getattr(v1.nn, name)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(self.__dict__["_v1"].nn)) | {"rnn_cell"})


class LegacyContribRnn(types.ModuleType):
    """What the legacy script sees as ``tf.contrib.rnn``: TF 1.x's core cells (from
    :func:`legacy_rnn_cell`) and ``static_rnn``, ``static_bidirectional_rnn``,
    ``static_state_saving_rnn`` (``tf.compat.v1.nn``'s), which it re-exported."""

    def __init__(self) -> None:
        super().__init__("tensorflow.contrib.rnn", "tf.contrib.rnn's core cells and functions, "
                         "provided by tapeshift run-legacy")

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        import tensorflow.compat.v1 as v1

        if name in RNN_CELLS:
            return getattr(legacy_rnn_cell(v1), name)
        if name in CONTRIB_RNN_FUNCTIONS:
            return getattr(v1.nn, name)
        raise ContribAttributeError("rnn", f"tf.contrib.rnn.{name}")

    def __dir__(self) -> list[str]:
        return sorted(RNN_CELLS | CONTRIB_RNN_FUNCTIONS)


class LegacyCompat(types.ModuleType):
    """What the legacy script sees as ``tf.compat``: ``v1`` is the legacy ``tf`` itself."""

    def __init__(self, tf: "LegacyTensorFlow", compat: types.ModuleType) -> None:
        super().__init__("tensorflow.compat", compat.__doc__)
        self.__dict__["_compat"] = compat
        self.__dict__["v1"] = tf

    def __getattr__(self, name: str):
        return getattr(self.__dict__["_compat"], name)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(self.__dict__["_compat"])) | {"v1"})


class LegacyTensorFlow(types.ModuleType):
    """What the legacy script sees as ``tf``: ``tensorflow.compat.v1`` plus
    ``contrib``, with ``layers`` that work on Keras 3 and ``compat.v1`` that is itself."""

    def __init__(self, v1: types.ModuleType) -> None:
        super().__init__("tensorflow", v1.__doc__)
        self.__dict__["_v1"] = v1
        self.__dict__["contrib"] = LegacyContrib()

    def __getattr__(self, name: str):
        v1 = self.__dict__["_v1"]
        if name == "__all__" and not hasattr(v1, "__all__"):  # from tensorflow import *
            return [n for n in dir(v1) if not n.startswith("_")]
        if name == "layers":
            value = self.__dict__["layers"] = legacy_layers(v1)
            return value
        if name == "nn":
            value = self.__dict__["nn"] = LegacyNN(v1)
            return value
        if name == "compat" and hasattr(v1, "compat"):
            value = self.__dict__["compat"] = LegacyCompat(self, v1.compat)
            return value
        return getattr(v1, name)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(self.__dict__["_v1"])) | {"contrib"})

    def __repr__(self) -> str:
        return "<module 'tensorflow' (tensorflow.compat.v1 via tapeshift run-legacy)>"


def _excluded_dirs() -> list[str]:
    """Directories whose modules always get the real ``tensorflow``."""
    dirs = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            dirs.add(os.path.realpath(sysconfig.get_paths()[key]))
        except KeyError:
            pass
    # tapeshift's own packages: migrate/ (this file is in migrate/legacy/) and
    # compat/ beside it, in a checkout and installed alike
    migrate_dir = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    dirs.add(migrate_dir)
    dirs.add(os.path.join(os.path.dirname(migrate_dir), "compat"))
    return sorted(dirs)


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


#: the module names that mean ``tf.layers`` to a TF1 script
_LAYERS_MODULES = ("tensorflow.layers", "tensorflow.compat.v1.layers")


def _redirected(name: str) -> bool:
    """``import NAME`` by user code goes to the legacy ``tf`` (``name`` starts with tensorflow)."""
    return (name in ("tensorflow", "tensorflow.compat", "tensorflow.compat.v1")
            or name.startswith("tensorflow.contrib")
            or any(name == m or name.startswith(m + ".") for m in _LAYERS_MODULES))


class LegacyImports:
    """A ``builtins.__import__`` wrapper that redirects TensorFlow imports of user code.

    Only ``import tensorflow`` / ``from tensorflow import ...``,
    ``tensorflow.compat[.v1]``, ``tensorflow[.compat.v1].layers...`` and
    ``tensorflow.contrib...`` made by modules whose file lies under one of
    ``roots`` (and not in site-packages, the standard library or tapeshift
    itself) are redirected; every other import, including TensorFlow's own,
    Keras' and tf_slim's, goes through unchanged. ``sys.modules`` is never
    touched.
    """

    def __init__(self, roots: Iterable[str | os.PathLike], tf_module: types.ModuleType | None = None):
        self.roots = [os.path.realpath(os.fspath(r)) for r in roots]
        self._excluded = _excluded_dirs()
        self._tf = tf_module
        self._cache: dict[str, bool] = {}
        self._original: Callable | None = None

    @property
    def tf(self) -> types.ModuleType:
        if self._tf is None:
            import tensorflow.compat.v1 as v1

            self._tf = LegacyTensorFlow(v1)
        return self._tf

    def is_user_file(self, filename: str | None) -> bool:
        if not filename or not isinstance(filename, str):
            return False
        known = self._cache.get(filename)
        if known is None:
            real = os.path.realpath(filename)
            parts = real.split(os.sep)
            if "site-packages" in parts or "dist-packages" in parts:
                known = False
            elif any(_under(real, d) for d in self._excluded):
                known = False
            else:
                known = any(_under(real, r) for r in self.roots)
            self._cache[filename] = known
        return known

    def is_user_globals(self, globals_: dict | None) -> bool:
        return bool(globals_) and self.is_user_file(globals_.get("__file__"))

    # -- the hook -----------------------------------------------------------
    def install(self) -> "LegacyImports":
        if self._original is None:
            self._original = builtins.__import__
            builtins.__import__ = self
        return self

    def uninstall(self) -> None:
        if self._original is not None and builtins.__import__ is self:
            builtins.__import__ = self._original
        self._original = None

    def __enter__(self) -> "LegacyImports":
        return self.install()

    def __exit__(self, *exc) -> None:
        self.uninstall()

    def __call__(self, name, globals=None, locals=None, fromlist=(), level=0):
        original = self._original or importlib.__import__
        if level == 0 and name.startswith("tensorflow") and _redirected(name):
            g = globals if globals is not None else sys._getframe(1).f_globals
            if self.is_user_globals(g):
                return self.redirect(name, fromlist, original)
        return original(name, globals, locals, fromlist, level)

    def redirect(self, name: str, fromlist, original: Callable):
        """Resolve ``tensorflow`` / ``tensorflow.contrib...`` for user code."""
        tf = self.tf
        parts = name.split(".")
        if parts == ["tensorflow"]:
            return tf
        if name in ("tensorflow.compat", "tensorflow.compat.v1"):
            return tf.compat if fromlist and name == "tensorflow.compat" else tf
        for layers in _LAYERS_MODULES:
            if name == layers or name.startswith(layers + "."):
                module = tf.layers
                for part in name[len(layers) + 1:].split(".") if name != layers else ():
                    module = getattr(module, part, None)
                    if not isinstance(module, types.ModuleType):
                        raise ModuleNotFoundError(f"No module named {name!r} (tf.layers is "
                                                  f"{tf.layers.__name__})", name=name)
                return module if fromlist else tf
        if parts[1] != "contrib":  # e.g. tensorflow.contribute: not ours
            return original(name, None, None, fromlist, 0)
        if len(parts) == 2:  # tensorflow.contrib
            if fromlist:
                for item in fromlist:
                    if item != "*" and item not in CONTRIB_PROVIDED and not item.startswith("_"):
                        raise ContribModuleError(item)
                return tf.contrib
            return tf
        sub = parts[2]
        if sub == "rnn":  # tensorflow.contrib.rnn: cells and functions, no submodules
            if len(parts) > 3:
                raise ContribModuleError("rnn", name)
            return tf.contrib.rnn if fromlist else tf
        target = CONTRIB_TF_SLIM.get(sub)
        if target is None:
            raise ContribModuleError(sub)
        _import_slim(target, sub)
        real_name = ".".join([target, *parts[3:]])
        if fromlist:
            return original(real_name, None, None, fromlist, 0)
        importlib.import_module(real_name)
        return tf


def enable_legacy_behavior(resource_variables: bool = False,
                           no_graph_rewrites: bool = False) -> None:
    """``tf.compat.v1.disable_v2_behavior()``, without TF's deprecation chatter;
    ``resource_variables``: then TF1's own ``tf.enable_resource_variables()``
    (variables read as values, as TF2's are: see ``--resource-variables``);
    ``no_graph_rewrites``: every session runs its graph without Grappler
    (:func:`disable_graph_rewrites`, ``--no-graph-rewrites``)."""
    import tensorflow as real_tf

    logger = real_tf.get_logger()
    level = logger.level
    logger.setLevel("ERROR")
    try:
        real_tf.compat.v1.disable_v2_behavior()
        if resource_variables:
            real_tf.compat.v1.enable_resource_variables()
    finally:
        logger.setLevel(level)
    if no_graph_rewrites:
        disable_graph_rewrites()


def disable_graph_rewrites() -> None:
    """Turn Grappler, TensorFlow's graph optimizer, off for every session of this process.

    ``tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})``
    reaches the sessions made without a ``config``, which take the eager
    context's ConfigProto. A session given a ConfigProto ignores the context's:
    ``tf.Session(config=tf.ConfigProto(...))``, and ``tf.InteractiveSession()``,
    which makes one of its own when given none. So ``BaseSession.__init__``, under
    every session class, runs such a session with a copy of its config whose
    ``graph_options.rewrite_options.disable_meta_optimizer`` is set, whatever the
    script set there. The session then runs the graph's ops as written; what is
    not Grappler still runs (the classic passes of ``OptimizerOptions``, oneDNN's
    graph rewrite: ``TF_ENABLE_ONEDNN_OPTS``).
    """
    import tensorflow as real_tf
    from tensorflow.core.protobuf import config_pb2
    from tensorflow.python.client import session as session_lib

    real_tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
    base = session_lib.BaseSession
    original_init = base.__init__
    if getattr(original_init, "_tapeshift_no_graph_rewrites", False):
        return

    @functools.wraps(original_init)
    def __init__(sess, target="", graph=None, config=None):
        if isinstance(config, config_pb2.ConfigProto):
            given, config = config, config_pb2.ConfigProto()
            config.CopyFrom(given)
            config.graph_options.rewrite_options.disable_meta_optimizer = True
        original_init(sess, target, graph, config)

    setattr(__init__, "_tapeshift_no_graph_rewrites", True)
    base.__init__ = __init__


# -- running a script as __main__ ------------------------------------------

def _exit_code(code) -> int:
    """The process exit code Python gives for ``SystemExit(code)``."""
    if code is None:
        return 0
    if isinstance(code, bool):
        return int(code)
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _print_script_traceback(exc: BaseException, script: str) -> None:
    """Print the traceback as Python would, starting at the script's frame."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != script:
        tb = tb.tb_next
    if tb is None:
        tb = exc.__traceback__
    sys.excepthook(type(exc), exc.with_traceback(tb), tb)


def execute_script(script: str | os.PathLike, argv: Sequence[str] | None = None) -> tuple[int, dict]:
    """Run ``script`` as ``__main__`` in this process; return ``(exit_code, globals)``.

    ``sys.argv`` becomes ``argv`` (default ``[script]``) and the script's
    directory goes first on ``sys.path``. ``SystemExit`` gives its code; an
    uncaught exception prints its traceback and gives 1, as Python does. The
    module globals are returned even when the script called ``sys.exit``.
    """
    given = os.fspath(script)
    path = os.path.abspath(given)
    with open(path, "rb") as f:
        source = f.read()
    module = types.ModuleType("__main__")
    module.__dict__.update(
        __file__=path, __cached__=None, __loader__=None, __spec__=None,
        __package__=None, __builtins__=builtins,
    )
    sys.argv = list(argv) if argv is not None else [given]
    script_dir = os.path.dirname(os.path.realpath(path))
    if sys.path and sys.path[0] in ("", os.getcwd()):
        sys.path[0] = script_dir
    elif not sys.path or sys.path[0] != script_dir:
        sys.path.insert(0, script_dir)
    sys.modules["__main__"] = module
    try:
        code = compile(source, path, "exec", dont_inherit=True)
        exec(code, module.__dict__)
    except SystemExit as exc:
        return _exit_code(exc.code), module.__dict__
    except BaseException as exc:  # noqa: B902 - mirror the interpreter
        _print_script_traceback(exc, path)
        return 1, module.__dict__
    finally:
        try:
            sys.stdout.flush()
        except Exception:
            pass
    return 0, module.__dict__


# -- the child process (its command line: bootstrap.runner_command) -----------

def _signal_exit(code: int) -> int:
    return 128 - code if code < 0 else code


def run_legacy(script: str | os.PathLike, script_args: Sequence[str] = (),
               *, user_paths: Sequence[str | os.PathLike] = (),
               resource_variables: bool = False, no_graph_rewrites: bool = False) -> int:
    """Run ``script`` under run-legacy with inherited stdin/stdout/stderr; return its exit code."""
    proc = subprocess.Popen(runner_command(script, script_args, legacy=True, user_paths=user_paths,
                                           resource_variables=resource_variables,
                                           no_graph_rewrites=no_graph_rewrites))
    while True:
        try:
            return _signal_exit(proc.wait())
        except KeyboardInterrupt:  # the child got SIGINT too; let it finish
            continue


# -- the subcommand ---------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "The script runs unmodified: `import tensorflow as tf` gives tensorflow.compat.v1 with\n"
        "TF2 behaviour disabled; tf.contrib.slim, tf.contrib.layers and tf.contrib.framework\n"
        "come from tf_slim, tf.contrib.rnn's core cells from tf-keras; any other tf.contrib\n"
        "module raises an error naming its replacement. With Keras 3, tf.layers\n"
        "(tf.compat.v1.layers) and tf.nn.rnn_cell come from tf-keras' legacy modules, those\n"
        "TF_USE_LEGACY_KERAS=1 would give (tf.keras is left as installed). Only imports\n"
        "made by the script and modules under its directory (and any --user-path) are\n"
        "redirected. Arguments, stdout, stderr and the exit code pass through; options for\n"
        "tapeshift go before SCRIPT."
    )
    parser.add_argument(
        "--user-path", action="append", default=[], metavar="DIR",
        help="also redirect TensorFlow imports of modules under DIR (repeatable)",
    )
    parser.add_argument(
        "--resource-variables", action="store_true",
        help="make the script's variables resource variables (TF1's "
             "tf.enable_resource_variables(), TF2's kind): a graph reads a variable once, as "
             "a value, so an update fetched in the same run cannot change what a gradient "
             "reads (the ref variables TF1 defaults to can race there)",
    )
    parser.add_argument(
        "--no-graph-rewrites", action="store_true",
        help="run every session's graph with Grappler, TensorFlow's graph optimizer, off "
             "(its meta optimizer, also in a session given its own ConfigProto): the ops run "
             "as written, as eager TF2 runs them, with no rewrite that rounds float32 "
             "otherwise (MatMul + BiasAdd fused, constants folded)",
    )
    parser.add_argument("script", metavar="SCRIPT", help="the TF1 script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS",
                        help="arguments passed to the script")


def run(args: argparse.Namespace) -> int:
    script = Path(args.script)
    if not script.is_file():
        print(f"tapeshift run-legacy: no such script: {script}", file=sys.stderr)
        return ExitCode.ERROR
    return run_legacy(script, args.args, user_paths=args.user_path,
                      resource_variables=args.resource_variables,
                      no_graph_rewrites=args.no_graph_rewrites)


def main(argv: Sequence[str] | None = None) -> int:
    """``tapeshift run-legacy ARGS``: the command line's own parsing and exit codes."""
    return standalone_main("run-legacy", HELP, add_arguments, run, argv)


__all__ = [
    "CONTRIB_REPLACEMENTS", "CONTRIB_TF_SLIM", "ContribAttributeError", "ContribModuleError",
    "LegacyCompat", "LegacyImports", "LegacyLayersError", "LegacyTensorFlow", "contrib_message",
    "disable_graph_rewrites", "enable_legacy_behavior", "execute_script", "legacy_layers", "legacy_rnn_cell", "package_root",
    "run_legacy", "runner_command",
]
