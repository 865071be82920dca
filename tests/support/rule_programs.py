"""What the rule tests share: a program's text, its migration (once per text and
mode, the text and the numbers tests of a program share it), and its findings.

On ``sys.path`` through setup.cfg's ``pythonpath`` (the tests are imported with
``--import-mode=importlib``, so ``tests`` itself is no package).
"""

import functools
import textwrap

from tapeshift.migrate.engine.pipeline import migrate_source


def src(text: str) -> str:
    """A program written indented in a test module, as a file holds it."""
    return textwrap.dedent(text).lstrip("\n")


@functools.cache
def migrated(source: str, mode: str = "tape"):
    """``migrate_source`` of ``source`` as file ``f.py``."""
    return migrate_source(source, "f.py", mode=mode)


def codes(result):
    """The findings' codes and lines."""
    return [(f.code, f.line) for f in result.findings]


def findings(result):
    """The findings' codes, lines and messages."""
    return [(f.code, f.line, f.message) for f in result.findings]


def assert_left_compat(program: str, change, code: str, why: str) -> None:
    """``program`` with ``change`` (old, new) made stays compat, a ``code`` finding
    saying ``why``."""
    source = program.replace(*change)
    assert source != program, change
    r = migrated(source)
    assert r.mode == "compat", codes(r)
    assert any(c == code and why in message for c, _, message in findings(r)), findings(r)


def verified_prints(source: str, path, timeout: float = 300, **options):
    """Migrate ``source`` to tape form and verify it against its legacy run (needs
    TensorFlow; ``path``: where the migrated program is written; ``options``: those
    of ``verify_sources``, as ``seed=0, align_random=True``): the printed values both
    runs compared. Fails unless every compared value agrees."""
    from tapeshift.migrate.legacy.verify import verify_sources

    r = migrated(source)
    assert r.mode == "tape", codes(r)
    report = verify_sources(source, r.output, path, timeout=timeout, **options)
    assert report.status == "ok", report.to_text()
    return [row for row in report.rows if row.name.startswith("stdout:") and row.compared]
