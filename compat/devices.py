"""The devices the ``mirrored`` backend replicates over, and logical CPUs to have several.

On a machine without accelerators TensorFlow sees one CPU device. It can split it
into logical devices (``tf.config.set_logical_device_configuration``), but only
before it initialises its devices: at the first op, tensor, variable or device
list of the process. ``logical_cpus(2)`` does that, or says clearly why it cannot:

    from tapeshift.compat import logical_cpus
    logical_cpus(2)          # first thing in the script, before any TensorFlow runs

With pytest, ``pytest --tf-logical-cpus 2`` makes the plugin call it before
tests are collected.
"""

from __future__ import annotations

from tapeshift.compat._tf import tensorflow
from tapeshift.compat.errors import DevicesInitializedError


def logical_cpus(n: int) -> None:
    """Split the CPU into ``n`` logical devices (before TensorFlow initialises them).

    Calling it again with the same ``n`` does nothing; with another ``n`` after
    TensorFlow started, or with ``n`` after TensorFlow started with one CPU, it
    raises ``DevicesInitializedError``, which says where to call it instead.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"logical_cpus: n must be a positive integer, got {n!r}")
    tf = tensorflow()
    cpu = tf.config.list_physical_devices("CPU")[0]
    current = tf.config.get_logical_device_configuration(cpu)
    if len(current or [None]) == n:
        return
    try:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(n)])
    except RuntimeError as exc:
        have = len(tf.config.list_logical_devices("CPU"))
        raise DevicesInitializedError(
            f"logical_cpus({n}): TensorFlow has already initialised its devices "
            f"({have} logical CPU{'s' if have != 1 else ''}), and logical devices can only be "
            "configured before that. Call tapeshift.compat.logical_cpus("
            f"{n}) before anything runs TensorFlow (at the top of the script, before the "
            "first tensor, variable, model or gradient), or under pytest pass "
            f"--tf-logical-cpus {n}, or run the code in a process of its own ({exc})"
        ) from None


def visible_count() -> int:
    """How many devices the ``mirrored`` backend would replicate over, without
    initialising TensorFlow's devices (so that ``logical_cpus`` can still be called):
    the GPUs (their logical devices when split), else the logical CPUs."""
    tf = tensorflow()
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        return sum(len(tf.config.get_logical_device_configuration(g) or [None]) for g in gpus)
    cpu = tf.config.list_physical_devices("CPU")[0]
    return len(tf.config.get_logical_device_configuration(cpu) or [None])


def replica_devices() -> tuple[str, ...]:
    """The logical GPUs if there are any, else the logical CPUs (initialises TensorFlow)."""
    tf = tensorflow()
    gpus = tf.config.list_logical_devices("GPU")
    return tuple(d.name for d in (gpus or tf.config.list_logical_devices("CPU")))
