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
* a *symbolic* TensorFlow object has no value to compare: a graph tensor
  (``Tensor("add:0", shape=(), dtype=float32)``, ``<tf.Tensor 'x:0' shape=() ...>``),
  a graph variable (``<tf.Variable 'w:0' shape=(2,) dtype=float32_ref>``), an
  operation (``<tf.Operation 'init' type=NoOp>``) and an op or graph dump
  (``name: "mul"`` / ``op: "Mul"`` / ``attr { ... }`` lines) each become one
  ``symbolic`` item, whatever digits their names hold;
* the numbers of an *eager* repr (``<tf.Tensor: shape=(), dtype=float32, numpy=6.0>``,
  ``tf.Tensor(6.0, shape=(), dtype=float32)``, an eager ``<tf.Variable ... numpy=...>``)
  are its value's, and carry the index of that repr (``unit``) so that
  ``verify`` can set the whole value aside where the other script printed the
  same tensor symbolically;
* an array print that numpy summarised with ``...`` is not comparable: the
  whole print (from its opening bracket to the closing one) becomes one
  ``elided`` item instead of its numbers.

A *record* is one logical print: a line, or several lines while brackets or
parentheses (or a TensorFlow repr) are open (a multi-line numpy array or
``tf.Tensor(...)``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Union

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
      \x01(?P<span>\d+)\x01
    | (?<![\w.])(?P<bool>True|False)(?![\w.])
    | (?<![\w.])(?P<num>[-+]?
          (?: (?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?
            | nan|NaN|inf|Inf|Infinity ))
      (?!\w)(?!\.\w)
    """,
    re.VERBOSE,
)

_ELISION = re.compile(r"(?:^|[\s,\[])\.\.\.(?:$|[\s,\]])")

# Where a TensorFlow object's repr starts:
#   <tf.Tensor: ...numpy=...>  <tf.Tensor 'x:0' ...>  <tf.Variable ...>  <tf.Operation ...>
#   tf.Tensor(...)  (eager str)        Tensor("x:0", ...)  (graph str)
_REPR_START = re.compile(r"<tf\.\w+(?=[:\s])|\btf\.Tensor\(|(?<![\w.])Tensor\(\"")

# An op or graph dump (str of a tf.Operation, NodeDef or GraphDef) starts with
# one of these lines and goes on with protobuf text-format lines of these fields.
_PROTO_START = re.compile(r'^(?:name: "[^"\n]*"|node \{)\s*$')
_PROTO_FIELDS = frozenset("""
    name op input device attr key value type shape dim size tensor dtype tensor_shape
    float_val double_val int_val int64_val bool_val string_val half_val scomplex_val
    dcomplex_val uint32_val uint64_val resource_handle_val variant_val tensor_content
    version_number list s i f b func unknown_rank experimental_debug_info
    original_node_names original_func_names experimental_type node versions producer
    min_consumer bad_consumers library function signature ret arg placeholder
    """.split())
# fields a dump goes on with at its top level (NodeDef, GraphDef)
_PROTO_TOP = frozenset("op input device attr experimental_debug_info experimental_type "
                       "node versions library".split())
_PROTO_LINE = re.compile(r'^\s*(?:\}|(?P<block>\w+)\s*\{|(?P<field>\w+):\s*\S.*)\s*$')


@dataclass(frozen=True)
class Printed:
    """One printed number (``kind`` ``int``, ``float`` or ``bool``), an ``elided``
    array print, or a ``symbolic`` TensorFlow object (a graph tensor, variable,
    operation or op dump: no value).

    ``line`` is the 1-based stdout line it is on; ``record`` the index of the
    print it belongs to; ``text`` what was printed. ``unit`` is the index of
    the TensorFlow repr the item belongs to (the numbers of one eager tensor
    share it; a symbolic item has its own), ``None`` for plain numbers.
    """

    value: Union[float, bool, None]
    kind: str
    line: int
    record: int
    text: str
    unit: Optional[int] = None


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    symbolic: bool
    body: str        # the text whose numbers are the value (eager); the repr (symbolic)


def strip_decoration(text: str) -> str:
    """``text`` without TensorFlow/numpy repr decoration (line structure kept)."""
    return _DECORATION.sub(" ", text)


def _closing(text: str, start: int, opener: str, closer: str) -> int:
    """Index just past the ``closer`` that closes ``text[start]`` (== ``opener``),
    skipping brackets inside quotes; ``-1`` when the text ends first."""
    depth, quote, i, n = 0, None, start, len(text)
    while i < n:
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c in "([{" or c == opener:
            depth += 1
        elif c in ")]}" or c == closer:
            depth -= 1
            if depth == 0:
                return i + 1 if c == closer else -1
        i += 1
    return -1


def _repr_spans(text: str) -> list[_Span]:
    """The TensorFlow object reprs and op dumps in ``text``, in order, not overlapping."""
    spans: list[_Span] = []
    pos = 0
    for m in _REPR_START.finditer(text):
        if m.start() < pos:
            continue
        token = m.group(0)
        if token.startswith("<"):
            end = _closing(text, m.start(), "<", ">")
            if end < 0:
                continue
            whole = text[m.start():end]
            at = whole.find("numpy=")
            if at >= 0:
                spans.append(_Span(m.start(), end, False, whole[at + len("numpy="):-1]))
            else:
                spans.append(_Span(m.start(), end, True, whole))
        else:
            paren = m.start() + token.index("(")
            end = _closing(text, paren, "(", ")")
            if end < 0:
                continue
            if token.startswith("tf."):
                spans.append(_Span(m.start(), end, False, text[paren + 1:end - 1]))
            else:
                spans.append(_Span(m.start(), end, True, text[m.start():end]))
        pos = end
    return _with_proto_dumps(text, spans)


def _with_proto_dumps(text: str, spans: list[_Span]) -> list[_Span]:
    """``spans`` plus one symbolic span per op/graph dump (outside the other spans)."""
    dumps: list[_Span] = []
    offset, lines = 0, [line + "\n" for line in text.split("\n")]
    i = 0
    while i < len(lines):
        line = lines[i]
        if _PROTO_START.match(line.rstrip("\r\n")):
            start, j, depth = offset, i, 0
            end = offset
            while j < len(lines):
                body = lines[j].rstrip("\r\n")
                m = _PROTO_LINE.match(body)
                if j > i:
                    word = None if m is None else (m.group("field") or m.group("block") or "}")
                    if word not in (_PROTO_TOP if depth == 0 else _PROTO_FIELDS | {"}"}):
                        break
                if j > i and depth == 0 and _PROTO_START.match(body) and body.startswith("name"):
                    break  # the next op's dump
                depth += body.count("{") - body.count("}")
                end += len(lines[j])
                j += 1
                if depth < 0:
                    break
            end = min(end, len(text))
            dumps.append(_Span(start, end - (1 if text[end - 1:end] == "\n" else 0), True,
                               text[start:end].strip()))
            offset = end
            i = j
            continue
        offset += len(line)
        i += 1
    if not dumps:
        return spans
    kept = [d for d in dumps if not any(s.start < d.end and d.start < s.end for s in spans)]
    return sorted([*spans, *kept], key=lambda s: s.start)


def _mark(text: str, spans: list[_Span]) -> str:
    """``text`` with each span replaced by ``(\\x01i\\x01`` + its newlines + ``)``: one
    token where it starts, brackets that keep its lines in one record."""
    parts, pos = [], 0
    for i, s in enumerate(spans):
        parts.append(text[pos:s.start])
        parts.append(f"(\x01{i}\x01" + "\n" * text.count("\n", s.start, s.end) + ")")
        pos = s.end
    parts.append(text[pos:])
    return "".join(parts)


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


def _plain_items(text: str, line: int, record: int, unit: Optional[int]) -> list[Printed]:
    items = []
    for m in _TOKEN.finditer(strip_decoration(text)):
        if m.group("bool"):
            items.append(Printed(m.group("bool") == "True", "bool", line, record,
                                 m.group("bool"), unit))
        elif m.group("num"):
            value, kind = _number(m.group("num"))
            items.append(Printed(value, kind, line, record, m.group("num"), unit))
    return items


def parse_printed(text: str) -> list[Printed]:
    """The numbers (and symbolic TensorFlow objects) printed in ``text`` (a script's stdout), in order."""
    items: list[Printed] = []
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    spans = _repr_spans(text)
    raw_lines = text.split("\n")
    lines = strip_decoration(_mark(text, spans)).split("\n")
    for record, (start, group) in enumerate(_records(lines)):
        raw = "\n".join(raw_lines[start:start + len(group)])
        if "[" in raw and _ELISION.search(raw):
            items.append(Printed(None, "elided", start + 1, record, raw.strip()[:60]))
            continue
        for offset, line in enumerate(group):
            for m in _TOKEN.finditer(line):
                where = start + offset + 1
                if m.group("span"):
                    i = int(m.group("span"))
                    span = spans[i]
                    if span.symbolic:
                        items.append(Printed(None, "symbolic", where, record, span.body[:100], i))
                    else:
                        items.extend(_plain_items(span.body, where, record, i))
                elif m.group("bool"):
                    items.append(Printed(m.group("bool") == "True", "bool", where,
                                         record, m.group("bool")))
                else:
                    value, kind = _number(m.group("num"))
                    items.append(Printed(value, kind, where, record, m.group("num")))
    return items


def printed_numbers(text: str) -> list:
    """Just the values (``None`` for an elided print; symbolic objects left out): handy in tests."""
    return [item.value for item in parse_printed(text) if item.kind != "symbolic"]
