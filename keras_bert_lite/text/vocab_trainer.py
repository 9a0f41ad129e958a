"""Trains a WordPiece vocabulary from text: our pre-tokenizer's words, counted, then tf_text's WordPiece algorithm
(`wordpiece_learner`, the same vocabulary in a fraction of the time)."""

from __future__ import annotations

import collections
from typing import Iterable

import tensorflow as tf

from keras_bert_lite.text.pretokenize import Pretokenizer
from keras_bert_lite.text.vocab import CONTINUATION_PREFIX, SPECIAL_TOKENS, Vocab
from keras_bert_lite.text.wordpiece_learner import learn


def count_words(lines: Iterable[str | bytes], lower_case: bool, batch_size: int = 1024) -> collections.Counter:
    """Counts the words the tokenizer will see (same normalisation and splitting as `BertTokenizer`).

    Args:
        lines: text lines (str or UTF-8 bytes).
        lower_case: as for `BertTokenizer`.
        batch_size: lines per tokenizer call.

    Returns:
        Counter word (str) → occurrences.
    """
    pretokenizer = Pretokenizer(lower_case)
    split = tf.function(
        lambda text: tf.strings.unicode_encode(pretokenizer(text, offsets=False).chars.values, "UTF-8"),
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    counts = collections.Counter()
    batch = []
    for line in lines:
        batch.append(line)
        if len(batch) == batch_size:
            counts.update(w.decode() for w in split(tf.constant(batch)).numpy())
            batch = []
    if batch:
        counts.update(w.decode() for w in split(tf.constant(batch)).numpy())
    return counts


def train_vocab(
    lines: Iterable[str | bytes],
    vocab_size: int,
    lower_case: bool,
    *,
    min_count: int = 2,
    max_unique_chars: int = 2000,
    reserved_tokens=SPECIAL_TOKENS,
) -> Vocab:
    """Learns a WordPiece vocabulary (Schuster & Nakajima 2012 style, as tf_text's bert_vocab tool does).

    Args:
        lines: training text.
        vocab_size: target size: the learner's binary search over a whole-number frequency threshold stops
            within 5% below it where some threshold lands there; where none does, or where `fixed_size` exceeds
            it, the vocabulary is larger.
        lower_case: normalisation of the tokenizer that will use the vocabulary.
        min_count: lowest word-frequency threshold the learner searches.
        max_unique_chars: the most frequent characters kept as single-character pieces (and `##` pieces).
        reserved_tokens: placed first, in order; must include [PAD] [UNK] [CLS] [SEP] [MASK].

    Returns:
        The `Vocab`, with `lower_case` as its casing; reserved tokens get ids 0, 1, ... in the order given.
    """
    counts = count_words(lines, lower_case)
    tokens = learn(
        sorted(counts.items()),
        vocab_size=vocab_size,
        reserved_tokens=list(reserved_tokens),
        lower_thresh=min_count,
        max_unique_chars=max_unique_chars,
        joiner=CONTINUATION_PREFIX,
    )
    return Vocab(tokens, source="trained vocabulary", lower_case=lower_case, casing_source="kbl-vocab --lower_case")


def fixed_size(vocab: Vocab, reserved_tokens=SPECIAL_TOKENS) -> int:
    """The tokens every vocabulary learnt from the same text has, whatever the size asked for: the reserved ones,
    and each character kept, alone and as a continuation (`##c`), so that every word can still be spelt. A
    `vocab_size` below it cannot be met."""
    joined = len(CONTINUATION_PREFIX) + 1
    characters = [t for t in vocab.tokens if len(t) == 1 or (len(t) == joined and t.startswith(CONTINUATION_PREFIX))]
    return len(set(reserved_tokens)) + len(characters)
