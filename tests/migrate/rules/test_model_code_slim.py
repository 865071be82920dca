"""tf-slim's fully_connected outside a model function becomes a tf-keras Dense layer made once.

``tf.contrib.layers.fully_connected`` at module level (janFrancoo's PCA autoencoder,
hunkim's RNN labs) makes its weights and biases where the line runs. The
model-code rule reads it as the ``tf.layers.dense`` call of the same arguments, so
the file no longer needs tf-slim (model_code_slim.py).
"""

import pytest

from tapeshift.migrate.engine.pipeline import migrate_source
from rule_programs import (assert_left_compat, codes, findings, migrated, src as _src,
                           verified_prints)  # tests/support

AUTOENCODER = _src("""
    import numpy as np
    import tensorflow as tf
    from tensorflow.contrib.layers import fully_connected

    data = np.linspace(0.0, 1.0, 30, dtype=np.float32).reshape(10, 3)
    x = tf.placeholder(tf.float32, shape=[None, 3])
    hidden = fully_connected(x, 2, activation_fn=None)
    outputs = fully_connected(hidden, 3)

    loss = tf.reduce_mean(tf.square(outputs - x))
    train = tf.train.AdamOptimizer(learning_rate=0.01).minimize(loss)

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(20):
            sess.run(train, feed_dict={x: data})
        print(loss.eval(feed_dict={x: data}))
        output_2d = hidden.eval(feed_dict={x: data})
    print(output_2d)
""")


def test_fully_connected_at_module_level_becomes_a_dense_layer():
    r = migrated(AUTOENCODER)
    assert r.mode == "tape", findings(r)
    # the TF1 defaults written out: ReLU unless activation_fn says otherwise (the
    # first arguments keep their places: Dense's are slim's)
    assert 'hidden_layer = tf_keras.layers.Dense(2, activation=None, ' \
        'name="fully_connected")\n' in r.output
    assert 'outputs_layer = tf_keras.layers.Dense(3, activation=tf.nn.relu, ' \
        'name="fully_connected_1")\n' in r.output
    assert "        hidden = hidden_layer(x)\n        outputs = outputs_layer(hidden)\n" in r.output
    # tf-slim is no longer needed: its import goes, and TS118 with it
    assert "tf_slim" not in r.output and "contrib" not in r.output
    assert "import tf_keras\n" in r.output
    assert "TS118" not in [f.code for f in r.findings]
    # the report says what a checkpoint reader must know
    assert any("tf-slim named them weights and biases" in c.description for c in r.changes)
    assert not migrate_source(r.output, "f.py").changed


def test_the_arguments_go_to_their_dense_counterparts():
    src = AUTOENCODER.replace(
        "fully_connected(hidden, 3)",
        "fully_connected(hidden, 3, activation_fn=tf.nn.sigmoid,\n"
        "                          weights_initializer=tf.ones_initializer(),\n"
        "                          biases_initializer=None, scope='out')")
    r = migrated(src)
    assert r.mode == "tape", findings(r)
    # (named after its scope, as a named tf.layers layer is; its lines kept)
    assert 'out = tf_keras.layers.Dense(3, activation=tf.nn.sigmoid,\n' \
        '                          kernel_initializer=tf.compat.v1.ones_initializer(),\n' \
        '                          use_bias=False, name="out")\n' in r.output
    assert "        outputs = out(hidden)\n" in r.output


def test_a_call_over_several_lines_keeps_its_layout_and_comments():
    src = AUTOENCODER.replace(
        "fully_connected(hidden, 3)",
        "fully_connected(\n"
        "    inputs=hidden,\n"
        "    num_outputs=3,  # one per input\n"
        "    weights_initializer=tf.ones_initializer())")
    r = migrated(src)
    assert r.mode == "tape", findings(r)
    # slim's ReLU default and the name go last, a line each like the others (the
    # comment that ends a line is not copied)
    assert 'outputs_layer = tf_keras.layers.Dense(\n' \
        '    units=3,  # one per input\n' \
        '    kernel_initializer=tf.compat.v1.ones_initializer(),\n' \
        '    activation=tf.nn.relu,\n' \
        '    name="fully_connected_1")\n' in r.output


@pytest.mark.parametrize("change, why", [
    # Dense has no normalizer
    (("fully_connected(hidden, 3)",
      "fully_connected(hidden, 3, normalizer_fn=tf.contrib.layers.batch_norm)"),
     "`fully_connected(..., normalizer_fn=...)`: a tf-keras Dense layer has no place for it"),
    # slim adds a regularizer's loss to a collection the program reads
    (("fully_connected(hidden, 3)",
      "fully_connected(hidden, 3, weights_regularizer=tf.contrib.layers.l2_regularizer(0.1))"),
     "weights_regularizer=...)`: a tf-keras Dense layer has no place for it"),
    # a Saver finds the variables by their TF1 names
    (("with tf.Session() as sess:\n", "saver = tf.train.Saver()\nwith tf.Session() as sess:\n"),
     "a Saver finds tf-slim's variables by their names (weights, biases)"),
])
def test_fully_connected_it_leaves_to_tf1(change, why):
    assert_left_compat(AUTOENCODER, change, "TS125", why)


def test_a_model_function_of_slim_layers_is_still_shared_with_make_template():
    src = _src("""
        import tensorflow as tf
        slim = tf.contrib.slim

        def model(x):
            return slim.fully_connected(x, 2)

        x = tf.placeholder(tf.float32, [None, 3])
        y = model(x)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            print(sess.run(y, feed_dict={x: [[1.0, 2.0, 3.0]]}))
    """)
    r = migrated(src)
    assert r.mode == "tape", codes(r)
    assert 'model = tf.compat.v1.make_template("model", model)' in r.output
    assert "return slim.fully_connected(x, 2)" in r.output


@pytest.mark.tf
@pytest.mark.slow
@pytest.mark.parametrize("program", [
    AUTOENCODER,
    AUTOENCODER.replace("fully_connected(hidden, 3)",
                        "fully_connected(hidden, 3, biases_initializer=None, "
                        "weights_initializer=tf.ones_initializer())"),
], ids=["defaults", "no-bias"])
def test_the_dense_layers_keep_the_legacy_numbers(program, tmp_path):
    # (the weights are drawn: --align-random keys tf-slim's weights as Dense's kernel)
    assert len(verified_prints(program, tmp_path / "ae.py", seed=0, align_random=True)) == 2


def test_a_tf_slim_name_left_keeps_the_file_on_tf_slim():
    # variance_scaling_initializer stays tf-slim's: the file still needs tf-slim (TS118)
    assert_left_compat(AUTOENCODER, ("fully_connected(hidden, 3)",
                                     "fully_connected(hidden, 3, weights_initializer="
                                     "tf.contrib.layers.variance_scaling_initializer())"),
                       "TS118", "uses tf-slim")
