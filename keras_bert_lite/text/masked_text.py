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
    segments = tf.strings.split(text, sep=vocab.tokens[vocab.mask_id])      # [batch, (masks + 1)]: never empty
    pieces = tokenize(segments.flat_values)                                  # [segments, (tokens)]
    masks = tf.RaggedTensor.from_tensor(tf.fill(tf.stack([pieces.nrows(), 1]), tf.constant(vocab.mask_id, tf.int32)))
    joined = tf.RaggedTensor.from_row_splits(tf.concat([pieces, masks], axis=1), segments.row_splits)
    return joined.merge_dims(1, 2)[:, :-1]             # a mask after every segment but the last of its text
