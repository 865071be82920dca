"""tapeshift.migrate: rewrite legacy TensorFlow 1.x gradient code into TF2 form.

This package must import and run without TensorFlow installed: the codemod
only reads and writes source text. Commands that execute TensorFlow
(``run-legacy``, ``verify``, ``demo``) import it lazily.
"""

__all__ = ["main", "__version__"]

try:
    from importlib.metadata import PackageNotFoundError, version

    __version__ = version("tapeshift")
except PackageNotFoundError:  # running from a checkout that is not installed
    __version__ = "0+unknown"


def main(argv=None) -> int:
    from tapeshift.migrate.commands.cli import main as _main

    return _main(argv)
