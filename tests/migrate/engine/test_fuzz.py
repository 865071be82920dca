"""Fuzzing the per-file path (decode, codemod, encode, checks) with generated programs.

Programs come from hypothesmith (grammar-based and LibCST-node-based) when it is
installed, else from a small plain-hypothesis generator. Properties: the file
job never crashes (no exception, no internal-error record); a program that does
not use TensorFlow comes out byte-identical, whatever its encoding; a program
that does use it comes out compiling, or untouched.
"""

import textwrap

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tapeshift.migrate.fileio.encoding import BOM
from tapeshift.migrate.engine.batch import process_file

try:
    import hypothesmith
except ImportError:  # pragma: no cover - plain strategies below
    hypothesmith = None

FUZZ = settings(max_examples=15, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                       HealthCheck.data_too_large])

NAMES = st.sampled_from(["x", "y", "tf", "sess", "loss", "grad", "Session", "np", "f"])
EXPRS = st.one_of(NAMES, st.integers(-5, 5).map(str),
                  st.tuples(NAMES, NAMES).map(lambda t: f"{t[0]}.{t[1]}"),
                  st.tuples(NAMES, NAMES).map(lambda t: f"{t[0]}({t[1]})"))
STMTS = st.one_of(
    st.tuples(NAMES, EXPRS).map(lambda t: f"{t[0]} = {t[1]}\n"),
    EXPRS.map(lambda e: f"print({e})\n"),
    st.tuples(NAMES, EXPRS).map(lambda t: f"def {t[0]}(a, *b, **c):\n    return {t[1]}\n"),
    st.tuples(NAMES, EXPRS).map(lambda t: f"with {t[1]} as {t[0]}:\n    pass  # é\n"),
    st.just("# just a comment\n"), st.just("s = '''multi\nline'''\n"),
)
PLAIN_PROGRAMS = st.lists(STMTS, max_size=8).map("".join)


def programs():
    if hypothesmith is None:
        return PLAIN_PROGRAMS
    # deferred: the grammar's parser is built (seconds) on the first draw, not at collection
    return st.deferred(lambda: st.one_of(hypothesmith.from_grammar(), hypothesmith.from_node(),
                                         PLAIN_PROGRAMS))


PROGRAMS = programs()
STORAGE = st.sampled_from(["lf", "crlf", "bom", "latin-1"])


def store(source: str, how: str) -> bytes:
    if how == "crlf":
        return source.replace("\r\n", "\n").replace("\n", "\r\n").encode("utf-8", "surrogatepass")
    if how == "bom":
        return BOM + source.encode("utf-8", "surrogatepass")
    if how == "latin-1":
        return ("# -*- coding: latin-1 -*-\n" + source).encode("latin-1", "replace")
    return source.encode("utf-8", "surrogatepass")


def no_crash(record):
    assert not any(f.code == "TS114" and "internal error" in f.message for f in record.findings), \
        record.findings


@FUZZ
@given(PROGRAMS, STORAGE)
def test_programs_without_tensorflow_come_out_byte_identical(source, how):
    assume("tensorflow" not in source)
    data = store(source, how)
    record = process_file("fuzz.py", "tape", data)
    no_crash(record)
    assert not record.changed and record.output_bytes is None
    assert record.output == record.source
    assert record.mode in ("unchanged", "error")


@FUZZ
@given(PROGRAMS, st.sampled_from(["import tensorflow as tf\n",
                                    "import tensorflow.compat.v1 as tf\n",
                                    "from tensorflow import gradients\n"]),
       st.sampled_from(["tape", "compat"]))
def test_programs_with_tensorflow_never_crash_and_compile(body, header, mode):
    source = header + body
    record = process_file("fuzz.py", mode, source.encode("utf-8", "surrogatepass"))
    no_crash(record)
    if record.changed:
        compile(record.output_bytes, "fuzz.py", "exec", dont_inherit=True)
        again = process_file("fuzz.py", mode, record.output_bytes)
        assert not again.changed, textwrap.indent(record.output, "  ")
    else:
        assert record.output == record.source
