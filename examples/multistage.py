"""A 3-layer network split at every layer, with the gradient clipped at one cut.

Written against ``compat``: the same model runs on the TF1 graph backend, the
TF2 tape and tf.function, and the script shows that they agree, that the split
without a transform equals the direct gradient, and what the clip changed.

    python examples/multistage.py
"""

import numpy as np

from tapeshift.compat import BACKENDS, build, clip_by_norm, reference
from tapeshift.compat.testing import compare

params = reference.multistage_params()
inputs = reference.multistage_inputs()
model = reference.multistage_model  # see compat/reference.py

cuts = list(reference.MULTISTAGE_CUTS)
clip = {"h2": clip_by_norm(reference.MULTISTAGE_CLIP_NORM)}
results = {}
for backend in BACKENDS:
    with build(model, params, backend=backend, target_name="loss") as direct_fn, \
            build(model, params, cuts=cuts, backend=backend, target_name="loss") as split_fn, \
            build(model, params, cuts=cuts, transforms=clip, backend=backend,
                  target_name="loss") as clipped_fn:
        results[backend] = (direct_fn(inputs), split_fn(inputs), clipped_fn(inputs))

print(f"{'backend':9} {'stage':6} {'|g| in':>10} {'|g| out':>10}")
for backend, (direct, split, clipped) in results.items():
    for stage in clipped.stages:
        print(f"{backend:9} {stage.name:6} {stage.norm:10.5f} {stage.passed_norm:10.5f}"
              + (f"  {stage.transform}" if stage.transform else ""))

direct, split, clipped = results["graph"]
split_ok = all(compare(r[1].grads[n], r[0].grads[n])[0] for r in results.values() for n in params)
agree = all(compare(r[2].grads[n], clipped.grads[n])[0] for r in results.values() for n in params)
print("split without transform == direct on every backend:", split_ok)
print("clipped split agrees across backends:", agree)
for n in params:
    change = np.linalg.norm(clipped.grads[n] - direct.grads[n])
    print(f"clip at h2 changed d loss/d {n} by {change:.5f}"
          + ("  (above the cut: unchanged)" if change == 0 else ""))
