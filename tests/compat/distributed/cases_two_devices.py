"""The mirrored backend on two replicas: run by tests/compat/test_mirrored.py as

    python -m pytest cases_two_devices.py -o python_files=cases_*.py --tf-logical-cpus 2

in a process of its own (logical devices are configured before TensorFlow
starts, which the main test session has already done with one CPU). Every case
compares with the graph backend at the float32 tolerance of
tapeshift.compat.testing (rtol 1e-5, atol 1e-6 scaled by the largest value).
"""

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from tapeshift.compat import (
    DevicesInitializedError,
    ReplicaMismatchError,
    ReplicaWarning,
    clip_by_norm,
    clip_by_value,
    gradient,
    logical_cpus,
    split_gradient,
)
from tapeshift.compat.testing import assert_close, assert_results_agree

pytestmark = pytest.mark.tf

_spec = importlib.util.spec_from_file_location("mirrored_models", Path(__file__).with_name("models.py"))
models = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(models)

PARAMS, INPUTS = models.data()


def both(loss, **request):
    """(mirrored, graph) results of one split-gradient request."""
    return tuple(split_gradient(loss, PARAMS, INPUTS, backend=b, **request)
                 for b in ("mirrored", "graph"))


def test_two_logical_cpus_are_two_replicas():
    assert [d.name for d in tf.config.list_logical_devices("CPU")] == ["/device:CPU:0", "/device:CPU:1"]
    logical_cpus(2)  # asked again: nothing to do
    with pytest.raises(DevicesInitializedError, match=r"logical_cpus\(3\): TensorFlow has already "
                       r"initialised its devices \(2 logical CPUs\).*--tf-logical-cpus 3"):
        logical_cpus(3)


@pytest.mark.parametrize("case", sorted(models.TRANSFORMS))
@pytest.mark.parametrize("loss, reduction", [("mean_loss", "mean"), ("sum_loss", "sum")])
def test_split_with_transforms_equals_graph(case, loss, reduction):
    m, g = both(getattr(models, loss), cuts=models.CUTS, transforms=models.TRANSFORMS[case],
                batch_reduction=reduction)
    assert m.replicas == 2 and g.replicas == 1
    assert_results_agree(m, g, what=f"mirrored vs graph, {loss}, {case}")
    assert not any("per_replica" in n for n in m.notes)


def test_the_norm_clip_clips_on_one_device_and_on_the_replicas():
    # the case above is only a test of the norm clip if the clip is active
    m, g = both(models.mean_loss, cuts=models.CUTS, transforms=models.TRANSFORMS["clip_by_norm_h"])
    assert g.stage("h").norm > 0.05 * 4
    assert m.stage("h").passed_norm == pytest.approx(0.05, rel=1e-5)


def test_sum_target_under_the_default_mean_is_refused_with_the_fix():
    with pytest.raises(ReplicaMismatchError, match=r"target 'target' on 2 replicas .* One device's "
                       r"value is 2x the replicas': the target sums over the batch; pass "
                       r"batch_reduction='sum'"):
        split_gradient(models.sum_loss, PARAMS, INPUTS, cuts=models.CUTS, backend="mirrored")


def test_sum_target_with_check_off_is_half_of_one_device():
    # what the check prevents: every number is 1/R of one device's (a clip-free split is linear)
    m = split_gradient(models.sum_loss, PARAMS, INPUTS, cuts=models.CUTS, backend="mirrored",
                       replica_check="off")
    _, g = both(models.sum_loss, cuts=models.CUTS, batch_reduction="sum")
    assert_close(m.target, g.target / 2, name="target")
    for n in g.grads:
        assert_close(m.grads[n], g.grads[n] / 2, name=f"gradient {n!r}")


def test_per_replica_norm_clip_clips_each_shard_and_warns():
    transforms = {"h": clip_by_norm(0.05)}
    with pytest.warns(ReplicaWarning, match=r"transform clip_by_norm\(0.05\) at cut 'h' sees each "
                      r"replica's 8 of the 16 rows of the stage gradient; it is not elementwise"):
        m = split_gradient(models.mean_loss, PARAMS, INPUTS, cuts=models.CUTS,
                           transforms=transforms, backend="mirrored",
                           replica_transforms="per_replica")
    _, g = both(models.mean_loss, cuts=models.CUTS, transforms=transforms)
    # the same stage gradient arrives; each replica clips its own 8 rows to norm 0.05
    assert_close(m.stage("h").gradient, g.stage("h").gradient, name="stage h")
    raw = g.stage("h").gradient
    shards = [raw[:8], raw[8:]]
    expected = np.concatenate([s * 0.05 / max(np.linalg.norm(s), 0.05) for s in shards])
    assert_close(m.stage("h").passed, expected, name="stage h passed on")
    assert m.stage("h").passed_norm == pytest.approx(0.05 * np.sqrt(2), rel=1e-5)
    assert not np.allclose(m.grads["W1"], g.grads["W1"], rtol=0.05)
    assert any("per_replica" in n for n in m.notes)


def test_per_replica_elementwise_transform_is_still_exact():
    transforms = {"h": clip_by_value(-0.004, 0.004)}
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReplicaWarning)
        m = split_gradient(models.mean_loss, PARAMS, INPUTS, cuts=models.CUTS,
                           transforms=transforms, backend="mirrored",
                           replica_transforms="per_replica")
    _, g = both(models.mean_loss, cuts=models.CUTS, transforms=transforms)
    assert_results_agree(m, g, what="per_replica clip_by_value")


def test_per_example_target_with_upstream_and_input_gradient():
    upstream = np.random.default_rng(1).normal(size=(models.BATCH, 1)).astype(np.float32)
    m, g = both(models.per_example, cuts=["h", "o"], upstream=upstream, wrt=["W1", "x"],
                transforms={"h": clip_by_norm(0.5)})
    assert m.target.shape == (models.BATCH, 1) and m.grads["x"].shape == (models.BATCH, 4)
    assert_results_agree(m, g, what="per-example target")


def test_examples_mixed_by_batch_statistics_are_refused_or_warned():
    with pytest.raises(ReplicaMismatchError, match=r"on one device over all 16: .* mixes the "
                       r"examples of a batch"):
        split_gradient(models.batch_statistics, PARAMS, INPUTS, cuts=["h"], backend="mirrored")
    with pytest.warns(ReplicaWarning, match="mixes the examples"):
        m = split_gradient(models.batch_statistics, PARAMS, INPUTS, cuts=["h"], backend="mirrored",
                           replica_check="warn")
    assert any("mixes the examples" in n for n in m.notes)


def test_batches_that_do_not_split_are_refused_naming_the_input():
    odd = {n: v[:15] for n, v in INPUTS.items()}
    with pytest.raises(ValueError, match=r"batch of 15 examples \(input 'x'\) does not split "
                       r"evenly across 2 replicas"):
        split_gradient(models.mean_loss, PARAMS, odd, cuts=["h"], backend="mirrored")
    ragged = {"x": INPUTS["x"][:14], "y": INPUTS["y"]}
    with pytest.raises(ValueError, match=r"input 'x' has 14 rows and 'y' has 16"):
        split_gradient(models.mean_loss, PARAMS, ragged, cuts=["h"], backend="mirrored")


def test_unmodified_tf1_tower_net():
    import tensorflow.compat.v1 as v1

    from tapeshift.compat.tf1_model import TF1Model

    def tower(x):
        with v1.variable_scope("tower", reuse=v1.AUTO_REUSE):
            return v1.layers.dense(x, 3, activation=v1.tanh, name="fc")

    def net(inputs, is_training):  # TF1 code, as it was
        h = tower(inputs["x"]) + tower(2.0 * inputs["x"])
        return v1.reduce_mean(v1.square(v1.layers.dense(h, 1) - inputs["y"]))

    tm = TF1Model(net, INPUTS)
    m, g = (gradient(tm.model, tm.params, INPUTS, wrt=tm.trainable, backend=b)
            for b in ("mirrored", "graph"))
    assert m.replicas == 2
    assert_results_agree(m, g, what="TF1 tower net")


# -- the pytest plugin: with two devices the default set has mirrored ---------
GRAPH = split_gradient(models.mean_loss, PARAMS, INPUTS, cuts=models.CUTS,
                       transforms=models.TRANSFORMS["clip_by_value_h_norm_w2"], backend="graph")


def test_user_test_on_every_default_backend(tf_backend):
    r = tf_backend.split_gradient(models.mean_loss, PARAMS, INPUTS, cuts=models.CUTS,
                                  transforms=models.TRANSFORMS["clip_by_value_h_norm_w2"])
    assert r.replicas == (2 if tf_backend.name == "mirrored" else 1)
    assert_results_agree(r, GRAPH, what=f"{tf_backend.name} vs graph")


@pytest.mark.tf_backends("graph", "mirrored")
def test_user_test_restricted_to_graph_and_mirrored(tf_backend):
    assert tf_backend.name in ("graph", "mirrored")
    value = tf_backend.value(models.mean_loss, PARAMS, INPUTS)
    assert_close(value, GRAPH.target, name=f"{tf_backend.name} value")
