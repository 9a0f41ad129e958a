"""build_embedder: text vectors from an encoder, pooled over its real tokens (sentence-transformers' way), or the
paper's feature-based approach (section 5.3: the concatenation of the last four layers)."""

import keras

from keras_bert_lite.layers import SentencePooling
from keras_bert_lite.models.encoder import encoder_inputs
from keras_bert_lite.models.introspect import encoder_and_config

EMBEDDINGS = "embeddings"    # the output's name, in exports too


def build_embedder(config_or_encoder, pooling="mean", layers=(-1,), normalize: bool = False,
                   name: str = "embedder") -> keras.Model:
    """A model from the three encoder inputs to one float32 vector per text, `[batch, D]`.

    Args:
        config_or_encoder: a BertConfig (a new encoder) or an encoder model (shared).
        pooling: a mode of `layers.SentencePooling` ("mean", "cls", "max", "mean_sqrt_len"), or several, joined.
        layers: which blocks' outputs to pool, concatenated (-1: the last; (-4, -3, -2, -1): the paper's
            feature-based approach).
        normalize: divide each vector by its L2 norm (cosine similarity becomes a dot product).
        name: the model's name.

    Returns:
        A functional `keras.Model`; D = hidden_size * len(layers) * the number of pooling modes.
    """
    encoder, config = encoder_and_config(config_or_encoder)
    layers = tuple(layers)
    wrong = [i for i in layers if not -config.num_layers <= i < config.num_layers]
    if not layers or wrong:
        raise ValueError(f"layers must index the encoder's {config.num_layers} blocks (-1: the last), got "
                         f"{list(layers)}.")
    inputs = encoder_inputs()
    blocks = encoder(inputs)["encoder_outputs"]
    features = [blocks[i] for i in layers]
    sequence = features[0] if len(features) == 1 else keras.layers.Concatenate(name="layers")(features)
    pooled = SentencePooling(pooling, normalize=normalize, dtype="float32", name="pooling")(
        sequence, inputs["input_mask"])
    return keras.Model(inputs, pooled, name=name)
