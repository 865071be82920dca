"""tf-slim models on the graph, tape and function backends through ``tapeshift.compat.slim``.

Oracles: the same slim net built plainly in a TF1 ``tf.Graph`` and differentiated
with ``tf.gradients`` (as legacy code ran it, with the discovered initial values
assigned by name), and numpy for batch-norm statistics and small dense nets.
"""

import runpy
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
import tf_slim as slim

from tapeshift.compat import CutError
from tapeshift.compat.slim import SlimModel, SlimModelError, slim_fixes
from tapeshift.compat.testing import (
    aligned_random,
    assert_backends_agree,
    assert_close,
    assert_results_agree,
    assert_split_matches_direct,
)

# tf-slim's layers go through TF's deprecated Keras-1 layer classes, which say so
pytestmark = [pytest.mark.tf, pytest.mark.filterwarnings(
    "ignore:`layer.apply` is deprecated:UserWarning",
    "ignore:`tf.layers.flatten` is deprecated:UserWarning",
    "ignore:`layer.updates` will be removed:UserWarning",
)]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
rng = np.random.default_rng(6)
MLP_INPUTS = {
    "x": rng.normal(size=(6, 4)).astype(np.float32),
    "y": rng.normal(size=(6, 1)).astype(np.float32),
}
CNN_INPUTS = {
    "x": rng.normal(size=(4, 8, 8, 1)).astype(np.float32),
    "labels": np.array([0, 1, 2, 1], np.int32),
}


def mlp(inputs, is_training):
    with slim.arg_scope([slim.fully_connected], activation_fn=tf.tanh,
                        normalizer_fn=slim.batch_norm,
                        normalizer_params={"is_training": is_training, "decay": 0.9,
                                           "scale": True}):
        h = slim.fully_connected(inputs["x"], 5, scope="fc1")
        h = slim.fully_connected(h, 3, scope="fc2")
    out = slim.fully_connected(h, 1, activation_fn=None, scope="out")
    return tf.reduce_mean(tf.square(out - inputs["y"]))


def make_cnn(keep_prob=None):
    def cnn(inputs, is_training):
        with slim.arg_scope([slim.conv2d], kernel_size=[3, 3], normalizer_fn=slim.batch_norm,
                            normalizer_params={"is_training": is_training, "decay": 0.9}):
            h = slim.conv2d(inputs["x"], 3, scope="conv1")
            h = slim.max_pool2d(h, [2, 2], scope="pool1")
            h = slim.conv2d(h, 4, scope="conv2")
            h = slim.max_pool2d(h, [2, 2])  # unnamed: "MaxPool2D" on every backend
            h = slim.flatten(h)
            if keep_prob is not None:
                h = slim.dropout(h, keep_prob, is_training=is_training, scope="dropout")
            logits = slim.fully_connected(h, 3, activation_fn=None, scope="logits")
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=inputs["labels"], logits=logits))

    return cnn


cnn = make_cnn()


@pytest.fixture(scope="module")
def mlp_model():
    return SlimModel(mlp, MLP_INPUTS, seed=1)


@pytest.fixture(scope="module")
def cnn_model():
    return SlimModel(cnn, CNN_INPUTS, seed=2)


def legacy_graph(net, sm, inputs, cut_tensor):
    """The net built the TF1 way; direct and split gradients by tf.gradients.

    batch_norm gets updates_collections=None: tf-slim's default for 4-D inputs
    builds the Keras-1 layer, which TF 2.21 only has in tf_keras. The forward
    pass and the gradients are the same fused kernel either way.
    """
    g = tf.Graph()
    with g.as_default(), slim_fixes():
        feeds = {n: tf.constant(v) for n, v in inputs.items()}
        with slim.arg_scope([slim.batch_norm], updates_collections=None):
            loss = net(feeds, sm.is_training)
        variables = {v.op.name: v for v in tf.compat.v1.global_variables()}
        trainable = [v.op.name for v in tf.compat.v1.trainable_variables()]
        h = g.get_tensor_by_name(cut_tensor)
        xs = [variables[n] for n in trainable]
        direct = tf.gradients(loss, xs)
        # split at h: pull dloss/dh back through the layers below; above h, directly
        dl_dh = tf.gradients(loss, h)[0]
        below = tf.gradients(h, xs, grad_ys=dl_dh)
        above = tf.gradients(loss, xs, stop_gradients=[h])
        split = [b if a is None else a for a, b in zip(above, below)]
        with tf.compat.v1.Session(graph=g) as sess:
            for n, v in variables.items():
                v.load(sm.params[n], sess)
            d, s, value = sess.run([direct, split, loss])
    return {
        "names": sorted(variables),
        "trainable": trainable,
        "loss": value,
        "direct": dict(zip(trainable, d)),
        "split": dict(zip(trainable, s)),
    }


# -- direct and split gradients -------------------------------------------------


@pytest.mark.parametrize("which", ["mlp", "cnn"])
def test_backends_agree_and_match_the_legacy_graph(which, mlp_model, cnn_model):
    net, sm, inputs, cut_name, cut_tensor = {
        "mlp": (mlp, mlp_model, MLP_INPUTS, "fc1", "fc1/Tanh:0"),
        "cnn": (cnn, cnn_model, CNN_INPUTS, "pool1", "pool1/MaxPool:0"),
    }[which]
    legacy = legacy_graph(net, sm, inputs, cut_tensor)
    assert sorted(sm.params) == legacy["names"]
    assert list(sm.trainable) == legacy["trainable"]
    direct = assert_backends_agree(sm.model, sm.params, inputs, wrt=sm.trainable)
    split = assert_backends_agree(sm.model, sm.params, inputs, wrt=sm.trainable, cuts=[cut_name])
    for b in direct:
        assert_close(direct[b].target, legacy["loss"], name=f"{which} loss on {b}")
        for n in sm.trainable:
            assert_close(direct[b].grads[n], legacy["direct"][n], name=f"{b} direct {n}")
            assert_close(split[b].grads[n], legacy["split"][n], name=f"{b} split {n}")
    # the split of the legacy graph is the direct gradient too: the oracle is consistent
    for n in sm.trainable:
        assert_close(legacy["split"][n], legacy["direct"][n], name=f"legacy split {n}")


def test_split_at_intermediate_layers_equals_direct(tf_backend, mlp_model, cnn_model):
    assert_split_matches_direct(mlp_model.model, mlp_model.params, MLP_INPUTS,
                                wrt=mlp_model.trainable, cuts=["fc2", "fc1/BatchNorm"],
                                backend=tf_backend.name)
    split = assert_split_matches_direct(
        cnn_model.model, cnn_model.params, CNN_INPUTS, wrt=cnn_model.trainable,
        cuts=["conv2", "MaxPool2D", "Flatten"], backend=tf_backend.name)
    assert [s.name for s in split.stages] == ["Flatten", "MaxPool2D", "conv2"]
    assert split.stage("MaxPool2D").gradient.shape == (4, 2, 2, 4)


def test_layer_cuts_have_the_same_names_on_every_backend(tf_backend, cnn_model):
    with pytest.raises(CutError) as err:
        tf_backend.split_gradient(cnn_model.model, cnn_model.params, CNN_INPUTS,
                                  cuts=["nope"], wrt=cnn_model.trainable)
    marked = ("'conv1/BatchNorm', 'conv1', 'pool1', 'conv2/BatchNorm', 'conv2', "
              "'MaxPool2D', 'Flatten', 'logits'")
    assert f"the model marked {marked}" in str(err.value)


def siamese(inputs, is_training):
    a = slim.fully_connected(inputs["x"], 3, activation_fn=tf.tanh, scope="tower")
    b = slim.fully_connected(2.0 * inputs["x"], 3, activation_fn=tf.tanh, scope="tower",
                             reuse=True)
    return tf.reduce_sum(a * b)


def test_a_layer_reused_with_reuse_true_is_two_cuts(tf_backend):
    sm = SlimModel(siamese, MLP_INPUTS)
    assert sm.trainable == ("tower/weights", "tower/biases")
    split = assert_split_matches_direct(sm.model, sm.params, MLP_INPUTS, wrt=sm.trainable,
                                        cuts=["tower", "tower_1"], backend=tf_backend.name)
    p = {k: v.astype(np.float64) for k, v in sm.params.items()}
    a = np.tanh(MLP_INPUTS["x"] @ p["tower/weights"] + p["tower/biases"])
    b = np.tanh(2.0 * MLP_INPUTS["x"] @ p["tower/weights"] + p["tower/biases"])
    assert_close(split.stage("tower").gradient, b.astype(np.float32), name="dL/d tower")
    assert_close(split.stage("tower_1").gradient, a.astype(np.float32), name="dL/d tower_1")


def test_layer_cuts_can_be_turned_off():
    sm = SlimModel(mlp, MLP_INPUTS, layer_cuts=False)
    with pytest.raises(CutError, match="the model marked none"):
        sm.build(cuts=["fc1"])(MLP_INPUTS)


# -- batch_norm -----------------------------------------------------------------


def bn_net(updates_collections):
    def net(inputs, is_training):
        kwargs = {} if updates_collections == "default" else {
            "updates_collections": updates_collections}
        y = slim.batch_norm(inputs["x"], decay=0.9, scale=True, is_training=is_training,
                            **kwargs)
        return tf.reduce_sum(y * inputs["w"])

    return net


BN_XS = [(rng.normal(size=(5, 3)) * (k + 1) + k).astype(np.float32) for k in range(3)]
BN_W = rng.normal(size=(5, 3)).astype(np.float32)


def numpy_moving_statistics(xs, decay=0.9):
    """slim's fused batch_norm: EMA of the batch mean and of the unbiased (n-1) variance."""
    mean, var = np.zeros(3), np.ones(3)
    for x in xs:
        x = x.astype(np.float64)
        mean = decay * mean + (1 - decay) * x.mean(axis=0)
        var = decay * var + (1 - decay) * x.var(axis=0, ddof=1)
    return mean, var


@pytest.mark.parametrize("updates,shape", [
    (None, (5, 3)),
    ("default", (5, 3)),
    ("default", (5, 1, 1, 3)),
    (tf.compat.v1.GraphKeys.UPDATE_OPS, (5, 1, 1, 3)),
], ids=["in_place", "slim_default", "slim_default_4d", "update_ops_4d"])
def test_batch_norm_moving_statistics_after_n_calls(updates, shape):
    """Every call updates once on every backend. Update ops that slim puts in
    UPDATE_OPS run with the target on the graph backend; the 4-D default, which
    slim hands to the Keras-1 layer (tf_keras), stays in slim's fused kernel."""
    xs = [x.reshape(shape) for x in BN_XS]
    w = BN_W.reshape(shape)
    sm = SlimModel(bn_net(updates), {"x": xs[0], "w": w})
    assert sm.non_trainable == ("BatchNorm/moving_mean", "BatchNorm/moving_variance")
    mean, var = numpy_moving_statistics(BN_XS)
    for backend in ("graph", "tape", "function"):
        with sm.build(backend=backend) as fn:
            for x in xs:
                fn({"x": x, "w": w})
            values = fn.variable_values({"x": xs[0], "w": w})
        assert_close(values["BatchNorm/moving_mean"], mean.astype(np.float32),
                     name=f"{backend} moving_mean")
        assert_close(values["BatchNorm/moving_variance"], var.astype(np.float32),
                     name=f"{backend} moving_variance")


def test_inference_mode_uses_the_moving_statistics_carried_between_backends():
    sm = SlimModel(bn_net(None), {"x": BN_XS[0], "w": BN_W})
    with sm.build(backend="graph") as fn:
        for x in BN_XS:
            fn({"x": x, "w": BN_W})
        trained = fn.variable_values({"x": BN_XS[0], "w": BN_W})
    infer = sm.with_values(trained).with_training(False)
    mean, var = numpy_moving_statistics(BN_XS)
    x = BN_XS[1].astype(np.float64)
    expected = np.sum((x - mean) / np.sqrt(var + 0.001) * BN_W)
    runs = assert_backends_agree(infer.model, infer.params, {"x": BN_XS[1], "w": BN_W},
                                 wrt=infer.trainable)
    for b, r in runs.items():
        assert_close(r.target, np.float32(expected), name=f"inference value on {b}")
    # inference leaves the statistics alone
    with infer.build(backend="tape") as fn:
        fn({"x": BN_XS[1], "w": BN_W})
        after = fn.variable_values({"x": BN_XS[1], "w": BN_W})
    np.testing.assert_array_equal(after["BatchNorm/moving_mean"], trained["BatchNorm/moving_mean"])


def test_cnn_moving_statistics_agree_across_backends(cnn_model):
    values = {}
    for backend in ("graph", "tape", "function"):
        with cnn_model.build(backend=backend, cuts=["pool1"]) as fn:
            for _ in range(2):
                fn(CNN_INPUTS)
            values[backend] = fn.variable_values(CNN_INPUTS)
    for backend in ("tape", "function"):
        for n in cnn_model.non_trainable:
            assert_close(values[backend][n], values["graph"][n], name=f"{backend} vs graph {n}")
    moved = values["graph"]["conv1/BatchNorm/moving_mean"]
    assert np.abs(moved - cnn_model.params["conv1/BatchNorm/moving_mean"]).max() > 1e-4


# -- arg_scope, dropout -----------------------------------------------------------


def dense_net(activation, via_arg_scope):
    def net(inputs, is_training):
        if via_arg_scope:
            with slim.arg_scope([slim.fully_connected], activation_fn=activation):
                h = slim.fully_connected(inputs["x"], 3, scope="fc1")
        else:
            h = slim.fully_connected(inputs["x"], 3, activation_fn=activation, scope="fc1")
        return tf.reduce_sum(slim.fully_connected(h, 1, activation_fn=None, scope="out"))

    return net


@pytest.mark.parametrize("activation", [tf.tanh, tf.nn.softplus], ids=["tanh", "softplus"])
def test_arg_scope_applies_on_every_backend(tf_backend, activation):
    scoped = SlimModel(dense_net(activation, True), MLP_INPUTS)
    explicit = SlimModel(dense_net(activation, False), MLP_INPUTS).with_values(scoped.params)
    relu = SlimModel(dense_net(tf.nn.relu, False), MLP_INPUTS).with_values(scoped.params)
    p = {k: v.astype(np.float64) for k, v in scoped.params.items()}
    act = {tf.tanh: np.tanh, tf.nn.softplus: lambda z: np.log1p(np.exp(z))}[activation]
    h = act(MLP_INPUTS["x"] @ p["fc1/weights"] + p["fc1/biases"])
    expected = np.sum(h @ p["out/weights"] + p["out/biases"])
    a = tf_backend.gradient(scoped.model, scoped.params, MLP_INPUTS, wrt=scoped.trainable)
    b = tf_backend.gradient(explicit.model, explicit.params, MLP_INPUTS, wrt=explicit.trainable)
    c = tf_backend.gradient(relu.model, relu.params, MLP_INPUTS, wrt=relu.trainable)
    assert_close(a.target, np.float32(expected), name="arg_scope value vs numpy")
    assert_results_agree(a, b, what="arg_scope vs explicit activation")
    assert abs(float(a.target) - float(c.target)) > 1e-3  # slim's default (relu) differs


def test_arg_scope_normalizer_adds_batch_norm_variables():
    def net(inputs, is_training):
        with slim.arg_scope([slim.fully_connected], normalizer_fn=slim.batch_norm):
            return tf.reduce_sum(slim.fully_connected(inputs["x"], 2, scope="fc"))

    sm = SlimModel(net, MLP_INPUTS)
    assert [v.name for v in sm.variables] == [
        "fc/weights", "fc/BatchNorm/beta", "fc/BatchNorm/moving_mean",
        "fc/BatchNorm/moving_variance"]
    assert_backends_agree(sm.model, sm.params, MLP_INPUTS, wrt=sm.trainable)


def test_dropout_is_aligned_across_backends_and_calls():
    net = make_cnn(keep_prob=0.5)
    sm = SlimModel(net, CNN_INPUTS, seed=2)
    no_dropout = SlimModel(cnn, CNN_INPUTS).with_values(sm.params)
    with aligned_random(3):
        runs = assert_backends_agree(sm.model, sm.params, CNN_INPUTS, wrt=sm.trainable,
                                     cuts=["dropout"])
        with sm.build(backend="tape", cuts=["dropout"]) as fn:
            fn(CNN_INPUTS)
            again = fn(CNN_INPUTS)
        assert_split_matches_direct(sm.model, sm.params, CNN_INPUTS, wrt=sm.trainable,
                                    cuts=["dropout", "conv2"], backend="function")
        plain = no_dropout.build(backend="tape")(CNN_INPUTS)
    assert_results_agree(again, runs["tape"], what="second aligned call vs first")
    # the mask is real: half the features are dropped, so the loss changes
    assert abs(float(runs["graph"].target) - float(plain.target)) > 1e-4
    # in inference mode dropout is the identity
    infer = sm.with_training(False)
    infer_plain = no_dropout.with_training(False)
    for backend in ("graph", "function"):
        with infer.build(backend=backend) as f, infer_plain.build(backend=backend) as g:
            assert_close(f.value(CNN_INPUTS), g.value(CNN_INPUTS), name=f"inference on {backend}")


def regularized_net(inputs, is_training):
    with slim.arg_scope([slim.fully_connected], weights_regularizer=slim.l2_regularizer(0.5)):
        h = slim.fully_connected(inputs["x"], 3, activation_fn=tf.tanh, scope="fc1")
        h = slim.fully_connected(h, 1, activation_fn=None, scope="fc2")
    scale = slim.model_variable("scale", shape=[1], regularizer=slim.l2_regularizer(0.25),
                                initializer=tf.compat.v1.constant_initializer(1.5))
    return tf.reduce_sum(h) * scale[0] + tf.compat.v1.losses.get_regularization_loss()


def test_regularization_losses_are_the_same_on_every_backend(tf_backend):
    """Keras-1 layers (fully_connected) and get_variable (model_variable) regularizers
    both reach tf.losses.get_regularization_loss() once per variable, on every backend."""
    sm = SlimModel(regularized_net, MLP_INPUTS)
    p = {k: v.astype(np.float64) for k, v in sm.params.items()}
    h = np.tanh(MLP_INPUTS["x"] @ p["fc1/weights"] + p["fc1/biases"])
    data = np.sum(h @ p["fc2/weights"] + p["fc2/biases"])
    penalty = 0.25 * (np.sum(p["fc1/weights"] ** 2) + np.sum(p["fc2/weights"] ** 2)) + 0.125 * 1.5**2
    with sm.build(backend=tf_backend.name) as fn:
        first, second = fn(MLP_INPUTS), fn(MLP_INPUTS)
    assert_close(first.target, np.float32(data * 1.5 + penalty), name="value vs numpy")
    assert_results_agree(second, first, what="second call vs first")  # no accumulation
    dpen = 0.5 * p["fc2/weights"]  # d(0.25 * sum w^2)/dw
    assert_close(first.grads["fc2/weights"],
                 (1.5 * h.sum(axis=0, keepdims=True).T + dpen).astype(np.float32),
                 name="d/d fc2/weights vs numpy")


# -- variables: reuse, names, carrying, errors -------------------------------------


def test_eager_calls_reuse_variables_with_the_graph_names(mlp_model):
    created = []

    def record(next_creator, **kwargs):
        created.append(kwargs.get("name"))
        return next_creator(**kwargs)

    with mlp_model.build(backend="tape") as fn:
        fn(MLP_INPUTS)  # the backend makes its variables here, once
        variables = fn.compiled(MLP_INPUTS).variables
        before = {n: v for n, v in variables.items()}
        with tf.variable_creator_scope(record):
            for _ in range(3):
                fn(MLP_INPUTS)
        after = fn.compiled(MLP_INPUTS).variables
    assert created == []
    assert all(after[n] is before[n] for n in before)
    assert [v.name for v in before.values()] == [f"{n}:0" for n in mlp_model.params]
    # the net really ran on them: four training calls moved the statistics
    assert not np.allclose(before["fc1/BatchNorm/moving_mean"].numpy(), 0.0)
    legacy = legacy_graph(mlp, mlp_model, MLP_INPUTS, "fc1/Tanh:0")
    assert sorted(before) == legacy["names"]


def test_values_carry_between_backends_by_name(mlp_model):
    with mlp_model.build(backend="function") as fn:
        fn(MLP_INPUTS)
        values = fn.variable_values(MLP_INPUTS)
    carried = mlp_model.with_values(values)
    assert carried.params is not mlp_model.params
    for n in mlp_model.params:
        np.testing.assert_array_equal(carried.params[n], values[n])
    assert_backends_agree(carried.model, carried.params, MLP_INPUTS, wrt=carried.trainable)
    with pytest.raises(SlimModelError, match="'fc9/weights', which is not a variable"):
        mlp_model.with_values({"fc9/weights": np.zeros(3)})
    with pytest.raises(SlimModelError, match=r"'fc1/weights' has shape \(3,\).*\(4, 5\)"):
        mlp_model.with_values({"fc1/weights": np.zeros(3)})


WIDTH = {"fc": 3}


def changing_net(inputs, is_training):
    h = slim.fully_connected(inputs["x"], WIDTH["fc"], scope="fc")
    if not is_training:
        h = slim.fully_connected(h, 2, scope="eval_head")
    return tf.reduce_sum(h)


def test_error_names_a_variable_the_discovery_run_did_not_make(tf_backend):
    sm = SlimModel(changing_net, MLP_INPUTS).with_training(False)
    with pytest.raises(SlimModelError, match=r"'eval_head/weights' .* inference mode, which "
                                             r"the discovery run did not create"):
        tf_backend.gradient(sm.model, sm.params, MLP_INPUTS, wrt=sm.trainable)


def test_error_names_a_variable_whose_shape_changed(tf_backend, monkeypatch):
    sm = SlimModel(changing_net, MLP_INPUTS)
    monkeypatch.setitem(WIDTH, "fc", 5)
    with pytest.raises(SlimModelError, match=r"'fc/weights' with shape \(4, 5\) .* discovery "
                                             r"run made it with shape \(4, 3\)"):
        tf_backend.gradient(sm.model, sm.params, MLP_INPUTS, wrt=sm.trainable)


def test_error_names_a_variable_made_around_get_variable():
    def net(inputs, is_training):
        scale = tf.Variable(2.0, name="loose_scale")
        return tf.reduce_sum(slim.fully_connected(inputs["x"], 2, scope="fc")) * scale

    with pytest.raises(SlimModelError, match="'loose_scale'.* not through tf.compat.v1.get_variable"):
        SlimModel(net, MLP_INPUTS)


def test_missing_parameters_are_named(mlp_model):
    params = dict(mlp_model.params)
    del params["out/biases"]
    with pytest.raises(SlimModelError, match=r"\['out/biases'\] are not among the parameters"):
        mlp_model.model(params, MLP_INPUTS)


def test_discovery_is_seeded():
    a, b = SlimModel(mlp, MLP_INPUTS, seed=1), SlimModel(mlp, MLP_INPUTS, seed=1)
    c = SlimModel(mlp, MLP_INPUTS, seed=4)
    np.testing.assert_array_equal(a.params["fc1/weights"], b.params["fc1/weights"])
    assert not np.allclose(a.params["fc1/weights"], c.params["fc1/weights"])


# -- the example --------------------------------------------------------------------


def test_slim_cnn_example(capsys):
    runpy.run_path(str(EXAMPLES / "slim_cnn.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "split at 'pool1' == direct on every backend: True" in out
    assert "backends agree (gradients and moving statistics): True" in out
    rows = [line.split()[0] for line in out.splitlines() if line.split()[:1] in (
        ["graph"], ["tape"], ["function"])]
    assert rows == ["graph", "tape", "function"]
