"""Reference mode: one switch turns every LibCST shortcut off, the output stays
byte for byte the same, and an untested LibCST gets reference mode by itself.

The corpus test downloads tf-slim 1.1.0 (``pip download``, as the benchmarks
do; reused from ``benchmarks/corpus-data`` when it is there) and migrates its
files both ways, on worker processes (the settings travel to them): outputs,
modes, findings and changes must be identical. Reference mode is eight to
twenty times slower, most of it on the larger files, so by default the files
up to 10 kB are taken (43 of the package's 86, 15 of them migrated);
``TAPESHIFT_CORPUS_MAX_BYTES=20000`` takes 65, ``0`` takes them all (about six
minutes on two cores).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tapeshift.migrate.engine import libcst_speedups, settings
from tapeshift.migrate.engine.batch import migrate_files
from tapeshift.migrate.engine.pipeline import migrate_source
from tapeshift.migrate.engine.settings import Settings, reference_mode

ROOT = Path(__file__).resolve().parents[3]
SOURCE = (ROOT / "examples" / "reference_tf1.py").read_text()


def test_the_installed_libcst_is_one_the_shortcuts_were_tested_with():
    assert libcst_speedups.SUPPORTED, libcst_speedups.LIBCST_VERSION
    assert libcst_speedups.active()


@pytest.mark.parametrize("version, tested", [
    ("1.8.6", True), ("1.9.0", True), ("1.9.1rc1", True),
    ("1.10.0", False), ("1.7.0", False), ("2.0.0", False), ("", False), ("dev", False),
])
def test_only_tested_libcst_versions_enable_the_shortcuts(version, tested):
    assert libcst_speedups.supported(version) is tested


def test_reference_mode_is_a_block_and_comes_back():
    assert not settings.reference()
    with reference_mode():
        assert settings.reference() and not libcst_speedups.active()
        with reference_mode(False):
            assert libcst_speedups.active()
        assert not libcst_speedups.active()
    assert libcst_speedups.active()
    assert Settings().reference is False
    with reference_mode():
        assert Settings().reference is True  # by default as the process has it


def test_settings_reference_runs_the_file_in_reference_mode(monkeypatch):
    seen = []
    from tapeshift.migrate.engine import pipeline

    real = pipeline._Runner._alone

    def alone(self, *args):
        seen.append(args[0].__name__)
        return real(self, *args)

    monkeypatch.setattr(pipeline._Runner, "_alone", alone)
    fast = migrate_source(SOURCE, "r.py")
    assert seen == []
    slow = migrate_source(SOURCE, "r.py", settings=Settings(reference=True))
    assert seen  # every rule ran as LibCST runs a codemod on its own
    assert (slow.output, slow.mode, slow.findings, slow.changes) == \
        (fast.output, fast.mode, fast.findings, fast.changes)
    assert fast.changed
    assert libcst_speedups.active()  # and the process is back as it was


def _in_a_process(code: str, **env) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **env}, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_the_environment_variable_turns_reference_mode_on_for_a_process():
    code = ("from tapeshift.migrate.engine import libcst_speedups as s, settings\n"
            "print(settings.reference(), s.active())")
    assert _in_a_process(code, TAPESHIFT_REFERENCE="1") == "True False"
    assert _in_a_process(code, TAPESHIFT_REFERENCE="0") == "False True"


def test_an_untested_libcst_runs_reference_mode_with_the_same_output():
    """LibCST reports a version outside the tested range: no shortcut is taken
    (nothing of LibCST's internals is touched) and the output is the same."""
    code = (
        "import importlib.metadata as md\n"
        "real = md.version\n"
        "md.version = lambda name: '1.99.0' if name == 'libcst' else real(name)\n"
        "from tapeshift.migrate.engine import libcst_speedups as s\n"
        "from tapeshift.migrate.engine.pipeline import migrate_source\n"
        "import libcst.matchers._visitors as v\n"
        "assert not s.SUPPORTED and not s.active()\n"
        "assert not hasattr(v._gather_constructed_visit_funcs, '__wrapped__')  # not patched\n"
        "r = migrate_source(open('examples/reference_tf1.py').read(), 'r.py')\n"
        "print(repr((r.output, r.mode, [f.code for f in r.findings])))\n")
    fast = migrate_source(SOURCE, "r.py")
    assert _in_a_process(code) == repr((fast.output, fast.mode, [f.code for f in fast.findings]))


def _download_module():
    spec = importlib.util.spec_from_file_location("download_for_reference_test",
                                                  ROOT / "benchmarks" / "_download.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _outcomes(paths, reference: bool):
    settings = Settings(jobs=2, reference=reference)
    return [(r.path, r.mode, r.output_bytes, r.findings, r.changes)
            for r in migrate_files(paths, settings=settings)]


@pytest.mark.slow  # a download and a real package twice, reference mode 8-20x slower: ~1 min
@pytest.mark.parametrize("name, version", [("tf-slim", "1.1.0")])
def test_a_real_package_migrates_byte_for_byte_the_same_in_reference_mode(name, version):
    download = _download_module()
    # no skip when the index is unreachable: CI must really compare the modes
    tree = download.fetch_package(name, version, ROOT / "benchmarks" / "corpus-data")
    limit = int(os.environ.get("TAPESHIFT_CORPUS_MAX_BYTES", "10000"))
    paths = sorted(str(p) for p in tree.rglob("*.py") if not limit or p.stat().st_size <= limit)
    assert len(paths) > 40
    fast = _outcomes(paths, reference=False)
    assert sum(1 for _, mode, *_ in fast if mode in ("tape", "compat")) > 10  # at work
    slow = _outcomes(paths, reference=True)
    for a, b in zip(fast, slow):
        assert a == b, a[0]
    assert len(fast) == len(slow)


def test_the_parse_without_node_validation_gives_libcst_s_tree():
    """The pipeline's parse skips LibCST's per-node validation: the tree is equal
    to LibCST's (node for node) on project files, a tree the parser refuses is
    still refused, and validation is back on afterwards, after a failure too."""
    import libcst as cst

    files = sorted((ROOT / "examples").glob("*_tf1.py"))
    for path in files:
        source = path.read_text(encoding="utf-8")
        assert libcst_speedups.parse_module(source).deep_equals(cst.parse_module(source)), path
    with pytest.raises(cst.ParserSyntaxError):
        libcst_speedups.parse_module("def f(:\n")
    with pytest.raises(cst.CSTValidationError):  # nodes made after it are validated
        cst.Name("not a name")
    with reference_mode():
        assert libcst_speedups.parse_module("x = 1\n").code == "x = 1\n"
