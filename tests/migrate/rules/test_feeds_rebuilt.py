"""Graph code that tutorials build in the session block and functions that read the graph's names.

* A placeholder made after training, with part of the model rebuilt on it under
  the same name (aymericdamien's VAE: ``decoder`` on a grid of ``noise_input``).
  Each run computes the binding that reaches it, as TF1 did.
* A loss function that reads the model's tensors as globals
  (``vae_loss`` reads ``z_mean``, ``z_std``): those become its parameters.
"""

import pytest

from tapeshift.migrate.engine.pipeline import migrate_source
from rule_programs import (assert_left_compat, codes, findings, migrated, src as _src,
                           verified_prints)  # tests/support

VAE = _src("""
    import numpy as np
    import tensorflow as tf

    data = np.linspace(0.0, 1.0, 24, dtype=np.float32).reshape(6, 4)
    W_enc = tf.Variable(tf.ones([4, 2]) * 0.1)
    W_mean = tf.Variable([[0.3, -0.2], [0.1, 0.2]])
    W_std = tf.Variable([[0.05, 0.1], [-0.1, 0.05]])
    W_dec = tf.Variable(tf.ones([2, 4]) * 0.2)

    # Building the encoder
    input_image = tf.placeholder(tf.float32, shape=[None, 4])
    encoder = tf.nn.tanh(tf.matmul(input_image, W_enc))
    z_mean = tf.matmul(encoder, W_mean)
    z_std = tf.matmul(encoder, W_std)
    eps = tf.random_normal(tf.shape(z_std), dtype=tf.float32, mean=0., stddev=1.0)
    z = z_mean + tf.exp(z_std / 2) * eps

    # Building the decoder
    decoder = tf.matmul(z, W_dec)
    decoder = tf.nn.sigmoid(decoder)


    # Define VAE Loss
    def vae_loss(x_reconstructed, x_true):
        encode_decode_loss = -tf.reduce_sum(tf.square(x_true - x_reconstructed), 1)
        # KL Divergence loss
        kl_div_loss = 1 + z_std - tf.square(z_mean) - tf.exp(z_std)
        kl_div_loss = -0.5 * tf.reduce_sum(kl_div_loss, 1)
        return tf.reduce_mean(-encode_decode_loss + kl_div_loss)

    loss_op = vae_loss(decoder, input_image)
    train_op = tf.train.RMSPropOptimizer(learning_rate=0.01).minimize(loss_op)

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(4):
            _, l = sess.run([train_op, loss_op], feed_dict={input_image: data})
            print('Step %i, Loss: %f' % (i, l))
        print('reconstructed', sess.run(decoder, feed_dict={input_image: data[:2]}))

        # Generator takes noise as input
        noise_input = tf.placeholder(tf.float32, shape=[None, 2])
        # Rebuild the decoder to create data from noise
        decoder = tf.matmul(noise_input, W_dec)
        decoder = tf.nn.sigmoid(decoder)

        for k in range(3):
            z_mu = np.array([[k - 1.0, 1.0 - k]], np.float32)
            print('generated', sess.run(decoder, feed_dict={noise_input: z_mu}))
""")


def test_a_placeholder_made_after_training_and_a_rebuilt_decoder_reach_tape_form():
    r = migrated(VAE)
    assert r.mode == "tape", findings(r)
    assert [f.code for f in r.findings if f.severity != "info"] == []
    # the run before the rebuild computes the first decoder, the runs after it the second
    assert _src('''
        def run_decoder_1(noise_input):
            """sess.run(decoder) as a function of the fed values."""
            noise_input = tf.convert_to_tensor(noise_input, tf.float32)
            decoder = tf.matmul(noise_input, W_dec)
            decoder = tf.nn.sigmoid(decoder)
            return decoder.numpy()
    ''') in r.output
    assert "def run_decoder(input_image):" in r.output
    first = r.output.split("def run_decoder(input_image):")[1].split("\ndef ")[0]
    assert "decoder = tf.matmul(z, W_dec)" in first and "noise_input" not in first
    # (the comments of the code that moved head the code that runs it)
    assert r.output.endswith(_src('''
        print('reconstructed', run_decoder(input_image=data[:2]))

        # Generator takes noise as input
        # Rebuild the decoder to create data from noise
        for k in range(3):
            z_mu = np.array([[k - 1.0, 1.0 - k]], np.float32)
            print('generated', run_decoder_1(noise_input=z_mu))
    '''))
    # a placeholder's comment goes with the graph code it heads
    assert "    # Building the encoder\n    with tf.GradientTape() as tape:\n" in r.output
    assert "tf.placeholder" not in r.output
    assert not migrate_source(r.output, "f.py").changed


def test_a_loss_function_reading_the_models_tensors_is_given_them():
    r = migrated(VAE)
    assert "def vae_loss(x_reconstructed, x_true, z_std, z_mean):\n" in r.output
    assert "        loss_op = vae_loss(decoder, input_image, z_std=z_std, z_mean=z_mean)\n" \
        in r.output
    # it stays where it was, with its comments
    assert "\n# Define VAE Loss\ndef vae_loss(" in r.output
    assert any("`vae_loss` reads the graph values `z_std`, `z_mean`" in c.description
               for c in r.changes), r.changes


@pytest.mark.tf
@pytest.mark.slow
def test_the_rebuilt_decoder_and_the_given_loss_keep_the_legacy_numbers(tmp_path):
    # (eps is drawn at each step: --align-random gives both runs one stream)
    prints = verified_prints(VAE, tmp_path / "vae.py", seed=0, align_random=True)
    assert len(prints) == 4 + 1 + 3


LOSS_OF_A_PLACEHOLDER = _src("""
    import numpy as np
    import tensorflow as tf

    x = tf.placeholder(tf.float32, [None, 2])
    y = tf.placeholder(tf.float32, [None, 1])
    W = tf.Variable([[0.5], [-0.3]])


    def mse(pred):
        return tf.reduce_mean(tf.square(pred - y))


    def model(inputs):
        return tf.matmul(inputs, W)

    loss = mse(model(x))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    xs = np.array([[1.0, 2.0], [0.5, -1.0], [0.0, 1.0]], np.float32)
    ys = np.array([[1.0], [0.0], [0.5]], np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(5):
            print(sess.run([train, loss], feed_dict={x: xs, y: ys})[1])
        print(sess.run(mse(model(x) * 2), feed_dict={x: xs, y: ys}))
""")

TRAINED_ON_MSE = LOSS_OF_A_PLACEHOLDER.replace(
    "    print(sess.run(mse(model(x) * 2), feed_dict={x: xs, y: ys}))\n", "")


def test_a_loss_function_reading_a_placeholder_takes_it():
    r = migrated(TRAINED_ON_MSE)
    assert r.mode == "tape", findings(r)
    assert "def mse(pred, y):\n" in r.output
    assert "        loss = mse(model(x), y=y)\n" in r.output
    # (`model` reads only a variable: it is left as it is)
    assert "def model(inputs):\n    return tf.matmul(inputs, W)\n" in r.output
    assert not migrate_source(r.output, "f.py").changed


def test_a_function_also_called_in_a_fetch_is_left_as_it_is():
    # the fetch calls it where the step function would not pass it the placeholder
    r = migrated(LOSS_OF_A_PLACEHOLDER)
    assert r.mode == "compat", codes(r)
    assert any(f.code == "TS107" and "`y` is a graph value used outside the graph code"
               in f.message for f in r.findings), findings(r)


@pytest.mark.tf
@pytest.mark.slow
def test_the_given_placeholder_keeps_the_legacy_numbers(tmp_path):
    assert len(verified_prints(TRAINED_ON_MSE, tmp_path / "mse.py")) == 5


@pytest.mark.parametrize("change, why", [
    # the placeholder is bound twice: which one a run feeds depends on where it is
    (("    noise_input = tf.placeholder(tf.float32, shape=[None, 2])\n",
      "    noise_input = tf.placeholder(tf.float32, shape=[None, 2])\n"
      "    noise_input = tf.placeholder(tf.float32, shape=[None, 2])\n"),
     "which is not a placeholder or a tensor of this graph"),
    # rebuilt in the loop: not graph code the codemod reads (bound once per pass)
    (("        z_mu = np.array", "        decoder = tf.nn.sigmoid(decoder)\n"
                                "        z_mu = np.array"),
     "`decoder` is bound again after the session by code that is not graph code"),
    # the function is also called outside graph code: it reads the globals there
    (("    sess.run(tf.global_variables_initializer())\n",
      "    sess.run(tf.global_variables_initializer())\n"
      "    print(vae_loss(0.5, 0.5))\n"),
     "`z_std` is a graph value used outside the graph code"),
])
def test_rebuilt_graph_code_and_loss_functions_it_leaves_to_tf1(change, why):
    assert_left_compat(VAE, change, "TS107", why)


def test_a_run_in_a_function_of_a_rebuilt_name_stays_compat():
    # a function defined before the session, called after it: which decoder it
    # reads depends on when it is called
    shown = _src("""
        def show(sess):
            print(sess.run(decoder, feed_dict={input_image: data[:1]}))

    """)
    program = VAE.replace("    for k in range(3):\n", "    decoder = tf.nn.sigmoid(z_mean)\n"
                          "    show(sess)\n    for k in range(3):\n")
    assert_left_compat(program, ("with tf.Session() as sess:\n",
                                 shown + "with tf.Session() as sess:\n"),
                       "TS107", "`decoder` is bound again after the session, and this run is "
                       "in a function")


def test_a_loss_function_with_keyword_arguments_is_left_as_it_is():
    assert_left_compat(VAE, ("def vae_loss(x_reconstructed, x_true):",
                             "def vae_loss(x_reconstructed, x_true, **options):"),
                       "TS107", "`z_std` is a graph value used outside the graph code")


def test_a_train_op_reading_a_name_rebuilt_after_it_stays_compat():
    # the update runs last in its step function, where `loss` would be the new one
    assert_left_compat(LOSS_OF_A_PLACEHOLDER, (
        "    print(sess.run(mse(model(x) * 2), feed_dict={x: xs, y: ys}))\n",
        "    loss = tf.reduce_mean(tf.abs(tf.matmul(x, W) - y))\n"
        "    print(sess.run([train, loss], feed_dict={x: xs, y: ys}))\n"),
        "TS107", "`loss` is bound again after the update that reads it")


REBUILT_UNDER = _src("""
    import numpy as np
    import tensorflow as tf

    USE_TANH = True
    X = np.arange(6, dtype=np.float32).reshape(3, 2) / 6.0
    W = tf.Variable([[1.0], [-1.0]])
    x = tf.placeholder(tf.float32, [None, 2])
    out = tf.matmul(x, W)
    train = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_mean(out ** 2))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(3):
            sess.run(train, feed_dict={x: X})
        if USE_TANH:
            out = tf.tanh(out)
        print(sess.run(out, feed_dict={x: X}))
""")


@pytest.mark.parametrize("rebuilt", [
    "    if USE_TANH:\n        out = tf.tanh(out)\n",
    "    for _ in range(2):\n        out = tf.tanh(out)\n",
    "    out += 10.0\n",
], ids=["if", "for", "augmented"])
def test_a_graph_name_rebuilt_by_other_code_in_the_session_block_stays_compat(rebuilt):
    # the codemod does not follow which binding the run after it reads
    r = migrated(REBUILT_UNDER.replace("    if USE_TANH:\n        out = tf.tanh(out)\n", rebuilt))
    assert r.mode == "compat", codes(r)
    assert any(f.code == "TS107" and "`out` is bound again after the session by code that is "
               "not graph code" in f.message for f in r.findings), findings(r)


def test_a_loss_function_with_a_default_takes_the_graph_values_by_keyword_only():
    src = VAE.replace("def vae_loss(x_reconstructed, x_true):",
                      "def vae_loss(x_reconstructed, x_true, beta=1.0):").replace(
        "    kl_div_loss = -0.5 * tf.reduce_sum(kl_div_loss, 1)\n",
        "    kl_div_loss = -0.5 * beta * tf.reduce_sum(kl_div_loss, 1)\n")
    r = migrated(src)
    assert r.mode == "tape", codes(r)
    assert "def vae_loss(x_reconstructed, x_true, beta=1.0, *, z_std, z_mean):\n" in r.output
    assert "vae_loss(decoder, input_image, z_std=z_std, z_mean=z_mean)" in r.output


def test_a_feed_dict_made_after_training_is_no_graph_code():
    src = VAE.replace(
        "        print('generated', sess.run(decoder, feed_dict={noise_input: z_mu}))\n",
        "        grid = {noise_input: z_mu}\n"
        "        print('generated', sess.run(decoder, feed_dict=grid))\n")
    r = migrated(src)
    assert r.mode == "tape", codes(r)
    assert "    grid = {\"noise_input\": z_mu}\n" in r.output
    assert "print('generated', run_decoder_1(**grid))" in r.output
