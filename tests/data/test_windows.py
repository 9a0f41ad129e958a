"""data.windows: google-research/bert's doc_stride windows and max-context rule, in closed form, against the
reference loops; slicing, pooling and merging by window."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.data.windows import cut_windows


def _reference_windows(n, room, stride):
    """run_squad.py's loop: (start, length) of each window of a text of n tokens."""
    windows, start = [], 0
    while True:
        length = min(room, n - start)
        windows.append((start, length))
        if start + length >= n:
            return windows
        start += min(length, stride)


def _reference_is_max_context(windows, current, position):
    """run_squad.py's `_check_is_max_context`."""
    best_score, best = None, None
    for w, (start, length) in enumerate(windows):
        end = start + length - 1
        if position < start or position > end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best = score, w
    return best == current


CASES = [(n, room, stride) for n in (0, 1, 5, 8, 9, 17, 40) for room in (1, 4, 8) for stride in (1, 2, 3, 8, 20)]


def test_windows_and_max_context_equal_the_reference_loops():
    lengths, rooms, strides = (np.array(column) for column in zip(*CASES))
    windows = cut_windows(lengths, rooms, strides)
    text, start, length = (t.numpy() for t in (windows.text, windows.start, windows.length))
    flags = windows.max_context().to_list()
    for i, (n, room, stride) in enumerate(CASES):
        rows = np.flatnonzero(text == i)
        expected = _reference_windows(n, room, stride)
        assert list(zip(start[rows], length[rows])) == expected, (n, room, stride)
        for w, row in enumerate(rows):
            assert flags[row] == [_reference_is_max_context(expected, w, start[row] + k) for k in range(length[row])], (
                n,
                room,
                stride,
                w,
            )


def test_tokens_merge_and_pool():
    ids = tf.ragged.constant([[1, 2, 3, 4, 5, 6, 7], [], [8, 9]], tf.int32)
    windows = cut_windows(ids.row_lengths(), room=4, stride=2)
    assert windows.tokens(ids).to_list() == [[1, 2, 3, 4], [3, 4, 5, 6], [5, 6, 7], [], [8, 9]]
    # Each token from the window where it has the most context: 3 has 1 on either side in the first, 0 in the second.
    assert windows.max_context().to_list() == [
        [True, True, True, False],
        [False, True, True, False],
        [False, True, True],
        [],
        [True, True],
    ]
    labels = windows.tokens(ids) * 10 + tf.ragged.constant([[0] * 4, [1] * 4, [2] * 3, [], [0] * 2], tf.int32)
    assert windows.merge(labels).to_list() == [[10, 20, 30, 41, 51, 62, 72], [], [80, 90]]
    logits = tf.constant([[1.0, 0.0], [3.0, 4.0], [5.0, -4.0], [7.0, 7.0], [0.5, 0.5]])
    np.testing.assert_allclose(windows.pool(logits, "mean"), [[3.0, 0.0], [7.0, 7.0], [0.5, 0.5]])
    np.testing.assert_allclose(windows.pool(logits, "max"), [[5.0, 4.0], [7.0, 7.0], [0.5, 0.5]])
    with pytest.raises(ValueError, match="window pooling must be one of"):
        windows.pool(logits, "sum")
