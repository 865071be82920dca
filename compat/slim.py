"""tf-slim models on the graph, tape and function backends, with the same model code.

A legacy slim model is a function that *creates* its variables as it builds::

    def net(inputs, is_training):
        with slim.arg_scope([slim.conv2d], normalizer_fn=slim.batch_norm,
                            normalizer_params={"is_training": is_training}):
            h = slim.conv2d(inputs["x"], 8, [3, 3], scope="conv1")
            h = slim.max_pool2d(h, [2, 2], scope="pool1")
            logits = slim.fully_connected(slim.flatten(h), 10, activation_fn=None, scope="fc")
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=inputs["y"], logits=logits))

``SlimModel(net, example_inputs)`` turns it into a ``compat`` model with explicit
parameters. It is ``tapeshift.compat.tf1_model.TF1Model``, which runs any TF1
model function (``get_variable``, ``tf.compat.v1.layers``, tf-slim), and
requires tf-slim; see that module for discovery and the variable getter. What
slim nets get (``tapeshift.compat.tf1_layers``):

- **batch_norm**: moving statistics are real variables and are updated once per
  call on every backend, as a TF1 training step did with
  ``tf.control_dependencies(tf.get_collection(UPDATE_OPS))``. Update ops that
  land in ``UPDATE_OPS`` during a graph run become control dependencies of the
  target; eagerly they run where they are built; ``updates_collections=None``
  updates in place everywhere. slim's own implementation is used in every case
  (the fused kernel for 2-D and 4-D inputs), never the Keras-1 layer that its
  default would pick and that current TF (checked: 2.21) only has in ``tf_keras``
  (``slim_ops``).
- **regularizers**: each regularized variable's loss is added once per run to a
  ``REGULARIZATION_LOSSES`` collection holding only that run's losses, so
  ``tf.losses.get_regularization_loss()`` in the net is the same on every
  backend.
- **layer cuts**: every slim layer output is a cut named by the layer's scope
  (``"conv1"``, ``"conv1/BatchNorm"``, ``"pool1"``), so a split can pass through
  any layer without editing the net. ``compat.cut`` in the net works as well.
- **dropout**: inside ``tapeshift.compat.testing.aligned_random(seed)`` slim's dropout draws
  the same mask on every backend (``tapeshift.compat.random_alignment`` patches the
  dropout slim calls); with ``is_training=False`` it is the identity.

``slim_fixes()`` is the one compatibility patch tf-slim 1.1.0 needs on current TF
(``ops.Tensor`` is gone, which breaks ``batch_norm`` and ``smart_cond``); the
adapter applies it while a net runs, and a hand-built legacy graph can use it too.
"""

from __future__ import annotations

from tapeshift.compat.tf1_layers import install_tf_slim_fixes, slim_fixes
from tapeshift.compat.tf1_model import TF1Model, TF1ModelError, VariableSpec

#: the error ``SlimModel`` raises (the same class as ``TF1ModelError``)
SlimModelError = TF1ModelError

__all__ = ["SlimModel", "SlimModelError", "VariableSpec", "install_tf_slim_fixes", "slim_fixes"]


class SlimModel(TF1Model):
    """A variable-creating slim ``net(inputs, is_training) -> target`` as a compat model.

    The same as ``TF1Model`` (``params``, ``trainable``, ``model``, ``build``,
    ``with_values``, ``with_training``), with tf-slim required up front.
    """

    _needs_tf_slim = True
