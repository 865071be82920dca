"""``tapeshift checkpoint``: read, convert and compare TensorFlow checkpoints.

TF1 programs save their weights with ``tf.train.Saver``: a name-based
checkpoint (``model.ckpt-N.index`` + ``.data-*``; the ``.meta`` beside them is
the graph, not the weights), one entry per variable name. TF2 programs save
``tf.train.Checkpoint``: an object-based checkpoint whose keys are object paths
(``model/layer/kernel/.ATTRIBUTES/VARIABLE_VALUE``) and which records each
variable's original name. This package turns the first into the second for a
migrated program:

``locate``    a CKPT argument (prefix, directory, ``.index`` path) -> the checkpoint's files
``roles``     which entries are optimizer slots, optimizer state, the global step (no TensorFlow)
``reader``    the entries, their shapes, dtypes, original names and values
``matching``  map files and the matching of old names to new ones (no TensorFlow)
``collect``   the variables a migrated script creates, collected in a child process
``writer``    the object-based checkpoint, written atomically
``diff``      two checkpoints compared tensor by tensor

The layer sits beside ``legacy/`` (it reuses its script runner and its
tolerances) and below ``commands/``; TensorFlow is imported inside functions
only. The format of the output and the recipe that restores it in a migrated
program are in docs/checkpoints.md.
"""

from __future__ import annotations


class CheckpointError(Exception):
    """Input that could not be processed; the message names the file (and the variable)."""


#: the root dependency of a converted checkpoint: ``tf.train.Checkpoint(variables={name: var})``
VARIABLES = "variables"
