"""``tf.contrib.summary`` -> ``tf.summary`` (rules/contrib_summary.py)."""

import os
import subprocess
import sys

import pytest

from tapeshift.migrate.engine.pipeline import migrate_source
from rule_programs import findings, migrated, src as _src  # tests/support

TIMEOUT = 300  # seconds per TensorFlow run (the machine is shared and slow)


WRITER = _src("""
    import tensorflow as tf

    writer = tf.contrib.summary.create_file_writer(LOGDIR, flush_millis=1000)
    step = tf.train.get_or_create_global_step()
    w = tf.Variable(1.5)
    with writer.as_default(), tf.contrib.summary.record_summaries_every_n_global_steps(2, step):
        for i in range(5):
            w.assign(w * 2.0)
            tf.contrib.summary.scalar("loss", w * 3.0)
            tf.contrib.summary.histogram(name="w", tensor=w, step=step)
            step.assign_add(1)
    with writer.as_default(), tf.contrib.summary.always_record_summaries():
        tf.contrib.summary.scalar("final", w, step=10)
    tf.contrib.summary.flush(writer)
""")


def test_contrib_summaries_become_tf_summary_with_the_global_step():
    r = migrated(WRITER)
    assert r.mode == "tape", findings(r)
    assert r.output == _src("""
        import tensorflow as tf

        writer = tf.summary.create_file_writer(LOGDIR, flush_millis=1000)
        step = tf.compat.v1.train.get_or_create_global_step()
        w = tf.Variable(1.5)
        with writer.as_default(), tf.summary.record_if(lambda: tf.equal(step % 2, 0)):
            for i in range(5):
                w.assign(w * 2.0)
                tf.summary.scalar("loss", w * 3.0, step=tf.compat.v1.train.get_or_create_global_step())
                tf.summary.histogram(name="w", data=w, step=step)
                step.assign_add(1)
        with writer.as_default(), tf.summary.record_if(True):
            tf.summary.scalar("final", w, step=10)
        tf.summary.flush(writer)
    """)
    # what is written differs in form, said once, as information
    assert [(f.code, f.line) for f in r.findings] == [("TS133", 3)], findings(r)
    assert not migrate_source(r.output, "f.py").changed


def test_the_defaults_of_the_recording_conditions_are_written_out():
    r = migrated(_src("""
        import tensorflow as tf

        gs = tf.train.get_or_create_global_step()
        with tf.contrib.summary.record_summaries_every_n_global_steps(100):
            tf.contrib.summary.scalar("a", 1.0)
        with tf.contrib.summary.record_summaries_every_n_global_steps(2 * 5, gs + 1):
            tf.contrib.summary.scalar("b", 2.0, step=gs + 1)
        with tf.contrib.summary.never_record_summaries():
            print(tf.contrib.summary.should_record_summaries())
    """))
    assert r.mode == "tape", findings(r)
    assert "tf.summary.record_if(lambda: tf.equal(" \
        "tf.compat.v1.train.get_or_create_global_step() % 100, 0))" in r.output
    # operands of % in parentheses where they need them
    assert "tf.summary.record_if(lambda: tf.equal((gs + 1) % (2 * 5), 0))" in r.output
    assert 'tf.summary.scalar("b", 2.0, step=gs + 1)' in r.output
    assert "with tf.summary.record_if(False):\n    print(tf.summary.should_record_summaries())" \
        in r.output


@pytest.mark.parametrize("call", [
    'tf.contrib.summary.scalar("loss", loss, family="train")',
    'tf.contrib.summary.image("img", images, max_images=1)',
    'tf.contrib.summary.audio("a", images, 8000, 2)',
    "tf.contrib.summary.generic('t', loss)",
    "tf.contrib.summary.summary_writer_initializer_op()",
    "tf.contrib.summary.scalar(*args)",
])
def test_what_tf_summary_has_no_counterpart_for_stays_and_is_reported(call):
    r = migrated(_src(f"""
        import tensorflow as tf

        loss = images = red = args = None
        {call}
    """))
    assert r.mode == "compat"
    assert any(f.code == "TS117" and "tf.contrib.summary is gone" in f.message
               for f in r.findings), findings(r)
    assert not any(f.code == "TS109" for f in r.findings), findings(r)


def test_in_compat_mode_the_functions_are_compat_v2_s():
    r = migrated(WRITER, "compat")
    assert r.mode == "compat"
    assert "import tensorflow.compat.v1 as tf" in r.output
    assert "writer = tf.compat.v2.summary.create_file_writer(LOGDIR, flush_millis=1000)" \
        in r.output
    assert 'tf.compat.v2.summary.scalar("loss", w * 3.0, ' \
        "step=tf.train.get_or_create_global_step())" in r.output
    assert "contrib" not in r.output


@pytest.mark.tf
@pytest.mark.slow
def test_the_migrated_writer_records_every_second_step(tmp_path):
    """Run the migration under TF2 and read its event file back: the values TF1's
    contrib summaries computed, at the steps its condition recorded."""
    logdir = tmp_path / "logs"
    script = tmp_path / "writer.py"
    script.write_text(f"LOGDIR = {str(logdir)!r}\n" + migrated(WRITER).output)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=TIMEOUT, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    reader = tmp_path / "read.py"
    reader.write_text(_src(f"""
        import glob
        import tensorflow as tf
        for path in sorted(glob.glob({str(logdir)!r} + "/*")):
            for event in tf.compat.v1.train.summary_iterator(path):
                for v in event.summary.value:
                    data = tf.make_ndarray(v.tensor)
                    print(event.step, v.tag, v.metadata.plugin_data.plugin_name,
                          data.tolist() if data.ndim == 0 else data.shape)
    """))
    read = subprocess.run([sys.executable, str(reader)], capture_output=True, text=True,
                          timeout=TIMEOUT, env=env)
    assert read.returncode == 0, read.stderr[-3000:]
    lines = read.stdout.splitlines()
    # w doubles from 1.5 before each write: 3, 6, 12, 24, 48; recorded at steps 0, 2, 4
    assert [ln for ln in lines if " loss " in ln] == [
        "0 loss scalars 9.0", "2 loss scalars 36.0", "4 loss scalars 144.0"]
    assert [ln.split()[0] for ln in lines if " w histograms " in ln] == ["0", "2", "4"]
    assert "10 final scalars 48.0" in lines
