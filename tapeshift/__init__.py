"""tapeshift: move legacy TensorFlow 1.x gradient code onto TensorFlow 2.

The code lives in :mod:`compat` (the gradient API) and :mod:`migrate` (the
codemod and the command line); ``python -m tapeshift`` is the ``tapeshift``
command. Importing this package imports neither, nor TensorFlow.
"""
