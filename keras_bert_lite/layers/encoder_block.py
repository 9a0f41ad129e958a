"""The post-LayerNorm Transformer encoder block of BERT."""

import keras
from keras import ops

from keras_bert_lite.layers.activations import get_activation, get_training_activation
from keras_bert_lite.layers.attention import MultiHeadSelfAttention
from keras_bert_lite.layers.dropout import Uint16MaskDropout
from keras_bert_lite.layers.layer_norm import FusedLayerNorm
from keras_bert_lite.layers.positions import gather_positions


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class TransformerEncoderBlock(keras.layers.Layer):
    """attention -> dropout -> add & LayerNorm -> FFN (H -> I -> H) -> dropout -> add & LayerNorm.

    Args:
        hidden_size: model width H.
        num_heads: attention heads.
        intermediate_size: FFN inner width I.
        hidden_act: "gelu", "gelu_approx" or "relu".
        hidden_dropout: dropout on both sub-layer outputs.
        attention_dropout: dropout on attention probabilities.
        initializer_range: stddev of the truncated-normal kernel initializer.
        layer_norm_eps: LayerNorm epsilon.

    Call args:
        x: `[batch, seq, H]`.
        input_mask: `[batch, seq]`, 1 for real tokens, 0 for padding.
        output_positions: optional int `[batch, P]`: compute the block's output only at these positions (the
            attention still reads every position). Exactly the full output gathered there, for a fraction of
            the work: the pretrainer runs its last block so, at [CLS] and the masked positions.

    Returns:
        `[batch, seq, H]`; with `output_positions`, `[batch, P, H]`.
    """

    def __init__(
        self,
        hidden_size,
        num_heads,
        intermediate_size,
        hidden_act="gelu",
        hidden_dropout=0.1,
        attention_dropout=0.1,
        initializer_range=0.02,
        layer_norm_eps=1e-12,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout = hidden_dropout
        self.attention_dropout = attention_dropout
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps

        init = keras.initializers.TruncatedNormal(stddev=initializer_range)
        policy = self.dtype_policy
        self.attention = MultiHeadSelfAttention(
            hidden_size, num_heads, attention_dropout, initializer_range, dtype=policy, name="attention"
        )
        self.attention_dropout_layer = Uint16MaskDropout(hidden_dropout, dtype=policy, name="attention_dropout")
        self.attention_layer_norm = FusedLayerNorm(epsilon=layer_norm_eps, dtype=policy, name="attention_layer_norm")
        self.activation = get_activation(hidden_act)
        self.training_activation = get_training_activation(hidden_act)  # GELU: fused kernels (training)
        self.intermediate = keras.layers.Dense(
            intermediate_size, kernel_initializer=init, dtype=policy, name="intermediate"
        )
        self.output_dense = keras.layers.Dense(hidden_size, kernel_initializer=init, dtype=policy, name="output")
        self.output_dropout = Uint16MaskDropout(hidden_dropout, dtype=policy, name="output_dropout")
        self.output_layer_norm = FusedLayerNorm(epsilon=layer_norm_eps, dtype=policy, name="output_layer_norm")

    def build(self, input_shape=None):
        shape = (None, None, self.hidden_size)
        self.attention.build(shape)
        self.attention_layer_norm.build(shape)
        self.intermediate.build(shape)
        self.output_dense.build((None, None, self.intermediate_size))
        self.output_layer_norm.build(shape)
        self.built = True

    def call(self, x, input_mask, output_positions=None, training=None):
        # The block runs on the [b*s, H] token rows. With oneDNN (inference), TensorFlow then fuses each
        # projection with its bias, the FFN's first one with the GELU, and the attention output and FFN output
        # with the residual Add that follows them, into single kernels; LayerNorm is one kernel (FusedLayerNorm).
        tokens = ops.reshape(x, (-1, self.hidden_size))  # [b*s, H]
        attended = self.attention(tokens, input_mask, query_positions=output_positions, training=training)  # [b*q, H]
        output_shape = ops.shape(x)  # q = s
        if output_positions is not None:  # q = P
            tokens = ops.reshape(gather_positions(x, output_positions), (-1, self.hidden_size))
            output_shape = (output_shape[0], ops.shape(output_positions)[1], self.hidden_size)
        tokens = self.attention_layer_norm(tokens + self.attention_dropout_layer(attended, training=training))
        activation = self.training_activation if training else self.activation
        h = self.output_dense(activation(self.intermediate(tokens)))  # [b*q, I] -> [b*q, H]
        tokens = self.output_layer_norm(tokens + self.output_dropout(h, training=training))
        return ops.reshape(tokens, output_shape)  # [b, q, H]

    def compute_output_spec(self, x, input_mask, output_positions=None, training=None):
        length = x.shape[1] if output_positions is None else output_positions.shape[1]
        return keras.KerasTensor((x.shape[0], length, self.hidden_size), dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            num_heads=self.num_heads,
            intermediate_size=self.intermediate_size,
            hidden_act=self.hidden_act,
            hidden_dropout=self.hidden_dropout,
            attention_dropout=self.attention_dropout,
            initializer_range=self.initializer_range,
            layer_norm_eps=self.layer_norm_eps,
        )
        return config
