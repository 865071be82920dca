"""Custom backward rules, declared once, applied identically on every backend.

TF1 code overrode gradients with ``@tf.RegisterGradient("Name")`` and
``with graph.gradient_override_map({"Identity": "Name"}):``. Under a TF2 tape
the override map is silently ignored (docs/tf1-vs-tf2.md, section 8): a gradient-reversal
layer that gave ``[-3, -3]`` in a graph gives ``[3, 3]`` under a tape, with no
error. The rules here are built on ``tf.custom_gradient``, which the graph
(``tf.gradients``), the tape and ``tf.function`` all honour, so the same model
code gives the same gradient on the three backends, with or without cuts and
per-cut transforms:

    from tapeshift.compat.custom_gradients import gradient_reversal, straight_through

    def model(p, i):
        h = cut("h", tf.matmul(i["x"], p["W"]))
        z = gradient_reversal(h, scale=0.5)      # forward identity, backward * -0.5
        q = straight_through(tf.sign)(z)         # forward sign, backward identity
        return tf.reduce_sum(q * p["v"])

A rule is a ``Rule``: a forward function of tensors and a backward function
``backward(upstream, *inputs, output, **params)`` returning one gradient per
input. ``custom_rule`` makes one from any pair. ``RULES`` holds the built-in
rules by name (the names the codemod maps ``@tf.RegisterGradient`` names onto).

A rule's forward must be a function of its tensor arguments (and of plain
Python parameters). A forward that reads a ``tf.Variable`` would need
``tf.custom_gradient``'s ``variables=`` protocol, which the backends do not
handle alike; pass the variable's value in as an argument instead.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable

from tapeshift.compat._tf import tensorflow
from tapeshift.compat.errors import CompatError


class RuleError(CompatError):
    """A custom rule was declared or applied incorrectly."""


@dataclass(frozen=True, eq=False)
class Rule:
    """A forward function with its own backward rule.

    ``forward(*inputs, **params) -> output`` builds the forward tensor.
    ``backward(upstream, *inputs, output, **params)`` returns the gradient for
    each input (a single tensor when there is one input, else a tuple).
    ``params`` are plain Python values (a scale, clip bounds, a function) and
    are fixed when the rule is applied; only the tensor inputs get gradients.
    ``legacy_ops`` lists the op types the TF1 override map usually applied the
    rule to (the keys of ``gradient_override_map``), for the codemod.
    """

    name: str
    forward: Callable[..., Any]
    backward: Callable[..., Any]
    doc: str = ""
    legacy_ops: tuple[str, ...] = field(default=())

    def __call__(self, *inputs: Any, **params: Any) -> Any:
        tf = tensorflow()
        if not inputs:
            raise RuleError(f"rule {self.name!r} needs at least one tensor input")
        xs = [tf.convert_to_tensor(x) for x in inputs]
        rule = self

        @tf.custom_gradient
        def apply(*ts):
            y = tf.convert_to_tensor(rule.forward(*ts, **params))

            def grad(upstream, variables=None):
                if variables:
                    names = ", ".join(getattr(v, "name", "?") for v in variables)
                    raise RuleError(
                        f"rule {rule.name!r}: its forward reads variables ({names}); "
                        "a rule's forward must be a function of its tensor inputs. "
                        "Pass the variable in as an input instead."
                    )
                gs = rule.backward(upstream, *ts, y, **params)
                gs = (gs,) if len(ts) == 1 and not isinstance(gs, (tuple, list)) else tuple(gs)
                return _check_grads(rule.name, gs, ts)

            return y, grad

        return apply(*xs)

    def bind(self, **params: Any) -> Callable[..., Any]:
        """The rule with its parameters fixed: ``rule.bind(scale=2.0)(x)``."""
        bound = functools.partial(self, **params)
        shown = ", ".join(f"{k}={_show(v)}" for k, v in params.items())
        bound.__name__ = f"{self.name}({shown})"  # type: ignore[attr-defined]
        return bound


def _check_grads(name, grads, inputs):
    if len(grads) != len(inputs):
        raise RuleError(
            f"rule {name!r}: backward returned {len(grads)} gradients for "
            f"{len(inputs)} inputs; return one per input (None for no gradient)"
        )
    tf = tensorflow()
    out = []
    for k, (g, x) in enumerate(zip(grads, inputs)):
        if g is None:
            out.append(None)
            continue
        g = tf.convert_to_tensor(g)
        if g.dtype != x.dtype or not g.shape.is_compatible_with(x.shape):
            raise RuleError(
                f"rule {name!r}: the gradient for input {k} is {_shape(g.shape)} "
                f"{g.dtype.name}, but that input is {_shape(x.shape)} {x.dtype.name}; "
                "a backward rule must return a gradient shaped like its input"
            )
        out.append(g)
    return out


def custom_rule(forward: Callable | None = None, backward: Callable | None = None, *,
                name: str | None = None, doc: str = "") -> Any:
    """Make a ``Rule`` from a forward and a backward function.

    Either ``custom_rule(forward, backward)``, or as a decorator of the forward::

        @custom_rule(backward=lambda dy, x, y: dy * tf.cast(tf.abs(x) <= 1, dy.dtype))
        def hard_sign(x):
            return tf.sign(x)

    ``backward(upstream, *inputs, output, **params)`` returns one gradient per
    input. ``name`` defaults to the forward function's name.
    """
    if backward is None:
        raise RuleError("custom_rule needs a backward function: custom_rule(forward, backward)")
    if not callable(backward):
        raise RuleError(f"custom_rule: backward must be callable, got {type(backward).__name__}")

    def make(fwd: Callable) -> Rule:
        if not callable(fwd):
            raise RuleError(f"custom_rule: forward must be callable, got {type(fwd).__name__}")
        return Rule(name or getattr(fwd, "__name__", "custom_rule"), fwd, backward,
                    doc or (getattr(fwd, "__doc__", None) or ""))

    return make if forward is None else make(forward)


# -- the built-in rules --------------------------------------------------------


def _identity(x, **_):
    return tensorflow().identity(x)


def _reverse_backward(dy, x, y, *, scale=1.0):
    return dy * (-scale)


def _straight_through_forward(x, *, forward_fn):
    return forward_fn(x)


def _straight_through_backward(dy, x, y, *, forward_fn):
    return dy


def _relu(x):
    return tensorflow().nn.relu(x)


def _guided_backward(dy, x, y):
    tf = tensorflow()
    keep = tf.logical_and(dy > 0, x > 0)
    return tf.where(keep, dy, tf.zeros_like(dy))


def _clip_backward(dy, x, y, *, low, high):
    tf = tensorflow()
    return tf.clip_by_value(dy, tf.cast(low, dy.dtype), tf.cast(high, dy.dtype))


GRADIENT_REVERSAL = Rule(
    "gradient_reversal", _identity, _reverse_backward,
    "forward identity; backward multiplies the gradient by -scale "
    "(domain-adversarial training, Ganin & Lempitsky 2015)",
    legacy_ops=("Identity",),
)
STRAIGHT_THROUGH = Rule(
    "straight_through", _straight_through_forward, _straight_through_backward,
    "forward forward_fn(x) (sign, round, a quantizer); backward identity "
    "(the straight-through estimator, Bengio et al. 2013)",
    legacy_ops=("Sign", "Round", "Floor", "Ceil", "Identity"),
)
GUIDED_RELU = Rule(
    "guided_relu", _relu, _guided_backward,
    "forward relu; backward passes a gradient only where it is positive and the "
    "input was positive (guided backpropagation, Springenberg et al. 2015)",
    legacy_ops=("Relu",),
)
CLIP_BACKWARD = Rule(
    "clip_backward", _identity, _clip_backward,
    "forward identity; backward clips the gradient elementwise to [low, high]",
    legacy_ops=("Identity",),
)

# name -> Rule; apply as RULES[name](x, **params)
RULES: dict[str, Rule] = {
    r.name: r for r in (GRADIENT_REVERSAL, STRAIGHT_THROUGH, GUIDED_RELU, CLIP_BACKWARD)
}


def register(rule: Rule, *, replace: bool = False) -> Rule:
    """Add a rule to ``RULES`` under its name (refuses to replace one silently)."""
    if not isinstance(rule, Rule):
        raise RuleError(f"register() takes a Rule (see custom_rule), got {type(rule).__name__}")
    if rule.name in RULES and RULES[rule.name] is not rule and not replace:
        raise RuleError(f"a rule named {rule.name!r} is already registered; "
                        "pass replace=True to replace it")
    RULES[rule.name] = rule
    return rule


def gradient_reversal(x: Any, scale: float = 1.0) -> Any:
    """Identity forward; the backward pass multiplies the gradient by ``-scale``."""
    return GRADIENT_REVERSAL(x, scale=float(scale))


def straight_through(forward_fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``forward_fn`` forward (e.g. ``tf.sign``, ``tf.round``), identity backward.

    Returns a function of one tensor: ``straight_through(tf.sign)(x)``.
    """
    if not callable(forward_fn):
        raise RuleError(f"straight_through needs a function, got {type(forward_fn).__name__}")
    return STRAIGHT_THROUGH.bind(forward_fn=forward_fn)


def guided_relu(x: Any) -> Any:
    """ReLU forward; backward keeps the gradient where it is > 0 and the input was > 0."""
    return GUIDED_RELU(x)


def clip_backward(x: Any, low: float, high: float) -> Any:
    """Identity forward; the backward pass clips the gradient elementwise to [low, high]."""
    if low > high:
        raise RuleError(f"clip_backward: low {low} is above high {high}")
    return CLIP_BACKWARD(x, low=float(low), high=float(high))


def _show(v) -> str:
    return getattr(v, "__name__", None) or repr(v)


def _shape(shape) -> str:
    dims = shape.as_list() if shape.rank is not None else None
    return "unknown" if dims is None else str(tuple(dims))
