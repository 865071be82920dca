"""tapeshift.migrate.fileio.encoding: bytes -> text -> the same bytes, for every way a file is stored."""

import pytest

from tapeshift.migrate.fileio.encoding import (BOM, SourceDecodeError, SourceEncoding, decode_source,
                              encode_source, same_encoding)

ROUND_TRIP = {
    "utf-8": "x = 'café'\n".encode("utf-8"),
    "crlf": b"import os\r\nx = 1\r\n",
    "cr": b"import os\rx = 1\r",
    "mixed": b"a = 1\r\nb = 2\n",
    "bom": BOM + "x = 'é'\r\n".encode("utf-8"),
    "latin-1 cookie": "# -*- coding: latin-1 -*-\nname = 'café'\n".encode("latin-1"),
    "cp1252 cookie line 2": "#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\ns = '€'\n".encode("cp1252"),
    "no final newline": b"x = 1",
    "empty": b"",
}


@pytest.mark.parametrize("name", sorted(ROUND_TRIP))
def test_round_trip_is_exact(name):
    data = ROUND_TRIP[name]
    text, enc = decode_source(data, "f.py")
    assert not text.startswith("\ufeff")
    assert encode_source(text, enc) == data
    assert same_encoding(data, enc)


def test_what_is_detected():
    assert decode_source(ROUND_TRIP["bom"])[1] == SourceEncoding("utf-8", True, "\r\n")
    assert decode_source(ROUND_TRIP["crlf"])[1].newline == "\r\n"
    assert decode_source(ROUND_TRIP["mixed"])[1].newline == "\n"
    assert decode_source(ROUND_TRIP["latin-1 cookie"])[1].codec == "iso-8859-1"
    assert decode_source(ROUND_TRIP["latin-1 cookie"])[0].endswith("name = 'café'\n")


def test_added_lines_get_the_files_line_endings_and_codec():
    text, enc = decode_source(b"# coding: latin-1\r\nimport tensorflow as tf\r\n")
    new = text.replace("import tensorflow as tf\r\n",
                       "import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()\nn = 'é'\r\n")
    out = encode_source(new, enc)
    assert out == (b"# coding: latin-1\r\nimport tensorflow.compat.v1 as tf\r\n"
                   b"tf.disable_v2_behavior()\r\nn = '\xe9'\r\n")


def test_bom_is_written_back():
    text, enc = decode_source(BOM + b"x = 1\n")
    assert encode_source(text + "y = 2\n", enc) == BOM + b"x = 1\ny = 2\n"


def test_undecodable_file_is_named_with_a_reason():
    with pytest.raises(SourceDecodeError) as info:
        decode_source("name = 'café'\n".encode("latin-1"), "pkg/mod.py")
    msg = str(info.value)
    assert msg.startswith("pkg/mod.py: cannot decode: ")
    assert "utf-8" in msg and "coding cookie" in msg
    with pytest.raises(SourceDecodeError, match="pkg/x.py: cannot decode: .*unknown encoding"):
        decode_source(b"# coding: klingon\nx = 1\n", "pkg/x.py")


def test_unencodable_output_raises():
    _, enc = decode_source(b"# coding: latin-1\nx = 1\n")
    with pytest.raises(UnicodeEncodeError):
        encode_source("# coding: latin-1\nx = '\u20ac'\n", enc)


def test_moved_cookie_is_detected():
    _, enc = decode_source(b"# coding: latin-1\nx = 1\n")
    assert not same_encoding(b"import a\nimport b\n# coding: latin-1\nx = 1\n", enc)
    _, enc = decode_source(BOM + b"x = 1\n")
    assert not same_encoding(b"x = 1\n", enc)
