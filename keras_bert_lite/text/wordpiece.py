"""WordPiece: greedy longest-match-first split of each word into vocabulary pieces (reference `WordpieceTokenizer`).

A word longer than `max_chars_per_word` characters, or one that cannot be covered by pieces, becomes one [UNK].
Two interchangeable op sets compute it:
  - `PortableWordpiece`: core TensorFlow only (tf.strings + a `tf.lookup.StaticHashTable` initialised from
    constants), so a SavedModel loads in any TensorFlow runtime;
  - `FastWordpiece`: tf_text's `FastWordpieceTokenizeWithOffsets` op (LinMaxMatch, the same greedy result),
    which stock TF Serving links.
Both take words as code points and return pieces with their character span in the word (or without it, when the
caller needs ids only).
"""

from __future__ import annotations

import typing

import numpy as np
import tensorflow as tf

from keras_bert_lite.text.vocab import CONTINUATION_PREFIX, Vocab


class Pieces(typing.NamedTuple):
    """WordPiece output for a flat list of words.

    Attributes:
        ids: int32 RaggedTensor `[words, (pieces)]`.
        begins: int64 RaggedTensor `[words, (pieces)]`: index of each piece's first character in its word (None
            when offsets were not asked for).
        ends: int64, same shape: index after its last character (None likewise).
    """

    ids: tf.RaggedTensor
    begins: tf.RaggedTensor
    ends: tf.RaggedTensor


def _utf8_lengths(cps: tf.Tensor) -> tf.Tensor:
    """UTF-8 byte length of each code point. int32 `[n]` → int64 `[n]`."""
    return 1 + sum(tf.cast(cps >= limit, tf.int64) for limit in (0x80, 0x800, 0x10000))


def _assemble(num_words, word, ids, begins, ends) -> Pieces:
    """Builds `Pieces` from flat piece lists; pieces of one word must already be in order (stable sort by word).

    `begins` and `ends` may both be None (ids only).
    """
    order = tf.argsort(word, stable=True)
    word = tf.gather(word, order)

    def ragged(values):
        return (
            None
            if values is None
            else tf.RaggedTensor.from_value_rowids(tf.gather(values, order), word, nrows=num_words)
        )

    return Pieces(ids=ragged(ids), begins=ragged(begins), ends=ragged(ends))


def _with_unk_words(pieces: Pieces, unk: tf.Tensor, num_chars: tf.Tensor, unk_id: int) -> Pieces:
    """Replaces the pieces of each word where `unk` (bool `[words]`) holds by one [UNK] spanning the word."""
    return tf.cond(tf.reduce_any(unk), lambda: _replace_by_unk(pieces, unk, num_chars, unk_id), lambda: pieces)


def _replace_by_unk(pieces: Pieces, unk: tf.Tensor, num_chars: tf.Tensor, unk_id: int) -> Pieces:
    keep = tf.repeat(~unk, pieces.ids.row_lengths())
    unk_words = tf.where(unk)[:, 0]
    num_unk = tf.size(unk_words)

    def kept_then(values, unk_values):
        return None if values is None else tf.concat([tf.boolean_mask(values.flat_values, keep), unk_values], 0)

    return _assemble(
        tf.size(unk, out_type=tf.int64),
        tf.concat([tf.boolean_mask(pieces.ids.value_rowids(), keep), unk_words], axis=0),
        kept_then(pieces.ids, tf.fill([num_unk], tf.constant(unk_id))),
        kept_then(pieces.begins, tf.zeros([num_unk], tf.int64)),
        kept_then(pieces.ends, tf.gather(num_chars, unk_words)),
    )


def _table(keys, ids) -> tf.lookup.StaticHashTable:
    """A core-TF hash table: string key → int32 id, -1 for a missing key."""
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(tf.constant(list(keys), tf.string), tf.constant(list(ids), tf.int32)),
        default_value=-1,
    )


class _Wordpiece(tf.Module):
    """What both op sets keep: the [UNK] id and the longest word, in characters, that is split into pieces.

    Args:
        vocab: the `Vocab`.
        max_chars_per_word: longer words become [UNK].
        name: the module's name.
    """

    def __init__(self, vocab: Vocab, max_chars_per_word: int, name: str | None = None):
        super().__init__(name=name)
        self._unk_id = vocab.unk_id
        self._max_chars = max_chars_per_word


class PortableWordpiece(_Wordpiece):
    """Greedy longest-match-first WordPiece in core TensorFlow ops (arguments as `_Wordpiece`'s).

    All words are first looked up whole (most words are one piece). The rest advance together in a
    `tf.while_loop`: each step looks up every candidate piece at the current position at once (lengths
    1..`vocab.max_piece_chars`) and keeps the longest one in the vocabulary. Every word is at its first piece
    in the first step and past it in all later ones, so those look candidates up in a table of the `##` pieces
    keyed without the prefix (no string joins in the loop).
    """

    def __init__(self, vocab: Vocab, max_chars_per_word: int, name: str | None = None):
        super().__init__(vocab, max_chars_per_word, name=name)
        self._max_piece = vocab.max_piece_chars
        self._table = _table(vocab.tokens, range(len(vocab)))
        continuations = np.flatnonzero(vocab.is_continuation).tolist()
        suffixes = [vocab.tokens[i][len(CONTINUATION_PREFIX) :] for i in continuations]
        # A table cannot be empty: a vocabulary without "##" pieces gets one key no candidate can equal.
        self._continuation_table = _table(suffixes or [""], continuations or [-1])

    def __call__(self, chars: tf.RaggedTensor, offsets: bool = True) -> Pieces:
        """Splits words into pieces. `chars`: int32 ragged `[words, (chars)]` code points; `offsets`: also
        return each piece's character span (else `begins`/`ends` are None)."""
        num_words = chars.nrows()
        num_chars = chars.row_lengths()
        words = tf.strings.unicode_encode(chars, "UTF-8")
        whole = self._table.lookup(words)
        too_long = num_chars > self._max_chars
        done = (whole >= 0) | too_long
        pending = tf.where(~done)[:, 0]
        word, ids, begins, ends, bad = self._split(tf.gather(words, pending), tf.gather(chars, pending), offsets)
        whole_words = tf.where(done & ~too_long)[:, 0]
        pieces = _assemble(
            num_words,
            tf.concat([whole_words, tf.gather(pending, word)], axis=0),
            tf.concat([tf.gather(whole, whole_words), ids], axis=0),
            tf.concat([tf.zeros_like(whole_words), begins], axis=0) if offsets else None,
            tf.concat([tf.gather(num_chars, whole_words), ends], axis=0) if offsets else None,
        )
        unk = too_long | tf.scatter_nd(pending[:, None], bad, tf.shape(done, out_type=tf.int64))
        return _with_unk_words(pieces, unk, num_chars, self._unk_id)

    def _split(self, words: tf.Tensor, chars: tf.RaggedTensor, offsets: bool):
        """The greedy loop over words that are not one piece.

        Args:
            words: tf.string `[p]` the words, UTF-8.
            chars: int32 ragged `[p, (chars)]` their code points.
            offsets: also collect each piece's begin and end (else both are None).

        Returns:
            word (int64 `[q]`, index into `words`), id (int32 `[q]`), begin and end (int64 `[q]`, character
            positions; None without `offsets`) of every piece found, in order within each word; and bad (bool
            `[p]`): words that cannot be covered (their pieces must be dropped).
        """
        lengths = chars.row_lengths()
        byte_lengths = tf.ragged.map_flat_values(_utf8_lengths, chars)
        # bounds[w, i]: byte offset of character i of word w (i = length: the word's end); padded.
        bounds = tf.concat(
            [tf.zeros([tf.shape(lengths)[0], 1], tf.int64), tf.cumsum(byte_lengths, axis=1).to_tensor()], axis=1
        )
        num = tf.shape(words)[0]

        def body(step, alive, start, arrays, bad):
            length = tf.gather(lengths, alive)
            width = tf.minimum(tf.cast(self._max_piece, tf.int64), tf.reduce_max(length - start))
            sizes = tf.range(1, width + 1, dtype=tf.int64)  # [k]
            stop = start[:, None] + sizes[None, :]  # [a, k]
            fits = stop <= length[:, None]
            word_bounds = tf.gather(bounds, alive)
            first = tf.gather(word_bounds, start, batch_dims=1)  # [a]
            last = tf.gather(word_bounds, tf.minimum(stop, length[:, None]), batch_dims=1)
            text = tf.strings.substr(
                tf.gather(words, alive)[:, None],  # [a, k] candidates
                tf.broadcast_to(first[:, None], tf.shape(stop)),
                last - first[:, None],
            )
            table = tf.cond(
                step == 1,
                lambda: self._table.lookup(text),  # first pieces
                lambda: self._continuation_table.lookup(text),
            )  # "##" pieces
            found = tf.where(fits, table, -1)  # [a, k]
            best = tf.reduce_max(tf.where(found >= 0, sizes[None, :], 0), axis=1)  # [a], 0: none
            ok = best > 0
            piece = tf.gather(found, tf.maximum(best - 1, 0), batch_dims=1)
            fields = (alive, piece, start, start + best) if offsets else (alive, piece)
            arrays = [ta.write(step, tf.boolean_mask(value, ok)) for ta, value in zip(arrays, fields)]
            bad = tf.tensor_scatter_nd_update(
                bad, tf.boolean_mask(alive, ~ok)[:, None], tf.fill([tf.reduce_sum(tf.cast(~ok, tf.int32))], True)
            )
            more = ok & (start + best < length)
            return step + 1, tf.boolean_mask(alive, more), tf.boolean_mask(start + best, more), arrays, bad

        # word, id (and begin, end) of the pieces found; element 0 is empty, so concat() works if no step runs.
        dtypes = (tf.int64, tf.int32, tf.int64, tf.int64) if offsets else (tf.int64, tf.int32)
        arrays = [
            tf.TensorArray(dtype, size=0, dynamic_size=True, infer_shape=False, element_shape=[None]).write(
                0, tf.zeros([0], dtype)
            )
            for dtype in dtypes
        ]
        _, _, _, arrays, bad = tf.while_loop(
            lambda step, alive, *_: tf.size(alive) > 0,
            body,
            (
                tf.constant(1),
                tf.range(num, dtype=tf.int64),
                tf.zeros([num], tf.int64),
                arrays,
                tf.zeros([num], tf.bool),
            ),
            shape_invariants=(
                tf.TensorShape([]),
                tf.TensorShape([None]),
                tf.TensorShape([None]),
                [tf.TensorShape(None)] * len(arrays),
                tf.TensorShape([None]),
            ),
        )
        word, ids, *spans = [ta.concat() for ta in arrays]
        begins, ends = spans if offsets else (None, None)
        return word, ids, begins, ends, bad


class FastWordpiece(_Wordpiece):
    """WordPiece with tf_text's `FastWordpieceTokenizer` on already split words (no pre-tokenization); arguments
    as `_Wordpiece`'s.

    Its byte limit per word is set so that it never applies; our character limit does, as in the reference.
    """

    def __init__(self, vocab: Vocab, max_chars_per_word: int, name: str | None = None):
        super().__init__(vocab, max_chars_per_word, name=name)
        import tensorflow_text as tf_text  # only this variant needs it (and TF Serving links its ops)

        self._fast = tf_text.FastWordpieceTokenizer(
            vocab=list(vocab.tokens),
            suffix_indicator=CONTINUATION_PREFIX,
            max_bytes_per_word=4 * max_chars_per_word,
            token_out_type=tf.int32,
            unknown_token=vocab.tokens[vocab.unk_id],
            no_pretokenization=True,
            support_detokenization=False,
        )

    def __call__(self, chars: tf.RaggedTensor, offsets: bool = True) -> Pieces:
        """Splits words into pieces. `chars`: int32 ragged `[words, (chars)]` code points; `offsets`: also
        return each piece's character span (else `begins`/`ends` are None)."""
        num_chars = chars.row_lengths()
        words = tf.strings.unicode_encode(chars, "UTF-8")
        if offsets:
            pieces = self._with_char_spans(chars, *self._fast.tokenize_with_offsets(words))
        else:
            pieces = Pieces(ids=self._fast.tokenize(words), begins=None, ends=None)
        return _with_unk_words(pieces, num_chars > self._max_chars, num_chars, self._unk_id)

    @staticmethod
    def _with_char_spans(chars, ids, byte_begins, byte_ends) -> Pieces:
        """Byte offsets within each word → character positions, through the flat list of character boundaries."""
        boundaries = tf.concat([[0], tf.cumsum(_utf8_lengths(chars.flat_values))], axis=0)
        first_char = chars.row_starts()
        piece_word = ids.value_rowids()  # the same for begins and ends
        base = tf.gather(tf.gather(boundaries, first_char), piece_word)
        first = tf.gather(first_char, piece_word)

        def to_chars(byte_offsets):
            position = tf.searchsorted(boundaries, base + byte_offsets.flat_values, side="left", out_type=tf.int64)
            return ids.with_flat_values(position - first)

        return Pieces(ids=ids, begins=to_chars(byte_begins), ends=to_chars(byte_ends))
