"""data.long_texts: what a window of one text or of a pair holds, the stride's bound and default, and the line
that reports what truncation cut."""

import tensorflow as tf

from keras_bert_lite.data.long_texts import default_stride, stride_problem, truncation_report, window_segments
from keras_bert_lite.text import BertPacker

IDS = {"cls_id": 101, "sep_id": 102, "pad_id": 0}


def test_a_single_text_is_windowed_whole():
    ids = tf.ragged.constant([list(range(1, 11)), [7]], tf.int32)
    windows, (rows,) = window_segments((ids,), seq_length=8, stride=3)  # windows of 6 tokens
    assert rows.to_list() == [[1, 2, 3, 4, 5, 6], [4, 5, 6, 7, 8, 9], [7, 8, 9, 10], [7]]
    assert windows.text.numpy().tolist() == [0, 0, 0, 1]


def test_a_pair_windows_its_second_text_beside_the_first_cut_at_half():
    first = tf.ragged.constant([[1, 2], list(range(20, 29))], tf.int32)
    second = tf.ragged.constant([list(range(50, 60)), [60, 61, 62]], tf.int32)
    windows, segments = window_segments((first, second), seq_length=12, stride=3)
    # Budget 9: a short first text leaves 7 tokens a window; a long one is cut at 9 // 2 = 4, leaving 5.
    assert segments[0].to_list() == [[1, 2]] * 2 + [[20, 21, 22, 23]]
    assert segments[1].to_list() == [list(range(50, 57)), list(range(53, 60)), [60, 61, 62]]
    packed = BertPacker(12, IDS)(*segments)["input_word_ids"].numpy()
    assert packed[2].tolist() == [101, 20, 21, 22, 23, 102, 60, 61, 62, 102, 0, 0]  # nothing cut by the packer
    assert windows.text.numpy().tolist() == [0, 0, 1]


def test_the_stride_must_be_smaller_than_the_smallest_window():
    assert default_stride(128, pair=False) == 63 and default_stride(128, pair=True) == 31
    assert stride_problem(128, 125, pair=False) == "" and stride_problem(128, 62, pair=True) == ""
    assert stride_problem(128, 126, pair=False).startswith(
        "--doc_stride 126 is not smaller than the windows of --seq_length 128 (126 tokens with [CLS] and [SEP])"
    )
    assert "give --doc_stride 31 (half a window)" in stride_problem(128, 63, pair=True)


def test_the_truncation_report_counts_texts_and_tokens_lost():
    short, long = [1] * 6, [1] * 30
    single = tf.ragged.constant([short, long, long + [1] * 5], tf.int32)
    assert truncation_report("a.csv", (single,), 16) == (
        "a.csv: 2 of 3 texts are longer than --seq_length 16 (with the special tokens) and were cut (37 tokens lost, "
        "up to 21 of one); --long_documents windows reads them whole."
    )
    assert truncation_report("a.csv", (tf.ragged.constant([short], tf.int32),), 16) == ""
    pair = (tf.ragged.constant([short, short], tf.int32), tf.ragged.constant([[1] * 9, short], tf.int32))
    assert truncation_report("p.tsv", pair, 16).startswith(
        "p.tsv: 1 of 2 text pairs are longer than --seq_length "
        "16 (with the special tokens) and were cut (2 tokens lost, up to 2"
    )
