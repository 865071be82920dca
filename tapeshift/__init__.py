"""tapeshift: move legacy TensorFlow 1.x gradient code onto TensorFlow 2.

The code lives in :mod:`tapeshift.compat` (the gradient API) and
:mod:`tapeshift.migrate` (the codemod and the command line); ``python -m
tapeshift`` is the ``tapeshift`` command. Importing this package imports
neither, nor TensorFlow.
"""

import os as _os

# Installed, compat/ and migrate/ are folders of this package. In the
# repository they sit beside it (setup.cfg's package_dir maps them here), and a
# checkout run from source (PYTHONPATH=checkout, as the benchmarks run an older
# commit) finds them through this package's path.
_here = _os.path.dirname(_os.path.abspath(__file__))
_root = _os.path.dirname(_here)
if not _os.path.isdir(_os.path.join(_here, "migrate")) \
        and _os.path.isfile(_os.path.join(_root, "migrate", "__init__.py")) \
        and _os.path.isfile(_os.path.join(_root, "compat", "__init__.py")):
    __path__.append(_root)  # type: ignore[name-defined]  # noqa: F821
del _here, _root
