"""Recover the BertConfig an encoder was built with, from its layers (no duplicated state to keep in sync)."""

import keras

from keras_bert_lite.config import BertConfig
from keras_bert_lite.models.encoder import build_encoder


def max_positions(encoder: keras.Model) -> int:
    """The length of the encoder's position table (max_position_embeddings): the longest sequence it takes."""
    return encoder.get_layer("embeddings").max_position_embeddings


def encoder_config(encoder: keras.Model) -> BertConfig:
    """Returns the BertConfig of an encoder made by `build_encoder` (also after a `.keras` round trip)."""
    try:
        emb = encoder.get_layer("embeddings").get_config()
        block = encoder.get_layer("layer_0").get_config()
    except ValueError:
        raise ValueError(
            f"Model {encoder.name!r} is not a keras_bert_lite encoder (no 'embeddings'/'layer_0' "
            "layers); build one with keras_bert_lite.build_encoder."
        ) from None
    num_layers = sum(1 for layer in encoder.layers if layer.name.startswith("layer_"))
    return BertConfig(
        vocab_size=emb["vocab_size"],
        hidden_size=emb["hidden_size"],
        num_layers=num_layers,
        num_heads=block["num_heads"],
        intermediate_size=block["intermediate_size"],
        hidden_act=block["hidden_act"],
        hidden_dropout=block["hidden_dropout"],
        attention_dropout=block["attention_dropout"],
        max_position_embeddings=emb["max_position_embeddings"],
        type_vocab_size=emb["type_vocab_size"],
        initializer_range=emb["initializer_range"],
        layer_norm_eps=emb["layer_norm_eps"],
    )


def encoder_and_config(config_or_encoder) -> tuple[keras.Model, BertConfig]:
    """A builder's encoder argument as (encoder, its config): a BertConfig gets a new encoder; an encoder model
    is shared (its weights move into the model built on it)."""
    if isinstance(config_or_encoder, BertConfig):
        return build_encoder(config_or_encoder), config_or_encoder
    return config_or_encoder, encoder_config(config_or_encoder)
