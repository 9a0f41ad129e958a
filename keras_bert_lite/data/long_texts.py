"""Texts longer than `seq_length`, for classification and tagging: cut (the reference's truncation, which the run
reports), or read whole in windows (`data.windows`).

A single text is cut into windows of `seq_length - 2` tokens (`[CLS] window [SEP]`). Of a pair, the second text
is windowed, as SQuAD windows the context: the first text (a question, a hypothesis, a query) keeps at most
`(seq_length - 3) // 2` tokens and comes whole with every window of the second, which gets the rest of the
`seq_length - 3` tokens (`[CLS] first [SEP] window [SEP]`). Every text gets at least one window (an empty one
when the text has no tokens).

TensorFlow ops only: the runners call these eagerly on a split's token ids, the exports inside their signatures.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from keras_bert_lite.data.windows import TokenWindows, cut_windows

LONG_DOCUMENTS = ("truncate", "windows")


def first_text_room(seq_length: int) -> int:
    """Tokens the first text of a windowed pair keeps."""
    return (seq_length - 3) // 2


def window_room(seq_length: int, pair: bool) -> int:
    """The fewest tokens a window holds: `seq_length - 2` of a single text; of a pair's second text, what the
    longest first text leaves."""
    return seq_length - 3 - first_text_room(seq_length) if pair else seq_length - 2


def default_stride(seq_length: int, pair: bool) -> int:
    """The stride when none is given: half the (smallest) window."""
    return max(1, window_room(seq_length, pair) // 2)


def stride_problem(seq_length: int, stride: int, pair: bool, names=("--doc_stride", "--seq_length")) -> str:
    """Why `stride` cannot window texts at `seq_length` ("" when it can): windows must overlap, so the stride
    must be smaller than the window. `names`: what the message calls the stride and the length (flags, or
    task.json's fields)."""
    room = window_room(seq_length, pair)
    if stride < room:
        return ""
    what = (
        (
            f"{room} tokens of the second text: {seq_length - 3} less up to {first_text_room(seq_length)} of the "
            "first, with [CLS] and two [SEP]"
        )
        if pair
        else f"{room} tokens with [CLS] and [SEP]"
    )
    return (
        f"{names[0]} {stride} is not smaller than the windows of {names[1]} {seq_length} ({what}), so windows "
        f"would not overlap; give {names[0]} {default_stride(seq_length, pair)} (half a window) or less, or a "
        f"longer {names[1]}."
    )


def window_segments(segments, seq_length: int, stride: int) -> tuple[TokenWindows, tuple]:
    """The windows of one text, or of a pair's second text, each window's segments ready for `BertPacker`.

    Args:
        segments: (first,) or (first, second), int RaggedTensors `[n, (tokens)]`, whole.
        seq_length: the packed length, special tokens included.
        stride: tokens between a text's window starts (< `window_room`).

    Returns:
        (`TokenWindows` of the windowed text, the windows' segments: int RaggedTensors `[w, (tokens)]`).
    """
    if len(segments) == 1:
        windows = cut_windows(segments[0].row_lengths(), seq_length - 2, stride)
        return windows, (windows.tokens(segments[0]),)
    first = segments[0][:, : first_text_room(seq_length)]
    windows = cut_windows(segments[1].row_lengths(), seq_length - 3 - first.row_lengths(), stride)
    return windows, (tf.gather(first, windows.text), windows.tokens(segments[1]))


def truncation_report(source: str, segments, seq_length: int) -> str:
    """What cutting the texts of `segments` (whole, int RaggedTensors `[n, (tokens)]`) at `seq_length` loses, as
    one line naming `source` ("" when every text fits)."""
    packed = sum(np.asarray(s.row_lengths()) for s in segments) + len(segments) + 1
    lost = np.maximum(packed - seq_length, 0)
    cut = int(np.count_nonzero(lost))
    if not cut:
        return ""
    texts = "text pairs" if len(segments) == 2 else "texts"
    return (
        f"{source}: {cut:,} of {len(lost):,} {texts} are longer than --seq_length {seq_length} (with the special "
        f"tokens) and were cut ({int(lost.sum()):,} tokens lost, up to {int(lost.max()):,} of one); "
        "--long_documents windows reads them whole."
    )
