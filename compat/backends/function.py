"""``function``: the tape backend traced once by ``tf.function``.

Traced with ``autograph=False``: model code is plain TensorFlow ops, as on the
graph backend, and errors raised while tracing keep their own messages.
"""

from __future__ import annotations

from tapeshift.compat._tf import tensorflow
from tapeshift.compat.backends import tape


class Compiled:
    def __init__(self, program, params, input_specs, upstream_spec):
        tf = tensorflow()
        self.variables = {n: tf.Variable(v, name=n) for n, v in params.items()}
        self.plan = None
        spec = {n: tf.TensorSpec(shape, dtype) for n, (shape, dtype) in input_specs.items()}

        def run(inputs, upstream=None):
            fetches, self.plan = program(tape.tracer, self.variables, inputs, upstream)
            return fetches

        signature = [spec]
        if upstream_spec is not None:
            signature.append(tf.TensorSpec(*upstream_spec))
        self._fn = tf.function(run, input_signature=signature, autograph=False)
        self._has_upstream = upstream_spec is not None
        # trace now, so that bad input fails at compile time as on the graph backend
        self._fn.get_concrete_function()

    def __call__(self, inputs, upstream):
        args = (inputs, upstream) if self._has_upstream else (inputs,)
        fetches = self._fn(*args)
        return {k: v.numpy() for k, v in fetches.items()}, self.plan

    def variable_values(self) -> dict:
        return {n: v.numpy() for n, v in self.variables.items()}

    def close(self) -> None:
        self._fn = None
        self.variables = {}


def compile(program, params, input_specs, upstream_spec) -> Compiled:
    return Compiled(program, params, input_specs, upstream_spec)
