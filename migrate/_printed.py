"""Numbers a script printed, read back from its stdout for ``tapeshift verify``.

Many real scripts only print their results, so ``verify`` compares the
numbers two scripts print, in order. :func:`parse_printed` turns stdout into a
flat sequence of :class:`Printed` items:

* numbers as Python and numpy print them: ``3``, ``-0.5``, ``1.``, ``.5``,
  ``1e-05``, ``-2.5E+03``, ``nan``, ``inf``, ``-inf``; ``True``/``False``;
* the decoration of TensorFlow reprs is not a number: ``shape=(2, 2)``,
  ``dtype=float32``, ``<tf.Variable 'dense/kernel:0' ...``, ``Tensor("add:0", ...)``,
  ``name='x1'`` are dropped, and digits glued to words (``float32``, ``conv2d``,
  ``epoch3``, ``5ms``) or to dotted names (``2.21.0``) are not numbers;
* an array print that numpy summarised with ``...`` is not comparable: the
  whole print (from its opening bracket to the closing one) becomes one
  ``elided`` item instead of its numbers.

A *record* is one logical print: a line, or several lines while brackets or
parentheses are open (a multi-line numpy array or ``tf.Tensor(...)``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Union

_DECORATION = re.compile(
    r"""
      shape=\([^)\n]*\)              # shape=(2, 2)
    | shape=<unknown>
    | shape=TensorShape\([^)\n]*\)
    | dtype=(?:'[^'\n]*'|"[^"\n]*"|[\w.]+)   # dtype=float32, dtype='<U5', dtype=tf.int64
    | <tf\.\w+:?\s+'[^'\n]*'         # <tf.Variable 'dense/kernel:0'
    | \bTensor\("[^"\n]*"            # Tensor("add:0", ...
    | \bname=(?:'[^'\n]*'|"[^"\n]*")
    | \bdevice=\S+
    """,
    re.VERBOSE,
)

_TOKEN = re.compile(
    r"""
      (?<![\w.])(?P<bool>True|False)(?![\w.])
    | (?<![\w.])(?P<num>[-+]?
          (?: (?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?
            | nan|NaN|inf|Inf|Infinity ))
      (?!\w)(?!\.\w)
    """,
    re.VERBOSE,
)

_ELISION = re.compile(r"(?:^|[\s,\[])\.\.\.(?:$|[\s,\]])")


@dataclass(frozen=True)
class Printed:
    """One printed number (``kind`` ``int``, ``float`` or ``bool``) or an ``elided`` array print.

    ``line`` is the 1-based stdout line it is on; ``record`` the index of the
    print it belongs to; ``text`` what was printed.
    """

    value: Union[float, bool, None]
    kind: str
    line: int
    record: int
    text: str


def strip_decoration(text: str) -> str:
    """``text`` without TensorFlow/numpy repr decoration (line structure kept)."""
    return _DECORATION.sub(" ", text)


def _records(lines: list[str]):
    """Group lines into prints: yield ``(first_line_index, [lines])``."""
    depth, start, group = 0, 0, []
    for i, line in enumerate(lines):
        if not group:
            start = i
        group.append(line)
        depth += line.count("[") + line.count("(") - line.count("]") - line.count(")")
        if depth <= 0:
            depth = 0
            yield start, group
            group = []
    if group:
        yield start, group


def _number(token: str) -> tuple[float, str]:
    low = token.lower()
    if "nan" in low or "inf" in low:
        return float(low.replace("infinity", "inf")), "float"
    if any(c in token for c in ".eE"):
        return float(token), "float"
    return float(int(token)), "int"


def parse_printed(text: str) -> list[Printed]:
    """The numbers printed in ``text`` (a script's stdout), in order."""
    items: list[Printed] = []
    lines = strip_decoration(text).splitlines()
    for record, (start, group) in enumerate(_records(lines)):
        joined = "\n".join(group)
        if "[" in joined and _ELISION.search(joined):
            items.append(Printed(None, "elided", start + 1, record, joined.strip()[:60]))
            continue
        for offset, line in enumerate(group):
            for m in _TOKEN.finditer(line):
                if m.group("bool"):
                    items.append(Printed(m.group("bool") == "True", "bool", start + offset + 1,
                                         record, m.group("bool")))
                else:
                    value, kind = _number(m.group("num"))
                    items.append(Printed(value, kind, start + offset + 1, record, m.group("num")))
    return items


def printed_numbers(text: str) -> list:
    """Just the values (``None`` for an elided print): handy in tests."""
    return [item.value for item in parse_printed(text)]
