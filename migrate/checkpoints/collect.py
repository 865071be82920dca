"""The variables a migrated TF2 script creates, collected by running it in a child process.

The child runs the script as ``__main__`` (:func:`tapeshift.migrate.legacy.run_legacy.execute_script`,
plain TF2: no run-legacy redirection) inside ``tf.variable_creator_scope``,
which sees every ``tf.Variable`` made, by the script, its Keras layers and its
optimizers alike, eagerly or while a ``tf.function`` is traced. Each one's
``name`` (without ``:0``), shape, dtype and the script line that made it go to
a JSON file the parent reads.

The script need not train to the end: the variables and the optimizers'
slots all exist once every training step has run once. So the child stops the
script when a training step starts for the second time: an optimizer
(``tf.compat.v1.train``, Keras 3, tf-keras, Keras' legacy ``OptimizerV2``)
applied eagerly that has applied before, or a ``tf.function`` whose first call
applied one being called again (``model.fit`` included). A script that trains
one optimizer for many steps before the next one first applies is stopped too
early; ``run_to_end`` (``--run-to-end``) lets it finish.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from typing import Sequence

from tapeshift.migrate.checkpoints import CheckpointError
from tapeshift.migrate.checkpoints.matching import Target
from tapeshift.migrate.legacy.bootstrap import child_source
from tapeshift.migrate.legacy.run_legacy import execute_script

DEFAULT_TIMEOUT = 600.0
STDERR_TAIL_LINES = 20

#: (module, class, methods): the optimizer entry points a training step goes through
OPTIMIZER_METHODS = (
    ("tensorflow.python.training.optimizer", "Optimizer", ("apply_gradients",)),
    ("keras.src.optimizers.base_optimizer", "BaseOptimizer", ("apply", "apply_gradients")),
    ("tf_keras.src.optimizers.optimizer", "Optimizer", ("apply_gradients",)),
    ("tf_keras.src.optimizers.legacy.optimizer_v2", "OptimizerV2", ("apply_gradients",)),
)

# -- the child --------------------------------------------------------------

class StopScript(SystemExit):
    """Raised into the script to stop it (``execute_script`` reads it as exit code 0)."""

    def __init__(self, reason: str):
        super().__init__(0)
        self.reason = reason


class StepWatcher:
    """Stops the script when a training step starts for the second time."""

    def __init__(self, script: str):
        self.script = os.path.realpath(script)
        self.local = threading.local()
        self.applied: dict[int, object] = {}    # optimizers that applied eagerly
        self.steps: dict[int, object] = {}      # tf.functions whose call applied an optimizer
        self.steps_done: set[int] = set()
        self.stopped: str | None = None
        self.patched: set[tuple[str, str]] = set()

    def _state(self):
        if not hasattr(self.local, "stack"):
            self.local.stack, self.local.depth = [], 0
        return self.local

    def stop(self, reason: str):
        self.stopped = reason
        raise StopScript(reason)

    def where(self) -> str | None:
        """``file:line`` of the script's frame that is running now."""
        frame = sys._getframe(1)
        while frame is not None:
            if os.path.realpath(frame.f_code.co_filename) == self.script:
                return f"{os.path.basename(self.script)}:{frame.f_lineno}"
            frame = frame.f_back
        return None

    def install(self, tf) -> None:
        function_class = type(tf.function(lambda: None))
        original_call = function_class.__call__
        watcher = self

        @functools.wraps(original_call)
        def call(fn, *args, **kwargs):
            if id(fn) in watcher.steps_done:
                watcher.stop(f"the training step {getattr(fn, '__name__', 'tf.function')}() "
                             "was called a second time")
            state = watcher._state()
            state.stack.append(fn)
            try:
                return original_call(fn, *args, **kwargs)
            finally:
                state.stack.pop()
                if id(fn) in watcher.steps:
                    watcher.steps_done.add(id(fn))

        function_class.__call__ = call
        self.patch_optimizers()

    def patch_optimizers(self) -> None:
        """Wrap the optimizer classes whose modules are loaded by now (cheap when none is new)."""
        for module_name, class_name, methods in OPTIMIZER_METHODS:
            if (module_name, class_name) in self.patched:
                continue
            module = sys.modules.get(module_name)
            cls = getattr(module, class_name, None) if module is not None else None
            if cls is None:
                continue
            self.patched.add((module_name, class_name))
            for method in methods:
                if method in cls.__dict__:
                    setattr(cls, method, self._wrap(cls.__dict__[method], class_name))

    def _wrap(self, original, class_name: str):
        watcher = self

        @functools.wraps(original)
        def method(optimizer, *args, **kwargs):
            state = watcher._state()
            outermost = state.depth == 0
            if outermost:
                if state.stack:  # tracing a tf.function: it is a training step
                    for fn in state.stack:
                        watcher.steps[id(fn)] = fn
                elif id(optimizer) in watcher.applied:
                    watcher.stop(f"the optimizer {type(optimizer).__name__} applied gradients a second time")
            state.depth += 1
            try:
                return original(optimizer, *args, **kwargs)
            finally:
                state.depth -= 1
                if outermost:
                    watcher.applied[id(optimizer)] = optimizer

        return method


def child_main(argv: list[str]) -> int:
    """``--out FILE [--run-to-end] -- SCRIPT ARGS...``: run SCRIPT, write its variables to FILE."""
    out, run_to_end = None, False
    i = 0
    while i < len(argv) and argv[i] != "--":
        if argv[i] == "--out":
            out = argv[i + 1]
            i += 1
        elif argv[i] == "--run-to-end":
            run_to_end = True
        i += 1
    script, script_args = argv[i + 1], argv[i + 2:]
    import tensorflow as tf

    watcher = StepWatcher(script)
    if not run_to_end:
        watcher.install(tf)
    made: list[dict] = []

    def record(next_creator, **kwargs):
        variable = next_creator(**kwargs)
        shape = variable.shape
        made.append({"name": variable.name, "where": watcher.where(),
                     "shape": shape.as_list() if shape.is_fully_defined() else None,
                     "dtype": variable.dtype.base_dtype.name,
                     "trainable": bool(getattr(variable, "trainable", True))})
        if not run_to_end:
            watcher.patch_optimizers()
        return variable

    with tf.variable_creator_scope(record):
        code, _ = execute_script(script, [script, *script_args])
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"variables": made, "stopped": watcher.stopped, "exit_code": code,
                   "tensorflow": tf.__version__}, f)
    try:
        sys.stdout.flush()
    except Exception:
        pass
    return 0 if watcher.stopped else code


# -- the parent -------------------------------------------------------------

def strip_output_index(name: str) -> str:
    """``scope/w:0`` -> ``scope/w``."""
    base, sep, index = name.rpartition(":")
    return base if sep and index.isdigit() else name


@dataclass
class Collected:
    """What the script made."""
    script: str
    variables: list[dict]
    stopped: str | None
    targets: list[Target] = field(default_factory=list)

    def where(self, name: str) -> list[str]:
        return [v["where"] for v in self.variables
                if strip_output_index(v["name"]) == name and v.get("where")]


def _targets(variables: list[dict]) -> list[Target]:
    by_name: dict[str, list[dict]] = {}
    for v in variables:
        by_name.setdefault(strip_output_index(v["name"]), []).append(v)
    return [Target(name, tuple(vs[0]["shape"]) if vs[0]["shape"] is not None else None,
                   vs[0]["dtype"], len(vs)) for name, vs in by_name.items()]


def _tail(text: str) -> str:
    lines = text.rstrip().splitlines()[-STDERR_TAIL_LINES:]
    return "\n".join("    " + line for line in lines)


def collect_variables(script: str | os.PathLike, args: Sequence[str] = (), *,
                      timeout: float | None = DEFAULT_TIMEOUT, run_to_end: bool = False,
                      cwd: str | os.PathLike | None = None) -> Collected:
    """Run ``script`` (a migrated TF2 program) in a child Python and collect its variables."""
    script = os.fspath(script)
    if not os.path.isfile(script):
        raise CheckpointError(f"{script}: no such script")
    tmp = tempfile.mkdtemp(prefix="tapeshift-collect-")
    out = os.path.join(tmp, "variables.json")
    source = child_source("tapeshift.migrate.checkpoints.collect", "child_main",
                          "sys.exit(child_main(sys.argv[1:]))")
    cmd = [sys.executable, "-c", source, "--out", out,
           *(["--run-to-end"] if run_to_end else []), "--", script, *map(str, args)]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2")}
    try:
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, cwd=cwd, env=env, start_new_session=True)
        except OSError as exc:
            raise CheckpointError(f"{script}: could not be started: {exc}") from None
        try:
            _, err = proc.communicate(timeout=timeout)
        except BaseException as exc:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                proc.kill()
            proc.communicate()
            if isinstance(exc, subprocess.TimeoutExpired):
                raise CheckpointError(
                    f"{script}: did not stop within the {timeout:g} s timeout (killed); it runs "
                    "until a training step starts again (or to its end with --run-to-end): "
                    "give it arguments that make it short, or a longer --timeout") from None
            raise
        stderr = err.decode("utf-8", errors="replace")
        if not os.path.exists(out):
            raise CheckpointError(f"{script}: the child process exited with code {proc.returncode} "
                                  f"without reporting its variables:\n{_tail(stderr)}")
        with open(out, encoding="utf-8") as f:
            data = json.load(f)
    finally:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    if proc.returncode != 0:
        raise CheckpointError(f"{script}: exited with code {data.get('exit_code', proc.returncode)} "
                              f"before its variables could be collected:\n{_tail(stderr)}")
    collected = Collected(script, data["variables"], data.get("stopped"))
    collected.targets = _targets(collected.variables)
    if not collected.targets:
        raise CheckpointError(f"{script}: ran without creating a single tf.Variable "
                              "(is it a migrated TF2 program?)")
    return collected
