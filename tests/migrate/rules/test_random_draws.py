"""Random ops in fed TF1 graphs, as GAN and VAE scripts write them::

    def xavier_init(shape):
        return tf.random_normal(shape=shape, stddev=1.0 / shape[0])

    W = tf.Variable(xavier_init([100, 128]))     # an initial value: drawn once
    z = tf.random_normal([batch_size, 100])        # drawn again at every sess.run

A random op outside a variable's initial value draws new numbers each time a
session runs it, so the feeds rule recomputes its statement in the step
functions, as it does a statement that reads a fed value. A function whose
draws only ever become initial values (every use of it is a call inside
``tf.Variable(...)``) is an initialiser: its draws happen once, as in TF1.
"""


import pytest

from tapeshift.migrate.engine.pipeline import migrate_source
from rule_programs import findings, migrated, src as _src  # tests/support

TIMEOUT = 300  # seconds per TensorFlow run (the machine is shared and slow)


NOISE = _src("""
    import numpy as np
    import tensorflow as tf

    def xavier_init(shape):
        return tf.random_normal(shape=shape, stddev=1.0 / shape[0])

    x = tf.placeholder(tf.float32, [None, 3])
    W = tf.Variable(xavier_init([3, 2]))
    noise = tf.random_normal([2], stddev=0.1)
    loss = tf.reduce_sum(tf.square(tf.matmul(x, W) + noise))
    train = tf.train.GradientDescentOptimizer(0.05).minimize(loss)

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(4):
            _, l = sess.run([train, loss], feed_dict={x: np.ones((2, 3), np.float32)})
            print(step, l)
        print(sess.run(W))
""")


def test_a_random_op_nothing_feeds_is_drawn_again_in_each_step():
    r = migrated(NOISE)
    assert r.mode == "tape", findings(r)
    step = r.output.split("def run_train_loss(x):", 1)[1].split("\n\n\n", 1)[0]
    assert "    noise = tf.random.normal([2], stddev=0.1)\n" in step
    # not drawn once at module level as well
    assert r.output.count("noise = tf.random.normal") == 1
    assert ("TS116", 9, "random op recomputed at each step: the legacy run and the migrated run "
            "draw different numbers") in findings(r)
    assert not migrate_source(r.output, "f.py").changed


def test_an_initialiser_helper_draws_once_where_the_variable_is_made():
    r = migrated(NOISE)
    assert "def xavier_init(shape):\n    return tf.random.normal(shape=shape, stddev=1.0 / shape[0])" \
        in r.output
    assert "\nW = tf.Variable(xavier_init([3, 2]))\n" in r.output
    assert not any(f.code == "TS108" for f in r.findings), findings(r)


def test_a_helper_also_called_outside_an_initial_value_still_blocks():
    src = NOISE.replace("noise = tf.random_normal([2], stddev=0.1)", "noise = xavier_init([2])")
    r = migrated(src)
    assert r.mode == "compat"
    assert any(f.code == "TS108" and f.line == 5 and "random op" in f.message
               for f in r.findings), findings(r)


def test_a_helper_passed_around_by_name_still_blocks():
    src = NOISE.replace("    print(sess.run(W))\n", "    print(sess.run(W))\n    f = xavier_init\n")
    r = migrated(src)
    assert r.mode == "compat"
    assert any(f.code == "TS108" and f.line == 5 for f in r.findings), findings(r)


def test_a_variable_made_from_a_draw_of_another_statement_is_not_converted():
    src = NOISE.replace("W = tf.Variable(xavier_init([3, 2]))",
                        "init = tf.random_normal([3, 2])\nW = tf.Variable(init)")
    r = migrated(src)
    assert r.mode == "compat"
    assert any(f.code == "TS107" and "initial value depends on a fed or computed tensor"
               in f.message for f in r.findings), findings(r)


@pytest.mark.tf
@pytest.mark.slow
def test_an_initialiser_helper_computes_the_legacy_numbers(tmp_path):
    from tapeshift.migrate.legacy.verify import verify_sources

    # the noise fed from NumPy: --seed aligns it; xavier_init's draw is aligned by order
    source = NOISE.replace("noise = tf.random_normal([2], stddev=0.1)",
                           "noise = tf.placeholder(tf.float32, [2])").replace(
        "feed_dict={x: np.ones((2, 3), np.float32)}",
        "feed_dict={x: np.ones((2, 3), np.float32), noise: np.random.normal(0, 0.1, 2)}")
    r = migrated(source)
    assert r.mode == "tape", findings(r)
    report = verify_sources(source, r.output, tmp_path / "f.py", timeout=TIMEOUT, seed=0,
                            align_random=True)
    assert report.status == "ok", report.to_text()
    printed = [row for row in report.rows if row.name.startswith("stdout:") and row.compared]
    assert len(printed) == 5, report.to_text()


@pytest.mark.tf
@pytest.mark.slow
def test_noise_drawn_in_each_step_computes_the_legacy_numbers(tmp_path):
    from tapeshift.migrate.legacy.verify import verify_sources

    # --align-random keys the legacy op by each session run, the step's draw by its call
    report = verify_sources(NOISE, migrated(NOISE).output, tmp_path / "f.py", timeout=TIMEOUT,
                            align_random=True)
    assert report.status == "ok", report.to_text()
    printed = [row for row in report.rows if row.name.startswith("stdout:") and row.compared]
    assert len(printed) == 5, report.to_text()
    assert report.legacy.align["run_draws"] == report.new.align["order_draws"] == 5


def test_a_draw_inside_a_mapped_function_does_not_pull_the_pipeline_into_the_steps():
    r = migrated(_src("""
        import numpy as np
        import tensorflow as tf

        data = np.ones((8, 2), np.float32)
        ds = tf.data.Dataset.from_tensor_slices(data).map(lambda v: v + tf.random_normal([2]))
        x = ds.repeat().batch(4).make_one_shot_iterator().get_next()
        w = tf.Variable(tf.ones([2]))
        loss = tf.reduce_sum(x * w)
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for i in range(3):
                print(sess.run([train, loss])[1])
    """))
    assert r.mode == "compat", r.output
    assert "def run_" not in r.output


def test_initializer_of_a_call_that_makes_no_variable_is_a_value_of_every_run():
    # tf.scan(..., initializer=noise([2])): drawn at every sess.run, not once
    for init in ("noise([2])", "tf.random_normal([2])"):
        r = migrated(_src(f"""
            import tensorflow as tf

            def noise(shape):
                return tf.random_normal(shape)

            w = tf.Variable(tf.ones([2]))
            h = tf.scan(lambda a, r: a + r * w, tf.ones([3, 2]), initializer={init})
            total = tf.reduce_sum(h)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                for i in range(3):
                    print(sess.run(total))
        """))
        assert r.mode == "compat", (init, r.output)
        assert any(f.code == "TS108" and "random op" in f.message for f in r.findings), findings(r)
