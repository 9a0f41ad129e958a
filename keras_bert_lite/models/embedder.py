"""build_embedder: text vectors from an encoder, pooled over its real tokens (sentence-transformers' way), or the
paper's feature-based approach (section 5.3: the concatenation of the last four layers)."""

import keras

from keras_bert_lite.layers import SentencePooling
from keras_bert_lite.models.encoder import encoder_inputs
from keras_bert_lite.models.introspect import encoder_and_config

EMBEDDINGS = "embeddings"  # the output's name, in exports too
POOLING = "pooling"  # the pooling layer's name


def build_embedder(
    config_or_encoder, pooling="mean", layers=(-1,), normalize: bool = False, name: str = "embedder"
) -> keras.Model:
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
        raise ValueError(
            f"layers must index the encoder's {config.num_layers} blocks (-1: the last), got {list(layers)}."
        )
    inputs = encoder_inputs()
    blocks = encoder(inputs)["encoder_outputs"]
    features = [blocks[i] for i in layers]
    sequence = features[0] if len(features) == 1 else keras.layers.Concatenate(name="layers")(features)
    pooled = SentencePooling(pooling, normalize=normalize, dtype="float32", name=POOLING)(
        sequence, inputs["input_mask"]
    )
    return keras.Model(inputs, pooled, name=name)


def is_embedder(model: keras.Model) -> bool:
    """Whether `model` pools token vectors into text vectors (a `SentencePooling` layer: `build_embedder`'s)."""
    return any(isinstance(layer, SentencePooling) for layer in model.layers)


def pools_last_block(embedder: keras.Model) -> bool:
    """Whether `embedder` (`build_embedder`'s, also after a `.keras` round trip) pools the encoder's last block
    alone (`layers=(-1,)`), the one pipeline sentence-transformers' Transformer + Pooling modules can express."""
    sequence = embedder.get_layer(POOLING).input[0]
    history = sequence._keras_history  # (operation, node, tensor): which output of which layer
    encoder = embedder.get_layer("encoder")
    if history.operation is not encoder:  # a Concatenate of several blocks
        return False
    return keras.tree.flatten(encoder.output)[history.tensor_index] is encoder.output["sequence_output"]
