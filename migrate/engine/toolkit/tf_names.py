"""TensorFlow names: API names of qualified names, the module's alias, fresh names.

Every codemod matches TensorFlow by *qualified name* (what a name is bound to,
resolved by LibCST's scope analysis), never by the spelling ``tf.``. A name is
"TensorFlow" when its qualified name starts with ``tensorflow``; the part after
``tensorflow.``, ``tensorflow.compat.v1.`` or ``tensorflow.compat.v2.`` is its
*API name* (``gradients``, ``train.AdamOptimizer``), which the rules compare.
"""

from __future__ import annotations

from typing import Iterable, Optional, Set, cast

import libcst as cst

from tapeshift.migrate.engine.toolkit.builders import code_of
from tapeshift.migrate.engine.toolkit.walk import nodes_of, remembered

_TF_PREFIXES = ("tensorflow.compat.v1.", "tensorflow.compat.v2.", "tensorflow.")
_TF_MODULES = ("tensorflow", "tensorflow.compat.v1", "tensorflow.compat.v2")


def api_name(qualified: str) -> Optional[str]:
    """``tensorflow.compat.v1.train.Saver`` -> ``train.Saver``; ``""`` for the
    module itself; None when the name is not TensorFlow."""
    if qualified in _TF_MODULES:
        return ""
    for prefix in _TF_PREFIXES:
        if qualified.startswith(prefix):
            return qualified[len(prefix):]
    return None



def tf_module_alias(module: cst.Module) -> Optional[str]:
    """The name a module-level ``import tensorflow[.compat.v1] as X`` binds."""
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if not isinstance(small, cst.Import):
                continue
            for alias in small.names:
                dotted = code_of(alias.name)
                if alias.asname is not None and dotted in _TF_MODULES:
                    return code_of(alias.asname.name)
                if alias.asname is None and dotted == "tensorflow":
                    return "tensorflow"
    return None


def all_names(module: cst.Module) -> Set[str]:
    """Every identifier spelled in the module (to pick fresh names; a new set
    each time, computed once per tree while the walks remember)."""
    return set(remembered(module, "all_names", lambda: frozenset(
        cast(cst.Name, node).value for node in nodes_of(module, cst.Name))))


def fresh_name(base: str, taken: Iterable[str]) -> str:
    taken = set(taken)
    if base not in taken:
        return base
    i = 1
    while f"{base}_{i}" in taken:
        i += 1
    return f"{base}_{i}"

