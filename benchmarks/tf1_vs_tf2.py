"""The TF1-versus-TF2 facts of docs/tf1-vs-tf2.md, measured on the installed TensorFlow.

Each section of the doc has one check here. A check runs small probes, each in a
fresh Python process, because the things compared are process state: a "TF1"
probe calls ``tf.compat.v1.disable_v2_behavior()`` before building anything (a v1
graph run by a Session, TF1 semantics on this TensorFlow), a "TF2" probe runs
eagerly (``tf.GradientTape``, ``tf.function``), and environment variables such
as ``TF_USE_LEGACY_KERAS`` or ``TF_ENABLE_ONEDNN_OPTS`` are set for the probe
process before TensorFlow is first imported. The parent process never imports
TensorFlow. It prints one table:

    section | fact | TF1 (v1 graph) | TF2 (eager / tape) | verdict

and the verdict says whether what the doc states still holds ("confirmed") or
not ("NOT CONFIRMED", with what was seen instead).

    python benchmarks/tf1_vs_tf2.py [--only N [N ...]] [--json]

Exit status: 0 every fact confirmed, 1 a fact did not hold on this TensorFlow,
2 a probe failed to run (its stderr is printed) or the arguments were wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence

MARKER = "TF1VS2-RESULT "
PROBE_TIMEOUT_S = 600


# ---------------------------------------------------------------------------------------------
# Probes: run in a child process, `tf` already imported (and v2 behaviour disabled for "tf1").
# Each returns a JSON-serialisable dict.
# ---------------------------------------------------------------------------------------------

def _floats(value) -> Any:
    import numpy as np

    if value is None:
        return None
    arr = np.asarray(value, dtype=np.float64)
    return arr.tolist()


def _error(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"


# -- 1. deferred versus immediate evaluation -------------------------------------------------

def probe_1_tf1(tf):
    w = tf.Variable(2.0)
    loss = w * w
    train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
    x = tf.compat.v1.placeholder(tf.float32, [])
    y = 2.0 * x
    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        # the program: read the loss, train once, read the loss again
        reads = [float(sess.run(loss))]
        sess.run(train)
        reads.append(float(sess.run(loss)))
        fed = [float(sess.run(y, {x: 1.0})), float(sess.run(y, {x: 3.0}))]
        w_end = float(sess.run(w))
    return {"reads": reads, "w": w_end, "fed": fed}


def probe_1_tf2(tf):
    opt = tf.compat.v1.train.GradientDescentOptimizer(0.1)

    def step(w):
        with tf.GradientTape() as tape:
            l = w * w
        opt.apply_gradients([(tape.gradient(l, w), w)])

    # straight-line translation: every line runs once, where it stands
    w = tf.Variable(2.0)
    loss = w * w
    straight = [float(loss)]
    step(w)
    straight.append(float(loss))
    x = tf.constant(1.0)  # the placeholder becomes the first value fed
    y = 2.0 * x
    straight_fed = [float(y), float(y)]

    # one function per distinct sess.run, recomputing what its fetches need
    w2 = tf.Variable(2.0)
    recomputed = [float(w2 * w2)]
    step(w2)
    recomputed.append(float(w2 * w2))
    fed = [float(2.0 * tf.constant(1.0)), float(2.0 * tf.constant(3.0))]

    # one "build everything" function run for every sess.run: the step runs at every read
    w3 = tf.Variable(2.0)

    def build_all():
        l = w3 * w3
        step(w3)
        return l

    everything = [float(build_all())]   # sess.run(loss)
    build_all()                         # sess.run(train)
    everything.append(float(build_all()))  # sess.run(loss)
    return {"straight": straight, "straight_w": float(w), "straight_fed": straight_fed,
            "recomputed": recomputed, "recomputed_w": float(w2), "fed": fed,
            "everything": everything, "everything_w": float(w3)}


# -- 2. tf.gradients versus GradientTape.gradient --------------------------------------------

def probe_2_tf1(tf):
    out = {}
    x = tf.constant(3.0)
    v = tf.constant([1.0, 2.0])
    z = tf.constant(5.0)
    g = tf.gradients(x * x, x)
    out["type"] = f"{type(g).__name__} of {len(g)}"
    a = x * 2.0
    fetch = {
        "value": g,
        "summed": tf.gradients([x * x, 3.0 * x], x),
        "grad_ys": tf.gradients(v * v, v, tf.constant([10.0, 100.0])),
        "again": tf.gradients(x * x, x),
        "second": tf.gradients(tf.gradients(x ** 3, x)[0], x),
        "stop": tf.gradients(a + x, x, stop_gradients=[a]),
        "zero": tf.gradients(3.0 * x, [x, z], unconnected_gradients="zero"),
    }
    unconnected = tf.gradients(3.0 * x, [x, z])
    with tf.compat.v1.Session() as sess:
        values = sess.run(fetch)
        out.update({k: _floats(val[0]) if len(val) == 1 else [_floats(e) for e in val]
                    for k, val in values.items()})
        out["unconnected"] = [None if t is None else _floats(sess.run(t)) for t in unconnected]
    out["constant_source"] = out["value"]  # x is a constant: any graph tensor can be a source
    return out


def probe_2_tf2(tf):
    out = {}
    x = tf.constant(3.0)
    v = tf.constant([1.0, 2.0])
    z = tf.constant(5.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    g = tape.gradient(y, x)
    out["type"] = type(g).__name__
    out["value"] = _floats(g)
    with tf.GradientTape() as tape:
        tape.watch(x)
        ys = [x * x, 3.0 * x]
    out["summed"] = _floats(tape.gradient(ys, x))
    with tf.GradientTape() as tape:
        tape.watch(v)
        y = v * v
    out["grad_ys"] = _floats(tape.gradient(y, v, output_gradients=tf.constant([10.0, 100.0])))
    with tf.GradientTape() as tape:
        y = x * x  # x not watched: a constant is not recorded
    out["constant_source"] = _floats(tape.gradient(y, x))
    with tf.GradientTape() as tape:
        tape.watch([x, z])
        y = 3.0 * x
    out["unconnected"] = [_floats(t) for t in tape.gradient(y, [x, z])]
    with tf.GradientTape() as tape:
        tape.watch([x, z])
        y = 3.0 * x
    out["zero"] = [_floats(t) for t in tape.gradient(
        y, [x, z], unconnected_gradients=tf.UnconnectedGradients.ZERO)]
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    try:
        tape.gradient(y, x)
        out["again"] = "answered twice"
    except RuntimeError as exc:
        out["again"] = _error(exc)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    out["again_persistent"] = [_floats(tape.gradient(y, x)), _floats(tape.gradient(y, x))]
    del tape
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = x ** 3
        dy = inner.gradient(y, x)
    out["second"] = _floats(outer.gradient(dy, x))
    with tf.GradientTape() as tape:
        tape.watch(x)
        a = tf.stop_gradient(x * 2.0)
        y = a + x
    out["stop"] = _floats(tape.gradient(y, x))
    try:
        tf.gradients(x * x, x)
        out["eager_tf_gradients"] = "no error"
    except RuntimeError as exc:
        out["eager_tf_gradients"] = _error(exc)
    return out


# -- 3. cost of a split on an eager tape ------------------------------------------------------

SPLIT_DEPTH, SPLIT_WIDTH, SPLIT_BATCH, SPLIT_REPEATS = 8, 256, 128, 15


def _split_setup():
    import numpy as np

    rng = np.random.default_rng(0)
    ws = [(rng.normal(size=(SPLIT_WIDTH, SPLIT_WIDTH)) / np.sqrt(SPLIT_WIDTH)).astype(np.float32)
          for _ in range(SPLIT_DEPTH)]
    x = rng.normal(size=(SPLIT_BATCH, SPLIT_WIDTH)).astype(np.float32)
    return ws, x


def _paired(direct: Callable, split: Callable) -> Dict[str, float]:
    import statistics

    for _ in range(3):  # warm-up: traces, graph optimisation, allocator
        direct(), split()
    ratios, times_d, times_s = [], [], []
    for _ in range(SPLIT_REPEATS):
        t0 = time.perf_counter()
        direct()
        t1 = time.perf_counter()
        split()
        t2 = time.perf_counter()
        times_d.append(t1 - t0)
        times_s.append(t2 - t1)
        ratios.append((t2 - t1) / (t1 - t0))
    return {"direct_ms": 1e3 * statistics.median(times_d), "split_ms": 1e3 * statistics.median(times_s),
            "ratio": statistics.median(ratios)}


def _maxdiff(a, b) -> float:
    import numpy as np

    return float(max(np.max(np.abs(np.asarray(p) - np.asarray(q))) for p, q in zip(a, b)))


def probe_3_tf1(tf):
    ws0, x0 = _split_setup()
    ws = [tf.Variable(w) for w in ws0]
    h, hs = tf.constant(x0), []
    inp = h
    for w in ws:
        h = tf.tanh(tf.matmul(h, w))
        hs.append(h)
    loss = tf.reduce_mean(tf.square(h))
    direct = tf.gradients(loss, ws)
    # split at every layer: vector-Jacobian products segment by segment (grad_ys)
    split = [None] * len(ws)
    g = tf.gradients(loss, hs[-1])[0]
    for l in range(len(ws) - 1, -1, -1):
        below = hs[l - 1] if l else inp
        split[l], g = tf.gradients(hs[l], [ws[l], below], grad_ys=g)
    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        timing = _paired(lambda: sess.run(direct), lambda: sess.run(split))
        timing["max_diff"] = _maxdiff(sess.run(direct), sess.run(split))
    return {"graph": timing}


def probe_3_tf2(tf):
    ws0, x0 = _split_setup()
    ws = [tf.Variable(w) for w in ws0]
    x = tf.constant(x0)

    def direct():
        with tf.GradientTape() as tape:
            h = x
            for w in ws:
                h = tf.tanh(tf.matmul(h, w))
            loss = tf.reduce_mean(tf.square(h))
        return tape.gradient(loss, ws)

    def split_persistent():
        with tf.GradientTape(persistent=True) as tape:
            h, hs = x, []
            tape.watch(h)
            below = [h]
            for w in ws:
                h = tf.tanh(tf.matmul(h, w))
                hs.append(h)
                below.append(h)
            loss = tf.reduce_mean(tf.square(h))
        grads = [None] * len(ws)
        g = tape.gradient(loss, hs[-1])
        for l in range(len(ws) - 1, -1, -1):
            grads[l], g = tape.gradient(hs[l], [ws[l], below[l]], output_gradients=g)
        del tape
        return grads

    def split_per_segment():
        tapes, hs, ins = [], [], []
        h = x
        for w in ws:
            with tf.GradientTape() as tape:
                h = tf.stop_gradient(h)
                tape.watch(h)
                ins.append(h)
                h = tf.tanh(tf.matmul(h, w))
            tapes.append(tape)
            hs.append(h)
        with tf.GradientTape() as tape:
            tape.watch(h)
            loss = tf.reduce_mean(tf.square(h))
        g = tape.gradient(loss, h)
        grads = [None] * len(ws)
        for l in range(len(ws) - 1, -1, -1):
            grads[l], g = tapes[l].gradient(hs[l], [ws[l], ins[l]], output_gradients=g)
        return grads

    out = {}
    reference = [g.numpy() for g in direct()]
    for name, fn in (("persistent", split_persistent), ("per_segment", split_per_segment)):
        out[name] = _paired(direct, fn)
        out[name]["max_diff"] = _maxdiff(reference, [g.numpy() for g in fn()])
    f_direct, f_split = tf.function(direct), tf.function(split_persistent)
    out["function"] = _paired(f_direct, f_split)
    out["function"]["max_diff"] = _maxdiff(reference, [g.numpy() for g in f_split()])
    return out


# -- 4. variable sharing ----------------------------------------------------------------------

def _count_creations(tf, fn):
    made = []

    def creator(next_creator, **kwargs):
        v = next_creator(**kwargs)
        made.append(v.name)
        return v

    with tf.variable_creator_scope(creator):
        fn()
    return made


def probe_4_tf1(tf):
    import tf_slim as slim

    v1 = tf.compat.v1
    with v1.variable_scope("tower"):
        k1 = v1.get_variable("kernel", [2], initializer=v1.ones_initializer())
    with v1.variable_scope("tower", reuse=True):
        k2 = v1.get_variable("kernel", [2])
    x = tf.ones([1, 2])

    def two_slim_calls():
        for _ in range(2):
            with v1.variable_scope("net", reuse=v1.AUTO_REUSE):
                slim.fully_connected(x, 3, scope="fc")

    made = _count_creations(tf, two_slim_calls)
    return {"same": k1 is k2, "names": [k1.name, k2.name],
            "variables": [v.name for v in v1.global_variables() if v.name.startswith("tower")],
            "slim_made": made}


def probe_4_tf2(tf):
    import tf_slim as slim

    v1 = tf.compat.v1
    with v1.variable_scope("tower"):
        k1 = v1.get_variable("kernel", [2], initializer=v1.ones_initializer())
    with v1.variable_scope("tower", reuse=True):
        k2 = v1.get_variable("kernel", [2])

    def kernel():
        return v1.get_variable("kernel", [2], initializer=v1.ones_initializer())

    template = v1.make_template("tower_t", kernel)
    t1, t2 = template(), template()
    x = tf.ones([1, 2])

    def net(inputs):
        return slim.fully_connected(inputs, 3, scope="fc")

    plain = _count_creations(tf, lambda: (net(x), net(x)))
    slim_template = v1.make_template("net", net)
    templated = _count_creations(tf, lambda: (slim_template(x), slim_template(x)))
    return {"same": k1 is k2, "names": [k1.name, k2.name],
            "template_same": t1 is t2, "template_names": [t1.name, t2.name],
            "slim_plain_made": plain, "slim_template_made": templated}


# -- 5. randomness ----------------------------------------------------------------------------

def probe_5_tf1(tf):
    tf.compat.v1.set_random_seed(0)
    a = tf.compat.v1.random_normal([2])
    b = tf.compat.v1.random_normal([2], seed=1)
    init = tf.compat.v1.glorot_uniform_initializer(seed=1)([2])
    twin = tf.compat.v1.random_normal([2], seed=1)  # a second op with the same seed
    with tf.compat.v1.Session() as sess:
        first, op_seeded, init_value, twin_value = sess.run([a, b, init, twin])
        op_seeded_again = sess.run(b)
    with tf.Graph().as_default():  # no graph-level seed: an op seed alone
        c = tf.compat.v1.random_normal([2], seed=1)
        with tf.compat.v1.Session() as sess:
            op_only = sess.run(c)
    return {"graph_seed": _floats(first), "op_seed": _floats(op_seeded),
            "op_seed_again": _floats(op_seeded_again), "initializer": _floats(init_value),
            "op_seed_only": _floats(op_only), "twin": _floats(twin_value)}


def probe_5_tf2(tf):
    tf.random.set_seed(0)
    a = tf.random.normal([2])
    b = tf.random.normal([2], seed=1)
    b_again = tf.random.normal([2], seed=1)  # the same line run a second time
    tf.random.set_seed(0)
    tf.random.normal([2])
    init = tf.compat.v1.glorot_uniform_initializer(seed=1)([2])  # after one draw, as in the graph
    tf.compat.v1.set_random_seed(0)
    c = tf.compat.v1.random_normal([2])
    return {"graph_seed": _floats(a), "op_seed": _floats(b), "op_seed_again": _floats(b_again),
            "v1_name_eager": _floats(c), "initializer": _floats(init),
            "op_seed_only": _floats(_op_seed_only_eager(tf))}


def _op_seed_only_eager(tf):
    import subprocess

    # the global seed cannot be unset in this process: a fresh interpreter without one
    code = ("import json, tensorflow as tf\n"
            "print(json.dumps(tf.random.normal([2], seed=1).numpy().tolist()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- 6. optimizers and numerics ---------------------------------------------------------------

OPT_STEPS, OPT_LR = 30, 0.05


def _lsq():
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.normal(size=(16, 3)).astype(np.float32)
    y = (X @ np.array([1.0, -2.0, 0.5], np.float32) + 0.1).astype(np.float32)
    return X, y


def _reference_gradient(tf, session):
    """dloss/dW of examples/reference_tf1.py (the README's reference computation)."""
    import numpy as np

    W = tf.Variable(np.array([[1.0, 2.0], [3.0, 4.0]]), dtype=tf.float32)
    b = tf.Variable(np.array([0.5, 0.5]), dtype=tf.float32)
    x = tf.constant(np.array([[0.1, 0.2], [0.3, 0.4]]), dtype=tf.float32)
    y0 = tf.constant(np.array([[0.8, 0.9], [0.7, 0.6]]), dtype=tf.float32)
    if session:
        loss = tf.reduce_mean(tf.square(tf.tanh(tf.matmul(x, W) + b) - y0))
        g = tf.gradients(loss, W)[0]
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            return np.asarray(sess.run(g)).astype(np.float32).tolist()
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.tanh(tf.matmul(x, W) + b) - y0))
    return tape.gradient(loss, W).numpy().tolist()


#: Adam once more on the same fit with the loss scaled by 1e-6: gradients of about 1e-6,
#: where an epsilon of 1e-7 (Keras) or 1e-8 (TF1) next to sqrt(v) is no longer negligible
SMALL = 1e-6
V1_OPTIMIZERS = {
    "Adam": lambda tf: tf.compat.v1.train.AdamOptimizer(OPT_LR),
    "Adam, loss x 1e-6": lambda tf: tf.compat.v1.train.AdamOptimizer(OPT_LR),
    "RMSProp": lambda tf: tf.compat.v1.train.RMSPropOptimizer(OPT_LR),
    "GradientDescent": lambda tf: tf.compat.v1.train.GradientDescentOptimizer(OPT_LR),
}
KERAS_OPTIMIZERS = {
    "Adam": lambda tf: tf.keras.optimizers.Adam(OPT_LR),
    "Adam(epsilon=1e-8)": lambda tf: tf.keras.optimizers.Adam(OPT_LR, epsilon=1e-8),
    "Adam, loss x 1e-6": lambda tf: tf.keras.optimizers.Adam(OPT_LR),
    "Adam(epsilon=1e-8), loss x 1e-6": lambda tf: tf.keras.optimizers.Adam(OPT_LR, epsilon=1e-8),
    "RMSprop(rho=0.9, epsilon=1e-10)": lambda tf: tf.keras.optimizers.RMSprop(
        OPT_LR, rho=0.9, epsilon=1e-10),
    "SGD": lambda tf: tf.keras.optimizers.SGD(OPT_LR),
}


def probe_6_tf1(tf):
    X, y = _lsq()
    out = {}
    for name, make in V1_OPTIMIZERS.items():
        with tf.Graph().as_default():
            w = tf.Variable(tf.zeros([3]))
            loss = tf.reduce_mean(tf.square(tf.linalg.matvec(tf.constant(X), w) - y))
            train = make(tf).minimize(loss * (SMALL if "1e-6" in name else 1.0))
            with tf.compat.v1.Session() as sess:
                sess.run(tf.compat.v1.global_variables_initializer())
                for _ in range(OPT_STEPS):
                    sess.run(train)
                out[name] = _floats(sess.run(w))
    with tf.Graph().as_default():
        out["reference_gradient"] = _reference_gradient(tf, session=True)
    out["onednn"] = os.environ.get("TF_ENABLE_ONEDNN_OPTS", "default")
    return out


def probe_6_tf2(tf):
    X, y = _lsq()
    Xt = tf.constant(X)

    def train(opt, scale):
        w = tf.Variable(tf.zeros([3]))
        for _ in range(OPT_STEPS):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.linalg.matvec(Xt, w) - y)) * scale
            opt.apply_gradients([(tape.gradient(loss, w), w)])
        return _floats(w)

    def scale(name):
        return SMALL if "1e-6" in name else 1.0

    out = {name: train(make(tf), scale(name)) for name, make in V1_OPTIMIZERS.items()}
    out["keras"] = {name: train(make(tf), scale(name)) for name, make in KERAS_OPTIMIZERS.items()}
    out["reference_gradient"] = _reference_gradient(tf, session=False)
    out["onednn"] = os.environ.get("TF_ENABLE_ONEDNN_OPTS", "default")
    return out


# -- 7. imports and names ---------------------------------------------------------------------

def _import_facts():
    import inspect

    import tensorflow
    import tensorflow as T
    import tensorflow.compat.v1 as tf_v1
    from tensorflow import gradients

    out = {
        "alias_same": T.gradients is tensorflow.gradients and gradients is tensorflow.gradients,
        "v1_is_v2": tf_v1.gradients is tensorflow.gradients,
        "v1_params": list(inspect.signature(tf_v1.gradients).parameters),
        "v2_params": list(inspect.signature(tensorflow.gradients).parameters),
        "session_top_level": hasattr(tensorflow, "Session"),
        "session_v1": hasattr(tf_v1, "Session"),
    }
    try:
        from tensorflow.contrib import slim  # noqa: F401
        out["contrib"] = "imported"
    except ImportError as exc:
        out["contrib"] = _error(exc)
    try:
        import tf_slim  # noqa: F401
        out["tf_slim"] = "imported"
    except ImportError as exc:
        out["tf_slim"] = _error(exc)
    return out


def probe_7_tf1(tf):
    return _import_facts()


def probe_7_tf2(tf):
    return _import_facts()


# -- 8. custom gradients ----------------------------------------------------------------------

def _reversal_rules(tf):
    name = "Tf1VsTf2Reverse"
    tf.RegisterGradient(name)(lambda op, grad: -grad)

    @tf.custom_gradient
    def reverse(x):
        return tf.identity(x), lambda dy: -dy

    def legacy(x):
        with tf.compat.v1.get_default_graph().gradient_override_map({"Identity": name}):
            y = tf.identity(x)
        return tf.reduce_sum(3.0 * y)

    def custom(x):
        return tf.reduce_sum(3.0 * reverse(x))

    return legacy, custom


def probe_8_tf1(tf):
    import warnings

    legacy, custom = _reversal_rules(tf)
    x = tf.constant([1.0, 2.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        grads = [tf.gradients(legacy(x), x)[0], tf.gradients(custom(x), x)[0]]
        with tf.compat.v1.Session() as sess:
            override, custom_g = sess.run(grads)
    return {"override": _floats(override), "custom": _floats(custom_g), "warnings": len(caught)}


def probe_8_tf2(tf):
    import warnings

    legacy, custom = _reversal_rules(tf)
    x = tf.constant([1.0, 2.0])

    def grad(fn):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        return tape.gradient(y, x)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = {"override": _floats(grad(legacy)), "custom": _floats(grad(custom)),
               "override_function": _floats(tf.function(lambda: grad(legacy))()),
               "custom_function": _floats(tf.function(lambda: grad(custom))())}
    out["warnings"] = len(caught)
    return out


# -- 9. tf.layers on TensorFlow >= 2.16 (Keras 3) ---------------------------------------------

def _dense_in_graph(tf):
    """A tf.layers training script: dense layer, 3 Adam steps; losses and variable names."""
    import numpy as np

    x = tf.constant(np.array([[0.1, 0.2], [0.3, 0.4]], np.float32))
    y0 = tf.constant(np.array([[0.8], [0.7]], np.float32))
    try:
        y = tf.compat.v1.layers.dense(x, 1, name="actor/l1",
                                      kernel_initializer=tf.compat.v1.ones_initializer())
    except AttributeError as exc:
        return {"dense": _error(exc)}
    loss = tf.reduce_mean(tf.square(y - y0))
    train = tf.compat.v1.train.AdamOptimizer(0.1).minimize(loss)
    losses = []
    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        for _ in range(3):
            losses.append(float(sess.run([train, loss])[1]))
        losses.append(float(sess.run(loss)))
    # the same computation by hand, TF1's Adam on a kernel of ones and a zero bias
    xv, yv = np.array([[0.1, 0.2], [0.3, 0.4]]), np.array([[0.8], [0.7]])
    k, b = np.ones((2, 1)), np.zeros(1)
    m = [np.zeros_like(k), np.zeros_like(b)]
    v = [np.zeros_like(k), np.zeros_like(b)]
    expected = []
    for t in range(1, 5):
        r = xv @ k + b - yv
        expected.append(float(np.mean(r ** 2)))
        if t == 4:
            break
        gk, gb = 2 * xv.T @ r / r.size, 2 * r.sum(0) / r.size
        lr = 0.1 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        for i, (p, g) in enumerate(((k, gk), (b, gb))):
            m[i] = 0.9 * m[i] + 0.1 * g
            v[i] = 0.999 * v[i] + 0.001 * g * g
            p -= lr * m[i] / (np.sqrt(v[i]) + 1e-8)
    names = [w.name for w in tf.compat.v1.trainable_variables()]
    return {"dense": "works", "losses": losses, "expected": expected, "names": names}


def _keras_slash_name(keras_layers):
    try:
        layer = keras_layers.Dense(1, name="actor/l1")
        layer.build((None, 2))
        return f"accepted: {[w.name for w in layer.weights]}"
    except ValueError as exc:
        return _error(exc)


def probe_9_tf1(tf):
    return _dense_in_graph(tf)


def probe_9_tf2(tf):
    try:
        tf.compat.v1.layers.dense(tf.ones([1, 2]), 1)
        dense = "works"
    except AttributeError as exc:
        dense = _error(exc)
    import keras

    return {"dense": dense, "keras": keras.__version__, "slash": _keras_slash_name(tf.keras.layers)}


def probe_9_legacy_tf1(tf):
    import keras  # Keras 3 as a package, whatever tf.keras is

    out = _dense_in_graph(tf)
    out["tf_keras_layers"] = type(tf.keras.layers.Dense).__module__
    out["keras"] = keras.__version__
    return out


def probe_9_legacy_eager(tf):
    import tf_keras

    return {"slash": _keras_slash_name(tf_keras.layers), "tf_keras": tf_keras.__version__}


def _keras_module(tf) -> str:
    return type(tf.keras.layers.Dense(1)).__module__.split(".")[0]


def probe_9_late_env(tf):
    # after `import tensorflow`, before anything touched tf.keras or tf.compat.v1.layers
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    out = _dense_in_graph(tf)
    out["tf_keras_is"] = _keras_module(tf)
    return out


def probe_9_after_keras(tf):
    keras_before = _keras_module(tf)  # tf.keras is loaded here, as Keras 3
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    out = _dense_in_graph(tf)
    out["tf_keras_is"] = f"{keras_before}, then {_keras_module(tf)}"
    return out


def probe_9_after_layers(tf):
    first = _dense_in_graph(tf)["dense"]  # tf.compat.v1.layers is loaded here, without the variable
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    return {"first": first, "dense": _dense_in_graph(tf)["dense"]}


# -- 10. TF1 model code as TF2 objects ------------------------------------------------------

_X10 = [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]
_Y10 = [[1.0, 0.0], [0.0, 1.0]]


def probe_10_tf1(tf):
    """tf.layers.dense (tf-keras' legacy layer) in a v1 graph, 3 Adam steps; a merged summary."""
    from tf_keras.api._v1.keras.__internal__.legacy import layers

    x, y0 = tf.constant(_X10), tf.constant(_Y10)
    with tf.compat.v1.variable_scope("net"):
        h = layers.dense(x, 4, tf.nn.relu, kernel_initializer=tf.compat.v1.constant_initializer(0.3),
                         name="fc")
        out = layers.dense(h, 2, kernel_initializer=tf.compat.v1.constant_initializer(-0.2), name="out")
    loss = tf.reduce_mean(tf.square(out - y0))
    train = tf.compat.v1.train.AdamOptimizer(0.1).minimize(loss)
    with tf.compat.v1.name_scope("Layer1"):
        hist = tf.compat.v1.summary.histogram("W", h)
        scal = tf.compat.v1.summary.scalar("loss", loss)
    merged = tf.compat.v1.summary.merge_all()
    losses = []
    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        summary = sess.run(merged)
        for _ in range(3):
            losses.append(float(sess.run([train, loss])[1]))
    import hashlib

    return {"losses": losses, "names": [v.name for v in tf.compat.v1.trainable_variables()],
            "summary": hashlib.sha256(summary).hexdigest()[:16], "ops": [hist.name, scal.name]}


def probe_10_tf2(tf):
    """The same with tf_keras Dense objects made once, eagerly; Keras 3's variables and v1 optimizers;
    the v1 summary ops run eagerly and merged with raw_ops.MergeSummary."""
    import hashlib

    import tf_keras

    x, y0 = tf.constant(_X10), tf.constant(_Y10)
    fc = tf_keras.layers.Dense(4, tf.nn.relu, kernel_initializer=tf.compat.v1.constant_initializer(0.3),
                               name="net/fc")
    out_layer = tf_keras.layers.Dense(2, kernel_initializer=tf.compat.v1.constant_initializer(-0.2),
                                      name="net/out")
    made_before_call = len(fc.variables)
    opt = tf.compat.v1.train.AdamOptimizer(0.1)
    h = fc(x)
    first_loss = tf.reduce_mean(tf.square(out_layer(h) - y0))
    summary = tf.raw_ops.MergeSummary(inputs=[tf.compat.v1.summary.histogram("Layer1/W", h),
                                              tf.compat.v1.summary.scalar("Layer1/loss", first_loss)])
    losses = []
    for _ in range(3):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(out_layer(fc(x)) - y0))
        variables = [*fc.trainable_variables, *out_layer.trainable_variables]
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
        losses.append(float(loss))
    built = tf_keras.layers.Dense(2, name="net/built")
    built.build((None, 3))
    symbolic = tf_keras.layers.Dense(2, name="net/symbolic")
    symbolic(tf_keras.Input([3]))
    k3 = tf.keras.layers.Dense(2)
    k3.build((None, 3))
    try:
        tf.compat.v1.train.AdamOptimizer(0.1).apply_gradients([(tf.ones([3, 2]), k3.kernel)])
        keras3 = "accepted"
    except Exception as exc:  # noqa: BLE001 - the failure is the fact measured
        keras3 = _error(exc)
    return {"losses": losses, "names": [v.name for v in [*fc.variables, *out_layer.variables]],
            "made_before_call": made_before_call, "made_after_call": len(fc.variables),
            "built": [v.name for v in built.variables],
            "symbolic": [v.name for v in symbolic.variables],
            "keras3_v1_optimizer": keras3,
            "summary": hashlib.sha256(summary.numpy()).hexdigest()[:16]}


@dataclass
class Probe:
    mode: str                      # "tf1": disable_v2_behavior() first; "tf2": eager
    fn: Callable
    env: Dict[str, str] = field(default_factory=dict)


PROBES: Dict[str, Probe] = {
    "1.tf1": Probe("tf1", probe_1_tf1), "1.tf2": Probe("tf2", probe_1_tf2),
    "2.tf1": Probe("tf1", probe_2_tf1), "2.tf2": Probe("tf2", probe_2_tf2),
    "3.tf1": Probe("tf1", probe_3_tf1), "3.tf2": Probe("tf2", probe_3_tf2),
    "4.tf1": Probe("tf1", probe_4_tf1), "4.tf2": Probe("tf2", probe_4_tf2),
    "5.tf1": Probe("tf1", probe_5_tf1), "5.tf2": Probe("tf2", probe_5_tf2),
    "6.tf1": Probe("tf1", probe_6_tf1), "6.tf2": Probe("tf2", probe_6_tf2),
    "6.tf1.noonednn": Probe("tf1", probe_6_tf1, {"TF_ENABLE_ONEDNN_OPTS": "0"}),
    "6.tf2.noonednn": Probe("tf2", probe_6_tf2, {"TF_ENABLE_ONEDNN_OPTS": "0"}),
    "7.tf1": Probe("tf1", probe_7_tf1), "7.tf2": Probe("tf2", probe_7_tf2),
    "8.tf1": Probe("tf1", probe_8_tf1), "8.tf2": Probe("tf2", probe_8_tf2),
    "9.tf1": Probe("tf1", probe_9_tf1), "9.tf2": Probe("tf2", probe_9_tf2),
    "9.legacy.tf1": Probe("tf1", probe_9_legacy_tf1, {"TF_USE_LEGACY_KERAS": "1"}),
    "9.legacy.tf2": Probe("tf2", probe_9_legacy_eager, {"TF_USE_LEGACY_KERAS": "1"}),
    "9.late.tf1": Probe("tf1", probe_9_late_env),
    "9.after_keras.tf1": Probe("tf1", probe_9_after_keras),
    "9.after_layers.tf1": Probe("tf1", probe_9_after_layers),
    "10.tf1": Probe("tf1", probe_10_tf1), "10.tf2": Probe("tf2", probe_10_tf2),
}

#: environment variables a probe gets only when it asks for them
CONTROLLED_ENV = ("TF_USE_LEGACY_KERAS", "TF_ENABLE_ONEDNN_OPTS")


def child_main(key: str) -> int:
    probe = PROBES[key]
    import tensorflow as tf

    if probe.mode == "tf1":
        tf.compat.v1.disable_v2_behavior()
    result = probe.fn(tf)
    sys.stdout.write(MARKER + json.dumps(result) + "\n")
    return 0


class ProbeFailed(RuntimeError):
    pass


def run_probe(key: str) -> Dict[str, Any]:
    """Run one probe in a fresh interpreter and return what it measured."""
    probe = PROBES[key]
    env = {k: v for k, v in os.environ.items() if k not in CONTROLLED_ENV}
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env.update(probe.env)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", key]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise ProbeFailed(f"probe {key} did not finish in {PROBE_TIMEOUT_S} s") from exc
    for line in proc.stdout.splitlines():
        if line.startswith(MARKER):
            return json.loads(line[len(MARKER):])
    tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
    raise ProbeFailed(f"probe {key} (exit {proc.returncode}) gave no result:\n{tail}")


# ---------------------------------------------------------------------------------------------
# Judges: turn the probes' results into table rows.
# ---------------------------------------------------------------------------------------------

@dataclass
class Row:
    section: int
    fact: str
    tf1: str
    tf2: str
    confirmed: bool
    verdict: str


def _fmt(value, digits: int = 6) -> str:
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v, digits) for v in value) + "]"
    return str(value)


def _close(a, b, rtol=1e-6) -> bool:
    import numpy as np

    if a is None or b is None:
        return a is b
    if isinstance(a, list) and isinstance(b, list) and None in a + b:
        return len(a) == len(b) and all(_close(p, q, rtol) for p, q in zip(a, b))
    return bool(np.allclose(np.asarray(a, float), np.asarray(b, float), rtol=rtol, atol=1e-7))


def _verdict(ok: bool, holds: str, instead: str = "") -> tuple:
    return ok, (f"confirmed: {holds}" if ok else f"NOT CONFIRMED: {instead or 'see the values'}")


def judge_1(r) -> List[Row]:
    g, e = r["1.tf1"], r["1.tf2"]
    rows = []
    ok = _close(g["reads"], e["recomputed"]) and not _close(g["reads"], e["straight"])
    rows.append(Row(1, "read loss, train once, read loss (w = 2, GD 0.1)",
                    f"{_fmt(g['reads'])}, w {_fmt(g['w'])}",
                    f"straight-line {_fmt(e['straight'])}; recomputed per fetch {_fmt(e['recomputed'])}",
                    *_verdict(ok, "a straight-line tensor is stale; recomputing keeps the numbers")))
    ok = _close(g["fed"], e["fed"]) and not _close(g["fed"], e["straight_fed"])
    rows.append(Row(1, "y = 2x fed x = 1 then x = 3", _fmt(g["fed"]),
                    f"straight-line {_fmt(e['straight_fed'])}; function of the feed {_fmt(e['fed'])}",
                    *_verdict(ok, "a fed graph is a function of its feeds")))
    ok = _close(g["w"], e["recomputed_w"]) and not _close(g["w"], e["everything_w"])
    rows.append(Row(1, "same program, one build-everything function per sess.run",
                    f"w {_fmt(g['w'])}",
                    f"w {_fmt(e['everything_w'])} (reads {_fmt(e['everything'])})",
                    *_verdict(ok, "a train step would run at every read")))
    return rows


def judge_2(r) -> List[Row]:
    g, e = r["2.tf1"], r["2.tf2"]
    rows = []

    def same(fact, key, holds, tf2_key=None):
        ok = _close(g[key], e[tf2_key or key])
        rows.append(Row(2, fact, _fmt(g[key]), _fmt(e[tf2_key or key]), *_verdict(ok, holds)))

    ok = g["type"] == "list of 1" and e["type"] != "list" and _close(g["value"], e["value"])
    rows.append(Row(2, "d(x*x)/dx at 3: returned structure", f"{g['type']}: {_fmt(g['value'])}",
                    f"{e['type']}: {_fmt(e['value'])}",
                    *_verdict(ok, "tf.gradients returns a list; the tape the structure of sources")))
    same("target [x*x, 3x]: summed", "summed", "both sum several targets")
    same("grad_ys= (3rd positional) vs output_gradients=", "grad_ys", "same numbers")
    ok = g["constant_source"] is not None and e["constant_source"] is None
    rows.append(Row(2, "constant x as a source, no tape.watch", _fmt(g["constant_source"]),
                    _fmt(e["constant_source"]),
                    *_verdict(ok, "an unwatched non-variable source gives None on a tape")))
    same("unconnected source z", "unconnected", "None on both")
    same("unconnected_gradients zero", "zero", "zeros on both")
    ok = _close(g["again"], 6.0) and e["again"].startswith("RuntimeError") \
        and _close(e["again_persistent"], [6.0, 6.0])
    rows.append(Row(2, "second gradient from the same graph / tape", _fmt(g["again"]),
                    f"{e['again'][:60]}...; persistent {_fmt(e['again_persistent'])}",
                    *_verdict(ok, "a non-persistent tape answers once")))
    same("d2(x^3)/dx2 at 3 (gradient of a gradient / nested tapes)", "second", "same numbers")
    same("stop_gradients=[a] vs tf.stop_gradient(a), a = 2x, y = a + x", "stop", "same numbers")
    ok = e["eager_tf_gradients"].startswith("RuntimeError: tf.gradients is not supported")
    rows.append(Row(2, "tf.gradients called eagerly", "(graph: works)", e["eager_tf_gradients"],
                    *_verdict(ok, "it raises")))
    return rows


def judge_3(r) -> List[Row]:
    g, e = r["3.tf1"], r["3.tf2"]
    shape = f"{SPLIT_DEPTH} tanh layers {SPLIT_WIDTH} wide, batch {SPLIT_BATCH}"

    def cell(m):
        return f"{m['direct_ms']:.1f} -> {m['split_ms']:.1f} ms = {m['ratio']:.2f}x"

    rows = []
    diffs = [g["graph"]["max_diff"]] + [e[k]["max_diff"] for k in ("persistent", "per_segment", "function")]
    ok = max(diffs) < 1e-5
    rows.append(Row(3, f"split at every layer == direct ({shape})",
                    f"max|diff| {g['graph']['max_diff']:.1e}",
                    f"max|diff| {max(diffs[1:]):.1e}", *_verdict(ok, "same gradients")))
    p, s, f = e["persistent"]["ratio"], e["per_segment"]["ratio"], e["function"]["ratio"]
    ok = p > 1.5 * s and p > 1.5 * f
    rows.append(Row(3, "split/direct time, one persistent tape", cell(g["graph"]),
                    cell(e["persistent"]), *_verdict(ok, "a persistent tape pays per call")))
    rows.append(Row(3, "split/direct time, one tape per segment", "", cell(e["per_segment"]),
                    *_verdict(s < 1.5, "close to direct", f"{s:.2f}x")))
    rows.append(Row(3, "split/direct time, persistent tape in tf.function", "", cell(e["function"]),
                    *_verdict(f < 1.5, "close to direct", f"{f:.2f}x")))
    return rows


def judge_4(r) -> List[Row]:
    g, e = r["4.tf1"], r["4.tf2"]
    rows = []
    ok = g["same"] and not e["same"] and e["names"][0] == e["names"][1]
    rows.append(Row(4, "variable_scope(reuse=True) + get_variable twice",
                    f"same variable: {g['same']} ({', '.join(g['variables'])})",
                    f"same variable: {e['same']} (two named {e['names'][0]})",
                    *_verdict(ok, "eager makes a new variable of the same name")))
    ok = e["template_same"]
    rows.append(Row(4, "make_template(get_variable) called twice eagerly", "",
                    f"same variable: {e['template_same']} ({e['template_names'][0]})",
                    *_verdict(ok, "make_template shares")))
    ok = len(e["slim_plain_made"]) == 2 * len(e["slim_template_made"]) \
        and len(g["slim_made"]) == len(e["slim_template_made"])
    rows.append(Row(4, "tf_slim fully_connected called twice: variables created",
                    f"{len(g['slim_made'])} (AUTO_REUSE)",
                    f"plain {len(e['slim_plain_made'])}; make_template {len(e['slim_template_made'])}",
                    *_verdict(ok, "make_template restores sharing")))
    return rows


def judge_5(r) -> List[Row]:
    g, e = r["5.tf1"], r["5.tf2"]
    rows = []
    ok = not _close(g["graph_seed"], e["graph_seed"])
    rows.append(Row(5, "set_random_seed(0) / tf.random.set_seed(0); normal([2])",
                    _fmt(g["graph_seed"]), _fmt(e["graph_seed"]), *_verdict(ok, "streams differ")))
    ok = _close(g["op_seed"], e["op_seed"]) and _close(g["op_seed_again"], e["op_seed_again"])
    rows.append(Row(5, "the same with an op seed (seed=1): first and second draw",
                    f"{_fmt(g['op_seed'])} then {_fmt(g['op_seed_again'])}",
                    f"{_fmt(e['op_seed'])} then {_fmt(e['op_seed_again'])}",
                    *_verdict(ok, "with both seeds given the draws agree", "they differ")))
    ok = _close(g["twin"], g["op_seed"]) and not _close(e["op_seed_again"], e["op_seed"])
    rows.append(Row(5, "two random_normal([2], seed=1) lines, each run once",
                    f"{_fmt(g['op_seed'])} and {_fmt(g['twin'])}",
                    f"{_fmt(e['op_seed'])} and {_fmt(e['op_seed_again'])}",
                    *_verdict(ok, "TF1: one stream per op; eager: one per seed pair, advancing")))
    ok = _close(g["initializer"], e["initializer"])
    rows.append(Row(5, "glorot_uniform_initializer(seed=1), graph seed 0", _fmt(g["initializer"]),
                    _fmt(e["initializer"]), *_verdict(ok, "agree", "they differ")))
    ok = _close(g["op_seed_only"], e["op_seed_only"])
    rows.append(Row(5, "op seed 1 and no graph / global seed", _fmt(g["op_seed_only"]),
                    _fmt(e["op_seed_only"]), *_verdict(ok, "agree", "they differ")))
    ok = not _close(g["graph_seed"], e["v1_name_eager"])
    rows.append(Row(5, "TF1 names (compat.v1) run eagerly", _fmt(g["graph_seed"]),
                    _fmt(e["v1_name_eager"]), *_verdict(ok, "the v1 spelling does not bring TF1's stream")))
    return rows


def _rel(a, b) -> float:
    import numpy as np

    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-30)))


def _ulps(a, b) -> str:
    """How far apart two float32 arrays are: 'bitwise equal' or the largest distance in ulps."""
    import numpy as np

    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    if np.array_equal(a, b):
        return "bitwise equal"
    ulps = np.max(np.abs(a.astype(np.float64) - b) / np.spacing(np.maximum(np.abs(a), np.abs(b))))
    return f"up to {ulps:.0f} ulps apart (max rel {_rel(a, b):.0e})"


def judge_6(r) -> List[Row]:
    g, e = r["6.tf1"], r["6.tf2"]
    rows = []
    for name in V1_OPTIMIZERS:
        rel = _rel(e[name], g[name])
        base, _, extra = name.partition(", ")
        rows.append(Row(6, f"v1 {base}Optimizer{', ' + extra if extra else ''}, "
                           f"{OPT_STEPS} steps lr {OPT_LR}: w",
                        _fmt(g[name]), f"eager: {_fmt(e[name])} (max rel {rel:.0e})",
                        *_verdict(rel <= 1e-5, "TF1's rule eagerly")))
    for name, keras_name, lower, upper in (
            ("Adam", "Adam", None, 1e-4), ("Adam", "Adam(epsilon=1e-8)", None, 1e-4),
            ("Adam, loss x 1e-6", "Adam, loss x 1e-6", 1e-2, None),
            ("Adam, loss x 1e-6", "Adam(epsilon=1e-8), loss x 1e-6", None, 1e-4),
            ("RMSProp", "RMSprop(rho=0.9, epsilon=1e-10)", 1e-2, None),
            ("GradientDescent", "SGD", None, 1e-6)):
        rel = _rel(e["keras"][keras_name], g[name])
        ok = (lower is None or rel > lower) and (upper is None or rel <= upper)
        holds = "a different computation" if lower else "rounding only"
        rows.append(Row(6, f"v1 {name} vs Keras {keras_name}", _fmt(g[name]),
                        f"{_fmt(e['keras'][keras_name])} (max rel {rel:.0e})",
                        *_verdict(ok, holds, f"max rel {rel:.0e}")))
    ref_g, ref_e = g["reference_gradient"], e["reference_gradient"]
    rows.append(Row(6, "reference program dloss/dW (oneDNN on), graph vs eager", _fmt(ref_g, 8),
                    f"{_fmt(ref_e, 8)}: {_ulps(ref_g, ref_e)}",
                    *_verdict(_rel(ref_e, ref_g) <= 1e-5, "equal to float32 tolerance (rtol 1e-5)")))
    if "6.tf1.noonednn" in r:
        g0, e0 = r["6.tf1.noonednn"]["reference_gradient"], r["6.tf2.noonednn"]["reference_gradient"]
        rows.append(Row(6, "the same with TF_ENABLE_ONEDNN_OPTS=0 (set before the import)", _fmt(g0, 8),
                        f"{_fmt(e0, 8)}: {_ulps(g0, e0)}; eager oneDNN on vs off: {_ulps(ref_e, e0)}",
                        *_verdict(_rel(e0, g0) <= 1e-5, "equal to float32 tolerance")))
    return rows


def judge_7(r) -> List[Row]:
    g, e = r["7.tf1"], r["7.tf2"]
    rows = []
    extra = [p for p in e["v1_params"] if p not in e["v2_params"]]
    ok = not e["v1_is_v2"] and bool(extra)
    rows.append(Row(7, "`tf.gradients` via tensorflow.compat.v1 vs via tensorflow",
                    f"v1: ({', '.join(e['v1_params'])})", f"v2: ({', '.join(e['v2_params'])})",
                    *_verdict(ok, f"two functions; v1 only: {', '.join(extra)}")))
    ok = g["alias_same"] and e["alias_same"]
    rows.append(Row(7, "`import tensorflow as T`, `from tensorflow import gradients`",
                    f"same object: {g['alias_same']}", f"same object: {e['alias_same']}",
                    *_verdict(ok, "one binding, many spellings")))
    ok = not e["session_top_level"] and e["session_v1"]
    rows.append(Row(7, "`tf.Session` at top level / in compat.v1",
                    f"{g['session_top_level']} / {g['session_v1']}",
                    f"{e['session_top_level']} / {e['session_v1']}", *_verdict(ok, "moved names")))
    ok = g["contrib"].startswith(("ModuleNotFoundError", "ImportError")) and e["tf_slim"] == "imported"
    rows.append(Row(7, "`from tensorflow.contrib import slim` / `import tf_slim`", g["contrib"],
                    f"tf_slim: {e['tf_slim']}", *_verdict(ok, "contrib is gone; tf_slim replaces slim")))
    return rows


def judge_8(r) -> List[Row]:
    g, e = r["8.tf1"], r["8.tf2"]
    rev, fwd = [-3.0, -3.0], [3.0, 3.0]
    rows = []
    ok = _close(g["override"], rev) and _close(e["override"], fwd) \
        and _close(e["override_function"], fwd) and g["warnings"] == e["warnings"] == 0
    rows.append(Row(8, "gradient_override_map reversal: d sum(3 * id(x))/dx",
                    f"{_fmt(g['override'])} ({g['warnings']} warnings)",
                    f"tape {_fmt(e['override'])}, tf.function {_fmt(e['override_function'])} "
                    f"({e['warnings']} warnings)", *_verdict(ok, "silently ignored under a tape")))
    ok = _close(g["custom"], rev) and _close(e["custom"], rev) and _close(e["custom_function"], rev)
    rows.append(Row(8, "@tf.custom_gradient reversal", _fmt(g["custom"]),
                    f"tape {_fmt(e['custom'])}, tf.function {_fmt(e['custom_function'])}",
                    *_verdict(ok, "the same everywhere")))
    return rows


def judge_9(r) -> List[Row]:
    g, e = r["9.tf1"], r["9.tf2"]
    lg, le = r["9.legacy.tf1"], r["9.legacy.tf2"]
    late, keras_first, layers_first = (r["9.late.tf1"], r["9.after_keras.tf1"],
                                       r["9.after_layers.tf1"])
    rows = []
    ok = g["dense"].startswith("AttributeError") and e["dense"].startswith("AttributeError")
    rows.append(Row(9, f"tf.compat.v1.layers.dense, Keras {e['keras']}", g["dense"], e["dense"],
                    *_verdict(ok, "raises in a v1 graph and eagerly")))
    ok = lg["dense"] == "works" and _close(lg["losses"], lg["expected"], rtol=1e-5)
    rows.append(Row(9, "TF_USE_LEGACY_KERAS=1 before the first import (tf_keras): "
                       "dense + Adam losses vs TF1's update by hand",
                    f"{_fmt(lg.get('losses', lg['dense']))} vars {lg.get('names')}",
                    f"by hand: {_fmt(lg.get('expected'))}", *_verdict(ok, "tf.layers works again")))
    ok = late["dense"] == "works" and late["tf_keras_is"] == "tf_keras"
    rows.append(Row(9, "TF_USE_LEGACY_KERAS=1 set after `import tensorflow`, nothing Keras touched",
                    f"tf.layers: {late['dense']}; tf.keras is {late['tf_keras_is']}", "",
                    *_verdict(ok, "the variable is read when Keras is first loaded")))
    ok = keras_first["dense"] == "works" and keras_first["tf_keras_is"] == "keras, then keras"
    rows.append(Row(9, "... set after tf.keras was first used",
                    f"tf.layers: {keras_first['dense']}; tf.keras is {keras_first['tf_keras_is']}", "",
                    *_verdict(ok, "tf.keras stays Keras 3; tf.layers decides on its own first use")))
    ok = layers_first["first"] != "works" and layers_first["dense"] != "works"
    rows.append(Row(9, "... set after tf.compat.v1.layers was first used",
                    f"tf.layers: {layers_first['dense']}", "",
                    *_verdict(ok, "too late", "it worked")))
    ok = e["slash"].startswith("ValueError") and le["slash"].startswith("accepted")
    rows.append(Row(9, "Dense(name='actor/l1')", f"tf_keras {le['tf_keras']}: {le['slash']}",
                    f"Keras {e['keras']}: {e['slash']}", *_verdict(ok, "Keras 3 refuses '/'")))
    return rows


def judge_10(r) -> List[Row]:
    g, e = r["10.tf1"], r["10.tf2"]
    rows = []
    ok = _close(g["losses"], e["losses"], rtol=1e-5)
    rows.append(Row(10, "tf.layers.dense in scope 'net' (v1 graph) vs tf_keras Dense(name='net/fc') "
                        "made once (eager); 3 Adam steps (v1 optimizer)",
                    f"{_fmt(g['losses'])} vars {g['names']}", f"{_fmt(e['losses'])} vars {e['names']}",
                    *_verdict(ok and g["names"] == e["names"], "same losses, same variable names")))
    ok = e["made_before_call"] == 0 and e["made_after_call"] == 2
    rows.append(Row(10, "a Keras layer's variables before and after its first call", "",
                    f"{e['made_before_call']} before, {e['made_after_call']} after",
                    *_verdict(ok, "made at the first call")))
    ok = e["built"] == ["kernel:0", "bias:0"] and e["symbolic"] == ["net/symbolic/kernel:0",
                                                                    "net/symbolic/bias:0"]
    rows.append(Row(10, "tf_keras Dense(name='net/built').build((None, 3)) vs "
                        "Dense(name='net/symbolic')(tf_keras.Input([3]))", "",
                    f"build: {e['built']}; symbolic call: {e['symbolic']}",
                    *_verdict(ok, "build() alone drops the layer's name; a call keeps it")))
    ok = e["keras3_v1_optimizer"] != "accepted"
    rows.append(Row(10, "a v1 Adam optimizer given a Keras 3 variable", "", e["keras3_v1_optimizer"],
                    *_verdict(ok, "refused (tf_keras variables are tf.Variable and accepted)",
                              "accepted")))
    ok = g["summary"] == e["summary"]
    rows.append(Row(10, "merged summary (histogram + scalar under name scope Layer1): sha256 of the "
                        "bytes", f"{g['summary']} ops {g['ops']}", e["summary"],
                    *_verdict(ok, "the v1 ops run eagerly and tf.raw_ops.MergeSummary give TF1's "
                                  "bytes")))
    return rows


@dataclass
class Section:
    title: str
    probes: Sequence[str]
    judge: Callable


SECTIONS: Dict[int, Section] = {
    1: Section("deferred versus immediate evaluation", ["1.tf1", "1.tf2"], judge_1),
    2: Section("tf.gradients versus GradientTape.gradient", ["2.tf1", "2.tf2"], judge_2),
    3: Section("cost of a split on an eager tape", ["3.tf1", "3.tf2"], judge_3),
    4: Section("variable sharing", ["4.tf1", "4.tf2"], judge_4),
    5: Section("randomness", ["5.tf1", "5.tf2"], judge_5),
    6: Section("optimizers and numerics",
               ["6.tf1", "6.tf2", "6.tf1.noonednn", "6.tf2.noonednn"], judge_6),
    7: Section("imports and names", ["7.tf1", "7.tf2"], judge_7),
    8: Section("custom gradients", ["8.tf1", "8.tf2"], judge_8),
    9: Section("tf.layers on TensorFlow >= 2.16 (Keras 3)",
               ["9.tf1", "9.tf2", "9.legacy.tf1", "9.legacy.tf2", "9.late.tf1",
                "9.after_keras.tf1", "9.after_layers.tf1"], judge_9),
    10: Section("TF1 model code as TF2 objects", ["10.tf1", "10.tf2"], judge_10),
}


def check(section: int) -> List[Row]:
    """Measure one section of docs/tf1-vs-tf2.md (its probes in fresh processes)."""
    results = {key: run_probe(key) for key in SECTIONS[section].probes}
    return SECTIONS[section].judge(results)


def versions() -> Dict[str, str]:
    code = ("import json, tensorflow as tf, keras, numpy\n"
            "try:\n import tf_keras; tk = tf_keras.__version__\nexcept ImportError:\n tk = None\n"
            "print(json.dumps({'tensorflow': tf.__version__, 'keras': keras.__version__,"
            " 'tf_keras': tk, 'numpy': numpy.__version__}))")
    env = {k: v for k, v in os.environ.items() if k not in CONTROLLED_ENV}
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=PROBE_TIMEOUT_S)
    if out.returncode:
        raise ProbeFailed("could not import TensorFlow:\n" + out.stderr.strip()[-2000:])
    info = json.loads(out.stdout.strip().splitlines()[-1])
    info["python"] = platform.python_version()
    info["date"] = time.strftime("%Y-%m-%d")
    return info


def table(rows: List[Row]) -> str:
    header = ["section", "fact", "TF1 (v1 graph)", "TF2 (eager / tape)", "verdict"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [str(row.section), row.fact, row.tf1, row.tf2, row.verdict]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", type=int, nargs="+", metavar="N",
                        help="measure these sections only (1-%d)" % len(SECTIONS))
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child_main(args.child)
    wanted = args.only or sorted(SECTIONS)
    unknown = [n for n in wanted if n not in SECTIONS]
    if unknown:
        parser.print_usage(sys.stderr)
        print(f"tf1_vs_tf2.py: error: no section {unknown[0]} (sections are 1-{len(SECTIONS)})",
              file=sys.stderr)
        return 2
    try:
        info = versions()
        rows: List[Row] = []
        for n in wanted:
            t0 = time.perf_counter()
            rows.extend(check(n))
            print(f"section {n} ({SECTIONS[n].title}) measured in {time.perf_counter() - t0:.0f} s",
                  file=sys.stderr)
    except ProbeFailed as exc:
        print(f"tf1_vs_tf2.py: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"versions": info, "rows": [asdict(r) for r in rows]}, indent=1))
    else:
        print(", ".join(f"{k} {v}" for k, v in info.items() if v))
        print(table(rows))
        failed = [r for r in rows if not r.confirmed]
        print(f"\n{len(rows) - len(failed)} of {len(rows)} facts confirmed"
              + (f"; NOT confirmed: {', '.join(f'{r.section}: {r.fact}' for r in failed)}"
                 if failed else ""))
    return 1 if any(not r.confirmed for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
