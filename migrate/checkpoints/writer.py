"""Write an object-based checkpoint, atomically.

The output is a directory ``OUT`` holding

``ckpt-N.index``, ``ckpt-N.data-00000-of-00001``
    ``tf.train.Checkpoint(variables={name: tf.Variable})`` written with
    ``Checkpoint.write``: each value under the object path ``variables/<name>``
    (``/`` escaped as ``.S`` in the key), each variable created with
    ``name=<name>`` so the checkpoint records it as the original name, and
    the Checkpoint's ``save_counter`` (0), which a restoring
    ``tf.train.Checkpoint`` creates itself and would otherwise report as
    unmatched. ``N`` is the source's global step (0 if it has none).
``checkpoint``
    the state file naming ``ckpt-N`` by a relative path, so that
    ``tf.train.latest_checkpoint(OUT)`` finds it wherever OUT is moved.

Everything is written into a temporary directory beside ``OUT``, read back
and compared, and only then renamed to ``OUT``: on any failure nothing is
left behind. ``OUT`` must not exist, or be an empty directory.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Mapping

from tapeshift.migrate.checkpoints import VARIABLES, CheckpointError
from tapeshift.migrate.checkpoints.locate import STATE_FILE
from tapeshift.migrate.checkpoints.reader import import_tensorflow, tf_reason
from tapeshift.migrate.checkpoints.roles import VARIABLE_VALUE, escape_component
from tapeshift.migrate.fileio.files import deferred_interrupts

PREFIX = "ckpt"


def check_destination(out: str | os.PathLike) -> str:
    """``out`` as a path that may be written; :class:`CheckpointError` if it may not."""
    out = os.path.abspath(os.fspath(out))
    if os.path.lexists(out) and not (os.path.isdir(out) and not os.listdir(out)):
        raise CheckpointError(f"{out}: already exists and is not an empty directory "
                              "(nothing was written; choose a new OUT or remove it)")
    parent = os.path.dirname(out)
    if not os.path.isdir(parent):
        raise CheckpointError(f"{parent}: no such directory (the parent of OUT)")
    return out


def checkpoint_key(name: str) -> str:
    """The key ``name`` has in a converted checkpoint."""
    return f"{VARIABLES}/{escape_component(name)}/.ATTRIBUTES/{VARIABLE_VALUE}"


def _state_text(prefix_name: str) -> str:
    quoted = prefix_name.replace("\\", "\\\\").replace('"', '\\"')
    return f'model_checkpoint_path: "{quoted}"\nall_model_checkpoint_paths: "{quoted}"\n'


def write_converted(values: Mapping[str, object], out: str | os.PathLike, step: int | None) -> str:
    """Write ``{name: ndarray}`` as a converted checkpoint at ``out``; return its prefix."""
    import numpy as np

    out = check_destination(out)
    tf = import_tensorflow()
    if not tf.executing_eagerly():
        raise CheckpointError("writing the checkpoint needs eager execution, which this process "
                              "has turned off (tf.compat.v1.disable_eager_execution)")
    name = f"{PREFIX}-{int(step or 0)}"
    parent = os.path.dirname(out)
    logger = tf.get_logger()
    level = logger.level
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(out)}.", suffix=".tmp", dir=parent)
    try:
        logger.setLevel("ERROR")
        try:
            variables = {key: tf.Variable(np.asarray(value), name=key, trainable=False)
                         for key, value in values.items()}
            ckpt = tf.train.Checkpoint(**{VARIABLES: variables})
            ckpt.save_counter  # noqa: B018 - created now, so that it is written
            written = ckpt.write(os.path.join(tmp, name))
        except Exception as exc:
            raise CheckpointError(f"{out}: the checkpoint could not be written: {tf_reason(exc)}") from None
        finally:
            logger.setLevel(level)
        with open(os.path.join(tmp, STATE_FILE), "w", encoding="utf-8") as f:
            f.write(_state_text(name))
        _read_back(tf, written, values)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp made it 0o700
        with deferred_interrupts():
            if os.path.isdir(out):
                os.rmdir(out)  # empty (check_destination)
            os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return os.path.join(out, name)


def _read_back(tf, prefix: str, values: Mapping[str, object]) -> None:
    """The written checkpoint holds every value, bit for bit."""
    import numpy as np

    reader = tf.train.load_checkpoint(prefix)
    for key, value in values.items():
        got = np.asarray(reader.get_tensor(checkpoint_key(key)))
        want = np.asarray(value)
        same = got.shape == want.shape and (
            got.tobytes() == want.tobytes() if want.dtype.kind not in "OSU" else
            bool(np.array_equal(got.astype(object), want.astype(object))))
        if not same:
            raise CheckpointError(f"{prefix}: {key!r} reads back different from what was written")
