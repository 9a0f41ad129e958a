"""The streaming corpus reader gives the documents of the whole-file split, block after block, for plain and gzip
files, and never holds more than a block and one document."""

import bz2
import gzip
import logging

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_lite.data import corpus_documents
from keras_bert_lite.data.corpus_documents import file_documents, split_documents
from keras_bert_lite.data.errors import DataError
from keras_bert_lite.data.pretraining import text_file_documents

# Blank lines of every kind, CRLF line ends, leading and trailing blank lines, spaces around sentences, a document
# of one line, a UTF-8 character and no final line break.
TEXT = (
    "\n\n  First doc, line one.\nline two. \r\n\r\nSecond doc.\n \t\n\n\nThird doc é, one line\n\f\n"
    "Fourth doc.\nIts second line.\nIts third line.\n\nlast doc"
)


def documents(path, compression=""):
    return list(file_documents(tf.constant(str(path)), tf.constant(compression)).as_numpy_iterator())


@pytest.mark.parametrize("lines_per_block", [1, 2, 3, 100])
def test_the_stream_gives_the_whole_file_split(tmp_path, monkeypatch, lines_per_block):
    monkeypatch.setattr(corpus_documents, "LINES_PER_BLOCK", lines_per_block)
    path = tmp_path / "corpus.txt"
    path.write_bytes(TEXT.encode())
    expected = list(split_documents(tf.constant(TEXT.encode())).numpy())
    assert len(expected) == 5
    assert documents(path) == expected


def test_real_text_streams_as_it_splits(tmp_path, monkeypatch, pydoc_corpus):
    monkeypatch.setattr(corpus_documents, "LINES_PER_BLOCK", 97)
    with open(pydoc_corpus[0], "rb") as f:
        text = f.read()
    expected = list(split_documents(tf.constant(text)).numpy())
    assert len(expected) > 100 and documents(pydoc_corpus[0]) == expected


def test_a_gzip_file_gives_the_documents_of_its_text_whatever_its_name(tmp_path):
    plain = tmp_path / "corpus.txt"
    plain.write_bytes(TEXT.encode())
    packed = tmp_path / "corpus.bin"  # no .gz suffix: known by its first bytes
    with open(packed, "wb") as f:  # two gzip members, as pigz or `cat a.gz b.gz` write
        half = len(TEXT) // 2
        f.write(gzip.compress(TEXT[:half].encode()) + gzip.compress(TEXT[half:].encode()))
    assert documents(packed, "GZIP") == documents(plain)
    dataset = text_file_documents(str(packed), window_docs=2).take(5)
    assert list(dataset.as_numpy_iterator()) == documents(plain)


def test_a_document_over_the_limit_is_cut_at_a_block_end(tmp_path, monkeypatch):
    monkeypatch.setattr(corpus_documents, "LINES_PER_BLOCK", 2)
    monkeypatch.setattr(corpus_documents, "MAX_DOCUMENT_BYTES", 10)
    path = tmp_path / "corpus.txt"
    path.write_text("aaaa\nbbbb\ncccc\ndddd\neeee\n\nshort\n")
    assert documents(path) == [b"aaaa\nbbbb\ncccc\ndddd", b"eeee", b"short"]


def test_other_compression_formats_are_refused_with_the_recompression(tmp_path):
    path = tmp_path / "corpus.txt.bz2"
    path.write_bytes(bz2.compress(TEXT.encode()))
    with pytest.raises(DataError, match=rf"^{path}: is bzip2-compressed; .* bzcat {path} \| gzip > {path}.gz$"):
        text_file_documents(str(path))


def test_one_document_is_refused_for_next_sentence_prediction(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("One sentence.\nAnother one.\n\n \n\x01\n")  # the second "document" has no text
    with pytest.raises(DataError, match=rf"^{path}: one document, so every \"not next\" pair"):
        text_file_documents(str(path))


def test_fewer_documents_than_a_window_are_named_with_the_share_of_same_document_pairs(tmp_path, caplog):
    path = tmp_path / "corpus.txt"
    path.write_text("One.\n\nTwo.\n\nThree.\n\nFour.\n")
    with caplog.at_level(logging.WARNING):
        text_file_documents(str(path), window_docs=4)
    assert caplog.messages == []
    with caplog.at_level(logging.WARNING):
        text_file_documents(str(path), window_docs=13)
    assert caplog.messages == [
        f"{path}: only 4 documents, fewer than a window of 13 (--window_docs), so each window repeats them and "
        'about 19% of "not next" pairs take their second segment from their first\'s own document. Give more '
        "documents, or --window_docs 4."
    ]


def test_carriage_return_line_ends_are_refused_and_stray_ones_named(tmp_path, caplog):
    path = tmp_path / "mac.txt"
    path.write_bytes(b"One.\rTwo.\r\rThree.\r")
    with pytest.raises(DataError, match=rf"^{path}: its lines end in a carriage return alone .* tr '\\r' '\\n'"):
        text_file_documents(str(path))
    path = tmp_path / "stray.txt"
    path.write_bytes(b"One.\r\nTwo.\r\n\r\nThree\rfour.\n")
    with caplog.at_level(logging.WARNING):
        text_file_documents(str(path), window_docs=2)
    assert caplog.messages == [
        f"{path}: 1 carriage return not followed by a line feed in its first MiB (first: "
        f"line 4); they are dropped, so the text on either side runs together. To read "
        f"them as line breaks: tr '\\r' '\\n' < {path} > {path}.lf"
    ]


def test_a_file_without_line_breaks_or_in_utf16_is_refused(tmp_path):
    path = tmp_path / "one-line.txt"
    path.write_bytes(b"word " * (1 << 19))
    with pytest.raises(DataError, match=rf"^{path}: no line break in its first MiB"):
        text_file_documents(str(path))
    path = tmp_path / "utf16.txt"
    path.write_bytes("One.\n\nTwo.\n".encode("utf-16"))
    with pytest.raises(DataError, match=rf"^{path}: is UTF-16"):
        text_file_documents(str(path))


def test_examples_are_the_same_from_a_gzip_corpus(tmp_path, pydoc_corpus, uncased_vocab_path):
    from keras_bert_lite.data.masking import DynamicMasker
    from keras_bert_lite.data.pretraining import pretraining_dataset
    from keras_bert_lite.text import BertPacker, BertTokenizer, Vocab

    vocab = Vocab.from_file(uncased_vocab_path)
    packed = tmp_path / "pydoc.txt.gz"
    with open(pydoc_corpus[0], "rb") as f:
        packed.write_bytes(gzip.compress(f.read()))

    def first_batch(path):
        dataset = pretraining_dataset(
            text_file_documents(path, window_docs=16),
            BertTokenizer(vocab),
            BertPacker(64, vocab=vocab),
            DynamicMasker.from_vocab(vocab, max_predictions=10),
            window_docs=16,
            shuffle_buffer=100,
        )
        return next(iter(dataset.batch(64)))[0]["input_word_ids"].numpy()

    np.testing.assert_array_equal(first_batch(str(packed)), first_batch(pydoc_corpus[0]))
