"""Multi-head self-attention with a padding mask (Vaswani et al. 2017, as used by BERT)."""

import math

import keras
import tensorflow as tf
from keras import ops
from tensorflow.python.ops import control_flow_util

from keras_bert_lite._cpu_kernels import cpu_only, onednn_enabled
from keras_bert_lite.layers.dropout import Dropout
from keras_bert_lite.layers.positions import gather_positions

# Added to the scores of padded keys. exp(-1e9 + s) is exactly 0 in float32, so padding never changes
# the outputs at real positions; a row whose keys are all padding gets uniform (finite) weights.
_MASK_PENALTY = -1e9


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class MultiHeadSelfAttention(keras.layers.Layer):
    """Scaled dot-product self-attention over `num_heads` heads, followed by the output projection.

    Query, key and value are computed by one fused `[H, 3H]` projection (one matmul instead of three);
    checkpoint import concatenates the separate query/key/value kernels of the reference models into it. With
    one or two heads on TensorFlow's oneDNN CPU kernels, the same kernel projects straight into head-major rows
    and each head runs its own chain of ops (faster there; same weights and math; `_each_head_is_faster`).
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
        self.dropout_layer = Dropout(dropout, dtype=self.dtype_policy, name="dropout")

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
        h = self.hidden_size
        # The projections run on the [b*s, H] token rows with an explicit BiasAdd: on 2-D inputs TensorFlow's
        # oneDNN rewrite fuses MatMul + BiasAdd (+ the caller's residual Add) into one kernel; a 3-D matmul is
        # reshape/MatMul/reshape and the bias (~0.15 ms per layer at tiny) stays a separate pass.
        tokens = ops.reshape(x, (-1, h))                                                  # [b*s, H]
        query_rows, queries = tokens, seq                                                 # q = s
        if query_positions is not None:                                                   # q = P
            query_rows = ops.reshape(gather_positions(ops.reshape(tokens, (batch, seq, h)), query_positions),
                                     (-1, h))                                             # [b*P, H]
            queries = ops.shape(query_positions)[1]
        # oneDNN fuses scores = matmul * scale + penalty into one kernel only where Grappler's canonical order of
        # the Add's inputs (sorted by node name) puts the scaled scores first. Every layer's penalty is the same
        # computation, merged into one node, so its name must sort after every layer's: under a top-level
        # scope "zz_...", the fusion applies in all layers (with the penalty in the layers' own scopes, 3 of
        # BERT-base's 12 layers got it and the other 9 spent two extra passes over their scores).
        with tf.compat.v1.name_scope("zz_attention_key_penalty/"):                        # absolute scope
            key_is_pad = 1.0 - ops.cast(input_mask, "float32")                             # [b, s]
            key_penalty = key_is_pad[:, None, None, :] * _MASK_PENALTY                     # [b, 1, 1, s]

        if _each_head_is_faster(self.num_heads):
            # One chain of ops per head; TensorFlow runs the independent chains on different cores at once. The
            # projection writes head-major rows directly (a matmul batched over the 3N heads of q, k and v), so
            # there are no head transposes.
            n, d = self.num_heads, self.head_size
            kernels = ops.transpose(ops.reshape(self.qkv_kernel, (h, 3 * n, d)), (1, 0, 2))   # [3N, H, d]
            biases = ops.reshape(self.qkv_bias, (3 * n, 1, d))                                # [3N, 1, d]
            if query_positions is None:
                heads = ops.unstack(ops.matmul(tokens[None], kernels) + biases, 3 * n)       # [b*s, d] each
            else:
                # tf.split, not slices, of the head kernels: its gradient is one concat.
                (q_kernels, kv_kernels), (q_biases, kv_biases) = (tf.split(t, [n, 2 * n]) for t in (kernels, biases))
                heads = (ops.unstack(ops.matmul(query_rows[None], q_kernels) + q_biases, n)  # [b*P, d] each
                         + ops.unstack(ops.matmul(tokens[None], kv_kernels) + kv_biases, 2 * n))

            def head(part, i, length):                                                        # -> [b, 1, len, d]
                return ops.reshape(heads[part * n + i], (batch, 1, length, d))

            context = ops.concatenate([
                self._attend(head(0, i, queries), head(1, i, seq), head(2, i, seq), key_penalty, training, heads=1)
                for i in range(n)], axis=1)                                                   # [b*q, H]
        else:
            if query_positions is None:
                q, k, v = self._heads(tokens, self.qkv_kernel, self.qkv_bias, batch, seq, 3)  # [b, N, s, d] each
            else:
                # Queries only at query_positions; keys and values everywhere. tf.split, not slices, of the
                # fused kernel: its gradient is one concat.
                q_kernel, kv_kernel = tf.split(self.qkv_kernel, [h, 2 * h], axis=1)
                q_bias, kv_bias = tf.split(self.qkv_bias, [h, 2 * h], axis=0)
                (q,) = self._heads(query_rows, q_kernel, q_bias, batch, queries, 1)          # [b, N, P, d]
                k, v = self._heads(tokens, kv_kernel, kv_bias, batch, seq, 2)               # [b, N, s, d] each
            context = self._attend(q, k, v, key_penalty, training, self.num_heads)           # [b*q, H]

        output = tf.nn.bias_add(ops.matmul(context, self.output_kernel), self.output_bias)  # [b*q, H]
        if len(x.shape) == 2:
            return output
        return ops.reshape(output, (batch, queries, h))

    def _attend(self, q, k, v, key_penalty, training, heads):
        """Scaled dot-product attention of `heads` heads: q `[b, n, q, d]`, k and v `[b, n, s, d]`, key_penalty
        `[b, 1, 1, s]` -> context rows `[b*q, n*d]`."""
        scores = tf.matmul(q, k, transpose_b=True)                                     # [b, n, q, s]
        scores = ops.cast(scores, "float32") * (1.0 / math.sqrt(self.head_size)) + key_penalty
        probs = ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype)
        probs = self.dropout_layer(probs, training=training)
        context = ops.matmul(probs, v)                                                 # [b, n, q, d]
        # For n = 1 the transpose only moves a size-1 axis: TensorFlow returns the same buffer.
        return ops.reshape(ops.transpose(context, (0, 2, 1, 3)), (-1, heads * self.head_size))

    def _heads(self, rows, kernel, bias, batch, length, parts):
        """`[b*len, H]` rows -> `parts` projections, each split into heads: `[b, N, len, d]`."""
        projected = tf.nn.bias_add(ops.matmul(rows, kernel), bias)                     # [b*len, parts*H]
        projected = ops.reshape(projected, (batch, length, parts, self.num_heads, self.head_size))
        projected = ops.transpose(projected, (2, 0, 3, 1, 4))                          # [parts, b, N, len, d]
        # unstack, not projected[0], projected[1], ...: the gradient of an unstack is one stack, while each
        # strided slice's gradient is a full [parts, b, N, len, d] tensor of zeros around its part (in the TF
        # profiler ~12% of the op time of a graph-mode pretraining step at mini before this).
        return ops.unstack(projected, parts, axis=0)

    def compute_output_spec(self, x, input_mask, query_positions=None, training=None):
        if query_positions is None:
            return keras.KerasTensor(x.shape, dtype=self.compute_dtype)
        if len(x.shape) == 2:
            return keras.KerasTensor((None, self.hidden_size), dtype=self.compute_dtype)
        return keras.KerasTensor((x.shape[0], query_positions.shape[1], self.hidden_size), dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, num_heads=self.num_heads, dropout=self.dropout,
                      initializer_range=self.initializer_range)
        return config


# Up to this many heads, attention runs one chain per head (see `_each_head_is_faster`).
_EACH_HEAD_MAX_HEADS = 2


def _each_head_is_faster(num_heads: int) -> bool:
    """Whether the graph being built runs attention one head at a time: few heads, oneDNN CPU kernels, no XLA.

    Measured on 2 cores, batch 32 x 128 tokens (medians of interleaved rounds in one process): the BERT-tiny
    forward (2 heads) 4-6% faster than head-major with per-head [H, d] projections, and 3% faster again with the
    head-batched projection used here (which makes its training step 3% slower than per-head [H, d]
    projections, still faster than head-major); with 4 heads (mini) the forward is 2-3% slower than
    head-major, with 8 equal, with 12 1-3% slower: head-major wins once the per-head pieces get small
    relative to their number.
    """
    if num_heads > _EACH_HEAD_MAX_HEADS or not (onednn_enabled() and cpu_only()):
        return False
    return not control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph())
