"""Import TensorFlow on first use, with an install hint when it is missing.

``compat`` itself imports without TensorFlow (so ``tapeshift --help`` works
anywhere); anything that builds or runs a model goes through ``tensorflow()``.
"""

from __future__ import annotations

from tapeshift.compat.errors import TensorFlowMissingError

INSTALL_HINT = (
    "tapeshift.compat needs TensorFlow 2.15 or newer. Install it with\n"
    "    pip install 'tapeshift[tf]'\n"
    "or, for a CPU-only machine,\n"
    "    pip install 'tensorflow-cpu>=2.15' tf-slim"
)


def tensorflow():
    """Return the ``tensorflow`` module, or raise ``TensorFlowMissingError``."""
    try:
        import tensorflow as tf
    except ImportError as exc:  # pragma: no cover - exercised without TF only
        raise TensorFlowMissingError(INSTALL_HINT) from exc
    return tf
