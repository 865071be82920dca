"""Errors raised by ``compat``. Each message names the tensor it is about."""


class CompatError(ValueError):
    """Base class: the request cannot be computed as asked."""


class TensorFlowMissingError(ImportError):
    """TensorFlow is not installed; the message says how to install it."""


class CutError(CompatError):
    """A cut is unknown, marked twice, or not between the target and the sources."""


class CutBypassError(CutError):
    """A source reaches the target along a path that skips a cut (bypass='raise')."""


class UpstreamGradientError(CompatError):
    """The upstream gradient (cotangent) does not fit the target."""


class TransformError(CompatError):
    """A per-cut transform is unknown or returned a tensor of the wrong shape/dtype."""


class LegacyShapeError(CompatError):
    """legacy_elementwise mode: the two halves cannot be multiplied elementwise."""


class NonFiniteGradientError(CompatError, FloatingPointError):
    """A stage or a gradient holds NaN or Inf (check_numerics='raise')."""


class ReplicaMismatchError(CompatError):
    """mirrored backend: the target on the replicas is not the target on one device."""


class DevicesInitializedError(RuntimeError):
    """Logical devices asked for after TensorFlow initialised its devices."""


class ReplicaWarning(UserWarning):
    """mirrored backend: a number on the replicas differs from one device's (asked for)."""
