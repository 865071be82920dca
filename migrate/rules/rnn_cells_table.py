"""TF1's RNN cells and where they live on TensorFlow >= 2.16.

``tf.nn.rnn_cell.BasicLSTMCell`` and the other graph-mode cells are Keras
code: with Keras 3 (TensorFlow >= 2.16 by default) ``tf.compat.v1.nn.rnn_cell.X``
raises "`X` is not available with Keras 3", and TensorFlow routes the module to
tf-keras when told to use it (``TF_USE_LEGACY_KERAS=1``;
``tensorflow/_api/v2/compat/v1/__init__.py`` names
:data:`TF_KERAS_LEGACY_RNN_CELL`). ``tf.contrib.rnn`` re-exported the same
classes, and ``static_rnn``, ``static_bidirectional_rnn`` and
``static_state_saving_rnn`` from ``tensorflow.python.ops.rnn``, which TF2 keeps
as ``tf.compat.v1.nn.*``. ``tests/migrate/rules/test_rnn_cells.py`` checks the
names against the installed tf-keras and TensorFlow.
"""

#: where ``tf.nn.rnn_cell`` lives on TensorFlow >= 2.16 (the tf-keras package)
TF_KERAS_LEGACY_RNN_CELL = "tf_keras.api._v1.keras.__internal__.legacy.rnn_cell"

#: the public names of that module (tf-keras 2.15 to 2.21): ``tf.nn.rnn_cell.X`` and
#: ``tf.contrib.rnn.X`` are rewritten when X is here
RNN_CELLS = frozenset({
    "BasicLSTMCell", "BasicRNNCell", "DeviceWrapper", "DropoutWrapper", "GRUCell",
    "LSTMCell", "LSTMStateTuple", "MultiRNNCell", "RNNCell", "ResidualWrapper",
})

#: ``tf.contrib.rnn`` functions that are TensorFlow's own, under ``tf.nn`` in compat.v1
CONTRIB_RNN_FUNCTIONS = frozenset({
    "static_rnn", "static_bidirectional_rnn", "static_state_saving_rnn",
})
