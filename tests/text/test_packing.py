"""BertPacker: layout, type ids, mask, padding, the reference's pair truncation, dynamic length."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.text import BertPacker
from keras_bert_lite.text.packing import truncated_lengths

IDS = {"cls_id": 101, "sep_id": 102, "pad_id": 0}


def test_single_segment_layout_and_truncation():
    out = BertPacker(6, IDS)(tf.ragged.constant([[1, 2, 3, 4, 5, 6], [7], []]))
    np.testing.assert_array_equal(
        out["input_word_ids"], [[101, 1, 2, 3, 4, 102], [101, 7, 102, 0, 0, 0], [101, 102, 0, 0, 0, 0]]
    )
    np.testing.assert_array_equal(out["input_mask"], [[1] * 6, [1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 0]])
    np.testing.assert_array_equal(out["input_type_ids"], np.zeros([3, 6]))
    assert all(v.dtype == tf.int32 for v in out.values())


def test_pair_layout():
    out = BertPacker(9, IDS)(tf.ragged.constant([[1, 2]]), tf.ragged.constant([[3, 4, 5]]))
    np.testing.assert_array_equal(out["input_word_ids"], [[101, 1, 2, 102, 3, 4, 5, 102, 0]])
    np.testing.assert_array_equal(out["input_type_ids"], [[0, 0, 0, 0, 1, 1, 1, 1, 0]])
    np.testing.assert_array_equal(out["input_mask"], [[1, 1, 1, 1, 1, 1, 1, 1, 0]])


def _reference_truncate(len_a, len_b, budget):
    """google-research/bert run_classifier._truncate_seq_pair, on lengths."""
    a, b = list(range(len_a)), list(range(len_b))
    while len(a) + len(b) > budget:
        (a if len(a) > len(b) else b).pop()
    return len(a), len(b)


@pytest.mark.parametrize("budget", [0, 1, 2, 5, 8, 13])
def test_pair_truncation_equals_the_reference_loop(budget):
    len_a, len_b = np.array([(a, b) for a in range(12) for b in range(12)]).T
    kept_a, kept_b = truncated_lengths(tf.constant(len_a), tf.constant(len_b), budget)
    for a, b, ka, kb in zip(len_a, len_b, kept_a.numpy(), kept_b.numpy()):
        assert (ka, kb) == _reference_truncate(a, b, budget), (a, b, budget)


@pytest.mark.parametrize("splits", [tf.int64, tf.int32])
def test_packed_pairs_equal_the_reference_layout(splits):
    """Every pair of lengths up to 11 at seq 12: the reference truncation, then [CLS] A [SEP] B [SEP], padded."""
    lengths = [(a, b) for a in range(12) for b in range(12)]
    first = tf.ragged.constant([list(range(1, a + 1)) for a, _ in lengths], ragged_rank=1, row_splits_dtype=splits)
    second = tf.ragged.constant([list(range(50, 50 + b)) for _, b in lengths], ragged_rank=1, row_splits_dtype=splits)
    out = BertPacker(12, IDS)(first, second)
    for row, (a, b) in enumerate(lengths):
        keep_a, keep_b = _reference_truncate(a, b, 12 - 3)
        ids = [101, *range(1, keep_a + 1), 102, *range(50, 50 + keep_b), 102]
        types = [0] * (keep_a + 2) + [1] * (keep_b + 1)
        assert out["input_word_ids"][row].numpy().tolist() == ids + [0] * (12 - len(ids)), (a, b)
        assert out["input_type_ids"][row].numpy().tolist() == types + [0] * (12 - len(ids)), (a, b)
        assert out["input_mask"][row].numpy().tolist() == [1] * len(ids) + [0] * (12 - len(ids)), (a, b)


def test_dynamic_pads_to_longest_rounded_to_8_capped_at_seq_length():
    packer = BertPacker(64, IDS, dynamic=True)
    assert packer(tf.ragged.constant([[1] * 9, [2]]))["input_word_ids"].shape == (2, 16)
    assert packer(tf.ragged.constant([[1] * 6]))["input_word_ids"].shape == (1, 8)
    assert packer(tf.ragged.constant([[1] * 100]))["input_mask"].shape == (1, 64)
    graph = tf.function(packer, input_signature=[tf.RaggedTensorSpec([None, None], tf.int32)])
    assert graph(tf.ragged.constant([[1] * 17]))["input_type_ids"].shape == (1, 24)


def test_length_buckets_pad_to_powers_of_two_from_16_then_seq_length():
    packer = BertPacker(100, IDS, dynamic=True, length_buckets=True)
    assert packer.padded_lengths == (16, 32, 64, 100)
    shapes = {
        n: packer(tf.ragged.constant([[1] * n, [2]]))["input_word_ids"].shape[1]
        for n in (1, 14, 15, 30, 31, 62, 63, 98, 150)
    }
    assert shapes == {1: 16, 14: 16, 15: 32, 30: 32, 31: 64, 62: 64, 63: 100, 98: 100, 150: 100}  # n + [CLS] [SEP]
    assert BertPacker(128, IDS, dynamic=True, length_buckets=True).padded_lengths == (16, 32, 64, 128)
    assert BertPacker(8, IDS, dynamic=True, length_buckets=True).padded_lengths == (8,)


def test_special_ids_come_from_the_vocab(cased_vocab):
    out = BertPacker(4, cased_vocab)(tf.ragged.constant([[7]]))
    assert out["input_word_ids"].numpy().tolist() == [[cased_vocab.cls_id, 7, cased_vocab.sep_id, cased_vocab.pad_id]]


def test_seq_length_too_small():
    with pytest.raises(ValueError, match="seq_length"):
        BertPacker(2, IDS)
