"""Multi-head self-attention with a padding mask (Vaswani et al. 2017, as used by BERT)."""

import math

import keras
import tensorflow as tf
from keras import ops

from keras_bert_lite._cpu_kernels import matmul_post_ops_take_a_pass
from keras_bert_lite.layers.dropout import Uint16MaskDropout
from keras_bert_lite.layers.positions import gather_positions
from keras_bert_lite.utils.tf_internals import name_scope_sorted_last, onednn_graph

# Added to the scores of padded keys. exp(-1e9 + s) is exactly 0 in float32, so padding never changes
# the outputs at real positions; a row whose keys are all padding gets uniform (finite) weights.
_MASK_PENALTY = -1e9


def key_penalty(input_mask, dtype):
    """`[b, s]` in `dtype`: 0 at real keys, `_MASK_PENALTY` at padding (float16: half its lowest finite value,
    -32752, so that the penalty plus a score stays finite there too)."""
    penalty = max(_MASK_PENALTY, float(tf.as_dtype(dtype).min) / 2)
    return ops.cast((1.0 - ops.cast(input_mask, "float32")) * penalty, dtype)


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
        query_positions: optional int `[batch, P]`: attend from these positions only (keys and values are
            still every position), e.g. where a pretraining head reads the last block.

    Returns:
        `[batch, seq, H]`, or `[batch * seq, H]` for token-row input; with `query_positions`, `[batch, P, H]`
        or `[batch * P, H]`.
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
        self.dropout_layer = Uint16MaskDropout(dropout, dtype=self.dtype_policy, name="dropout")

    def build(self, input_shape=None):
        init = keras.initializers.TruncatedNormal(stddev=self.initializer_range)
        h = self.hidden_size
        self.qkv_kernel = self.add_weight(shape=(h, 3 * h), initializer=init, name="qkv_kernel")
        self.qkv_bias = self.add_weight(shape=(3 * h,), initializer="zeros", name="qkv_bias")
        self.output_kernel = self.add_weight(shape=(h, h), initializer=init, name="output_kernel")
        self.output_bias = self.add_weight(shape=(h,), initializer="zeros", name="output_bias")
        self.built = True

    def call(self, x, input_mask, query_positions=None, training=None):
        batch, seq = ops.shape(input_mask)[0], ops.shape(input_mask)[1]
        # The projections run on the [b*s, H] token rows with an explicit BiasAdd: on 2-D inputs TensorFlow's
        # oneDNN rewrite fuses MatMul + BiasAdd (+ the caller's residual Add) into one kernel; a 3-D matmul is
        # reshape/MatMul/reshape and the bias stays a separate pass over the activations.
        tokens = ops.reshape(x, (-1, self.hidden_size))  # [b*s, H]
        if query_positions is None:
            q, k, v = self._heads(tokens, self.qkv_kernel, self.qkv_bias, batch, seq, 3)  # [b, N, s, d] each
        else:
            # Queries only at query_positions; keys and values everywhere. tf.split, not slices, of the fused
            # kernel: its gradient is one concat.
            h = self.hidden_size
            q_kernel, kv_kernel = tf.split(self.qkv_kernel, [h, 2 * h], axis=1)
            q_bias, kv_bias = tf.split(self.qkv_bias, [h, 2 * h], axis=0)
            rows = gather_positions(ops.reshape(tokens, (batch, seq, h)), query_positions)  # [b, P, H]
            queries = ops.shape(query_positions)[1]
            (q,) = self._heads(ops.reshape(rows, (-1, h)), q_kernel, q_bias, batch, queries, 1)  # [b, N, P, d]
            k, v = self._heads(tokens, kv_kernel, kv_bias, batch, seq, 2)  # [b, N, s, d] each

        scores = self._scores(q, k, input_mask)  # [b, N, q, s]
        probs = ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype)
        probs = self.dropout_layer(probs, training=training)

        context = ops.matmul(probs, v)  # [b, N, q, d]
        context = ops.reshape(ops.transpose(context, (0, 2, 1, 3)), (-1, self.hidden_size))  # [b*q, H]
        output = tf.nn.bias_add(ops.matmul(context, self.output_kernel), self.output_bias)  # [b*q, H]
        if len(x.shape) == 2:
            return output
        if query_positions is None:
            return ops.reshape(output, ops.shape(x))
        return ops.reshape(output, (batch, ops.shape(query_positions)[1], self.hidden_size))

    def _scores(self, q, k, input_mask):
        """The scores `q·kᵀ/√d` plus the padding penalty, in float32.

        Args:
            q: `[b, N, q, d]` queries.
            k: `[b, N, s, d]` keys.
            input_mask: `[b, s]`, 1 for real keys.

        Returns:
            `[b, N, q, s]` float32.
        """
        scale = 1.0 / math.sqrt(self.head_size)
        if onednn_graph() and matmul_post_ops_take_a_pass():
            # The penalty rides in the matmul as one more feature, q' = [q/√d, 1] and k' = [k, penalty], so that
            # q'·k' = q·k/√d + penalty: a pass over q and one over k, which are s/d times smaller than the two
            # passes over the scores that oneDNN's gemm-based matmul (AVX2) makes for a scale and a broadcast add.
            batch, heads, keys = ops.shape(k)[0], ops.shape(k)[1], ops.shape(k)[2]
            penalty = key_penalty(input_mask, k.dtype)[:, None, :, None]  # [b, 1, s, 1]
            k = ops.concatenate([k, ops.broadcast_to(penalty, (batch, heads, keys, 1))], axis=-1)  # [b, N, s, d+1]
            q = ops.pad(
                q * ops.cast(scale, q.dtype), [[0, 0], [0, 0], [0, 0], [0, 1]], constant_values=1
            )  # [b, N, q, d+1]
            return ops.cast(ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))), "float32")
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2)))  # [b, N, q, s]
        scores = ops.cast(scores, "float32") * scale
        # oneDNN fuses this scaling and the penalty add into the score matmul (with AVX-512, as it stores the
        # scores) only where the scaled scores sort first among the Add's inputs. Every layer's penalty is the
        # same computation, merged into one node, so that node is named to sort after every layer's scores
        # (in a layer's own scope it would sort before those of the layers named after it). XLA fuses both
        # into the softmax.
        with name_scope_sorted_last("attention_key_penalty"):
            penalty = key_penalty(input_mask, "float32")[:, None, None, :]  # [b, 1, 1, s]
        return scores + penalty

    def _heads(self, rows, kernel, bias, batch, length, parts):
        """`[b*len, H]` rows -> `parts` projections, each split into heads: `[b, N, len, d]`."""
        projected = tf.nn.bias_add(ops.matmul(rows, kernel), bias)  # [b*len, parts*H]
        projected = ops.reshape(projected, (batch, length, parts, self.num_heads, self.head_size))
        projected = ops.transpose(projected, (2, 0, 3, 1, 4))  # [parts, b, N, len, d]
        # unstack, not projected[0], projected[1], ...: the gradient of an unstack is one stack, while each
        # strided slice's gradient is a full [parts, b, N, len, d] tensor of zeros around its part, written and
        # summed in every training step.
        return ops.unstack(projected, parts, axis=0)

    def compute_output_spec(self, x, input_mask, query_positions=None, training=None):
        if query_positions is None:
            return keras.KerasTensor(x.shape, dtype=self.compute_dtype)
        if len(x.shape) == 2:
            return keras.KerasTensor((None, self.hidden_size), dtype=self.compute_dtype)
        return keras.KerasTensor((x.shape[0], query_positions.shape[1], self.hidden_size), dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            num_heads=self.num_heads,
            dropout=self.dropout,
            initializer_range=self.initializer_range,
        )
        return config
