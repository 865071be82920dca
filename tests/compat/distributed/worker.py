"""One worker of a two-process MultiWorkerMirroredStrategy (TF_CONFIG set by the test).

    python worker.py OUT.npz

Makes the strategy first (collectives are configured at program start), then
runs the same split gradients on the mirrored backend under its scope and on
the graph backend, and saves both with the replica count.
"""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

strategy = tf.distribute.MultiWorkerMirroredStrategy(
    communication_options=tf.distribute.experimental.CommunicationOptions(timeout_seconds=60))

from tapeshift.compat import split_gradient  # noqa: E402

spec = importlib.util.spec_from_file_location("mirrored_models", Path(__file__).with_name("models.py"))
models = importlib.util.module_from_spec(spec)
spec.loader.exec_module(models)

params, inputs = models.data()
saved = {}
for loss, reduction in (("mean_loss", "mean"), ("sum_loss", "sum")):
    for case in ("none", "clip_by_norm_h", "whole_o_scale_w2"):
        request = dict(cuts=models.CUTS, transforms=models.TRANSFORMS[case], batch_reduction=reduction)
        with strategy.scope():
            mirrored = split_gradient(getattr(models, loss), params, inputs, backend="mirrored", **request)
        graph = split_gradient(getattr(models, loss), params, inputs, backend="graph", **request)
        for name, r in (("mirrored", mirrored), ("graph", graph)):
            key = f"{loss}/{case}/{name}"
            saved[f"{key}/target"] = r.target
            saved[f"{key}/replicas"] = np.array(r.replicas)
            saved.update({f"{key}/grad/{n}": g for n, g in r.grads.items()})
            for s in r.stages:
                saved[f"{key}/stage/{s.name}"] = s.gradient
                saved[f"{key}/passed/{s.name}"] = s.passed
np.savez(sys.argv[1], **saved)
print("saved", len(saved), "arrays; replicas", mirrored.replicas, flush=True)
