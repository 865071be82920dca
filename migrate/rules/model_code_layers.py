"""``tf.layers`` functions -> the tf-keras (Keras 2) layer classes the model-code rule creates once.

``tf.layers.dense(x, 10, tf.nn.relu, name="fc")`` builds a ``Dense`` layer and
calls it; in TF2 the layer is an object made once (``tf_keras.layers.Dense(10,
tf.nn.relu, name="G/fc")``) and called where the function was. Each entry says
which class, the base name an unnamed layer is called after (TF1's, made unique
per scope), how many of the function's leading arguments the class takes in
the same places (the rest are passed by keyword), and which arguments go to
the call instead of the constructor (``training``).

tf-keras rather than Keras 3: the classes ``tf.layers`` subclasses, so the same
computation and initialisers; their variables are ``tf.Variable`` (the v1
optimizers TF1 code trains with accept them; Keras 3 variables they reject);
and a layer name may hold the TF1 scope (``G/fc``), so the variables keep their
TF1 names (``G/fc/kernel``) wherever the layer is first called. A test checks
every entry against the installed tf-keras.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Tuple


@dataclass(frozen=True)
class LayerSpec:
    cls: str  # tf_keras.layers.<cls>
    #: the function's arguments after ``inputs``, in order
    params: Tuple[str, ...]
    #: how many of ``params`` the class takes positionally in the same order
    positional: int
    #: arguments of the call, not of the constructor
    call: Tuple[str, ...] = ()
    #: whether the layer has variables (a variable-free layer needs no TF1 name)
    variables: bool = True


_CONV = ("filters", "kernel_size", "strides", "padding", "data_format", "dilation_rate",
         "activation", "use_bias", "kernel_initializer", "bias_initializer",
         "kernel_regularizer", "bias_regularizer", "activity_regularizer", "kernel_constraint",
         "bias_constraint", "trainable", "name", "reuse")
_CONV_T = tuple(p for p in _CONV if p != "dilation_rate")
_SEPARABLE = ("filters", "kernel_size", "strides", "padding", "data_format", "dilation_rate",
              "depth_multiplier", "activation", "use_bias", "depthwise_initializer",
              "pointwise_initializer", "bias_initializer", "depthwise_regularizer",
              "pointwise_regularizer", "bias_regularizer", "activity_regularizer",
              "depthwise_constraint", "pointwise_constraint", "bias_constraint", "trainable",
              "name", "reuse")
_POOL = ("pool_size", "strides", "padding", "data_format", "name")

#: functional ``tf.layers`` name -> its spec
LAYERS: Dict[str, LayerSpec] = {
    "dense": LayerSpec("Dense", ("units", "activation", "use_bias", "kernel_initializer",
                                 "bias_initializer", "kernel_regularizer", "bias_regularizer",
                                 "activity_regularizer", "kernel_constraint", "bias_constraint",
                                 "trainable", "name", "reuse"), 10),
    # Keras' convolutions take `groups` before `activation`
    "conv1d": LayerSpec("Conv1D", _CONV, 6),
    "conv2d": LayerSpec("Conv2D", _CONV, 6),
    "conv3d": LayerSpec("Conv3D", _CONV, 6),
    # Keras' transposed convolutions take `output_padding` before `data_format`
    "conv2d_transpose": LayerSpec("Conv2DTranspose", _CONV_T, 4),
    "conv3d_transpose": LayerSpec("Conv3DTranspose", _CONV_T, 4),
    "separable_conv1d": LayerSpec("SeparableConv1D", _SEPARABLE, 8),
    "separable_conv2d": LayerSpec("SeparableConv2D", _SEPARABLE, 8),
    "batch_normalization": LayerSpec(
        "BatchNormalization",
        ("axis", "momentum", "epsilon", "center", "scale", "beta_initializer",
         "gamma_initializer", "moving_mean_initializer", "moving_variance_initializer",
         "beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint",
         "training", "trainable", "name", "reuse", "renorm", "renorm_clipping",
         "renorm_momentum", "fused", "virtual_batch_size", "adjustment"),
        13, call=("training",)),
    "dropout": LayerSpec("Dropout", ("rate", "noise_shape", "seed", "training", "name"), 3,
                         call=("training",), variables=False),
    "flatten": LayerSpec("Flatten", ("name", "data_format"), 0, variables=False),
    "max_pooling1d": LayerSpec("MaxPooling1D", _POOL, 4, variables=False),
    "max_pooling2d": LayerSpec("MaxPooling2D", _POOL, 4, variables=False),
    "max_pooling3d": LayerSpec("MaxPooling3D", _POOL, 4, variables=False),
    "average_pooling1d": LayerSpec("AveragePooling1D", _POOL, 4, variables=False),
    "average_pooling2d": LayerSpec("AveragePooling2D", _POOL, 4, variables=False),
    "average_pooling3d": LayerSpec("AveragePooling3D", _POOL, 4, variables=False),
}

#: arguments the rule itself reads (the store), never passed on
STORE_ARGS = ("name", "reuse")
