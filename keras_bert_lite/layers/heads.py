"""BERT output heads: pooler, masked LM, next sentence, and the fine-tuning heads of the paper (Fig. 4).

Every head returns float32 logits, also under mixed precision, so losses are computed in float32.
"""

import keras
import tensorflow as tf
from keras import ops

from keras_bert_lite.layers.activations import get_activation
from keras_bert_lite.layers.dropout import Uint16MaskDropout
from keras_bert_lite.layers.layer_norm import FusedLayerNorm
from keras_bert_lite.layers.positions import gather_positions


def _truncated_normal(stddev):
    return keras.initializers.TruncatedNormal(stddev=stddev)


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertPooler(keras.layers.Layer):
    """tanh(dense(first token)): `[b, s, H]` -> `[b, H]`, the sentence representation fed to NSP/classifiers.

    Args:
        hidden_size: H.
        initializer_range: stddev of the truncated-normal kernel initializer.
    """

    def __init__(self, hidden_size, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(
            hidden_size,
            activation="tanh",
            kernel_initializer=_truncated_normal(initializer_range),
            dtype=self.dtype_policy,
            name="dense",
        )

    def build(self, input_shape=None):
        self.dense.build((None, self.hidden_size))
        self.built = True

    def call(self, sequence_output):
        return self.dense(sequence_output[:, 0, :])

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, initializer_range=self.initializer_range)
        return config


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class MaskedLMHead(keras.layers.Layer):
    """Masked-LM logits at the masked positions only: gather -> dense -> act -> LayerNorm -> E^T + b.

    The output projection is the word-embedding table `E` (`[V, H]`), passed in at call time so the head
    shares the encoder's variable (weight tying as in the paper) instead of owning a copy; the head owns only
    the transform and the per-token output bias.

    Args:
        vocab_size: V.
        hidden_size: H.
        hidden_act: activation of the transform ("gelu", "gelu_approx", "relu").
        layer_norm_eps: LayerNorm epsilon.
        initializer_range: stddev of the truncated-normal kernel initializer.

    Call args:
        sequence_output: `[b, s, H]` encoder output.
        masked_lm_positions: int `[b, P]` positions to predict; None when `sequence_output` holds just those
            vectors already, `[b, P, H]`.
        embedding_table: `[V, H]` word-embedding table.

    Returns:
        float32 logits `[b, P, V]`.
    """

    def __init__(
        self, vocab_size, hidden_size, hidden_act="gelu", layer_norm_eps=1e-12, initializer_range=0.02, **kwargs
    ):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.hidden_act = hidden_act
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range
        self.activation = get_activation(hidden_act)
        self.transform = keras.layers.Dense(
            hidden_size,
            kernel_initializer=_truncated_normal(initializer_range),
            dtype=self.dtype_policy,
            name="transform",
        )
        self.layer_norm = FusedLayerNorm(epsilon=layer_norm_eps, dtype=self.dtype_policy, name="layer_norm")

    def build(self, input_shape=None):
        self.transform.build((None, None, self.hidden_size))
        self.layer_norm.build((None, None, self.hidden_size))
        self.output_bias = self.add_weight(shape=(self.vocab_size,), initializer="zeros", name="output_bias")
        self.built = True

    def call(self, sequence_output, masked_lm_positions, embedding_table):
        x = sequence_output  # [b, P, H]
        if masked_lm_positions is not None:
            x = gather_positions(sequence_output, masked_lm_positions)
        x = self.layer_norm(self.activation(self.transform(x)))  # [b, P, H]
        # One [b*P, H] x [H, V] matmul: a broadcast batch matmul with P rows per batch element (or
        # keras.ops.einsum) is slower on CPU.
        # The table is used as stored, [V, H] (transpose_b): its gradient, [V, H] = dlogits^T x, is then one
        # matmul, where a transposed [H, V] table's needs a 30k x H transpose as well.
        batch, predictions = ops.shape(x)[0], ops.shape(x)[1]
        table = ops.cast(embedding_table, x.dtype)  # [V, H]
        logits = tf.matmul(ops.reshape(x, (-1, self.hidden_size)), table, transpose_b=True)  # [b*P, V]
        logits = ops.cast(logits, "float32") + ops.cast(self.output_bias, "float32")
        return ops.reshape(logits, (batch, predictions, self.vocab_size))

    def compute_output_spec(self, sequence_output, masked_lm_positions, embedding_table):
        selected = sequence_output.shape[:2] if masked_lm_positions is None else masked_lm_positions.shape
        return keras.KerasTensor(tuple(selected) + (self.vocab_size,), dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            hidden_act=self.hidden_act,
            layer_norm_eps=self.layer_norm_eps,
            initializer_range=self.initializer_range,
        )
        return config


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class LogitsHead(keras.layers.Layer):
    """Dropout then a dense layer to `num_outputs` float32 logits; works on `[b, H]` and `[b, s, H]` inputs.

    This one layer is the paper's output layer for next-sentence prediction (2 outputs on the pooled vector),
    sequence classification or regression (C or 1 outputs on the pooled vector), token classification
    (C outputs per token), span prediction (2 outputs per token: start, end) and multiple choice (1 output per
    choice's pooled vector).

    Args:
        num_outputs: number of logits per input vector.
        hidden_size: H.
        dropout: dropout rate before the dense layer (0 for NSP, as in the original).
        initializer_range: stddev of the truncated-normal kernel initializer.
    """

    def __init__(self, num_outputs, hidden_size, dropout=0.1, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.num_outputs = num_outputs
        self.hidden_size = hidden_size
        self.dropout = dropout
        self.initializer_range = initializer_range
        self.dropout_layer = Uint16MaskDropout(dropout, dtype=self.dtype_policy, name="dropout")
        self.dense = keras.layers.Dense(
            num_outputs, kernel_initializer=_truncated_normal(initializer_range), dtype=self.dtype_policy, name="dense"
        )

    def build(self, input_shape=None):
        self.dense.build((None, self.hidden_size))
        self.built = True

    def call(self, x, training=None):
        return ops.cast(self.dense(self.dropout_layer(x, training=training)), "float32")

    def compute_output_spec(self, x, training=None):
        return keras.KerasTensor(tuple(x.shape[:-1]) + (self.num_outputs,), dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update(
            num_outputs=self.num_outputs,
            hidden_size=self.hidden_size,
            dropout=self.dropout,
            initializer_range=self.initializer_range,
        )
        return config


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class SpanHead(keras.layers.Layer):
    """SQuAD span logits: a per-token dense to (start, end); padding positions get a large negative logit.

    Args:
        hidden_size: H.
        initializer_range: stddev of the truncated-normal kernel initializer.

    Call args:
        sequence_output: `[b, s, H]`.
        input_mask: `[b, s]`, 1 for real tokens.

    Returns:
        A tuple of float32 `start_logits`, `end_logits`, each `[b, s]`.
    """

    def __init__(self, hidden_size, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.logits = LogitsHead(
            2, hidden_size, dropout=0.0, initializer_range=initializer_range, dtype=self.dtype_policy, name="logits"
        )

    def build(self, input_shape=None):
        self.logits.build((None, None, self.hidden_size))
        self.built = True

    def call(self, sequence_output, input_mask):
        logits = self.logits(sequence_output)  # [b, s, 2]
        logits += (1.0 - ops.cast(input_mask, "float32"))[..., None] * -1e4  # never predict padding
        return logits[..., 0], logits[..., 1]

    def compute_output_spec(self, sequence_output, input_mask):
        # Two distinct tensors: a functional model maps each output by its tensor, so one spec returned twice
        # would make both outputs the last one (end_logits).
        shape = tuple(sequence_output.shape[:2])
        return keras.KerasTensor(shape, dtype="float32"), keras.KerasTensor(shape, dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, initializer_range=self.initializer_range)
        return config


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class MultipleChoiceHead(keras.layers.Layer):
    """SWAG-style multiple choice: one logit per (context, choice) pooled vector, regrouped per example.

    Args:
        num_choices: choices per example C.
        hidden_size: H.
        dropout: dropout before the dense layer.
        initializer_range: stddev of the truncated-normal kernel initializer.

    Call args:
        pooled_output: `[b * C, H]`, the encoder's pooled output of the folded choices (see `FoldChoices`).

    Returns:
        float32 logits `[b, C]`.
    """

    def __init__(self, num_choices, hidden_size, dropout=0.1, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.num_choices = num_choices
        self.hidden_size = hidden_size
        self.dropout = dropout
        self.initializer_range = initializer_range
        self.logits = LogitsHead(
            1, hidden_size, dropout=dropout, initializer_range=initializer_range, dtype=self.dtype_policy, name="logits"
        )

    def build(self, input_shape=None):
        self.logits.build((None, self.hidden_size))
        self.built = True

    def call(self, pooled_output, training=None):
        return ops.reshape(self.logits(pooled_output, training=training), (-1, self.num_choices))

    def compute_output_spec(self, pooled_output, training=None):
        return keras.KerasTensor((None, self.num_choices), dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update(
            num_choices=self.num_choices,
            hidden_size=self.hidden_size,
            dropout=self.dropout,
            initializer_range=self.initializer_range,
        )
        return config


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class FoldChoices(keras.layers.Layer):
    """`[b, C, s]` -> `[b * C, s]`, so each (context, choice) pair runs through the encoder as one sequence."""

    def call(self, x):
        return ops.reshape(x, (-1, ops.shape(x)[-1]))

    def compute_output_spec(self, x):
        return keras.KerasTensor((None, x.shape[-1]), dtype=x.dtype)
