"""pytest plugin: run a test's model code on each backend (entry point ``pytest11``).

    def test_my_split(tf_backend):
        r = tf_backend.split_gradient(model, params, inputs, cuts=["h"])
        ...

collects as ``test_my_split[graph]``, ``[tape]`` and ``[function]``, and
``[mirrored]`` when TensorFlow sees two devices or more (GPUs, or logical CPUs:
``pytest --tf-logical-cpus 2`` splits the CPU before any test runs).
``@pytest.mark.tf_backends("graph", "mirrored")`` restricts a test to some backends
(``mirrored`` on one device runs one replica).
An unmodified TF1 model function goes in as a ``TF1Model``, which brings its
own parameters and takes the gradient with respect to its trainable variables::

    def test_tf1_net(tf_backend):
        tm = TF1Model(net, inputs)          # tapeshift.compat.tf1_model
        r = tf_backend.gradient(tm, inputs=inputs)

The plugin imports TensorFlow only when a test asks for a backend (or for
``--tf-logical-cpus``); counting the devices does not initialise them.
"""

from __future__ import annotations

import pytest

from tapeshift.compat.backends import ALL, BACKENDS


class BackendRunner:
    """The backend a test runs on, with compat's entry points bound to it."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"<tf_backend {self.name}>"

    def build(self, model, params=None, **options):
        from tapeshift.compat.api import build

        model, params, options = _arguments(model, params, options)
        return build(model, params, backend=self.name, **options)

    def gradient(self, model, params=None, inputs=None, **options):
        from tapeshift.compat.api import gradient

        model, params, options = _arguments(model, params, options)
        return gradient(model, params, inputs, backend=self.name, **options)

    def split_gradient(self, model, params=None, inputs=None, **options):
        from tapeshift.compat.api import split_gradient

        model, params, options = _arguments(model, params, options)
        return split_gradient(model, params, inputs, backend=self.name, **options)

    def value(self, model, params=None, inputs=None):
        """The model's target, computed on this backend."""
        with self.build(model, params, wrt=()) as fn:
            return fn.value(inputs)


def _arguments(model, params, options):
    """A ``TF1Model`` stands for its model function, parameters and trainable variables."""
    from tapeshift.compat.tf1_model import compat_arguments

    return compat_arguments(model, params, options)


def pytest_addoption(parser):
    parser.addoption(
        "--tf-logical-cpus", type=int, default=None, metavar="N",
        help="split TensorFlow's CPU into N logical devices before the tests are collected "
             "(tapeshift.compat.logical_cpus), so that the mirrored backend has N replicas")


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "tf_backends(*names): run a test that uses the tf_backend fixture only on these "
        f"backends (of {', '.join(ALL)})",
    )
    n = config.getoption("--tf-logical-cpus", None)
    if n is not None:
        from tapeshift.compat.devices import logical_cpus
        from tapeshift.compat.errors import DevicesInitializedError

        try:
            logical_cpus(n)
        except (DevicesInitializedError, ValueError) as exc:
            raise pytest.UsageError(f"--tf-logical-cpus {n}: {exc}") from None


def default_backends() -> list[str]:
    """Every backend on one device, and ``mirrored`` when two devices or more are visible."""
    from tapeshift.compat.devices import visible_count

    return list(BACKENDS) + (["mirrored"] if visible_count() >= 2 else [])


def pytest_generate_tests(metafunc):
    if "tf_backend" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("tf_backends")
    if marker is not None:
        unknown = [n for n in marker.args if n not in ALL]
        if unknown or not marker.args:
            raise pytest.UsageError(
                f"{metafunc.definition.nodeid}: tf_backends({', '.join(map(repr, marker.args))}): "
                f"choose among {', '.join(ALL)}"
            )
        names = list(marker.args)
    else:
        names = default_backends()
    metafunc.parametrize("tf_backend", names, ids=names, indirect=True)


@pytest.fixture
def tf_backend(request) -> BackendRunner:
    return BackendRunner(request.param)
