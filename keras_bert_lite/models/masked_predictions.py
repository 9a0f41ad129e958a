"""The most probable tokens at each mask token of packed inputs, from a pretrainer's masked-LM head (fill-mask).

Graph code (TensorFlow ops only, dense outputs): `kbl.fill_mask` runs it eagerly, the `fill_mask` export in a
SavedModel.
"""

from __future__ import annotations

import tensorflow as tf


def mask_positions(input_word_ids: tf.Tensor, mask_id: int) -> tf.Tensor:
    """Where the mask tokens are: int32 `[b, M]` positions in each row, in order, padded with -1 (M: the most in a
    row of the batch; 0 when no row has one).

    Args:
        input_word_ids: int32 `[b, s]` packed ids.
        mask_id: the vocabulary's mask token id.
    """
    is_mask = tf.equal(input_word_ids, mask_id)  # [b, s]
    columns = tf.broadcast_to(tf.range(tf.shape(input_word_ids)[1]), tf.shape(input_word_ids))
    return tf.ragged.boolean_mask(columns, is_mask).to_tensor(default_value=-1)  # [b, M]


def masked_token_predictions(pretrainer, features: dict, mask_id: int, top_k: int) -> dict[str, tf.Tensor]:
    """The `top_k` tokens at every mask token and their softmax probabilities over the vocabulary, as Hugging
    Face's fill-mask pipeline computes them (each mask predicted on its own, all in one pass).

    Args:
        pretrainer: a `BertPretrainer` (its `masked_lm` head).
        features: the encoder inputs, int32 `[b, s]` each (`BertPacker`), with the mask tokens in place.
        mask_id: the vocabulary's mask token id.
        top_k: how many tokens per mask, most probable first (<= the vocabulary size).

    Returns:
        `token_ids` int32 and `scores` float32 `[b, M, top_k]`, `mask_positions` int32 `[b, M]` (M: the most mask
        tokens in a row of the batch); a row's slots beyond its own masks hold -1, 0.0 and -1.
    """
    positions = mask_positions(features["input_word_ids"], mask_id)  # [b, M]
    inputs = {**features, "masked_lm_positions": tf.maximum(positions, 0)}
    logits = pretrainer(inputs, training=False)["mlm_logits"]  # [b, M, V]
    scores, token_ids = tf.math.top_k(tf.nn.softmax(tf.cast(logits, tf.float32)), k=top_k)  # [b, M, k]
    real = (positions >= 0)[..., None]
    return {
        "token_ids": tf.where(real, token_ids, -1),
        "scores": tf.where(real, scores, 0.0),
        "mask_positions": positions,
    }
