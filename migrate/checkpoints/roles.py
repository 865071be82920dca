"""What each entry of a checkpoint is: a model variable, an optimizer's slot or state,
the global step (no TensorFlow here).

TF1 (name-based) checkpoints say nothing about it; the names do. An optimizer
names a slot after the variable it belongs to and itself: ``w/Adam`` and
``w/Adam_1`` (Adam's m and v), ``w/Momentum``, ``w/RMSProp`` and
``w/RMSProp_1``, ``w/Adagrad`` ...; so ``P/S`` (or ``P/S_N``) is taken for a slot
``S`` of ``P`` when ``S`` is one of those names, or when ``P`` is itself in the
checkpoint with the same shape (an optimizer made with ``name="actor_opt"``
makes ``w/actor_opt``). Adam's ``beta1_power`` and ``beta2_power`` are its own
state, ``w/ExponentialMovingAverage`` a moving average, ``global_step`` the
global step.

TF2 (object-based) checkpoints record slots as ``VAR/.OPTIMIZER_SLOT/OPT/SLOT``
(``tf.compat.v1.train`` optimizers and Keras' legacy ones); an object with an
``_iterations`` / ``iterations`` / ``iter`` integer (a Keras optimizer) holds
optimizer state only; ``save_counter`` is ``tf.train.Checkpoint``'s own. The
name rules above then apply to the original names the checkpoint records.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

VARIABLE = "variable"
SLOT = "slot"                # a per-variable optimizer slot (Adam's m and v, momentum...)
OPTIMIZER = "optimizer"      # an optimizer's own state (beta1_power, iterations...)
GLOBAL_STEP = "global-step"
SAVE_COUNTER = "save-counter"
AVERAGE = "average"          # an ExponentialMovingAverage shadow variable
OTHER = "other"              # not a variable's value (an iterator's state, a config)

#: roles that are optimizer state (``--skip-optimizer`` leaves them out)
OPTIMIZER_ROLES = frozenset({SLOT, OPTIMIZER})
#: roles that belong to the model itself (their names differ from model to model)
MODEL_ROLES = frozenset({VARIABLE, AVERAGE})

#: the slot names TF1's optimizers give (tf.compat.v1.train), -> the optimizer
TF1_SLOTS = {
    "Adam": "Adam", "Adam_1": "Adam",
    "Momentum": "Momentum",
    "RMSProp": "RMSProp", "RMSProp_1": "RMSProp", "RMSProp_2": "RMSProp",
    "Adagrad": "Adagrad",
    "AdagradDA": "AdagradDA", "AdagradDA_1": "AdagradDA",
    "Adadelta": "Adadelta", "Adadelta_1": "Adadelta",
    "Ftrl": "Ftrl", "Ftrl_1": "Ftrl",
    "ProximalAdagrad": "ProximalAdagrad",
}
_BETA_POWER = re.compile(r"^beta[12]_power(_\d+)?$")
_NUMBERED = re.compile(r"^(.*?)(_\d+)?$")
MOVING_AVERAGE = "ExponentialMovingAverage"
OBJECT_SLOT = "/.OPTIMIZER_SLOT/"
ATTRIBUTES = "/.ATTRIBUTES/"
VARIABLE_VALUE = "VARIABLE_VALUE"
#: the integer step counters Keras optimizers keep (Keras 3, tf-keras, OptimizerV2)
OPTIMIZER_STEPS = ("_iterations", "iterations", "iter")
INTEGER_DTYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"})


def shape_text(shape) -> str:
    """``(3, 4)``, ``(4,)``, ``()``."""
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


@dataclass
class Entry:
    """One tensor of a checkpoint."""
    key: str                     # as stored (TF1: the variable name; TF2: the checkpoint key)
    shape: tuple[int, ...]
    dtype: str                   # numpy's name (float32, int64, bfloat16), "string" for tf.string
    name: str                    # TF1: the key; TF2: the original name, else the object path
    path: str | None = None      # TF2: the object path (the key without /.ATTRIBUTES/...)
    attribute: str | None = None  # TF2: VARIABLE_VALUE for a variable
    recorded_name: bool = True   # TF2: the checkpoint recorded the original name
    role: str = VARIABLE
    slot_of: str | None = None   # SLOT, AVERAGE: the variable it belongs to
    slot: str | None = None      # SLOT: its name (Adam, Adam_1, momentum, m)
    optimizer: str | None = None  # SLOT, OPTIMIZER: the optimizer (Adam; a TF2 object path)

    @property
    def shape_text(self) -> str:
        return shape_text(self.shape)

    def describe(self) -> str:
        """The role in words, for the text output ("" for a plain variable)."""
        by = ""
        if self.optimizer:
            known = self.optimizer in TF1_SLOTS.values()
            by = f" ({self.optimizer})" if known else f" (optimizer object '{self.optimizer}')"
        if self.role == SLOT:
            return f"slot {self.slot} of {self.slot_of}{by}"
        if self.role == OPTIMIZER:
            return f"optimizer state{by}"
        if self.role == AVERAGE:
            return f"moving average of {self.slot_of}"
        if self.role == GLOBAL_STEP:
            return "global step"
        if self.role == SAVE_COUNTER:
            return "tf.train.Checkpoint's save counter"
        if self.role == OTHER:
            return f"not a variable ({self.attribute})"
        return ""

    def to_dict(self) -> dict:
        out = {"name": self.name, "key": self.key, "shape": list(self.shape), "dtype": self.dtype,
               "role": self.role}
        if self.path is not None:
            out["path"] = self.path
            out["original_name"] = self.name if self.recorded_name else None
        for k in ("slot_of", "slot", "optimizer"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        return out


def _by_names(entries: Iterable[Entry]) -> None:
    """The TF1 name rules, over the entries still taken for plain variables."""
    entries = list(entries)
    shapes: dict[str, set[tuple[int, ...]]] = {}
    for e in entries:
        shapes.setdefault(e.name, set()).add(e.shape)
    for e in entries:
        if e.role != VARIABLE:
            continue
        base, _, last = e.name.rpartition("/")
        if e.shape == () and e.dtype in INTEGER_DTYPES and last == "global_step":
            e.role = GLOBAL_STEP
        elif _BETA_POWER.match(last) and e.shape == ():
            e.role, e.optimizer = OPTIMIZER, "Adam"
        elif base and last == MOVING_AVERAGE and e.shape in shapes.get(base, ()):
            e.role, e.slot_of = AVERAGE, base
        elif base and (last in TF1_SLOTS or e.shape in shapes.get(base, ())):
            optimizer = TF1_SLOTS.get(last) or _NUMBERED.match(last).group(1)
            e.role, e.slot_of, e.slot, e.optimizer = SLOT, base, last, optimizer


def classify_name_based(entries: Iterable[Entry]) -> None:
    """Set the roles of a TF1 checkpoint's entries, from their names."""
    _by_names(entries)


def classify_object_based(entries: Iterable[Entry]) -> None:
    """Set the roles of a TF2 checkpoint's entries, from their object paths, then their names."""
    entries = list(entries)
    steps = {e.path for e in entries
             if e.path and e.shape == () and e.dtype in INTEGER_DTYPES
             and e.path.rpartition("/")[2] in OPTIMIZER_STEPS and e.path.rpartition("/")[0]}
    optimizers = {p.rpartition("/")[0] for p in steps}
    for e in entries:
        path = e.path or e.key
        if e.attribute != VARIABLE_VALUE:
            e.role = OTHER
        elif path == "save_counter":
            e.role = SAVE_COUNTER
        elif OBJECT_SLOT in path:
            variable, rest = path.split(OBJECT_SLOT, 1)
            optimizer, _, slot = rest.rpartition("/")
            e.role, e.slot_of, e.slot, e.optimizer = SLOT, variable, slot, optimizer
        else:
            owner = next((o for o in optimizers if path.startswith(o + "/")), None)
            if owner is not None:
                e.role, e.optimizer = OPTIMIZER, owner
    _by_names(e for e in entries if e.recorded_name)


def split_key(key: str) -> tuple[str, str]:
    """A TF2 checkpoint key -> ``(object path, attribute)``."""
    path, sep, attribute = key.rpartition(ATTRIBUTES)
    return (path, attribute) if sep else (key, "")


def escape_component(name: str) -> str:
    """One object-graph name as it appears in a checkpoint key ('/' -> '.S', '.' -> '..')."""
    return name.replace(".", "..").replace("/", ".S")


def unescape_component(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text[i] == "." and i + 1 < len(text):
            out.append({".": ".", "S": "/"}.get(text[i + 1], "." + text[i + 1]))
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


#: role -> (singular, plural), in the order a summary lists them
_ROLE_WORDS = {
    VARIABLE: ("variable", "variables"),
    SLOT: ("optimizer slot", "optimizer slots"),
    OPTIMIZER: ("optimizer state variable", "optimizer state variables"),
    GLOBAL_STEP: ("global step", "global steps"),
    AVERAGE: ("moving average", "moving averages"),
    SAVE_COUNTER: ("save counter", "save counters"),
    OTHER: ("other entry", "other entries"),
}


def summary(entries: Iterable[Entry]) -> str:
    """``3 variables, 6 optimizer slots, 1 global step``."""
    counts: dict[str, int] = {}
    for e in entries:
        counts[e.role] = counts.get(e.role, 0) + 1
    return ", ".join(f"{counts[r]} {words[counts[r] != 1]}"
                     for r, words in _ROLE_WORDS.items() if counts.get(r))
