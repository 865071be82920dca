"""From a CKPT argument to the files of one checkpoint (no TensorFlow here).

A CKPT argument may be

* a prefix, ``dir/model.ckpt-100``: the checkpoint is ``model.ckpt-100.index``
  plus its data shards ``model.ckpt-100.data-00000-of-00001`` ...;
* a directory: its latest checkpoint, as named by the ``checkpoint`` file that
  ``tf.train.Saver`` and ``tf.train.CheckpointManager`` keep there; an absolute
  path in it (``tf.train.Saver`` writes them) is taken in the directory itself
  when a checkpoint of that name is there, since a copied run folder's file
  still names the original; without that file, the ``*.index`` with the
  highest step number;
* the ``.index`` or a ``.data-*`` file of one: its prefix.

A ``.meta`` file is the graph, not the weights: given one, the prefix beside it
is used if its ``.index`` exists, else that is the error.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from tapeshift.migrate.checkpoints import CheckpointError

STATE_FILE = "checkpoint"
_DATA = re.compile(r"\.data-(\d{5})-of-(\d{5})$")
_STEP = re.compile(r"-(\d+)$")
_STATE_LINE = re.compile(r'^\s*model_checkpoint_path\s*:\s*"((?:[^"\\]|\\.)*)"\s*$', re.M)


@dataclass(frozen=True)
class Located:
    """The files of one checkpoint."""
    prefix: str
    index: str
    data: tuple[str, ...]
    given: str  # the argument as the user wrote it

    @property
    def files(self) -> tuple[str, ...]:
        return (self.index, *self.data)


def step_of(prefix: str) -> int | None:
    """The step number a prefix ends with (``model.ckpt-100`` -> 100), if any."""
    m = _STEP.search(os.path.basename(prefix))
    return int(m.group(1)) if m else None


def _unescape(text: str) -> str:
    """A text-proto string literal's content (C escapes) as text."""
    out = bytearray()
    i = 0
    raw = text.encode("utf-8")
    simple = {ord("n"): b"\n", ord("t"): b"\t", ord("r"): b"\r", ord('"'): b'"',
              ord("'"): b"'", ord("\\"): b"\\"}
    while i < len(raw):
        c = raw[i]
        if c != ord("\\") or i + 1 == len(raw):
            out.append(c)
            i += 1
            continue
        nxt = raw[i + 1]
        m = re.match(rb"[0-7]{1,3}", raw[i + 1:i + 4])
        if m:
            out.append(int(m.group(0), 8) & 0xFF)
            i += 1 + len(m.group(0))
        elif nxt == ord("x") and re.match(rb"[0-9a-fA-F]{2}", raw[i + 2:i + 4]):
            out.append(int(raw[i + 2:i + 4], 16))
            i += 4
        else:
            out += simple.get(nxt, bytes([nxt]))
            i += 2
    return out.decode("utf-8", errors="surrogateescape")


def read_state_file(directory: str) -> str | None:
    """The latest checkpoint prefix a directory's ``checkpoint`` file names, or None."""
    path = os.path.join(directory, STATE_FILE)
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read: {exc.strerror or exc}") from None
    m = _STATE_LINE.search(text)
    if not m:
        raise CheckpointError(f"{path}: not a checkpoint state file (no model_checkpoint_path)")
    named = _unescape(m.group(1))
    if not os.path.isabs(named):
        return os.path.join(directory, named)
    # tf.train.Saver records absolute paths: in a copied run folder they still
    # name the original; the checkpoint of that name in this folder comes first
    here = os.path.join(directory, os.path.basename(named))
    return here if os.path.exists(here + ".index") else named


def _latest_in(directory: str) -> str:
    prefix = read_state_file(directory)
    if prefix is not None:
        return prefix
    indexes = [n[:-len(".index")] for n in os.listdir(directory) if n.endswith(".index")]
    if not indexes:
        raise CheckpointError(f"{directory}: no checkpoint in this directory "
                              f"(no '{STATE_FILE}' file and no *.index file)")
    stepped = [(step_of(n), n) for n in indexes]
    numbered = [(s, n) for s, n in stepped if s is not None]
    if len(indexes) > 1 and len(numbered) < len(indexes):
        raise CheckpointError(f"{directory}: several checkpoints and no '{STATE_FILE}' file to say "
                              f"which is the latest ({', '.join(sorted(indexes))}): give the prefix")
    best = max(numbered)[1] if numbered else indexes[0]
    return os.path.join(directory, best)


def _data_shards(prefix: str) -> tuple[str, ...]:
    directory = os.path.dirname(prefix) or "."
    base = os.path.basename(prefix)
    found: dict[int, str] = {}
    total = None
    for name in os.listdir(directory):
        if not name.startswith(base + ".data-"):
            continue
        m = _DATA.search(name)
        if m and name == base + m.group(0):
            found[int(m.group(1))] = os.path.join(directory, name)
            total = int(m.group(2))
    if total is None:
        raise CheckpointError(f"{prefix}.data-00000-of-00001: missing (the checkpoint's values; "
                              f"only {prefix}.index is there)")
    for shard in range(total):
        if shard not in found:
            raise CheckpointError(f"{prefix}.data-{shard:05d}-of-{total:05d}: missing "
                                  f"(a data shard of the checkpoint {prefix})")
    return tuple(found[i] for i in range(total))


def locate(path: str | os.PathLike) -> Located:
    """The files of the checkpoint ``path`` names; :class:`CheckpointError` if there is none."""
    given = os.fspath(path)
    prefix = given
    if os.path.isdir(given):
        prefix = _latest_in(given)
    elif given.endswith(".index"):
        prefix = given[:-len(".index")]
    elif _DATA.search(given):
        prefix = given[:-len(_DATA.search(given).group(0))]
    elif given.endswith(".meta"):
        prefix = given[:-len(".meta")]
        if os.path.exists(given) and not os.path.exists(prefix + ".index"):
            raise CheckpointError(
                f"{given}: a .meta file holds the TF1 graph, not the weights; the weights would be "
                f"in {prefix}.index and {prefix}.data-*, which do not exist")
    index = prefix + ".index"
    if not os.path.isfile(index):
        if os.path.exists(prefix + ".meta"):
            raise CheckpointError(
                f"{prefix}.meta: only the graph (.meta) of this checkpoint is there; the weights "
                f"({index} and {prefix}.data-*) are missing")
        if os.path.isfile(prefix):
            raise CheckpointError(f"{prefix}: not a checkpoint prefix (a checkpoint is PREFIX.index "
                                  "with PREFIX.data-*; give the prefix, the .index or the directory)")
        if os.path.isdir(given):
            raise CheckpointError(f"{given}: its '{STATE_FILE}' file names {prefix}, "
                                  f"but {index} does not exist")
        raise CheckpointError(f"{given}: no such checkpoint ({index} does not exist)")
    return Located(prefix, index, _data_shards(prefix), given)
