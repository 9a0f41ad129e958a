"""The reference BasicTokenizer in core TensorFlow ops: text → normalised words, with offsets into the original.

Steps, per the reference (`tokenization.py`), all on Unicode code points:
  1. decode UTF-8, replacing invalid bytes by U+FFFD (the reference decodes with errors="ignore"; U+FFFD is then
     deleted, so both drop exactly the invalid bytes);
  2. `_clean_text`: delete NUL, U+FFFD, Cc and Cf characters;
  3. uncased only: `str.lower()` incl. its Final_Sigma rule, NFD and deletion of category Mn — one table
     lookup per code point (a code point may become 0-3 code points) plus the sigma fix-up;
  4. split: whitespace separates words; punctuation and CJK ideographs are one-character words.

Only tf.strings, tf.math and ragged ops are used, so the graph loads in any TensorFlow runtime.
"""

from __future__ import annotations

import typing

import tensorflow as tf

from keras_bert_lite.text import unicode_tables as ut


class Words(typing.NamedTuple):
    """Words of a batch, as code points, each remembering the original bytes it came from.

    Attributes:
        chars: int32 RaggedTensor `[batch, (words), (chars)]`: normalised code points of each word.
        starts: int64 RaggedTensor `[batch, (words), (chars)]`: byte offset in the input string of the character
            each code point came from (None when not asked for).
        ends: int64, same shape: end (exclusive) byte offset of that character (None when not asked for).
    """

    chars: tf.RaggedTensor
    starts: tf.RaggedTensor
    ends: tf.RaggedTensor


def _lookup(pages: tf.Tensor, blocks: tf.Tensor, cps: tf.Tensor) -> tf.Tensor:
    """Two-level table lookup (see `UnicodeTables`). `cps` int32 `[n]` → int32 `[n]` table values."""
    page = tf.bitwise.right_shift(cps, ut.BLOCK_BITS)
    return tf.gather(blocks, tf.gather(pages, page) + tf.bitwise.bitwise_and(cps, (1 << ut.BLOCK_BITS) - 1))


def _row_ids(splits: tf.Tensor) -> tf.Tensor:
    """`RaggedTensor.value_rowids()` from int64 row splits, as a scatter and a cumsum (value_rowids' Repeat costs
    several times more on long batches)."""
    row_starts = splits[1:-1]
    marks = tf.math.unsorted_segment_sum(tf.ones_like(row_starts), row_starts, num_segments=splits[-1] + 1)
    return tf.cumsum(marks[:-1])


def _final_sigmas(cps: tf.Tensor, props: tf.Tensor, rowids: tf.Tensor) -> tf.Tensor:
    """Marks each capital sigma that `str.lower()` turns into a final sigma.

    CPython: Σ is final iff, skipping case-ignorable characters, a cased character precedes it and none follows.
    Within a run of cased/case-ignorable characters (runs also end at row boundaries) that means: some cased
    character before it in the run and none after.

    Args:
        cps: int32 `[n]` code points of all rows, concatenated.
        props: int32 `[n]` their property values.
        rowids: int `[n]` row of each code point (non-decreasing).

    Returns:
        bool `[n]`.
    """
    cased = tf.cast((props & ut.CASED) > 0, tf.int32)
    in_run = (props & (ut.CASED | ut.CASE_IGNORABLE)) > 0
    new_row = tf.concat([[True], rowids[1:] != rowids[:-1]], axis=0)
    prev_in_run = tf.concat([[False], in_run[:-1]], axis=0)
    run_ids = tf.cumsum(tf.cast(new_row | ~in_run | ~prev_in_run, tf.int32)) - 1
    cased_through = tf.cumsum(cased)  # inclusive
    cased_before_run = tf.math.segment_min(cased_through - cased, run_ids)
    cased_through_run = tf.math.segment_max(cased_through, run_ids)
    before = cased_through - cased - tf.gather(cased_before_run, run_ids)
    after = tf.gather(cased_through_run, run_ids) - cased_through
    return (cps == ut.CAPITAL_SIGMA) & (before > 0) & (after == 0)


class Pretokenizer(tf.Module):
    """Normalises and splits text exactly like the reference BasicTokenizer.

    Args:
        lower_case: True for uncased vocabularies (lower-case and strip accents), False for cased ones.
    """

    def __init__(self, lower_case: bool, name: str | None = None):
        super().__init__(name=name)
        self.lower_case = bool(lower_case)
        tables = ut.unicode_tables()
        self._table = (tf.constant(tables.pages), tf.constant(tables.blocks))
        self._lower_values = tf.constant(tables.lower_values)

    def __call__(self, text: tf.Tensor, offsets: bool = True) -> Words:
        """Splits a batch of strings into words.

        Args:
            text: tf.string `[batch]`.
            offsets: also say where each character came from (`Words.starts`, `Words.ends`); False leaves them
                None and skips their bookkeeping (`BertTokenizer.tokenize` needs ids only).

        Returns:
            `Words` with ragged `[batch, (words), (chars)]` components.
        """
        if offsets:
            cps, starts = tf.strings.unicode_decode_with_offsets(
                text, "UTF-8", errors="replace", replacement_char=0xFFFD
            )
        else:
            cps = tf.strings.unicode_decode(text, "UTF-8", errors="replace", replacement_char=0xFFFD)
        cp, rowids = cps.flat_values, _row_ids(cps.row_splits)
        follow = [rowids]  # per-code-point values that move with `cp` through deletion and expansion
        if offsets:
            # A character ends where the next one of its string starts, the last one where the string ends.
            start = starts.flat_values
            next_in_row = tf.concat([rowids[1:] == rowids[:-1], [False]], axis=0)
            next_start = tf.concat([start[1:], tf.zeros([1], tf.int64)], axis=0)
            string_end = tf.gather(tf.cast(tf.strings.length(text), tf.int64), rowids)
            follow += [start, tf.where(next_in_row, next_start, string_end)]

        values = _lookup(*self._table, cp)
        dropped = (values & ut.CLASS_MASK) == ut.DROP
        cp, values, *follow = tf.cond(  # most text has nothing to drop: skip the gathers
            tf.reduce_any(dropped),
            lambda: [tf.boolean_mask(t, ~dropped) for t in (cp, values, *follow)],
            lambda: [cp, values, *follow],
        )

        if self.lower_case:
            cp, cls, *follow = self._lower(cp, values, follow)
        else:
            cls = values & ut.CLASS_MASK
        return self._split(cp, cls, follow, tf.shape(text, out_type=tf.int64)[0])

    def _lower(self, cp, values, follow):
        """`str.lower()`, NFD, delete Mn: each code point becomes 0..MAX_EXPANSION code points.

        Args:
            cp: int32 `[n]` code points; values: their table values (`UnicodeTables`).
            follow: per-code-point values (row ids first); each output code point gets its source's.

        Returns:
            `[cp, cls, *follow]` of the output code points (`cls`: their class, which mapping may change:
            U+2260 ≠ becomes "=" and a combining mark, which is deleted).
        """
        row = tf.bitwise.right_shift(values, ut.ROW_SHIFT) - 1

        def final_sigmas():  # final sigma lower-cases to itself: no row
            final = _final_sigmas(cp, values & ut.PROPS_MASK, follow[0])
            return tf.where(final, ut.FINAL_SIGMA, cp), tf.where(final, -1, row)

        cp, row = tf.cond(tf.reduce_any(cp == ut.CAPITAL_SIGMA), final_sigmas, lambda: (cp, row))
        changed = tf.where(row >= 0)[:, 0]  # [m]
        replacements = tf.gather(self._lower_values, tf.gather(row, changed))  # [m, MAX_EXPANSION]

        def replace():  # usual text: every changed code point becomes exactly one: write those m in place
            at, new = changed[:, None], replacements[:, 0]
            return [
                tf.tensor_scatter_nd_update(cp, at, new),
                tf.tensor_scatter_nd_update(values & ut.CLASS_MASK, at, _lookup(*self._table, new) & ut.CLASS_MASK),
                *follow,
            ]

        def expand():  # some code point is deleted or becomes several (Hangul syllables)
            pad = -tf.ones([tf.size(cp), ut.MAX_EXPANSION - 1], tf.int32)
            out = tf.tensor_scatter_nd_update(tf.concat([cp[:, None], pad], axis=1), changed[:, None], replacements)
            valid = out >= 0  # [n, MAX_EXPANSION]
            source = tf.where(valid)[:, 0]  # index into cp
            new = tf.boolean_mask(out, valid)
            return [new, _lookup(*self._table, new) & ut.CLASS_MASK] + [tf.gather(t, source) for t in follow]

        one_to_one = tf.reduce_all(replacements[:, 0] >= 0) & tf.reduce_all(replacements[:, 1:] < 0)
        return tf.cond(one_to_one, replace, expand)

    @staticmethod
    def _split(cp, cls, follow, batch) -> Words:
        """Groups code points into words: runs of WORD chars; each PUNCT or CJK char alone; SPACE separates.

        `follow`: row ids, then (with offsets) start and end byte of each code point's source character.
        """
        rowids = follow[0]
        new_row = tf.concat([[True], rowids[1:] != rowids[:-1]], axis=0)
        prev_cls = tf.concat([[ut.SPACE], cls[:-1]], axis=0)
        begins = (cls == ut.PUNCT) | (cls == ut.CJK) | ((cls == ut.WORD) & (new_row | (prev_cls != ut.WORD)))
        in_word = tf.where(cls != ut.SPACE)[:, 0]
        begins_in_word = tf.gather(begins, in_word)
        word_splits = tf.concat([tf.where(begins_in_word)[:, 0], tf.size(in_word, out_type=tf.int64)[None]], 0)
        word_rows = tf.boolean_mask(rowids, begins)  # sorted
        text_splits = tf.searchsorted(word_rows, tf.range(batch + 1, dtype=rowids.dtype), out_type=tf.int64)

        def nest(values):
            inner = tf.RaggedTensor.from_row_splits(tf.gather(values, in_word), word_splits, validate=False)
            return tf.RaggedTensor.from_row_splits(inner, text_splits, validate=False)

        spans = [nest(values) for values in follow[1:]] or [None, None]
        return Words(nest(cp), *spans)
