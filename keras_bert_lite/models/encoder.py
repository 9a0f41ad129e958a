"""build_encoder: the BERT encoder as a functional Keras model with the TF Hub input/output contract."""

import keras

from keras_bert_lite.config import BertConfig
from keras_bert_lite.layers import BertEmbeddings, BertPooler, TransformerEncoderBlock

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")


def encoder_inputs(prefix_shape=()):
    """The three int32 encoder inputs, `[batch, *prefix_shape, seq]`, keyed by their contract names."""
    return {name: keras.Input(shape=(*prefix_shape, None), dtype="int32", name=name) for name in INPUT_NAMES}


def build_encoder(config: BertConfig, name: str = "encoder") -> keras.Model:
    """Builds a BERT encoder.

    Args:
        config: the encoder's hyperparameters.
        name: model name; task models find the encoder under this name.

    Returns:
        A functional `keras.Model` taking a dict of int32 `[batch, seq]` tensors `input_word_ids`,
        `input_mask`, `input_type_ids` (any seq <= max_position_embeddings) and returning a dict:
        `sequence_output` `[batch, seq, H]`, `pooled_output` `[batch, H]` and `encoder_outputs`, a list with
        each block's `[batch, seq, H]` output (the last equals `sequence_output`).
    """
    inputs = encoder_inputs()

    # ---- Embeddings: word + position + segment.
    x = BertEmbeddings(
        config.vocab_size,
        config.hidden_size,
        config.max_position_embeddings,
        config.type_vocab_size,
        initializer_range=config.initializer_range,
        layer_norm_eps=config.layer_norm_eps,
        dropout=config.hidden_dropout,
        name="embeddings",
    )(inputs["input_word_ids"], inputs["input_type_ids"])

    # ---- Transformer blocks.
    encoder_outputs = []
    for i in range(config.num_layers):
        x = TransformerEncoderBlock(
            config.hidden_size,
            config.num_heads,
            config.intermediate_size,
            hidden_act=config.hidden_act,
            hidden_dropout=config.hidden_dropout,
            attention_dropout=config.attention_dropout,
            initializer_range=config.initializer_range,
            layer_norm_eps=config.layer_norm_eps,
            name=f"layer_{i}",
        )(x, inputs["input_mask"])
        encoder_outputs.append(x)

    # ---- Pooler: tanh(dense([CLS])).
    pooled = BertPooler(config.hidden_size, initializer_range=config.initializer_range, name="pooler")(x)

    outputs = {"sequence_output": x, "pooled_output": pooled, "encoder_outputs": encoder_outputs}
    return keras.Model(inputs=inputs, outputs=outputs, name=name)
