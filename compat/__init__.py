"""tapeshift.compat: one gradient API on a TF1 graph, a TF2 tape, tf.function and tf.distribute.

    from tapeshift.compat import cut, split_gradient, clip_by_norm

    def model(params, inputs):
        h = cut("h", tf.matmul(inputs["x"], params["W"]) + params["b"])
        return tf.reduce_mean(tf.square(tf.tanh(h) - inputs["y0"]))

    r = split_gradient(model, params, inputs, cuts=["h"], wrt=["W"],
                       transforms={"h": clip_by_norm(1.0)}, backend="graph")

TensorFlow is imported on first use; without it, using ``compat`` raises an
error that says how to install it.
"""

from tapeshift.compat.api import GradientFunction, build, gradient, split_gradient, vjp
from tapeshift.compat.backends import BACKENDS
from tapeshift.compat.cuts import cut
from tapeshift.compat.devices import logical_cpus
from tapeshift.compat.custom_gradients import (
    clip_backward,
    custom_rule,
    gradient_reversal,
    guided_relu,
    straight_through,
)
from tapeshift.compat.errors import (
    CompatError,
    CutBypassError,
    CutError,
    DevicesInitializedError,
    LegacyShapeError,
    NonFiniteGradientError,
    ReplicaMismatchError,
    ReplicaWarning,
    TensorFlowMissingError,
    TransformError,
    UpstreamGradientError,
)
from tapeshift.compat.flow import flow_report, plot_flow
from tapeshift.compat.result import Bypass, GradientResult, Stage
from tapeshift.compat.transforms import clip_by_norm, clip_by_value, mask, scale

__all__ = [
    "BACKENDS",
    "Bypass",
    "CompatError",
    "CutBypassError",
    "CutError",
    "DevicesInitializedError",
    "GradientFunction",
    "GradientResult",
    "LegacyShapeError",
    "NonFiniteGradientError",
    "ReplicaMismatchError",
    "ReplicaWarning",
    "Stage",
    "TensorFlowMissingError",
    "TransformError",
    "UpstreamGradientError",
    "build",
    "clip_backward",
    "clip_by_norm",
    "clip_by_value",
    "custom_rule",
    "cut",
    "flow_report",
    "gradient",
    "gradient_reversal",
    "guided_relu",
    "logical_cpus",
    "mask",
    "plot_flow",
    "scale",
    "split_gradient",
    "straight_through",
    "vjp",
]
