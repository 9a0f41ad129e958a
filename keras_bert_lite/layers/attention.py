"""Multi-head self-attention with a padding mask (Vaswani et al. 2017, as used by BERT)."""

import math

import keras
import tensorflow as tf
from keras import ops

from keras_bert_lite.layers.dropout import Dropout

# Added to the scores of padded keys. exp(-1e9 + s) is exactly 0 in float32, so padding never changes
# the outputs at real positions; a row whose keys are all padding gets uniform (finite) weights.
_MASK_PENALTY = -1e9


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class MultiHeadSelfAttention(keras.layers.Layer):
    """Scaled dot-product self-attention over `num_heads` heads, followed by the output projection.

    Query, key and value are computed by one fused `[H, 3H]` projection (one matmul instead of three);
    checkpoint import concatenates the separate query/key/value kernels of the reference models into it.
    Scores and softmax are computed in float32 under mixed precision.

    Args:
        hidden_size: model width H.
        num_heads: attention heads N; H must be divisible by N.
        dropout: dropout on the attention probabilities.
        initializer_range: stddev of the truncated-normal kernel initializer.

    Call args:
        x: `[batch, seq, H]`, or the same as `[batch * seq, H]` token rows (what the encoder block passes).
        input_mask: `[batch, seq]`, 1 for real tokens, 0 for padding.

    Returns:
        `[batch, seq, H]`, or `[batch * seq, H]` for token-row input.
    """

    def __init__(self, hidden_size, num_heads, dropout=0.1, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        if hidden_size % num_heads:
            raise ValueError(f"hidden_size ({hidden_size}) must be divisible by num_heads ({num_heads}).")
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.dropout = dropout
        self.initializer_range = initializer_range
        self.head_size = hidden_size // num_heads
        self.dropout_layer = Dropout(dropout, dtype=self.dtype_policy, name="dropout")

    def build(self, input_shape=None):
        init = keras.initializers.TruncatedNormal(stddev=self.initializer_range)
        h = self.hidden_size
        self.qkv_kernel = self.add_weight(shape=(h, 3 * h), initializer=init, name="qkv_kernel")
        self.qkv_bias = self.add_weight(shape=(3 * h,), initializer="zeros", name="qkv_bias")
        self.output_kernel = self.add_weight(shape=(h, h), initializer=init, name="output_kernel")
        self.output_bias = self.add_weight(shape=(h,), initializer="zeros", name="output_bias")
        self.built = True

    def call(self, x, input_mask, training=None):
        batch, seq = ops.shape(input_mask)[0], ops.shape(input_mask)[1]
        n, d = self.num_heads, self.head_size
        # The projections run on the [b*s, H] token rows with an explicit BiasAdd: on 2-D inputs TensorFlow's
        # oneDNN rewrite fuses MatMul + BiasAdd (+ the caller's residual Add) into one kernel; a 3-D matmul is
        # reshape/MatMul/reshape and the bias (~0.15 ms per layer at tiny) stays a separate pass.
        tokens = ops.reshape(x, (-1, self.hidden_size))                                   # [b*s, H]
        qkv = tf.nn.bias_add(ops.matmul(tokens, self.qkv_kernel), self.qkv_bias)          # [b*s, 3H]
        qkv = ops.transpose(ops.reshape(qkv, (batch, seq, 3, n, d)), (2, 0, 3, 1, 4))  # [3, b, N, s, d]
        # unstack, not qkv[0], qkv[1], qkv[2]: the gradient of an unstack is one stack, while each strided
        # slice's gradient is a full [3, b, N, s, d] tensor of zeros around its part (in the TF profiler ~12%
        # of the op time of a graph-mode pretraining step at mini before this).
        q, k, v = ops.unstack(qkv, 3, axis=0)                                          # [b, N, s, d]

        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2)))                         # [b, N, s, s]
        scores = ops.cast(scores, "float32") * (1.0 / math.sqrt(d))
        key_is_pad = 1.0 - ops.cast(input_mask, "float32")                             # [b, s]
        scores = scores + key_is_pad[:, None, None, :] * _MASK_PENALTY
        probs = ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype)
        probs = self.dropout_layer(probs, training=training)

        context = ops.matmul(probs, v)                                                 # [b, N, s, d]
        context = ops.reshape(ops.transpose(context, (0, 2, 1, 3)), (-1, n * d))       # [b*s, H]
        output = tf.nn.bias_add(ops.matmul(context, self.output_kernel), self.output_bias)  # [b*s, H]
        return output if len(x.shape) == 2 else ops.reshape(output, ops.shape(x))

    def compute_output_spec(self, x, input_mask, training=None):
        return keras.KerasTensor(x.shape, dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, num_heads=self.num_heads, dropout=self.dropout,
                      initializer_range=self.initializer_range)
        return config
