"""``tapeshift verify --after TRAIN`` / ``--after-migrated TRAIN``: a train/predict pair.

Without TensorFlow: the options, and a training run that fails (the prediction
scripts are then not run). The pair end to end (run-legacy, TensorFlow) is in
test_checkpoint_programs.py.
"""

import json
import textwrap
from pathlib import Path

from tapeshift.migrate.legacy import verify
from tapeshift.migrate.legacy.verify import verify_scripts


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


def test_a_failed_training_run_stops_the_pair(tmp_path, capsys):
    train = _write(tmp_path / "train.py", """\
        import sys
        print("training on", sys.argv[1:])
        raise SystemExit(3)
        """)
    # never run: the training run failed first
    predict_old = _write(tmp_path / "predict_tf1.py", "raise AssertionError('ran')\n")
    predict_new = _write(tmp_path / "predict_tf2.py", "raise AssertionError('ran')\n")
    report = verify_scripts(predict_old, predict_new, after=train, after_legacy=False,
                            after_args=["ckpt"])
    assert report.exit_code == 2 and report.status == "failed"
    assert report.before.stdout == "training on ['ckpt']\n"
    assert [r.role for r in report.failures] == ["training"]
    assert report.legacy.returncode is None and report.new.returncode is None
    text = report.to_text()
    assert f"after the training script {train} (TF2)\n" in text
    assert f"FAILED: the training script {train} exited with code 3 (the prediction scripts " \
           "were not run)" in text
    record = json.loads(report.to_json())
    assert record["runs"]["training"]["returncode"] == 3
    assert record["runs"]["training"]["legacy"] is False

    code = verify.main([str(predict_old), str(predict_new), "--after-migrated", str(train)])
    out = capsys.readouterr().out
    assert code == 2 and "FAILED: the training script" in out


def test_the_options_are_checked(tmp_path, capsys):
    a = _write(tmp_path / "a.py", "x = 1\n")
    b = _write(tmp_path / "b.py", "x = 1\n")
    assert verify.main([str(a), str(b), "--after", str(tmp_path / "missing.py")]) == 2
    assert "no such script" in capsys.readouterr().err
    assert verify.main([str(a), str(b), "--after-args", "x"]) == 2
    assert "--after-args needs --after or --after-migrated" in capsys.readouterr().err
    assert verify.main([str(a), str(b), "--after", str(a), "--after-migrated", str(a)]) == 2
    assert "not allowed with argument" in capsys.readouterr().err
