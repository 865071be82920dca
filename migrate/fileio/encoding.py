"""Source bytes to text and back, exactly as the file had them.

:func:`decode_source` reads a Python file's bytes the way the interpreter does
(PEP 263 coding cookie, UTF-8 BOM, UTF-8 by default) and returns the text with
its line endings untouched, plus a :class:`SourceEncoding` that says how to
write text back. ``encode_source(decode_source(data)) == data`` for every file
that decodes. Text that a codemod produced is written with the same codec,
the same BOM, and, for a file whose line endings were all CRLF (or all CR),
the same line endings on the lines the codemod added.

A file that cannot be decoded raises :class:`SourceDecodeError`, whose message
names the file and says why. Nothing here prints or writes files.
"""

from __future__ import annotations

import codecs
import io
import re
import tokenize
from dataclasses import dataclass

BOM = codecs.BOM_UTF8

_BARE_LF = re.compile(r"(?<!\r)\n")
_BARE_CR = re.compile(r"\r(?!\n)")


class SourceDecodeError(ValueError):
    """A file's bytes are not text in the encoding it declares (or UTF-8)."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: cannot decode: {reason}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True)
class SourceEncoding:
    """How a file's text was stored: what :func:`encode_source` needs."""

    #: Python codec name, as ``tokenize.detect_encoding`` gives it ("utf-8",
    #: "iso-8859-1", "cp1252", ...); never "utf-8-sig" (see ``bom``).
    codec: str = "utf-8"
    #: The file starts with a UTF-8 byte order mark (not part of the text).
    bom: bool = False
    #: "\r\n" or "\r" when every line ending in the file was that; else "\n"
    #: (LF only, mixed, or no line ending at all).
    newline: str = "\n"


def _newline_of(text: str) -> str:
    if "\r" not in text:
        return "\n"
    if not _BARE_LF.search(text) and not _BARE_CR.search(text):
        return "\r\n"
    if "\n" not in text:
        return "\r"
    return "\n"


def decode_source(data: bytes, path: str = "<bytes>") -> tuple[str, SourceEncoding]:
    """The text of a Python file (BOM removed, line endings kept) and its encoding."""
    try:
        codec, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:  # unknown codec in the cookie, BOM with a non-UTF-8 cookie,
        reason = getattr(exc, "msg", None) or str(exc)  # or the first lines are not UTF-8
        if "invalid or missing encoding declaration" in reason:
            codec = "utf-8"
        else:
            raise SourceDecodeError(path, reason) from None
    bom = codec == "utf-8-sig"
    if bom:
        codec = "utf-8"
        body = data[len(BOM):]
    else:
        body = data
    try:
        text = body.decode(codec)
    except UnicodeDecodeError as exc:
        declared = "declared" if codec != "utf-8" or _has_cookie(data) else "default"
        raise SourceDecodeError(
            path,
            f"byte {body[exc.start:exc.start + 1]!r} at offset {exc.start + (3 if bom else 0)} "
            f"is not valid {codec} (the {declared} encoding); add a PEP 263 coding "
            f"cookie naming the file's real encoding, or re-save it as UTF-8") from None
    except LookupError as exc:  # pragma: no cover - detect_encoding checks the codec
        raise SourceDecodeError(path, str(exc)) from None
    return text, SourceEncoding(codec=codec, bom=bom, newline=_newline_of(text))


def _has_cookie(data: bytes) -> bool:
    head = data.split(b"\n", 2)[:2]
    return any(re.match(rb"^[ \t\f]*#.*?coding[:=]", line) for line in head)


def encode_source(text: str, encoding: SourceEncoding) -> bytes:
    """``text`` as bytes the way the original file was stored.

    Raises ``UnicodeEncodeError`` when the text holds a character the file's
    codec cannot store (the caller reports it and writes nothing).
    """
    if encoding.newline == "\r\n":
        text = _BARE_LF.sub("\r\n", text)
    elif encoding.newline == "\r":
        text = text.replace("\n", "\r")
    data = text.encode(encoding.codec)
    return BOM + data if encoding.bom else data


def same_encoding(data: bytes, encoding: SourceEncoding) -> bool:
    """True when ``data`` (a codemod's encoded output) still declares ``encoding``:
    the coding cookie was not moved off the first two lines, the BOM is there."""
    try:
        codec, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        return False
    if codec == "utf-8-sig":
        return encoding.bom and encoding.codec == "utf-8"
    return not encoding.bom and codecs.lookup(codec).name == codecs.lookup(encoding.codec).name
