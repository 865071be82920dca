"""Which old variable becomes which new one (no TensorFlow here).

A map file (``--map``) is JSON or TOML, a flat table ``old name -> new name``::

    {"Actor/eval/l1/kernel": "actor/l1/kernel",   # one variable
     "Critic/eval/": "critic/",                   # every variable under a scope
     "Actor/target/": ""}                         # dropped ("" or JSON null)

    # the same in TOML (quote the keys: they hold '/' and '.')
    "Actor/eval/l1/kernel" = "actor/l1/kernel"

Old names are the checkpoint's names (a TF2 checkpoint's original names);
new names are the keys of the output checkpoint's ``variables`` dictionary,
which the restore recipe fills with the migrated program's variables by name
(docs/checkpoints.md). A key ending in ``/`` renames a scope; the longest one
that applies wins and an exact key beats them all. An optimizer slot follows
its variable: renaming ``w`` to ``v`` makes ``w/Adam`` ``v/Adam``.

With ``--map`` alone the map is the whole list of what goes into the output:
a checkpoint variable it does not cover is *unmatched*, a key it names that
the checkpoint does not have is *missing*. With ``--script`` the targets are
the variables the script creates; a map given as well only renames, and a
variable it does not cover keeps its name.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from tapeshift.migrate.checkpoints import CheckpointError
from tapeshift.migrate.checkpoints.roles import (
    OPTIMIZER_ROLES,
    OTHER,
    SAVE_COUNTER,
    SLOT,
    AVERAGE,
    Entry,
    classify_name_based,
    shape_text,
)

_UNCOVERED = object()


@dataclass
class MapRules:
    """A parsed map file."""
    source: str
    exact: dict[str, str | None] = field(default_factory=dict)
    prefixes: dict[str, str | None] = field(default_factory=dict)  # "scope/" -> "new/" or None

    def lookup(self, name: str):
        """The new name, None (dropped) or ``_UNCOVERED``; and the rule that applied."""
        if name in self.exact:
            return self.exact[name], name
        best = max((p for p in self.prefixes if name.startswith(p)), key=len, default=None)
        if best is None:
            return _UNCOVERED, None
        new = self.prefixes[best]
        return (None if new is None else new + name[len(best):]), best

    @property
    def targets_named(self) -> list[str]:
        return [v for v in self.exact.values() if v is not None]


def _read_table(path: str) -> dict:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read the map: {exc.strerror or exc}") from None
    if path.endswith(".toml"):
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10
            try:
                import tomli as tomllib  # type: ignore[no-redef]
            except ModuleNotFoundError:
                raise CheckpointError(f"{path}: a TOML map needs Python 3.11 or the tomli package "
                                      "(pip install tomli); or write it as JSON") from None
        try:
            return tomllib.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise CheckpointError(f"{path}: not a valid TOML map: {exc}") from None
    try:
        table = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        hint = "" if path.endswith(".json") else " (a map is .json or .toml)"
        raise CheckpointError(f"{path}: not a valid JSON map{hint}: {exc}") from None
    if not isinstance(table, dict):
        raise CheckpointError(f"{path}: a map is a JSON object {{old name: new name}}, "
                              f"not a {type(table).__name__}")
    return table


def load_map(path: str | os.PathLike) -> MapRules:
    """Parse a map file; :class:`CheckpointError` naming the file and the bad entry."""
    path = os.fspath(path)
    rules = MapRules(path)
    for old, new in _read_table(path).items():
        if isinstance(new, dict):
            raise CheckpointError(f"{path}: {old!r} is a table, not a new name (in TOML, quote keys "
                                  f"that hold '.' or '/': \"{old}.…\" = \"…\")")
        if new is not None and not isinstance(new, str):
            raise CheckpointError(f"{path}: the new name of {old!r} is {new!r}, not a string")
        if not old:
            raise CheckpointError(f"{path}: an empty old name")
        new = new or None  # "" and null drop the variable
        old = old[:-2] if old.endswith(":0") else old
        if old.endswith("/"):
            if new is not None and not new.endswith("/"):
                raise CheckpointError(f"{path}: {old!r} renames a scope, so its new name must end "
                                      f"with '/' too (got {new!r})")
            rules.prefixes[old] = new
        else:
            if new is not None and new.endswith("/"):
                raise CheckpointError(f"{path}: {old!r} is one variable, but its new name {new!r} "
                                      "ends with '/' (a scope)")
            rules.exact[old] = new[:-2] if new and new.endswith(":0") else new
    return rules


@dataclass(frozen=True)
class Target:
    """A variable the output should hold."""
    name: str
    shape: tuple[int, ...] | None = None  # None: whatever the checkpoint has (a map's target)
    dtype: str | None = None
    count: int = 1                        # how many variables the script made with this name


@dataclass
class Match:
    source: Entry
    target: str


@dataclass
class Plan:
    """What a conversion would write, and what it would not."""
    matched: list[Match] = field(default_factory=list)
    unmatched: list[Entry] = field(default_factory=list)         # in the checkpoint, not the target
    missing: list[str] = field(default_factory=list)             # in the target, not the checkpoint
    mismatched: list[tuple[Match, str]] = field(default_factory=list)  # shape, dtype, ambiguous
    skipped: list[tuple[Entry, str]] = field(default_factory=list)     # left out on purpose

    def blocking(self, allow_missing: bool, allow_unmatched: bool) -> bool:
        return bool(self.mismatched or (self.missing and not allow_missing)
                    or (self.unmatched and not allow_unmatched))

    def to_dict(self) -> dict:
        return {
            "matched": [{"name": m.source.name, "target": m.target, "shape": list(m.source.shape),
                         "dtype": m.source.dtype, "role": m.source.role} for m in self.matched],
            "unmatched": [{"name": e.name, "shape": list(e.shape), "dtype": e.dtype, "role": e.role}
                          for e in self.unmatched],
            "missing": list(self.missing),
            "mismatched": [{"name": m.source.name, "target": m.target, "reason": why}
                           for m, why in self.mismatched],
            "skipped": [{"name": e.name, "reason": why} for e, why in self.skipped],
        }


def _renamed(entries: Sequence[Entry], rules: MapRules | None, exhaustive: bool,
             used: set[str]) -> dict[int, object]:
    """id(entry) -> its new name, None (dropped) or _UNCOVERED."""
    out: dict[int, object] = {}
    by_name: dict[str, object] = {}
    followers = []
    for e in entries:
        if rules is None:
            out[id(e)] = e.name
            continue
        new, rule = rules.lookup(e.name)
        if rule is not None:
            used.add(rule)
        if new is _UNCOVERED and e.role in (SLOT, AVERAGE) and e.slot_of is not None:
            followers.append(e)
            continue
        out[id(e)] = new if (new is not _UNCOVERED or exhaustive) else e.name
        by_name[e.name] = out[id(e)]
    for e in followers:  # a slot follows its variable (w/Adam -> v/Adam)
        base = by_name.get(e.slot_of, _UNCOVERED if exhaustive else e.slot_of)
        suffix = e.name[len(e.slot_of):] if e.name.startswith(e.slot_of + "/") else "/" + (e.slot or "")
        out[id(e)] = base if base is None or base is _UNCOVERED else f"{base}{suffix}"
    return out


def plan_conversion(entries: Iterable[Entry], *, rules: MapRules | None = None,
                    targets: Sequence[Target] | None = None, skip_optimizer: bool = False) -> Plan:
    """Match a checkpoint's entries to the targets (a script's variables) or to a map's new names.

    At least one of ``rules`` and ``targets`` is given. Raises :class:`CheckpointError`
    when the map sends two variables to one name.
    """
    if rules is None and targets is None:
        raise ValueError("a map or targets are needed")
    plan = Plan()
    kept = []
    for e in entries:
        if e.role == SAVE_COUNTER:
            plan.skipped.append((e, "tf.train.Checkpoint's own save counter"))
        elif e.role == OTHER:
            plan.skipped.append((e, f"not a variable ({e.attribute})"))
        elif skip_optimizer and e.role in OPTIMIZER_ROLES:
            plan.skipped.append((e, "optimizer state (--skip-optimizer)"))
        else:
            kept.append(e)
    used: set[str] = set()
    new_names = _renamed(kept, rules, exhaustive=targets is None, used=used)
    chosen: list[Match] = []
    for e in kept:
        new = new_names[id(e)]
        if new is None:
            plan.skipped.append((e, f"dropped by the map ({rules.source if rules else ''})"))
        elif new is _UNCOVERED:
            plan.unmatched.append(e)
        else:
            chosen.append(Match(e, str(new)))
    seen: dict[str, Match] = {}
    for m in chosen:
        if m.target in seen:
            raise CheckpointError(f"{rules.source if rules else 'the map'}: {seen[m.target].source.name!r} "
                                  f"and {m.source.name!r} both become {m.target!r}")
        seen[m.target] = m
    if targets is None:
        assert rules is not None
        all_names = {e.name for e in entries}
        plan.matched = chosen
        plan.missing = [old for old, new in rules.exact.items() if new is not None and old not in all_names]
        plan.missing += [p + "*" for p, new in rules.prefixes.items() if new is not None and p not in used]
        return plan
    by_target = {t.name: t for t in targets}
    for m in chosen:
        t = by_target.get(m.target)
        if t is None:
            plan.unmatched.append(m.source)
        elif t.count > 1:
            plan.mismatched.append((m, f"the script made {t.count} variables named {t.name!r}: "
                                       "which one to restore is ambiguous"))
        elif t.shape is not None and tuple(t.shape) != m.source.shape:
            plan.mismatched.append((m, f"shape {m.source.shape_text} in the checkpoint, "
                                       f"{shape_text(t.shape)} in the script"))
        elif t.dtype is not None and t.dtype != m.source.dtype:
            plan.mismatched.append((m, f"dtype {m.source.dtype} in the checkpoint, {t.dtype} in the script"))
        else:
            plan.matched.append(m)
    taken = {m.target for m in chosen}
    missing = [t for t in targets if t.name not in taken]
    if skip_optimizer and missing:  # the script's own optimizer state is not wanted either
        probe = [Entry(t.name, tuple(t.shape or ()), t.dtype or "", t.name) for t in targets]
        classify_name_based(probe)
        optimizer = {p.name for p in probe if p.role in OPTIMIZER_ROLES}
        missing = [t for t in missing if t.name not in optimizer]
    plan.missing = [t.name for t in missing]
    return plan
