"""``graph``: a ``tf.compat.v1`` graph and ``Session``, as legacy TF1 code ran.

Built in its own ``tf.Graph`` (never ``disable_v2_behavior()``), so it lives
beside eager code in one process. Pullbacks are ``tf.gradients(y, xs,
grad_ys=...)``; every fetch of one call goes through a single ``Session.run``.
"""

from __future__ import annotations

import re

from tapeshift.compat._tf import tensorflow
from tapeshift.compat.cuts import Recorder
from tapeshift.compat.vjp import Forward, trace


def tracer(model, params, inputs, sources, cut_names) -> Forward:
    tf = tensorflow()

    def query(y, xs, cotangent):
        return tf.gradients(y, list(xs), grad_ys=cotangent)

    return trace(model, params, inputs, sources, Recorder(cut_names), query)


class Compiled:
    def __init__(self, program, params, input_specs, upstream_spec):
        tf = tensorflow()
        self.graph = tf.Graph()
        with self.graph.as_default():
            variables = {
                n: tf.compat.v1.Variable(v, name=_op_name(n)) for n, v in params.items()
            }
            self._inputs = {
                n: tf.compat.v1.placeholder(dtype, shape, name=_op_name(n))
                for n, (shape, dtype) in input_specs.items()
            }
            self._upstream = (
                None
                if upstream_spec is None
                else tf.compat.v1.placeholder(upstream_spec[1], upstream_spec[0], name="upstream")
            )
            self.fetches, self.plan = program(tracer, variables, self._inputs, self._upstream)
            self._variables = variables
            init = tf.compat.v1.variables_initializer(list(variables.values()))
        self.graph.finalize()  # nothing may add ops behind a compiled program's back
        self.session = tf.compat.v1.Session(graph=self.graph)
        self.session.run(init)

    def __call__(self, inputs, upstream):
        feed = {self._inputs[n]: v for n, v in inputs.items()}
        if self._upstream is not None:
            feed[self._upstream] = upstream
        return self.session.run(self.fetches, feed_dict=feed), self.plan

    def variable_values(self) -> dict:
        return self.session.run(self._variables)

    def op_count(self) -> int:
        return len(self.graph.get_operations())

    def close(self) -> None:
        self.session.close()


def compile(program, params, input_specs, upstream_spec) -> Compiled:
    return Compiled(program, params, input_specs, upstream_spec)


def _op_name(name: str) -> str:
    # TF op names allow [A-Za-z0-9_.\-/]; keep the user's name recognisable
    cleaned = re.sub(r"[^A-Za-z0-9_.\-/]", "_", name)
    return cleaned if re.match(r"[A-Za-z0-9.]", cleaned) else "p" + cleaned
