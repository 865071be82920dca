"""Models the mirrored backend is tested on, in a process with two replicas
(cases_two_devices.py, under --tf-logical-cpus 2) and in two worker processes
of a MultiWorkerMirroredStrategy (worker.py). Not a test module: imported by path."""

import numpy as np
import tensorflow as tf

from tapeshift.compat import clip_by_norm, clip_by_value, cut, mask, scale

BATCH = 16
CUTS = ["h", "w2", "o"]  # h and o have a row per example (sharded), w2 is the same everywhere


def data(seed: int = 0):
    rng = np.random.default_rng(seed)
    params = {"W1": rng.normal(size=(4, 8)).astype(np.float32),
              "b1": rng.normal(size=(8,)).astype(np.float32) * 0.1,
              "W2": rng.normal(size=(8, 1)).astype(np.float32)}
    inputs = {"x": rng.normal(size=(BATCH, 4)).astype(np.float32),
              "y": rng.normal(size=(BATCH, 1)).astype(np.float32)}
    return params, inputs


def _net(p, i):
    h = cut("h", tf.tanh(i["x"] @ p["W1"] + p["b1"]))
    w2 = cut("w2", 1.5 * p["W2"])
    return cut("o", h @ w2) - i["y"]


def mean_loss(p, i):
    return tf.reduce_mean(tf.square(_net(p, i)))


def sum_loss(p, i):
    return tf.reduce_sum(tf.square(_net(p, i)))


def per_example(p, i):
    return tf.square(_net(p, i))


def batch_statistics(p, i):
    """Normalised by the batch's own mean and variance: mixes the examples."""
    h = tf.tanh(i["x"] @ p["W1"] + p["b1"])
    m, v = tf.nn.moments(h, [0])
    h = cut("h", (h - m) / tf.sqrt(v + 1e-3))
    return tf.reduce_mean(tf.square(h @ p["W2"] - i["y"]))


def max_normalised(g):
    """A transform of the whole stage gradient: neither elementwise nor a norm clip."""
    return g / (1e-3 + tf.reduce_max(tf.abs(g)))


def row_mask():
    """One 0/1 entry per example and unit of h: a mask with the batch as its first axis."""
    return (np.arange(BATCH * 8).reshape(BATCH, 8) % 3 != 0).astype(np.float32)


# transforms at the cuts, each a case: name -> transforms
TRANSFORMS = {
    "none": {},
    "clip_by_norm_h": {"h": clip_by_norm(0.05)},
    "clip_by_value_h_norm_w2": {"h": clip_by_value(-0.004, 0.004), "w2": clip_by_norm(0.1)},
    "whole_o_scale_w2": {"o": max_normalised, "w2": scale(0.5)},
    "row_mask_h_value_w2": {"h": mask(row_mask()), "w2": clip_by_value(-0.2, 0.2)},
}
