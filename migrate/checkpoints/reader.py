"""A checkpoint's entries (names, shapes, dtypes, roles, original names) and values.

``open_checkpoint(CKPT)`` reads the index only; values are read on demand
(``read``), or all at once by ``verify``, which is how a truncated or
corrupted ``.data`` file shows (TensorFlow checks each tensor's length and
checksum as it reads it). Every failure is a :class:`CheckpointError` naming
the file and, when one is concerned, the variable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from tapeshift.migrate.checkpoints import CheckpointError
from tapeshift.migrate.checkpoints.locate import Located, locate, step_of
from tapeshift.migrate.checkpoints.roles import (
    GLOBAL_STEP,
    OPTIMIZER,
    OPTIMIZER_STEPS,
    Entry,
    classify_name_based,
    classify_object_based,
    split_key,
    unescape_component,
)

NAME_BASED = "name-based"      # tf.train.Saver (TF1), tf.compat.v1.train.Saver
OBJECT_BASED = "object-based"  # tf.train.Checkpoint (TF2)
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"


def import_tensorflow():
    """TensorFlow, or a :class:`CheckpointError` that says how to install it."""
    try:
        import tensorflow as tf
    except ImportError as exc:
        raise CheckpointError(f"reading checkpoints needs TensorFlow, which is not installed ({exc}); "
                              "install it with: pip install 'tapeshift[tf]'") from None
    return tf


def tf_reason(exc: BaseException) -> str:
    """TensorFlow's message, on one line and short."""
    text = " ".join(str(getattr(exc, "message", None) or exc).split())
    return text if len(text) <= 240 else text[:237] + "..."


@dataclass
class CheckpointInfo:
    """One checkpoint: where it is, its format, its entries and its global step."""
    located: Located
    format: str
    entries: list[Entry]
    global_step: int | None = None
    global_step_from: str | None = None  # "variable global_step", "the file name"...
    reader: Any = field(default=None, repr=False)

    @property
    def prefix(self) -> str:
        return self.located.prefix

    def data_files_text(self) -> str:
        data = self.located.data
        return data[0] if len(data) == 1 else f"{self.prefix}.data-*"

    def read(self, entry: Entry):
        """The value of ``entry`` as a numpy array; :class:`CheckpointError` naming the file."""
        import numpy as np

        try:
            return np.asarray(self.reader.get_tensor(entry.key))
        except Exception as exc:  # DataLossError, IndexError ("Read less bytes than requested")
            raise CheckpointError(
                f"{self.data_files_text()}: variable {entry.key!r} cannot be read "
                f"(truncated or corrupted?): {tf_reason(exc)}") from None

    def verify(self) -> None:
        """Read every value once (a truncated or corrupted data file raises here)."""
        for e in self.entries:
            self.read(e)

    def to_dict(self) -> dict:
        return {"checkpoint": self.prefix, "format": self.format,
                "files": list(self.located.files),
                "global_step": self.global_step, "global_step_from": self.global_step_from,
                "variables": [e.to_dict() for e in self.entries]}


def _object_graph_names(reader, located: Located) -> dict[str, str]:
    """checkpoint key -> the original name the object graph records for it."""
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    try:
        graph = trackable_object_graph_pb2.TrackableObjectGraph()
        graph.ParseFromString(reader.get_tensor(OBJECT_GRAPH_KEY))
    except Exception as exc:
        raise CheckpointError(f"{located.data[0] if located.data else located.index}: the object "
                              f"graph of this object-based checkpoint cannot be read: "
                              f"{tf_reason(exc)}") from None
    return {a.checkpoint_key: a.full_name for n in graph.nodes for a in n.attributes if a.full_name}


def _global_step(info: CheckpointInfo) -> None:
    import numpy as np

    for e in info.entries:
        if e.role == GLOBAL_STEP:
            info.global_step = int(np.asarray(info.read(e)).reshape(()))
            info.global_step_from = f"variable {e.name}"
            return
    counters = [e for e in info.entries if e.role == OPTIMIZER and e.path
                and e.path.rpartition("/")[2] in OPTIMIZER_STEPS]
    if len(counters) == 1:
        info.global_step = int(np.asarray(info.read(counters[0])).reshape(()))
        info.global_step_from = f"optimizer step {counters[0].path}"
        return
    step = step_of(info.prefix)
    if step is not None:
        info.global_step, info.global_step_from = step, "the file name"


def open_checkpoint(path: str | os.PathLike) -> CheckpointInfo:
    """Locate and open the checkpoint ``path`` names (see :mod:`.locate`) and classify its entries."""
    located = locate(path)
    tf = import_tensorflow()
    try:
        reader = tf.train.load_checkpoint(located.prefix)
        shapes = reader.get_variable_to_shape_map()
        dtypes = reader.get_variable_to_dtype_map()
    except Exception as exc:  # DataLossError, OpError: a truncated or foreign index
        raise CheckpointError(f"{located.index}: not a readable checkpoint index (truncated or "
                              f"corrupted?): {tf_reason(exc)}") from None
    entries: list[Entry] = []
    if OBJECT_GRAPH_KEY in shapes:
        fmt = OBJECT_BASED
        names = _object_graph_names(reader, located)
        for key in sorted(shapes):
            if key == OBJECT_GRAPH_KEY:
                continue
            obj_path, attribute = split_key(key)
            original = names.get(key)
            entries.append(Entry(key, tuple(shapes[key]), dtypes[key].name, original or obj_path,
                                 path=obj_path, attribute=attribute, recorded_name=original is not None))
        entries.sort(key=lambda e: [unescape_component(c) for c in (e.path or e.key).split("/")])
        classify_object_based(entries)
    else:
        fmt = NAME_BASED
        entries = [Entry(key, tuple(shapes[key]), dtypes[key].name, key) for key in sorted(shapes)]
        classify_name_based(entries)
    info = CheckpointInfo(located, fmt, entries, reader=reader)
    _global_step(info)
    return info
