"""pytest plugin: run a test's model code on each backend (entry point ``pytest11``).

    def test_my_split(tf_backend):
        r = tf_backend.split_gradient(model, params, inputs, cuts=["h"])
        ...

collects as ``test_my_split[graph]``, ``[tape]`` and ``[function]``.
``@pytest.mark.tf_backends("graph", "tape")`` restricts a test to some backends.
An unmodified TF1 model function goes in as a ``TF1Model``, which brings its
own parameters and takes the gradient with respect to its trainable variables::

    def test_tf1_net(tf_backend):
        tm = TF1Model(net, inputs)          # tapeshift.compat.tf1_model
        r = tf_backend.gradient(tm, inputs=inputs)

The plugin imports TensorFlow only when a test asks for a backend.
"""

from __future__ import annotations

import pytest

from tapeshift.compat.backends import BACKENDS


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


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "tf_backends(*names): run a test that uses the tf_backend fixture only on these "
        f"backends (of {', '.join(BACKENDS)})",
    )


def pytest_generate_tests(metafunc):
    if "tf_backend" not in metafunc.fixturenames:
        return
    names = list(BACKENDS)
    marker = metafunc.definition.get_closest_marker("tf_backends")
    if marker is not None:
        unknown = [n for n in marker.args if n not in BACKENDS]
        if unknown or not marker.args:
            raise pytest.UsageError(
                f"{metafunc.definition.nodeid}: tf_backends({', '.join(map(repr, marker.args))}): "
                f"choose among {', '.join(BACKENDS)}"
            )
        names = list(marker.args)
    metafunc.parametrize("tf_backend", names, ids=names, indirect=True)


@pytest.fixture
def tf_backend(request) -> BackendRunner:
    return BackendRunner(request.param)
