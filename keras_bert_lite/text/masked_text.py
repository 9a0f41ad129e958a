"""Text with `[MASK]` in it → WordPiece ids with each `[MASK]` one mask token, as Hugging Face's tokenizers (and so
its fill-mask pipeline) read it.

`BertTokenizer` alone reads "[MASK]" as the three tokens "[", "mask", "]" (the reference tokenizer has no special
tokens). Here the text is first split at each "[MASK]" (exactly so: "[mask]" is text), the pieces between are
tokenised on their own, and one mask id joins them: "walking[MASK]ing" gives walk ##ing [MASK] in ##g, as in
Hugging Face, where a special token also ends a word.
"""

from __future__ import annotations

import tensorflow as tf

from keras_bert_lite.text.vocab import Vocab


def tokenize_keeping_masks(tokenize, text: tf.Tensor, vocab: Vocab) -> tf.RaggedTensor:
    """Tokenises `text`, each "[MASK]" in it giving the vocabulary's mask id.

    Args:
        tokenize: text tf.string `[n]` → int32 RaggedTensor `[n, (tokens)]` (`BertTokenizer.tokenize`).
        text: tf.string `[batch]`.
        vocab: the tokenizer's vocabulary (its mask token and id).

    Returns:
        int32 RaggedTensor `[batch, (tokens)]`, without [CLS]/[SEP].
    """
    segments = tf.strings.split(text, sep=vocab.tokens[vocab.mask_id])  # [batch, (masks + 1)]: never empty
    pieces = tokenize(segments.flat_values)  # [segments, (tokens)]
    text_of = segments.value_rowids()  # [segments]
    last = tf.not_equal(text_of, tf.concat([text_of[1:], [-1]], axis=0))  # its text's last segment
    masks = tf.cast(~last, tf.int64)  # [segments]: a mask after it
    lengths = pieces.row_lengths() + masks
    # Each piece moves past the masks before it; each mask ends its segment. (No ragged concat: its int64
    # transposes make oneDNN log an error line on CPUs without AVX-512.)
    piece_at = tf.range(tf.size(pieces.flat_values, tf.int64)) + tf.gather(
        tf.cumsum(masks, exclusive=True), pieces.value_rowids()
    )
    mask_at = tf.boolean_mask(tf.cumsum(lengths) - 1, ~last)
    mask_ids = tf.fill(tf.shape(mask_at), tf.constant(vocab.mask_id, tf.int32))
    ids = tf.dynamic_stitch(
        [tf.cast(piece_at, tf.int32), tf.cast(mask_at, tf.int32)], [tf.cast(pieces.flat_values, tf.int32), mask_ids]
    )
    per_segment = tf.RaggedTensor.from_row_lengths(ids, lengths)
    return tf.RaggedTensor.from_row_splits(per_segment, segments.row_splits).merge_dims(1, 2)
