"""BERT input embeddings: word + position + token type, then LayerNorm and dropout."""

import keras
import tensorflow as tf
from keras import ops

from keras_bert_lite.layers.dropout import Uint16MaskDropout
from keras_bert_lite.layers.layer_norm import FusedLayerNorm


@keras.saving.register_keras_serializable(package="keras_bert_lite")
class BertEmbeddings(keras.layers.Layer):
    """Sums word, learned absolute position and segment embeddings (Devlin et al. 2018, Fig. 2).

    The word table is also the (tied) output projection of the masked-LM head; it is exposed as
    `word_embeddings`.

    Args:
        vocab_size: rows of the word table.
        hidden_size: embedding width H.
        max_position_embeddings: rows of the position table (longest sequence).
        type_vocab_size: rows of the segment table.
        initializer_range: stddev of the truncated-normal initializer.
        layer_norm_eps: LayerNorm epsilon.
        dropout: dropout rate applied after LayerNorm.

    Call args:
        input_word_ids: int `[batch, seq]`.
        input_type_ids: int `[batch, seq]`.

    Returns:
        `[batch, seq, hidden_size]` embeddings.
    """

    def __init__(
        self,
        vocab_size,
        hidden_size,
        max_position_embeddings,
        type_vocab_size,
        initializer_range=0.02,
        layer_norm_eps=1e-12,
        dropout=0.1,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.dropout = dropout
        # Under mixed precision, inside a model (as the encoder calls it), the tables are read in float32 and only
        # the gathered rows are cast, as keras.layers.Embedding does: autocast would cast each whole [vocab, H]
        # table on every call. (Called alone, outside any model, Keras autocasts a mixed layer's variables anyway.)
        self.autocast = False
        self.layer_norm = FusedLayerNorm(epsilon=layer_norm_eps, dtype=self.dtype_policy, name="layer_norm")
        self.dropout_layer = Uint16MaskDropout(dropout, dtype=self.dtype_policy, name="dropout")

    def build(self, input_shape=None):
        init = keras.initializers.TruncatedNormal(stddev=self.initializer_range)
        self.word_embeddings = self.add_weight(
            shape=(self.vocab_size, self.hidden_size), initializer=init, name="word_embeddings"
        )
        self.position_embeddings = self.add_weight(
            shape=(self.max_position_embeddings, self.hidden_size), initializer=init, name="position_embeddings"
        )
        self.token_type_embeddings = self.add_weight(
            shape=(self.type_vocab_size, self.hidden_size), initializer=init, name="token_type_embeddings"
        )
        self.layer_norm.build((None, None, self.hidden_size))
        self.built = True

    def call(self, input_word_ids, input_type_ids, training=None):
        seq_length = ops.shape(input_word_ids)[1]
        if isinstance(seq_length, int) and seq_length > self.max_position_embeddings:
            raise ValueError(
                f"Sequence length {seq_length} exceeds max_position_embeddings="
                f"{self.max_position_embeddings}; truncate the input (e.g. the packer's seq_length)."
            )
        # tf.gather, not ops.take: no pass that wraps negative ids around (ids are never negative; ids out of
        # range raise instead of reading another row).
        x = tf.gather(self.word_embeddings, input_word_ids)  # [b, s, H]
        x = x + tf.gather(self.token_type_embeddings, input_type_ids)  # [b, s, H]
        x = x + ops.expand_dims(self.position_embeddings[:seq_length], 0)  # [1, s, H]
        x = self.layer_norm(x)  # float32 in, compute dtype out
        return self.dropout_layer(x, training=training)

    def compute_output_spec(self, input_word_ids, input_type_ids, training=None):
        return keras.KerasTensor(tuple(input_word_ids.shape) + (self.hidden_size,), dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            max_position_embeddings=self.max_position_embeddings,
            type_vocab_size=self.type_vocab_size,
            initializer_range=self.initializer_range,
            layer_norm_eps=self.layer_norm_eps,
            dropout=self.dropout,
        )
        return config
