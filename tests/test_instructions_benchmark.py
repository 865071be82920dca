"""benchmarks/instructions.py: the parts that need no Valgrind run (a counted run
of even one file takes tens of seconds under Valgrind: the script is run by hand)."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "instructions.py"


def _script():
    spec = importlib.util.spec_from_file_location("instructions_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_count_is_read_from_valgrind_s_summary(tmp_path):
    script = _script()
    out = tmp_path / "run"
    Path(f"{out}.log").write_text("==8692== Cachegrind, a high-precision tracing profiler\n"
                                  "==8692== \n==8692== I   refs:      17,517,804,367\n")
    assert script.counted(out) == 17_517_804_367


def test_a_run_without_a_count_says_what_valgrind_said(tmp_path):
    script = _script()
    out = tmp_path / "run"
    Path(f"{out}.log").write_text("valgrind: failed to start tool 'cachegrind'\n")
    try:
        script.counted(out)
    except SystemExit as exc:
        assert "no instruction count" in str(exc) and "failed to start tool" in str(exc)
    else:
        raise AssertionError("a log without a count must stop the script")


def test_bad_input_is_named_and_exits_2(tmp_path, monkeypatch, capsys):
    script = _script()
    monkeypatch.setattr(script.shutil, "which", lambda name: None)
    assert script.main([str(tmp_path)]) == 2
    assert "valgrind is not installed" in capsys.readouterr().err
    monkeypatch.setattr(script.shutil, "which", lambda name: "/usr/bin/valgrind")
    assert script.main([str(tmp_path)]) == 2
    assert f"no .py file under {tmp_path}" in capsys.readouterr().err
