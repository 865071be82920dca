"""Python's own parser, for quick questions about a file's code.

LibCST's tree is what the codemod rewrites; the standard library's parser
(in C) answers questions about the code many times faster: which names the
code itself spells, how a name is bound, what the module does at top level.
Both functions give None when this Python cannot parse the text, and print
none of the compiler's warnings about it (``is`` with a literal ...).
"""

from __future__ import annotations

import ast
import functools
import symtable
import warnings
from typing import Optional

_CANNOT = (SyntaxError, ValueError, RecursionError, MemoryError)


@functools.lru_cache(maxsize=2)
def parse(code: str) -> Optional[ast.Module]:
    """``ast.parse(code)``, or None. The last trees are kept: the screen, the
    import-only names and the check analysis ask about the same text in turn
    (callers only read the tree)."""
    return parse_uncached(code)


def parse_uncached(code: str) -> Optional[ast.Module]:
    """:func:`parse` of a text asked about once (it keeps the file's own tree)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(code)
        except _CANNOT:
            return None


#: the last text :func:`compile_quietly` compiled without error (kept by identity)
_last_compiled: Optional[str] = None


def compile_quietly(code, filename: str) -> None:
    """``compile(code, filename, "exec")`` as the file's own Python would do it
    (no flags inherited from here), raising what it raises: a check that the
    code compiles, without printing its warnings."""
    global _last_compiled
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compile(code, filename, "exec", dont_inherit=True)
    if isinstance(code, str):
        _last_compiled = code


def compiled_already(code: str) -> bool:
    """``code`` is the very string object the last successful
    :func:`compile_quietly` compiled (the pipeline compiles its output before
    returning it: the file job need not compile the same text again)."""
    return code is _last_compiled


def symbols(code: str, filename: str = "<module>") -> Optional[symtable.SymbolTable]:
    """The module's symbol table (``symtable.symtable``), or None."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return symtable.symtable(code, filename, "exec")
        except _CANNOT:
            return None
