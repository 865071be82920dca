"""Names of TF1's ``tf.layers`` that tf-keras provides (generated from tf-keras
2.21.0; ``tests/migrate/rules/test_layers_compat.py`` checks them against the
installed package). tf-keras 2.15.0, the oldest the ``tf`` extra allows, has
the same module with the same names.

``TF_KERAS_LEGACY_LAYERS`` is the module TensorFlow itself routes
``tf.compat.v1.layers`` to when told to use tf-keras (``TF_USE_LEGACY_KERAS=1``;
``tensorflow/_api/v2/compat/v1/__init__.py`` names it): the same functions and
classes, variables made by ``tf.compat.v1.get_variable``, batch-norm updates in
``UPDATE_OPS``. With Keras 3 (TensorFlow >= 2.16 by default)
``tf.compat.v1.layers.X`` raises "`X` is not available with Keras 3".
"""

#: where ``tf.layers`` lives on TensorFlow >= 2.16 (the tf-keras package)
TF_KERAS_LEGACY_LAYERS = "tf_keras.api._v1.keras.__internal__.legacy.layers"

#: the public names of that module: ``tf.layers.X`` is rewritten when X is here
LEGACY_LAYERS = frozenset({
    "AveragePooling1D",
    "AveragePooling2D",
    "AveragePooling3D",
    "BatchNormalization",
    "Conv1D",
    "Conv2D",
    "Conv2DTranspose",
    "Conv3D",
    "Conv3DTranspose",
    "Dense",
    "Dropout",
    "Flatten",
    "InputSpec",
    "Layer",
    "MaxPooling1D",
    "MaxPooling2D",
    "MaxPooling3D",
    "SeparableConv1D",
    "SeparableConv2D",
    "average_pooling1d",
    "average_pooling2d",
    "average_pooling3d",
    "batch_normalization",
    "conv1d",
    "conv2d",
    "conv2d_transpose",
    "conv3d",
    "conv3d_transpose",
    "dense",
    "dropout",
    "experimental",
    "flatten",
    "max_pooling1d",
    "max_pooling2d",
    "max_pooling3d",
    "separable_conv1d",
    "separable_conv2d",
})
