"""Unmodified TF1 model functions on the graph, tape and function backends (``TF1Model``).

One net per construct: ``get_variable`` under every reuse form, ``tf.compat.v1.layers``
(dense, conv2d, batch_normalization, dropout, flatten, pooling) and tf-slim.

Oracles: the same net built plainly in a TF1 ``tf.Graph`` (TF1's own variable
store, ``tf.gradients``; the discovered values loaded by name), and numpy for
forward values and batch-norm statistics. The only help the oracle graph gets is
``tf1_layers.legacy_layers()`` (on Keras 3, ``tf.compat.v1.layers`` is tf-keras'
legacy module, as with TF_USE_LEGACY_KERAS=1) and ``slim_fixes()``.
"""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow.compat.v1 as tf1  # the `import tensorflow.compat.v1 as tf` spelling
import tf_slim as slim
from tensorflow.compat.v1 import layers as v1_layers

from tapeshift.compat import CutError
from tapeshift.compat import tf1_layers
from tapeshift.compat.slim import SlimModel
from tapeshift.compat.testing import (
    aligned_random,
    assert_backends_agree,
    assert_close,
    assert_results_agree,
    assert_split_matches_direct,
)
from tapeshift.compat.tf1_model import TF1Model, TF1ModelError

# the legacy layers say they are deprecated; slim's go through TF's own copy of them
pytestmark = [pytest.mark.tf, pytest.mark.filterwarnings(
    r"ignore:`tf\.layers\.[a-z_0-9]+` is deprecated:UserWarning",
    "ignore:`layer.apply` is deprecated:UserWarning",
    "ignore:`layer.updates` will be removed:UserWarning",
    r"ignore:`tf\.nn\.rnn_cell\.[A-Za-z]+` is deprecated:UserWarning",
)]
v1 = tf.compat.v1
BACKENDS = ("graph", "tape", "function")
rng = np.random.default_rng(17)
X = rng.normal(size=(6, 4)).astype(np.float32)
INPUTS = {
    "x": X,
    "x2": rng.normal(size=(6, 4)).astype(np.float32),
    "y": rng.normal(size=(6, 1)).astype(np.float32),
}
IMAGES = {
    "x": rng.normal(size=(4, 8, 8, 1)).astype(np.float32),
    "labels": np.array([0, 1, 2, 1], np.int32),
}


def f64(params):
    return {k: np.asarray(v, np.float64) for k, v in params.items()}


def legacy_graph(net, model, inputs, *, is_training=True):
    """The net built the TF1 way in its own graph; target and tf.gradients, by variable name."""
    g = tf.Graph()
    with g.as_default(), tf1_layers.legacy_layers(), tf1_layers.slim_fixes():
        feeds = {n: tf.constant(v) for n, v in inputs.items()}
        loss = net(feeds, is_training)
        variables = {v.op.name: v for v in v1.global_variables()}
        trainable = [v.op.name for v in v1.trainable_variables()]
        grads = tf.gradients(loss, [variables[n] for n in trainable])
        with v1.Session(graph=g) as sess:
            for n, v in variables.items():
                v.load(model.params[n], sess)
            value, d = sess.run([loss, grads])
    return {"names": list(variables), "trainable": trainable, "loss": value,
            "grads": dict(zip(trainable, d))}


def assert_matches_legacy(net, model, inputs, results):
    legacy = legacy_graph(net, model, inputs, is_training=model.is_training)
    assert list(model.params) == legacy["names"]
    assert list(model.trainable) == legacy["trainable"]
    for b, r in results.items():
        assert_close(r.target, legacy["loss"], name=f"target on {b} vs the TF1 graph")
        for n in model.trainable:
            assert_close(r.grads[n], legacy["grads"][n], name=f"d/d {n} on {b} vs the TF1 graph")
    return legacy


# -- get_variable under variable_scope: every reuse form ----------------------------------


def tower(x):
    with v1.variable_scope("tower", reuse=v1.AUTO_REUSE):
        w = v1.get_variable("w", [4, 3])  # default initializer: glorot uniform
        b = v1.get_variable("b", [3], initializer=v1.zeros_initializer())
        return tf.tanh(tf.matmul(x, w) + b)


def siamese(inputs, is_training):
    a, b = tower(inputs["x"]), tower(inputs["x2"])  # the second call reuses the first's variables
    return tf.reduce_sum(tf.square(a - b)) + tf.reduce_sum(a)


def reuse_true(inputs, is_training):
    with v1.variable_scope("enc", initializer=v1.truncated_normal_initializer(stddev=0.5)):
        w = v1.get_variable("w", [4, 3])
        scale = v1.get_variable("scale", [], initializer=v1.constant_initializer(1.5),
                                trainable=False)
    with v1.variable_scope("enc", reuse=True):
        w_again = v1.get_variable("w")  # no shape: the store's variable
        scale_again = v1.get_variable("scale")
    a = tf.tanh(tf.matmul(inputs["x"], w)) * scale
    b = tf.tanh(tf.matmul(2.0 * inputs["x"], w_again)) * scale_again
    return tf.reduce_mean(tf.square(a + b - inputs["y"]))


def fc(x, units):
    with v1.variable_scope("fc"):
        w = v1.get_variable("w", [x.shape[-1], units])
        b = v1.get_variable("b", [units], initializer=v1.constant_initializer(0.1))
        return tf.nn.softplus(tf.matmul(x, w) + b)


def reuse_variables(inputs, is_training):
    with v1.variable_scope("shared") as scope:
        a = fc(inputs["x"], 2)
        scope.reuse_variables()
        b = fc(inputs["x2"], 2)
    return tf.reduce_sum(a * b)


def numpy_siamese(p):
    a = np.tanh(X @ p["tower/w"] + p["tower/b"])
    b = np.tanh(INPUTS["x2"] @ p["tower/w"] + p["tower/b"])
    return np.sum((a - b) ** 2) + np.sum(a)


def numpy_reuse_true(p):
    a = np.tanh(X @ p["enc/w"]) * p["enc/scale"]
    b = np.tanh(2.0 * X @ p["enc/w"]) * p["enc/scale"]
    return np.mean((a + b - INPUTS["y"]) ** 2)


def numpy_reuse_variables(p):
    def softplus(z):
        return np.log1p(np.exp(z))

    a = softplus(X @ p["shared/fc/w"] + p["shared/fc/b"])
    b = softplus(INPUTS["x2"] @ p["shared/fc/w"] + p["shared/fc/b"])
    return np.sum(a * b)


@pytest.mark.parametrize("net,names,trainable,numpy_value", [
    (siamese, ["tower/w", "tower/b"], ["tower/w", "tower/b"], numpy_siamese),
    (reuse_true, ["enc/w", "enc/scale"], ["enc/w"], numpy_reuse_true),
    (reuse_variables, ["shared/fc/w", "shared/fc/b"], ["shared/fc/w", "shared/fc/b"],
     numpy_reuse_variables),
], ids=["auto_reuse_siamese", "reuse_true", "scope_reuse_variables"])
def test_get_variable_reuse_forms_share_variables_on_every_backend(
        net, names, trainable, numpy_value):
    model = TF1Model(net, INPUTS, seed=3)
    assert [v.name for v in model.variables] == names  # one set, though the net asks twice
    assert list(model.trainable) == trainable
    direct = assert_backends_agree(model, inputs=INPUTS)
    legacy = assert_matches_legacy(net, model, INPUTS, direct)
    for b, r in direct.items():
        assert_close(r.target, np.float32(numpy_value(f64(model.params))), name=f"target on {b}")
        assert set(r.grads) == set(trainable)  # trainable=False is not differentiated
    # the shared weight's gradient sums both uses: it is not the gradient of one call
    assert np.abs(legacy["grads"][names[0]]).max() > 1e-3


def test_get_variable_initializers_are_the_discovery_runs():
    siamese_model = TF1Model(siamese, INPUTS, seed=3)
    bound = np.sqrt(6.0 / (4 + 3))  # glorot uniform, get_variable's default
    w = siamese_model.params["tower/w"]
    assert 0 < np.abs(w).max() <= bound and w.std() > bound / 4
    np.testing.assert_array_equal(siamese_model.params["tower/b"], np.zeros(3, np.float32))
    np.testing.assert_array_equal(TF1Model(siamese, INPUTS, seed=3).params["tower/w"], w)
    assert not np.allclose(TF1Model(siamese, INPUTS, seed=4).params["tower/w"], w)
    enc = TF1Model(reuse_true, INPUTS).params
    assert enc["enc/scale"] == np.float32(1.5)
    assert 0 < np.abs(enc["enc/w"]).max() <= 1.0  # the scope's truncated normal (2 stddev)
    shared = TF1Model(reuse_variables, INPUTS).params
    np.testing.assert_array_equal(shared["shared/fc/b"], np.full(2, 0.1, np.float32))


def test_reuse_true_without_the_variable_fails_in_discovery_as_in_tf1():
    def net(inputs, is_training):
        with v1.variable_scope("enc", reuse=True):
            return tf.reduce_sum(inputs["x"] @ v1.get_variable("w", [4, 3]))

    with pytest.raises(ValueError, match="Variable enc/w does not exist"):
        TF1Model(net, INPUTS)


# -- tf.compat.v1.layers ------------------------------------------------------------------


def make_mlp(rate=None):
    def mlp(inputs, is_training):
        h = tf.compat.v1.layers.dense(inputs["x"], 5, activation=tf.tanh)
        h = tf.compat.v1.layers.batch_normalization(h, momentum=0.9, training=is_training)
        if rate is not None:
            h = tf.compat.v1.layers.dropout(h, rate, training=is_training)
        h = tf.compat.v1.layers.dense(h, 3, activation=tf.tanh)
        out = tf.compat.v1.layers.dense(h, 1, name="out")
        return tf.reduce_mean(tf.square(out - inputs["y"]))

    return mlp


mlp = make_mlp()
MLP_NAMES = ["dense/kernel", "dense/bias", "batch_normalization/gamma",
             "batch_normalization/beta", "batch_normalization/moving_mean",
             "batch_normalization/moving_variance", "dense_1/kernel", "dense_1/bias",
             "out/kernel", "out/bias"]


def cnn(inputs, is_training):
    h = tf1.layers.conv2d(inputs["x"], 3, 3, padding="same", name="conv1")
    h = tf1.nn.relu(tf1.layers.batch_normalization(h, momentum=0.9, training=is_training,
                                                   name="bn1"))
    h = tf1.layers.max_pooling2d(h, 2, 2)
    h = tf1.layers.conv2d(h, 4, 3, padding="same", activation=tf1.nn.relu)
    h = tf1.layers.average_pooling2d(h, 2, 2)
    logits = tf1.layers.dense(tf1.layers.flatten(h), 3, name="logits")
    return tf1.reduce_mean(tf1.nn.sparse_softmax_cross_entropy_with_logits(
        labels=inputs["labels"], logits=logits))


@pytest.fixture(scope="module")
def mlp_model():
    return TF1Model(mlp, INPUTS, seed=1)


@pytest.fixture(scope="module")
def cnn_model():
    return TF1Model(cnn, IMAGES, seed=2)


def test_tf_layers_make_their_variables_through_get_variable_with_tf1_names(mlp_model, cnn_model):
    assert [v.name for v in mlp_model.variables] == MLP_NAMES
    assert mlp_model.non_trainable == ("batch_normalization/moving_mean",
                                       "batch_normalization/moving_variance")
    assert list(cnn_model.params) == [
        "conv1/kernel", "conv1/bias", "bn1/gamma", "bn1/beta", "bn1/moving_mean",
        "bn1/moving_variance", "conv2d/kernel", "conv2d/bias", "logits/kernel", "logits/bias"]
    # the default kernel initializer is TF1's graph-seeded glorot uniform: same seed, same values
    again = TF1Model(mlp, INPUTS, seed=1)
    for n in MLP_NAMES:
        np.testing.assert_array_equal(again.params[n], mlp_model.params[n])
    assert not np.allclose(TF1Model(mlp, INPUTS, seed=5).params["dense/kernel"],
                           mlp_model.params["dense/kernel"])

    def default(inputs, is_training):
        return tf.reduce_sum(tf.compat.v1.layers.dense(inputs["x"], 5))

    def explicit(inputs, is_training):  # the default is TF1's glorot uniform, graph-seeded
        return tf.reduce_sum(tf.compat.v1.layers.dense(
            inputs["x"], 5, kernel_initializer=v1.glorot_uniform_initializer()))

    np.testing.assert_array_equal(TF1Model(default, INPUTS, seed=1).params["dense/kernel"],
                                  TF1Model(explicit, INPUTS, seed=1).params["dense/kernel"])


@pytest.mark.parametrize("which", ["mlp", "cnn"])
def test_tf_layers_gradients_agree_and_match_the_tf1_graph(which, mlp_model, cnn_model):
    net, model, inputs = {"mlp": (mlp, mlp_model, INPUTS), "cnn": (cnn, cnn_model, IMAGES)}[which]
    direct = assert_backends_agree(model, inputs=inputs)
    assert_matches_legacy(net, model, inputs, direct)


def test_tf_layers_outputs_are_cuts_named_by_their_scope(tf_backend, mlp_model, cnn_model):
    for model, inputs, marked in [
        (mlp_model, INPUTS, "'dense', 'batch_normalization', 'dense_1', 'out'"),
        (cnn_model, IMAGES, "'conv1', 'bn1', 'max_pooling2d', 'conv2d', 'average_pooling2d', "
                            "'flatten', 'logits'"),
    ]:
        with pytest.raises(CutError) as err:
            tf_backend.split_gradient(model, inputs=inputs, cuts=["nope"])
        assert f"the model marked {marked}." in str(err.value)
    split = assert_split_matches_direct(
        cnn_model, inputs=IMAGES, cuts=["flatten", "bn1", "max_pooling2d"], backend=tf_backend.name)
    assert [s.name for s in split.stages] == ["flatten", "max_pooling2d", "bn1"]
    assert split.stage("max_pooling2d").gradient.shape == (4, 4, 4, 3)
    assert_split_matches_direct(mlp_model, inputs=INPUTS, backend=tf_backend.name,
                                cuts=["dense", "batch_normalization", "dense_1"])


def layers_tower(x):
    with v1.variable_scope("tower", reuse=v1.AUTO_REUSE):
        return tf.compat.v1.layers.dense(x, 3, activation=tf.tanh, name="fc")


def layers_siamese(inputs, is_training):
    return tf.reduce_sum(layers_tower(inputs["x"]) * layers_tower(2.0 * inputs["x"]))


def test_a_tf_layers_tower_under_auto_reuse_is_two_cuts(tf_backend):
    model = TF1Model(layers_siamese, INPUTS)
    assert model.trainable == ("tower/fc/kernel", "tower/fc/bias")
    split = assert_split_matches_direct(model, inputs=INPUTS, cuts=["tower/fc", "tower/fc_1"],
                                        backend=tf_backend.name)
    p = f64(model.params)
    a = np.tanh(X @ p["tower/fc/kernel"] + p["tower/fc/bias"])
    b = np.tanh(2.0 * X @ p["tower/fc/kernel"] + p["tower/fc/bias"])
    assert_close(split.stage("tower/fc").gradient, b.astype(np.float32), name="dL/d tower/fc")
    assert_close(split.stage("tower/fc_1").gradient, a.astype(np.float32), name="dL/d tower/fc_1")


def test_split_gradients_agree_across_backends(mlp_model):
    runs = assert_backends_agree(mlp_model, inputs=INPUTS, cuts=["dense", "dense_1"])
    for r in runs.values():
        assert r.stage("dense").gradient.shape == (6, 5)
        assert np.abs(r.stage("dense").gradient).max() > 1e-4


# -- batch normalization: update ops once per call ----------------------------------------


def bn_net(inputs, is_training):
    y = tf.compat.v1.layers.batch_normalization(inputs["x"], momentum=0.9, training=is_training)
    return tf.reduce_sum(y * inputs["w"])


def numpy_moving_statistics(xs, ddof, momentum=0.9):
    mean, var = np.zeros(3), np.ones(3)
    for x in xs:
        x = x.reshape(-1, 3).astype(np.float64)
        mean = momentum * mean + (1 - momentum) * x.mean(axis=0)
        var = momentum * var + (1 - momentum) * x.var(axis=0, ddof=ddof)
    return mean, var


BN_XS = [(rng.normal(size=(5, 3)) * (k + 1) + k).astype(np.float32) for k in range(3)]
BN_W = rng.normal(size=(5, 3)).astype(np.float32)


@pytest.mark.parametrize("shape,ddof", [((5, 3), 0), ((5, 1, 1, 3), 1)],
                         ids=["2d_batch_variance", "4d_fused_unbiased_variance"])
def test_batch_normalization_moving_statistics_after_n_calls(shape, ddof):
    """UPDATE_OPS run with the target in a graph and as built eagerly: once per call.
    2-D input takes Keras' moments (variance over n); 4-D the fused kernel (n - 1)."""
    xs = [x.reshape(shape) for x in BN_XS]
    w = BN_W.reshape(shape)
    model = TF1Model(bn_net, {"x": xs[0], "w": w})
    mean, var = numpy_moving_statistics(BN_XS, ddof)
    for backend in BACKENDS:
        with model.build(backend=backend) as fn:
            for x in xs:
                fn({"x": x, "w": w})
            values = fn.variable_values({"x": xs[0], "w": w})
        assert_close(values["batch_normalization/moving_mean"], mean.astype(np.float32),
                     name=f"{backend} moving_mean")
        assert_close(values["batch_normalization/moving_variance"], var.astype(np.float32),
                     name=f"{backend} moving_variance")


def test_inference_uses_moving_statistics_carried_between_backends(mlp_model):
    with mlp_model.build(backend="tape") as fn:
        for _ in range(3):
            fn(INPUTS)
        trained = fn.variable_values(INPUTS)
    infer = mlp_model.with_values(trained).with_training(False)
    with infer.build(backend="graph") as fn:  # the values arrive on another backend by name
        carried = fn.variable_values(INPUTS)
    for n in MLP_NAMES:
        np.testing.assert_array_equal(carried[n], trained[n])
    p = f64(trained)
    h = np.tanh(X @ p["dense/kernel"] + p["dense/bias"])
    h = (h - p["batch_normalization/moving_mean"]) / np.sqrt(
        p["batch_normalization/moving_variance"] + 1e-3)
    h = h * p["batch_normalization/gamma"] + p["batch_normalization/beta"]
    out = np.tanh(h @ p["dense_1/kernel"] + p["dense_1/bias"]) @ p["out/kernel"] + p["out/bias"]
    expected = np.float32(np.mean((out - INPUTS["y"]) ** 2))
    runs = assert_backends_agree(infer, inputs=INPUTS)
    for b, r in runs.items():
        assert_close(r.target, expected, name=f"inference target on {b} vs numpy")
    # inference leaves the statistics where training put them; training moved them
    assert np.abs(trained["batch_normalization/moving_mean"]).max() > 1e-3
    for backend in BACKENDS:
        with infer.build(backend=backend) as fn:
            fn(INPUTS)
            after = fn.variable_values(INPUTS)
        np.testing.assert_array_equal(after["batch_normalization/moving_mean"],
                                      trained["batch_normalization/moving_mean"])


def test_cnn_moving_statistics_agree_across_backends(cnn_model):
    values = {}
    for backend in BACKENDS:
        with cnn_model.build(backend=backend, cuts=["max_pooling2d"]) as fn:
            for _ in range(2):
                fn(IMAGES)
            values[backend] = fn.variable_values(IMAGES)
    for backend in ("tape", "function"):
        for n in cnn_model.params:
            assert_close(values[backend][n], values["graph"][n], name=f"{backend} vs graph {n}")
    moved = values["graph"]["bn1/moving_mean"] - cnn_model.params["bn1/moving_mean"]
    assert np.abs(moved).max() > 1e-3


# -- dropout ---------------------------------------------------------------------------------


def test_dropout_is_aligned_across_backends_and_calls(mlp_model):
    """tf.layers.dropout reaches tf.nn.dropout through tf-keras; aligned_random aligns it."""
    dropping = TF1Model(make_mlp(rate=0.5), INPUTS, seed=1)
    assert list(dropping.params) == MLP_NAMES  # dropout has no variables
    no_dropout = mlp_model.with_values(dropping.params)
    with aligned_random(7):
        runs = assert_backends_agree(dropping, inputs=INPUTS, cuts=["batch_normalization"])
        with dropping.build(backend="tape", cuts=["batch_normalization"]) as fn:
            fn(INPUTS)
            again = fn(INPUTS)
        other = assert_backends_agree(dropping, inputs=INPUTS, backends=["tape"],
                                      cuts=["batch_normalization"])
    assert_results_agree(again, runs["tape"], what="second aligned call vs first")
    # the mask is real: the gradient at the layer below dropout is zero where it dropped
    g = runs["graph"].stage("batch_normalization").gradient
    assert 0.2 < float(np.mean(g == 0)) < 0.8
    plain = assert_backends_agree(no_dropout, inputs=INPUTS, backends=["graph"])["graph"]
    assert abs(float(runs["graph"].target) - float(plain.target)) > 1e-3
    assert_results_agree(other["tape"], runs["tape"], what="same seed, new block")
    # in inference mode dropout is the identity
    infer, infer_plain = dropping.with_training(False), no_dropout.with_training(False)
    for backend in BACKENDS:
        with infer.build(backend=backend) as f, infer_plain.build(backend=backend) as g:
            assert_close(f.value(INPUTS), g.value(INPUTS), name=f"inference on {backend}")


# -- variables: none created, the same names ----------------------------------------------


def test_no_variable_is_created_on_eager_calls_or_retracing(mlp_model):
    created = []

    def record(next_creator, **kwargs):
        created.append(kwargs.get("name"))
        return next_creator(**kwargs)

    with mlp_model.build(backend="tape") as fn:
        fn(INPUTS)  # the backend makes its variables here, once
        variables = dict(fn.compiled(INPUTS).variables)
        with tf.variable_creator_scope(record):
            for _ in range(3):
                fn(INPUTS)
            # the model under a tf.function of our own, traced for two batch sizes
            traced = tf.function(lambda i: mlp_model.model(variables, i), autograph=False)
            small = {n: v[:3] for n, v in INPUTS.items()}
            values = [float(traced(INPUTS)), float(traced(small)), float(traced(INPUTS))]
        after = fn.compiled(INPUTS).variables
    assert created == []
    assert traced.experimental_get_tracing_count() == 2
    assert values[0] != values[1]
    assert all(after[n] is variables[n] for n in variables)
    assert [v.name for v in variables.values()] == [f"{n}:0" for n in MLP_NAMES]
    # the net really ran on them: the calls moved the statistics
    assert np.abs(variables["batch_normalization/moving_mean"].numpy()).max() > 1e-3


@pytest.mark.parametrize("spelling", ["compat_v1_attribute", "tf1_module", "layers_import"])
def test_every_spelling_of_tf_layers_works(spelling):
    dense = {
        "compat_v1_attribute": lambda: tf.compat.v1.layers.dense,
        "tf1_module": lambda: tf1.layers.dense,  # import tensorflow.compat.v1 as tf1
        "layers_import": lambda: v1_layers.dense,  # from tensorflow.compat.v1 import layers
    }[spelling]

    def net(inputs, is_training):
        with v1.variable_scope("scope"):
            h = dense()(inputs["x"], 2)  # default names: dense, dense_1
            return tf.reduce_sum(dense()(h, 2, use_bias=False))

    model = TF1Model(net, INPUTS)
    assert list(model.params) == ["scope/dense/kernel", "scope/dense/bias", "scope/dense_1/kernel"]
    r = assert_backends_agree(model, inputs=INPUTS)["graph"]
    w2 = model.params["scope/dense_1/kernel"].astype(np.float64)
    assert_close(r.grads["scope/dense/kernel"], np.outer(X.sum(axis=0), w2.sum(axis=1)).astype(np.float32),
                 name="d/d scope/dense/kernel vs numpy")
    with model.build(backend="tape") as fn:  # the scope counters restart on every eager call
        assert_results_agree(fn(INPUTS), fn(INPUTS), what="second eager call vs first")


def test_tf_layers_regularization_losses_are_the_same_on_every_backend(tf_backend):
    def net(inputs, is_training):
        h = tf.compat.v1.layers.dense(
            inputs["x"], 3, activation=tf.tanh, name="fc",
            kernel_regularizer=lambda w: 0.25 * tf.reduce_sum(tf.square(w)))
        scale = v1.get_variable("scale", [], initializer=v1.constant_initializer(1.5),
                                regularizer=lambda s: 0.5 * tf.square(s))
        return tf.reduce_sum(h) * scale + v1.losses.get_regularization_loss()

    model = TF1Model(net, INPUTS)
    p = f64(model.params)
    h = np.tanh(X @ p["fc/kernel"] + p["fc/bias"])
    expected = h.sum() * 1.5 + 0.25 * np.sum(p["fc/kernel"] ** 2) + 0.5 * 1.5**2
    with model.build(backend=tf_backend.name) as fn:
        first, second = fn(INPUTS), fn(INPUTS)
    assert_close(first.target, np.float32(expected), name="value vs numpy")
    assert_results_agree(second, first, what="second call vs first")  # no accumulation
    assert_close(first.grads["scale"], np.float32(h.sum() + 1.5), name="d/d scale vs numpy")


def test_variable_collections_inside_the_net_hold_its_own_variables():
    """tf.trainable_variables() in the net: TF1 gives the variables made so far; the graph
    backend's collections hold every parameter, eager execution none; a run gives TF1's."""
    def net(inputs, is_training):
        h = tf.compat.v1.layers.dense(inputs["x"], 3, activation=tf.tanh, name="fc")
        h = tf.compat.v1.layers.batch_normalization(h, training=is_training, name="bn")
        out = tf.compat.v1.layers.dense(h, 1, name="out")
        decay = tf.add_n([tf.nn.l2_loss(v) for v in v1.trainable_variables()
                          if "bias" not in v.name])
        count = tf.cast(len(v1.global_variables()), tf.float32)
        return tf.reduce_mean(tf.square(out - inputs["y"])) + 0.1 * decay + count

    model = TF1Model(net, INPUTS)
    direct = assert_backends_agree(model, inputs=INPUTS)
    assert_matches_legacy(net, model, INPUTS, direct)
    # numpy: 8 variables counted; the penalty over the 4 trainable non-bias ones, not the statistics
    p = f64(model.params)
    h = np.tanh(X @ p["fc/kernel"] + p["fc/bias"])
    h = (h - h.mean(axis=0)) / np.sqrt(h.var(axis=0) + 1e-3) * p["bn/gamma"] + p["bn/beta"]
    out = h @ p["out/kernel"] + p["out/bias"]
    decay = sum(0.5 * np.sum(p[n] ** 2) for n in ("fc/kernel", "bn/gamma", "bn/beta", "out/kernel"))
    expected = np.mean((out - INPUTS["y"]) ** 2) + 0.1 * decay + 8
    for b, r in direct.items():
        assert_close(r.target, np.float32(expected), name=f"target on {b} vs numpy")
        assert_close(r.grads["bn/beta"], np.float32(0.1) * model.params["bn/beta"]
                     + numpy_beta_gradient(out, INPUTS["y"], p), name=f"d/d bn/beta on {b}")


def numpy_beta_gradient(out, y, p):
    """d mean((out - y)^2) / d beta, for out = h @ W + b with h linear in beta."""
    return (2 * (out - y).mean(axis=0) * p["out/kernel"][:, 0]).astype(np.float32)


def test_rnn_cells_from_compat_v1_nn_run_on_every_backend():
    def net(inputs, is_training):
        cell = v1.nn.rnn_cell.BasicRNNCell(3)
        out, _ = v1.nn.dynamic_rnn(cell, inputs["s"], dtype=tf.float32)
        return tf.reduce_sum(tf.square(out))

    seq = {"s": rng.normal(size=(2, 4, 3)).astype(np.float32)}
    model = TF1Model(net, seq)
    assert list(model.params) == ["rnn/basic_rnn_cell/kernel", "rnn/basic_rnn_cell/bias"]
    assert_matches_legacy(net, model, seq, assert_backends_agree(model, inputs=seq))


# -- tf-slim, as SlimModel runs it ---------------------------------------------------------


def slim_cnn(inputs, is_training):
    with slim.arg_scope([slim.conv2d], kernel_size=[3, 3], normalizer_fn=slim.batch_norm,
                        normalizer_params={"is_training": is_training, "decay": 0.9}):
        h = slim.conv2d(inputs["x"], 3, scope="conv1")
        h = slim.max_pool2d(h, [2, 2], scope="pool1")
        logits = slim.fully_connected(slim.flatten(h), 3, activation_fn=None, scope="logits")
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=inputs["labels"], logits=logits))


def test_a_slim_net_runs_as_slim_model_runs_it():
    general, slim_model = TF1Model(slim_cnn, IMAGES, seed=2), SlimModel(slim_cnn, IMAGES, seed=2)
    assert list(general.params) == list(slim_model.params) == [
        "conv1/weights", "conv1/BatchNorm/beta", "conv1/BatchNorm/moving_mean",
        "conv1/BatchNorm/moving_variance", "logits/weights", "logits/biases"]
    for n in general.params:
        np.testing.assert_array_equal(general.params[n], slim_model.params[n])
    runs = assert_backends_agree(general, inputs=IMAGES, cuts=["pool1"])
    for b, r in assert_backends_agree(slim_model, inputs=IMAGES, cuts=["pool1"]).items():
        assert_results_agree(runs[b], r, what=f"TF1Model vs SlimModel on {b}")
    values = {}
    for backend in BACKENDS:
        with general.build(backend=backend) as fn:
            fn(IMAGES)
            fn(IMAGES)
            values[backend] = fn.variable_values(IMAGES)["conv1/BatchNorm/moving_mean"]
    for backend in ("tape", "function"):
        assert_close(values[backend], values["graph"], name=f"{backend} slim moving_mean")


def test_slim_tf_layers_and_get_variable_in_one_net():
    def net(inputs, is_training):
        h = slim.fully_connected(inputs["x"], 3, activation_fn=tf.tanh, scope="fc")
        h = tf.compat.v1.layers.dense(h, 3, activation=tf.tanh, name="dense")
        with v1.variable_scope("head"):
            w = v1.get_variable("w", [3, 1])
        return tf.reduce_sum(tf.matmul(h, w))

    model = TF1Model(net, INPUTS)
    assert list(model.params) == ["fc/weights", "fc/biases", "dense/kernel", "dense/bias",
                                  "head/w"]
    direct = assert_backends_agree(model, inputs=INPUTS)
    assert_matches_legacy(net, model, INPUTS, direct)
    assert_backends_agree(model, inputs=INPUTS, cuts=["fc", "dense"])


# -- the pytest plugin: an unmodified TF1 net, once per backend ---------------------------


def test_plugin_runs_a_tf1_model_function_on_each_backend(tf_backend):
    model = TF1Model(siamese, INPUTS, seed=3)
    r = tf_backend.gradient(model, inputs=INPUTS)
    assert r.backend == tf_backend.name
    legacy = legacy_graph(siamese, model, INPUTS)
    assert_close(r.target, legacy["loss"], name=f"target on {tf_backend.name}")
    for n in model.trainable:
        assert_close(r.grads[n], legacy["grads"][n], name=f"d/d {n} on {tf_backend.name}")
    assert_close(tf_backend.value(model, inputs=INPUTS), legacy["loss"], name="value")
    with pytest.raises(TF1ModelError, match=r"params given for \['x', 'x2', 'y'\], which are not "
                                            r"variables of the net .* pass the inputs as inputs="):
        tf_backend.gradient(model, INPUTS)


# -- errors name the variable ---------------------------------------------------------------

WIDTH = {"fc": 3}
DTYPE = {"w": tf.float32}


def changing_net(inputs, is_training):
    h = tf.compat.v1.layers.dense(inputs["x"], WIDTH["fc"], name="fc")
    if not is_training:
        h = tf.compat.v1.layers.dense(h, 2, name="eval_head")
    w = v1.get_variable("w", [], dtype=DTYPE["w"], initializer=v1.ones_initializer())
    return tf.reduce_sum(h) * tf.cast(w, tf.float32)


def test_error_names_a_variable_the_discovery_run_did_not_make(tf_backend):
    model = TF1Model(changing_net, INPUTS).with_training(False)
    with pytest.raises(TF1ModelError, match=r"'eval_head/kernel' \(shape \(3, 2\)\) in inference "
                                            r"mode, which the discovery run did not create"):
        tf_backend.gradient(model, inputs=INPUTS)


def test_error_names_a_variable_whose_shape_or_dtype_changed(tf_backend, monkeypatch):
    model = TF1Model(changing_net, INPUTS)
    monkeypatch.setitem(WIDTH, "fc", 5)
    with pytest.raises(TF1ModelError, match=r"'fc/kernel' with shape \(4, 5\) .* discovery "
                                            r"run made it with shape \(4, 3\)"):
        tf_backend.gradient(model, inputs=INPUTS)
    monkeypatch.setitem(WIDTH, "fc", 3)
    monkeypatch.setitem(DTYPE, "w", tf.float64)
    with pytest.raises(TF1ModelError, match=r"'w' as float64 .* discovery run made it as float32"):
        tf_backend.gradient(model, inputs=INPUTS)


def test_error_names_a_parameter_of_another_dtype_or_shape():
    model = TF1Model(changing_net, INPUTS)
    params = dict(model.params, w=np.float64(1.0))
    with pytest.raises(TF1ModelError, match=r"parameter 'w' is float64, but the net makes it as "
                                            r"float32"):
        assert_backends_agree(model, params, INPUTS, backends=["tape"])
    params = dict(model.params, **{"fc/bias": np.zeros(4, np.float32)})
    with pytest.raises(TF1ModelError, match=r"parameter 'fc/bias' has shape \(4,\), but the net "
                                            r"makes it with shape \(3,\)"):
        assert_backends_agree(model, params, INPUTS, backends=["graph"])
    with pytest.raises(TF1ModelError, match=r"value for 'fc/bias' has shape \(4,\)"):
        model.with_values({"fc/bias": np.zeros(4)})
    with pytest.raises(TF1ModelError, match="'head/w', which is not a variable of the net"):
        model.with_values({"head/w": np.zeros(3)})


def test_error_names_a_variable_made_around_get_variable():
    def net(inputs, is_training):
        scale = tf.Variable(2.0, name="loose_scale")
        return tf.reduce_sum(tf.compat.v1.layers.dense(inputs["x"], 2)) * scale

    with pytest.raises(TF1ModelError, match="'loose_scale'.* not through tf.compat.v1.get_variable"):
        TF1Model(net, INPUTS)

    def keras_net(inputs, is_training):
        return tf.reduce_sum(tf.keras.layers.Dense(2)(inputs["x"]))

    with pytest.raises(TF1ModelError, match=r"\['dense/kernel', 'dense/bias'\] directly"):
        TF1Model(keras_net, INPUTS)


def test_error_names_a_layer_object_built_outside_the_net():
    with tf1_layers.legacy_layers():
        layer = tf.compat.v1.layers.Dense(2, name="outside")

    def net(inputs, is_training):
        return tf.reduce_sum(layer(inputs["x"]))

    model = TF1Model(net, INPUTS)  # the discovery run builds it, in the scratch graph
    assert list(model.params) == ["outside/kernel", "outside/bias"]
    with pytest.raises(TF1ModelError, match="layer object 'outside', which was built before "
                                            "this run"):
        model.build(backend="tape")(INPUTS)


def test_error_without_tf_keras_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(tf1_layers, "_installed", lambda name: name != "tf_keras")
    with tf1_layers.legacy_layers(), pytest.raises(AttributeError, match="pip install tf-keras"):
        tf.compat.v1.layers.dense  # noqa: B018
