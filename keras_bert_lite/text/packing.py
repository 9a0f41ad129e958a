"""`BertPacker`: one or two token segments → `[CLS] A [SEP] (B [SEP])`, padded, with the reference truncation."""

from __future__ import annotations

import tensorflow as tf

from keras_bert_lite.text.vocab import Vocab


class BertPacker(tf.Module):
    """Packs WordPiece ids into the encoder's three int32 inputs, with core TensorFlow ops only.

    Truncation is google-research/bert's: a single segment keeps its first `seq_length - 2` tokens; a pair loses
    one token at a time from the end of the longer segment (the second one on ties) until it fits
    `seq_length - 3` (`_truncate_seq_pair`), computed here in closed form.

    Args:
        seq_length: the longest packed sequence, special tokens included.
        vocab: a `Vocab` (its [CLS], [SEP], [PAD] ids are used), or a dict with "cls_id", "sep_id", "pad_id".
        dynamic: False: always pad to `seq_length` (fixed shapes, for export and TPUs). True: pad only to the
            longest packed sequence in the batch rounded up to a multiple of 8 (never above `seq_length`).
        length_buckets: with `dynamic`, round up to the next of 16, 32, 64, ... and `seq_length` instead: seq 128
            gives 4 padded lengths instead of 16. An XLA-compiled step compiles once per input shape (on a GPU
            each compile takes seconds to minutes), so the fine-tuning commands turn this on where they compile.
            The price is padding: a batch whose longest sequence is just above a length gets nearly twice its
            tokens.

    Call args:
        first: int RaggedTensor `[batch, (tokens)]`, segment A.
        second: optional int RaggedTensor `[batch, (tokens)]`, segment B.

    Returns:
        dict of int32 `[batch, seq]` tensors: "input_word_ids", "input_mask" (1 on real tokens),
        "input_type_ids" (0 for [CLS] A [SEP], 1 for B [SEP]), seq = seq_length, or the dynamic length.
    """

    def __init__(
        self,
        seq_length: int,
        vocab: Vocab | dict,
        dynamic: bool = False,
        length_buckets: bool = False,
        name: str | None = None,
    ):
        super().__init__(name=name)
        if seq_length < 3:
            raise ValueError(f"BertPacker: seq_length={seq_length}; it must leave room for [CLS] and two [SEP].")
        ids = (
            vocab
            if isinstance(vocab, dict)
            else {"cls_id": vocab.cls_id, "sep_id": vocab.sep_id, "pad_id": vocab.pad_id}
        )
        self.seq_length = seq_length
        self.dynamic = dynamic
        self.length_buckets = length_buckets
        # The padded lengths a dynamic batch may take, ascending; the last is seq_length.
        if length_buckets:
            shorter = [16 * 2**k for k in range(seq_length.bit_length()) if 16 * 2**k < seq_length]
        else:
            shorter = list(range(8, seq_length, 8))
        self.padded_lengths = tuple(shorter + [seq_length])
        self.cls_id, self.sep_id, self.pad_id = int(ids["cls_id"]), int(ids["sep_id"]), int(ids["pad_id"])

    def __call__(self, first: tf.RaggedTensor, second: tf.RaggedTensor | None = None) -> dict[str, tf.Tensor]:
        segments = [tf.cast(first, tf.int32)] + ([] if second is None else [tf.cast(second, tf.int32)])
        lengths = [tf.cast(segment.row_lengths(), tf.int32) for segment in segments]  # [batch] each
        if second is None:
            kept = [tf.minimum(lengths[0], self.seq_length - 2)]
        else:
            kept = list(truncated_lengths(lengths[0], lengths[1], self.seq_length - 3))
        length = self.seq_length
        if self.dynamic:
            allowed = tf.constant(self.padded_lengths, tf.int32)
            packed = tf.add_n(kept) + len(segments) + 1  # [batch] tokens per row
            length = tf.gather(allowed, tf.searchsorted(allowed, tf.reduce_max(packed)[None]))[0]  # first >= it
        return pack_kept(segments, kept, length, self.cls_id, self.sep_id, self.pad_id)


def pack_kept(segments: list, kept: list, length, cls_id: int, sep_id: int, pad_id: int) -> dict[str, tf.Tensor]:
    """Lays out `[CLS] A [SEP] (B [SEP])` from the first `kept` tokens of each segment, padded to `length`.

    Each kept token is scattered to its place in the padded `[batch, length]` grid. In a traced graph (tf.data's
    map, a serving signature) that is a fifth of the ops of truncating, concatenating and densifying the rows
    with tf.ragged ops, so it traces and runs faster.

    Args:
        segments: 1 or 2 int32 RaggedTensors `[batch, (tokens)]`.
        kept: as many int32 `[batch]`, how many tokens of each segment to keep (0 <= kept <= the row's length).
        length: int or scalar int32 tensor, at least every row's packed length (kept tokens + special tokens).
        cls_id, sep_id, pad_id: the special tokens' ids.

    Returns:
        dict of int32 `[batch, length]` tensors: "input_word_ids", "input_mask", "input_type_ids".
    """
    # Row i: [CLS] at 0, A from 1, its [SEP], then B from kept_a + 2 and its [SEP].
    starts = [tf.ones_like(kept[0])] + ([kept[0] + 2] if len(segments) == 2 else [])
    ends = [start + keep for start, keep in zip(starts, kept)]  # where each [SEP] goes
    total = ends[-1] + 1  # [batch] tokens per row
    rows = tf.range(tf.size(total))
    indices, updates = [tf.stack([rows, tf.zeros_like(rows)], axis=1)], [tf.fill(tf.shape(rows), cls_id)]
    for segment, start, keep, end in zip(segments, starts, kept, ends):
        row, position = _rows_and_positions(segment)
        kept_token = position < tf.gather(keep, row)
        indices += [
            tf.boolean_mask(tf.stack([row, tf.gather(start, row) + position], axis=1), kept_token),
            tf.stack([rows, end], axis=1),
        ]
        updates += [tf.boolean_mask(segment.values, kept_token), tf.fill(tf.shape(rows), sep_id)]
    word_ids = tf.tensor_scatter_nd_update(
        tf.fill(tf.stack([tf.size(total), length]), pad_id), tf.concat(indices, axis=0), tf.concat(updates, axis=0)
    )
    mask = tf.sequence_mask(total, length, dtype=tf.int32)
    type_ids = (
        tf.zeros_like(mask) if len(segments) == 1 else mask - tf.sequence_mask(ends[0] + 1, length, dtype=tf.int32)
    )  # 1 on B and its [SEP]
    return {"input_word_ids": word_ids, "input_mask": mask, "input_type_ids": type_ids}


def truncated_lengths(len_a: tf.Tensor, len_b: tf.Tensor, budget) -> tuple[tf.Tensor, tf.Tensor]:
    """How many tokens of each segment google-research/bert's `_truncate_seq_pair` keeps, in closed form.

    The loop pops from the longer segment (the second on ties) while the total exceeds `budget`: the longer one
    shrinks to the shorter, then both alternate, so the first keeps min(len_a, max(ceil(budget/2), budget-len_b))
    and the second min(len_b, max(floor(budget/2), budget-len_a)).

    Args:
        len_a, len_b: int `[batch]` segment lengths (same dtype).
        budget: the most tokens both may keep together.

    Returns:
        (keep_a, keep_b), int `[batch]` of the lengths' dtype.
    """
    budget = tf.cast(budget, len_a.dtype)
    keep_a = tf.minimum(len_a, tf.maximum((budget + 1) // 2, budget - len_b))
    keep_b = tf.minimum(len_b, tf.maximum(budget // 2, budget - len_a))
    return keep_a, keep_b


def _rows_and_positions(ragged: tf.RaggedTensor) -> tuple[tf.Tensor, tf.Tensor]:
    """Each item's row and its position in the row, int32 `[items]` (fewer graph ops than `value_rowids`)."""
    splits = tf.cast(ragged.row_splits, tf.int32)
    index = tf.range(tf.shape(ragged.values)[0])
    row = tf.searchsorted(splits, index, side="right") - 1
    return row, index - tf.gather(splits, row)
