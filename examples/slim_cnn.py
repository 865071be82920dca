"""A tf-slim CNN, unchanged legacy code, split at an intermediate layer on all backends.

The net builds its own variables the TF1 way (conv2d, max_pool2d, batch_norm,
flatten, fully_connected under arg_scope). ``tapeshift.compat.slim.SlimModel`` finds them
once, then runs the same function on the TF1 graph backend, the TF2 tape and
tf.function with the backend's variables. The script shows that the gradient
split at the output of ``pool1`` equals the direct gradient on every backend,
and that gradients and batch-norm moving statistics agree across backends.

    python examples/slim_cnn.py
"""

import warnings

import numpy as np
import tensorflow as tf
import tf_slim as slim

from tapeshift.compat import BACKENDS
from tapeshift.compat.slim import SlimModel
from tapeshift.compat.testing import compare

# tf-slim's layers go through TF's deprecated Keras-1 layer classes, which say so
warnings.filterwarnings("ignore", r"`(layer\.apply|tf\.layers\.flatten|layer\.updates)`",
                        UserWarning)


def net(inputs, is_training):
    """Legacy slim code: nothing here knows about tapeshift."""
    with slim.arg_scope([slim.conv2d], kernel_size=[3, 3], normalizer_fn=slim.batch_norm,
                        normalizer_params={"is_training": is_training, "decay": 0.9}):
        h = slim.conv2d(inputs["images"], 4, scope="conv1")
        h = slim.max_pool2d(h, [2, 2], scope="pool1")
        h = slim.conv2d(h, 8, scope="conv2")
        h = slim.max_pool2d(h, [2, 2], scope="pool2")
        logits = slim.fully_connected(slim.flatten(h), 3, activation_fn=None, scope="logits")
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=inputs["labels"], logits=logits))


rng = np.random.default_rng(0)
inputs = {
    "images": rng.normal(size=(8, 12, 12, 1)).astype(np.float32),
    "labels": rng.integers(0, 3, size=8).astype(np.int32),
}
model = SlimModel(net, inputs, seed=0)  # initial values as tf.set_random_seed(0) drew them
STEPS = 3  # calls per backend; each one updates the moving statistics once

results = {}
for backend in BACKENDS:
    with model.build(backend=backend) as direct_fn, \
            model.build(backend=backend, cuts=["pool1"]) as split_fn:
        for _ in range(STEPS):
            direct, split = direct_fn(inputs), split_fn(inputs)
        stats = direct_fn.variable_values(inputs)
    results[backend] = (direct, split, stats)


def max_diff(a, b):
    return max(float(np.max(np.abs(a[n] - b[n]))) for n in a)


print(f"slim CNN: {len(model.trainable)} trainable variables, "
      f"{len(model.non_trainable)} moving statistics")
print(f"{'backend':9} {'loss':>10} {'|dL/dpool1|':>12} {'max|split-direct|':>18} "
      f"{'max|grad-graph|':>16} {'max|stats-graph|':>17}")
split_ok, agree = True, True
g_direct, _, g_stats = results["graph"]
for backend, (direct, split, stats) in results.items():
    for n in model.trainable:
        split_ok &= compare(split.grads[n], direct.grads[n])[0]
        agree &= compare(direct.grads[n], g_direct.grads[n])[0]
    for n in model.non_trainable:
        agree &= compare(stats[n], g_stats[n])[0]
    print(f"{backend:9} {float(direct.target):10.6f} {split.stage('pool1').norm:12.6f} "
          f"{max_diff(split.grads, direct.grads):18.2e} "
          f"{max_diff(direct.grads, g_direct.grads):16.2e} "
          f"{max_diff({n: stats[n] for n in model.non_trainable}, g_stats):17.2e}")
print(f"split at 'pool1' == direct on every backend: {split_ok}")
print(f"backends agree (gradients and moving statistics): {agree}")
