"""``tapeshift migrate`` in-process via main(argv), with capsys."""

import json
import os
import stat

from tapeshift.migrate.commands.cli import main

CONVERTIBLE = (
    "import tensorflow as tf\n"
    "W = tf.Variable(1.0)\n"
    "loss = W * W\n"
    "g = tf.gradients(loss, W)[0]\n"
    "with tf.Session() as sess:\n"
    "    sess.run(tf.global_variables_initializer())\n"
    "    print(sess.run(g))\n"
)
PLACEHOLDER = "import tensorflow as tf\nx = tf.placeholder(tf.float32)\n"
CLEAN = "import tensorflow as tf\nprint(tf.constant(1.0).numpy())\n"


def _tree(tmp_path):
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "a.py").write_text(CONVERTIBLE)
    (src / "pkg" / "b.py").write_text(PLACEHOLDER)
    (src / "pkg" / "c.py").write_text(CLEAN)
    (src / "pkg" / "data.txt").write_text("not python\n")
    os.chmod(src / "a.py", 0o755)
    return src


def test_default_prints_diff_and_writes_nothing(tmp_path, capsys):
    src = _tree(tmp_path)
    assert main(["migrate", str(src)]) == 0
    out, err = capsys.readouterr()
    assert "+with tf.GradientTape() as tape:" in out
    assert "+import tensorflow.compat.v1 as tf" in out
    assert (src / "a.py").read_text() == CONVERTIBLE
    assert "3 file(s): 2 changed (1 tape form, 1 compat mode), 1 unchanged, 0 error(s)" in err
    assert "TS107 warning [session-feeds-placeholders]" in err


def test_check_exits_1_when_something_would_change(tmp_path, capsys):
    src = _tree(tmp_path)
    assert main(["migrate", "--check", str(src)]) == 1
    out, _ = capsys.readouterr()
    assert f"would migrate {src / 'a.py'} (tape)" in out
    assert (src / "a.py").read_text() == CONVERTIBLE


def test_check_exits_0_when_nothing_changes(tmp_path, capsys):
    f = tmp_path / "c.py"
    f.write_text(CLEAN)
    assert main(["migrate", "--check", str(f)]) == 0
    assert capsys.readouterr().out == ""


def test_in_place_rewrites_atomically_and_keeps_mode(tmp_path, capsys):
    src = _tree(tmp_path)
    assert main(["migrate", "--in-place", str(src / "a.py")]) == 0
    text = (src / "a.py").read_text()
    assert "tape.gradient(loss, W)" in text and "Session" not in text
    assert stat.S_IMODE(os.stat(src / "a.py").st_mode) == 0o755
    assert [p.name for p in src.iterdir() if p.name.startswith(".")] == []  # no temp files left
    assert capsys.readouterr().out == ""
    # running again changes nothing
    assert main(["migrate", "--check", str(src / "a.py")]) == 0


def test_out_writes_a_migrated_copy_of_the_tree(tmp_path, capsys):
    src = _tree(tmp_path)
    out = tmp_path / "out"
    assert main(["migrate", "--out", str(out), str(src)]) == 0
    assert "tape.gradient" in (out / "a.py").read_text()
    assert (out / "pkg" / "b.py").read_text().startswith("import tensorflow.compat.v1 as tf\n")
    assert (out / "pkg" / "c.py").read_text() == CLEAN
    assert (out / "pkg" / "data.txt").read_text() == "not python\n"
    assert stat.S_IMODE(os.stat(out / "a.py").st_mode) == 0o755
    assert (src / "a.py").read_text() == CONVERTIBLE


def test_compat_mode_flag(tmp_path, capsys):
    f = tmp_path / "a.py"
    f.write_text(CONVERTIBLE)
    assert main(["migrate", "--mode", "compat", "--in-place", str(f)]) == 0
    assert f.read_text().startswith("import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()\n")


def test_unparsable_file_is_reported_left_alone_and_run_continues(tmp_path, capsys):
    bad = tmp_path / "old.py"
    bad.write_text("import tensorflow as tf\nprint 'x'\n")
    good = tmp_path / "new.py"
    good.write_text(CONVERTIBLE)
    assert main(["migrate", "--in-place", str(tmp_path)]) == 2
    _, err = capsys.readouterr()
    assert f"{bad}:2:" in err and "TS100 error" in err and "Python 2" in err
    assert bad.read_text() == "import tensorflow as tf\nprint 'x'\n"
    assert "tape.gradient" in good.read_text()


def test_missing_path_exits_2(tmp_path, capsys):
    assert main(["migrate", str(tmp_path / "nope.py")]) == 2
    assert "no such file or directory" in capsys.readouterr().err


def test_usage_error_exits_2(capsys):
    assert main(["migrate", "--check", "--in-place", "x.py"]) == 2
    assert main(["migrate"]) == 2


def test_json_report_to_file(tmp_path, capsys):
    src = _tree(tmp_path)
    report = tmp_path / "report.json"
    assert main(["migrate", "--check", "--report", str(report), "--format", "json", str(src)]) == 1
    doc = json.loads(report.read_text())
    assert doc["summary"]["changed"] == 2 and doc["summary"]["errors"] == 0
    by_path = {f["path"]: f for f in doc["files"]}
    b = by_path[str(src / "pkg" / "b.py")]
    assert b["mode"] == "compat"
    assert {f["code"] for f in b["findings"]} == {"TS107", "TS101"}
    a = by_path[str(src / "a.py")]
    assert any(c["rule"] == "gradients" for c in a["changes"])
    assert capsys.readouterr().err == ""


def test_python_dash_m_is_the_same_command(tmp_path):
    import subprocess
    import sys

    f = tmp_path / "a.py"
    f.write_text(CONVERTIBLE)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run([sys.executable, "-m", "tapeshift", "migrate", "--check", str(f)],
                          cwd=root, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": root})
    assert proc.returncode == 1, proc.stderr
    assert "would migrate" in proc.stdout


def test_utf8_bom_is_kept(tmp_path, capsys):
    f = tmp_path / "bom.py"
    f.write_bytes(b"\xef\xbb\xbf" + CONVERTIBLE.encode())
    assert main(["migrate", "--in-place", str(f)]) == 0
    data = f.read_bytes()
    assert data.startswith(b"\xef\xbb\xbfimport tensorflow as tf\n")
    assert b"tape.gradient(loss, W)" in data


def test_errors_reach_stderr_even_with_report_file(tmp_path, capsys):
    bad = tmp_path / "old.py"
    bad.write_text("print 'x'\n")
    assert main(["migrate", "--report", str(tmp_path / "r.txt"), str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:1:" in err and "TS100" in err
    assert "TS100 error" in (tmp_path / "r.txt").read_text()


FED = """\
import tensorflow as tf
x = tf.placeholder(tf.float32, [2])
W = tf.Variable([1.0, 2.0])
loss = tf.reduce_sum(tf.square(W * x))
train_op = tf.train.AdamOptimizer(0.1).minimize(loss)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run([train_op, loss], feed_dict={x: [1.0, 1.0]}))
"""


def test_rule_option_flags_reach_the_rules_and_the_cache_key(tmp_path, capsys):
    path = tmp_path / "fed.py"
    path.write_text(FED)
    cache = str(tmp_path / "cache")
    assert main(["migrate", "--in-place", "--cache-dir", cache, str(path)]) == 0
    plain = path.read_text()
    assert "@tf.function" not in plain and "tf.compat.v1.train.AdamOptimizer" in plain
    path.write_text(FED)  # same text: a cache hit, unless the flags are in the key
    assert main(["migrate", "--in-place", "--cache-dir", cache, "--tf-function",
                 "--keras-optimizers", str(path)]) == 0
    flagged = path.read_text()
    assert "@tf.function" in flagged and "tf.keras.optimizers.Adam(0.1, epsilon=1e-08)" in flagged
    assert "TS119" in capsys.readouterr().err
