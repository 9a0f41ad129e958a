"""`FusedLayerNorm`: layer normalization over the last axis in the form TensorFlow's oneDNN CPU backend runs as one
fused kernel.
"""

import keras
import tensorflow as tf
from keras import ops

from keras_bert_lite.utils.deprecation import renamed_attributes
from keras_bert_lite.utils.tf_internals import onednn_graph


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class FusedLayerNorm(keras.layers.LayerNormalization):
    """`keras.layers.LayerNormalization` (same arguments, weights `gamma`/`beta`, same math), built so that
    TensorFlow's oneDNN CPU backend runs it as one kernel.

    Keras 3 writes LayerNorm as ~10 elementwise ops and reductions (mean, squared difference, mean, rsqrt, four
    multiplies and adds), each a pass over the `[rows, H]` activations. With oneDNN on (keras_bert_lite turns it
    on, `_cpu_kernels.py`), Grappler's remapper rewrites the subgraph Keras 2 used for LayerNorm —

        x as [1, rows, H, 1] -> FusedBatchNormV3(NCHW, scale=fill(1), offset=fill(0), batch statistics)
        -> back to x's shape -> * gamma -> + beta

    — into one `_MklLayerNorm` kernel wherever its intermediate results are not needed elsewhere (inference:
    one pass instead of ~10; a training step keeps FusedBatchNormV3 and its gradient op, which cost about what
    Keras' form does). Each row is a "channel" of the batch
    norm, so its statistics are the row's mean and biased variance over H: exactly LayerNorm's.

    Two details keep the rewrite applicable: the raw op is called (`tf.nn.fused_batch_norm` raises epsilon to
    at least 1.001e-5, which is why Keras 2 never took this path for BERT's 1e-12), and the row count passes
    through `placeholder_with_default` so that Grappler's constant folding cannot turn the two `Fill`s into
    constants when shapes are static (the rewrite matches `Fill` nodes only).

    Where no fused kernel exists (oneDNN off; XLA, which fuses Keras' form itself) this form is slower than
    Keras', so there, on GPUs, on TensorFlow versions `utils.tf_internals` does not know, and for other
    configurations (several axes, no center/scale, RMS scaling), Keras' own implementation runs.

    Call args:
        inputs: `[..., H]`; computed in float32 (as Keras does), returned in the layer's compute dtype.

    Returns:
        The normalised `inputs`, same shape.
    """

    def call(self, inputs):
        last_axis_affine = (
            self.axis in ([-1], [len(inputs.shape) - 1]) and self.center and self.scale and not self.rms_scaling
        )
        if not (last_axis_affine and onednn_graph()):
            return super().call(inputs)
        # bfloat16 inputs stay bfloat16: the kernel computes the statistics in float32 either way, and oneDNN's
        # fused kernel exists for bfloat16, while a cast to float32 in front of it would be two more passes (and
        # would keep Grappler from fusing the gamma/beta ops into it).
        dtype = "bfloat16" if inputs.dtype == tf.bfloat16 and self.compute_dtype == "bfloat16" else "float32"
        x = ops.cast(inputs, dtype)
        width = x.shape[-1]  # H (static once built)
        rows = tf.compat.v1.placeholder_with_default(tf.reshape(tf.size(x) // width, [1]), shape=[1])
        empty = tf.constant([], tf.float32)
        normalized, *_ = tf.raw_ops.FusedBatchNormV3(
            x=tf.reshape(x, tf.concat([[1], rows, [width, 1]], axis=0)),  # [1, rows, H, 1]
            scale=tf.fill(rows, 1.0),
            offset=tf.fill(rows, 0.0),
            mean=empty,
            variance=empty,
            epsilon=self.epsilon,
            data_format="NCHW",
            is_training=True,
        )
        gamma, beta = ops.cast(self.gamma, dtype), ops.cast(self.beta, dtype)
        outputs = beta + tf.reshape(normalized, tf.shape(x)) * gamma  # [..., H]
        return ops.cast(outputs, self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        if not config["rms_scaling"]:  # Keras' deprecated hidden kwarg: kept only when it was set
            del config["rms_scaling"]
        return config


# The former name, for one release (files saved under it load: `former_names`).
__getattr__ = renamed_attributes(__name__, {"LayerNorm": "FusedLayerNorm"})
