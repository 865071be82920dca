"""run-legacy runs tf.contrib.slim code with batch_norm, as TF1 did, on current TF.

tf-slim 1.1.0's batch_norm fails on TF 2.21 as shipped (ops.Tensor is gone;
4-D input with the default update collection asks for tf_keras); run-legacy
applies tapeshift.compat.slim's fixes. Oracle: the same net through tapeshift.compat.slim on the
graph backend, in this process."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tapeshift.compat.slim import SlimModel
from tapeshift.migrate.legacy.printed import printed_numbers

pytestmark = pytest.mark.tf

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = """\
import numpy as np
import tensorflow as tf
{slim_import}

x = tf.constant(np.linspace(-1.0, 1.0, 2 * 6 * 6 * 2, dtype=np.float32).reshape(2, 6, 6, 2))
with slim.arg_scope([slim.conv2d, slim.fully_connected],
                    weights_initializer=tf.constant_initializer(0.1)):
    h = slim.conv2d(x, 3, [3, 3], normalizer_fn=slim.batch_norm, scope="conv1")
    h = slim.max_pool2d(h, [2, 2], scope="pool1")
    out = slim.fully_connected(slim.flatten(h), 1, activation_fn=None, scope="fc")
loss = tf.reduce_mean(tf.square(out))
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run(loss))
"""


def net(inputs, is_training):
    import tf_slim as slim

    with slim.arg_scope([slim.conv2d, slim.fully_connected],
                        weights_initializer=tf.compat.v1.constant_initializer(0.1)):
        h = slim.conv2d(inputs["x"], 3, [3, 3], normalizer_fn=slim.batch_norm, scope="conv1")
        h = slim.max_pool2d(h, [2, 2], scope="pool1")
        out = slim.fully_connected(slim.flatten(h), 1, activation_fn=None, scope="fc")
    return tf.reduce_mean(tf.square(out))


@pytest.mark.slow
def test_slim_batch_norm_script_runs_and_matches_compat_slim(tmp_path):
    x = np.linspace(-1.0, 1.0, 2 * 6 * 6 * 2, dtype=np.float32).reshape(2, 6, 6, 2)
    sm = SlimModel(net, {"x": x})
    with sm.build(backend="graph") as fn:
        expected = float(fn.value({"x": x}))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}
    for form in ("slim = tf.contrib.slim", "import tensorflow.contrib.slim as slim",
                 "from tensorflow.contrib import slim"):
        script = tmp_path / "bn_tf1.py"
        script.write_text(SCRIPT.format(slim_import=form))
        p = subprocess.run([sys.executable, "-m", "tapeshift", "run-legacy", str(script)],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-2000:]
        [loss] = printed_numbers(p.stdout)
        np.testing.assert_allclose(loss, expected, rtol=1e-5, atol=1e-6)  # float32
