"""The TS109 audit (issue #17): renamed and kept names compute TF1's numbers eagerly.

Each group of the audit (``tapeshift.migrate.rules.renames``: ``IDENTICAL`` renames,
``AUDITED_EAGER_COMPAT`` names kept as ``tf.compat.v1``) is run twice here: in a
TF1 graph through a ``tf.compat.v1.Session``, and eagerly under its tape-form
spelling. Deterministic ones must give the same values; the seeded-random
initialisers are checked for shape, dtype and their truncation bound only (eager
and graph draw other streams, which is why a seeded one blocks tape form). The
last test migrates a whole TF1 program using these names and verifies it against
its original under run-legacy (``verify_sources``).
"""

import textwrap

import numpy as np
import pytest

pytestmark = pytest.mark.tf

tf = pytest.importorskip("tensorflow")

from tapeshift.migrate.rules.renames import AUDITED_EAGER_COMPAT, IDENTICAL  # noqa: E402
from tapeshift.migrate.engine.pipeline import migrate_source  # noqa: E402
from tapeshift.migrate.legacy.verify import verify_sources  # noqa: E402

v1 = tf.compat.v1


def _graph(build):
    """``build(api)`` in a v1 graph with the TF1 API, its fetches run by a Session."""
    with tf.Graph().as_default():
        fetches = build(v1)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            return sess.run(fetches)


def _resolve(root, dotted):
    for part in dotted.split("."):
        root = getattr(root, part)
    return root


M = np.array([[2.0, 1.0], [1.0, 3.0]], np.float32)
X = np.array([0.3, -1.7, 2.5, 4.0], np.float32)

#: old name -> arguments; each run in a v1 graph as tf.<old> and eagerly as tf.<new>
SAME_OBJECT_PROGRAMS = {
    "global_norm": lambda: ([tf.constant(M), tf.constant(X)],),
    "ceil": lambda: (X,),
    "rint": lambda: (X,),
    "expm1": lambda: (X,),
    "reciprocal": lambda: (X + 5.0,),
    "segment_mean": lambda: (X, [0, 0, 1, 1]),
    "unsorted_segment_max": lambda: (X, [1, 0, 1, 0], 2),
    "self_adjoint_eigvals": lambda: (M,),
    "matrix_triangular_solve": lambda: (np.tril(M), np.ones((2, 1), np.float32)),
    "cross": lambda: ([1.0, 2.0, 3.0], [0.5, -1.0, 2.0]),
    "tensor_scatter_update": lambda: (X, [[1], [3]], [9.0, 8.0]),
}


@pytest.mark.parametrize("old", sorted(SAME_OBJECT_PROGRAMS))
def test_same_object_rename_graph_vs_eager(old):
    new = IDENTICAL[old]
    args = SAME_OBJECT_PROGRAMS[old]
    graph = _graph(lambda api: _resolve(api, old)(*args()))
    eager = _resolve(tf, new)(*args()).numpy()
    np.testing.assert_allclose(eager, graph, rtol=1e-6, atol=0)
    assert np.asarray(graph).dtype == eager.dtype


LOSS_PROGRAMS = {
    "mean_squared_error": lambda: dict(labels=[[1.0, 0.0], [0.5, 2.0]],
                                       predictions=[[0.8, 0.3], [0.1, 1.0]],
                                       weights=[[1.0], [0.0]]),
    "absolute_difference": lambda: dict(labels=[1.0, 2.0, 3.0], predictions=[1.5, 1.0, 3.0]),
    "huber_loss": lambda: dict(labels=[1.0, 2.0, 3.0], predictions=[1.5, 0.0, 3.2], delta=0.5),
    "softmax_cross_entropy": lambda: dict(onehot_labels=[[0.0, 1.0], [1.0, 0.0]],
                                          logits=[[1.0, 2.0], [0.3, -0.4]],
                                          label_smoothing=0.1),
    "sparse_softmax_cross_entropy": lambda: dict(labels=[1, 0], logits=[[1.0, 2.0], [0.3, -0.4]]),
    "sigmoid_cross_entropy": lambda: dict(multi_class_labels=[[0.0, 1.0]], logits=[[0.5, -1.0]]),
    "log_loss": lambda: dict(labels=[0.0, 1.0, 1.0], predictions=[0.2, 0.7, 0.9]),
    "hinge_loss": lambda: dict(labels=[0.0, 1.0, 1.0], logits=[0.2, -0.7, 1.9]),
}


@pytest.mark.parametrize("name", sorted(LOSS_PROGRAMS))
def test_v1_losses_graph_vs_eager(name):
    assert f"losses.{name}" in AUDITED_EAGER_COMPAT
    fn = lambda api: _resolve(api, f"losses.{name}")(**LOSS_PROGRAMS[name]())  # noqa: E731

    def build(api):
        loss = fn(api)
        # in the graph the loss also lands in the LOSSES collection (what the
        # names that stay TF1-only read) ...
        assert api.get_collection(api.GraphKeys.LOSSES) == [loss]
        return loss

    graph = _graph(build)
    eager = fn(v1).numpy()  # ... eagerly the same reduction, no collection
    np.testing.assert_allclose(eager, graph, rtol=1e-6, atol=1e-7)
    assert eager.shape == ()


def test_v1_logging_runs_eagerly():
    assert tf.executing_eagerly()
    before = v1.logging.get_verbosity()
    try:
        v1.logging.set_verbosity(v1.logging.DEBUG)
        assert v1.logging.get_verbosity() == v1.logging.DEBUG == 10
        v1.logging.info("eager %d", 1)  # no graph needed
    finally:
        v1.logging.set_verbosity(before)


def test_v1_flags_and_app_run_run_eagerly():
    # absl's command line: the flags parsed from argv, then main called, eagerly
    v1.flags.DEFINE_integer("tapeshift_audit_steps", 2, "a flag of this test")
    seen = []

    def main(argv):
        seen.append((tf.executing_eagerly(), v1.flags.FLAGS.tapeshift_audit_steps, argv[1:]))
        return 0

    with pytest.raises(SystemExit) as stop:
        v1.app.run(main, argv=["prog", "--tapeshift_audit_steps=5", "rest"])
    assert stop.value.code == 0
    assert seen == [(True, 5, ["rest"])]
    assert v1.app.flags.FLAGS is v1.flags.FLAGS


@pytest.mark.parametrize("name, kwargs, bound", [
    ("truncated_normal_initializer", dict(mean=0.5, stddev=0.1, seed=3), (0.3, 0.7)),
    ("glorot_uniform_initializer", dict(seed=3), (-np.sqrt(6 / 7), np.sqrt(6 / 7))),
    ("uniform_unit_scaling_initializer", dict(factor=1.0, seed=3), (-np.sqrt(3 / 3), np.sqrt(3 / 3))),
])
def test_seeded_v1_initializers_graph_vs_eager_shapes(name, kwargs, bound):
    """Seeded random: the same shape, dtype and range in both runs (no statistics)."""
    assert name in AUDITED_EAGER_COMPAT
    make = lambda api: _resolve(api, name)(**kwargs)([3, 4])  # noqa: E731
    graph = _graph(make)
    eager = make(v1).numpy()
    for values in (graph, eager):
        assert values.shape == (3, 4) and values.dtype == np.float32
        assert bound[0] <= values.min() and values.max() <= bound[1]


def test_truncated_normal_initializer_default_stddev_is_not_keras():
    """Why tf.truncated_normal_initializer stays tf.compat.v1: TF2's class has other defaults."""
    assert v1.truncated_normal_initializer().stddev == 1.0
    assert tf.keras.initializers.TruncatedNormal().stddev == 0.05


LEGACY = textwrap.dedent("""
    import numpy as np
    import tensorflow as tf

    tf.logging.set_verbosity(tf.logging.ERROR)
    W = tf.Variable(np.array([[0.5, -0.2], [0.1, 0.3]], np.float32))
    b = tf.Variable(tf.zeros([2]))
    x = tf.constant([[1.0, 2.0], [0.5, -1.0]])
    y = tf.constant([[1.0, 0.0], [0.0, 2.0]])
    h = tf.matmul(x, W) + b
    loss = tf.losses.mean_squared_error(y, h) + tf.losses.huber_loss(y, h, delta=0.5)
    grads = tf.gradients(loss, [W, b])
    gnorm = tf.global_norm(grads)
    top = tf.ceil(tf.reduce_max(h) * 10.0)
    eig = tf.self_adjoint_eigvals(tf.matmul(W, W, transpose_b=True))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        loss_v, gnorm_v, top_v, eig_v = sess.run([loss, gnorm, top, eig])
        print(loss_v, gnorm_v, top_v)
        print(eig_v)
""").lstrip()


@pytest.mark.slow
def test_migrated_program_verifies_against_run_legacy(tmp_path):
    result = migrate_source(LEGACY, "audit.py")
    assert result.mode == "tape", [(f.code, f.line, f.message) for f in result.findings]
    out = result.output
    for spelled in ("tf.compat.v1.logging.set_verbosity", "tf.compat.v1.losses.mean_squared_error",
                    "tf.compat.v1.losses.huber_loss", "tf.linalg.global_norm", "tf.math.ceil",
                    "tf.linalg.eigvalsh", "tf.GradientTape"):
        assert spelled in out, out
    report = verify_sources(LEGACY, out, tmp_path / "audit.py", timeout=300)
    assert report.status == "ok", (report.legacy.stderr[-2000:], report.new.stderr[-2000:],
                                   [(r.name, r.status) for r in report.rows])
    assert report.compared >= 8  # 4 module values (+ W, b ...) and the printed numbers
