"""Pretraining on files without text fails fast, naming them, instead of waiting forever for an example."""

import logging
import subprocess
import sys

import pytest

from keras_bert_lite.data import corpus_text
from keras_bert_lite.data.errors import DataError
from keras_bert_lite.data.pretraining import text_file_documents

NO_TEXT = {
    "empty": b"",
    "blank lines": b"\n\n  \t\n\r\n",
    "control and format characters": "\u200b\ufeff\n\n\x01\x7f\n".encode(),
    "combining marks only": "\u0301\u0308\n".encode(),
    "bytes that are not UTF-8": b"\xc0\xff\n",
}


@pytest.mark.parametrize("content", NO_TEXT.values(), ids=NO_TEXT.keys())
def test_files_without_text(tmp_path, content):
    path = tmp_path / "corpus.txt"
    path.write_bytes(content)
    assert not corpus_text.has_text(str(path))
    with pytest.raises(DataError, match=rf"^{path}: no text: .* one sentence per line"):
        text_file_documents(str(path))


def test_one_character_is_text_even_after_a_chunk_of_blanks(tmp_path, monkeypatch):
    monkeypatch.setattr(corpus_text, "_CHUNK", 8)
    path = tmp_path / "corpus.txt"
    path.write_bytes(b"\n" * 7 + "é".encode())  # the two bytes of é straddle the chunk boundary
    assert corpus_text.has_text(str(path))
    path.write_bytes(b"\n\n  x\n")
    assert corpus_text.has_text(str(path))


def test_blank_files_beside_text_are_fine_but_a_pipeline_needs_one_with_text(tmp_path):
    (tmp_path / "a.txt").write_text("\n\n")
    (tmp_path / "b.txt").write_text("One sentence.\nTwo.\n\nAnother document.\n")
    (tmp_path / "c.txt").write_text("")
    text_file_documents(str(tmp_path / "*.txt"))
    text_file_documents(str(tmp_path / "*.txt"), num_shards=2, shard=1)  # b.txt
    with pytest.raises(DataError, match=r"a.txt, .*c.txt \(the files of input pipeline 0 of 2\): no text"):
        text_file_documents(str(tmp_path / "*.txt"), num_shards=2, shard=0)  # a.txt, c.txt


MIB = 1 << 20
ASCII_MIB = (b"x" * 99 + b"\n") * (MIB // 100) + b"y" * (MIB % 100)  # exactly 1 MiB, the last line cut


def _warnings(caplog):
    return [record.getMessage() for record in caplog.records if record.name.startswith("keras_bert_lite")]


def test_a_latin1_file_is_read_with_a_warning_naming_its_first_bad_line(tmp_path, caplog):
    path = tmp_path / "corpus.txt"
    path.write_bytes("One sentence.\nUn café crème.\n\nDéjà vu.\nTwo.\n".encode("latin-1"))
    with caplog.at_level(logging.WARNING):
        text_file_documents(str(path), window_docs=2)
    assert _warnings(caplog) == [
        f"{path}: 2 lines of its first MiB (pretraining checks only the start of each file) hold bytes that are "
        "not UTF-8 (first: line 2, byte 0xe9); they are dropped, as BERT's tokenizer drops them. If the file is "
        f"Latin-1, re-encode it: iconv -f latin1 -t utf-8 {path} > {tmp_path / 'corpus.utf8.txt'}"
    ]


def test_utf8_with_accents_gives_no_warning_even_when_the_first_mib_cuts_a_character(tmp_path, caplog):
    (tmp_path / "a.txt").write_text("Un café crème.\n\nDéjà vu, 東京, 😀.\n", encoding="utf-8")
    (tmp_path / "b.txt").write_bytes(ASCII_MIB[:-1] + "é\nDéjà vu.\n".encode())  # é's 2 bytes straddle the MiB
    with caplog.at_level(logging.WARNING):
        text_file_documents(str(tmp_path / "*.txt"), window_docs=2)
    assert _warnings(caplog) == []


def test_pretraining_checks_only_the_first_mib_of_each_file(tmp_path, caplog):
    (tmp_path / "late.txt").write_bytes(ASCII_MIB + b"\nUn caf\xe9.\n")  # past the first MiB: not seen
    early = tmp_path / "early.txt"
    early.write_bytes(b"Un caf\xe9.\n" + ASCII_MIB)
    with caplog.at_level(logging.WARNING):
        text_file_documents(str(tmp_path / "*.txt"), window_docs=2)
    assert _warnings(caplog) == [
        f"{early}: 1 line of its first MiB (pretraining checks only the start of each file) holds bytes that are "
        "not UTF-8 (first: line 1, byte 0xe9); they are dropped, as BERT's tokenizer drops them. If the file is "
        f"Latin-1, re-encode it: iconv -f latin1 -t utf-8 {early} > {tmp_path / 'early.utf8.txt'}"
    ]


@pytest.mark.slow
def test_kbl_pretrain_on_a_blank_corpus_stops_with_the_file_named(tmp_path, uncased_vocab_path):
    corpus = tmp_path / "blank.txt"
    corpus.write_text("\n  \n\n")
    command = [
        sys.executable,
        "-m",
        "keras_bert_lite.runners.pretrain",
        "--input_files",
        str(corpus),
        "--preset",
        "tiny",
        "--vocab",
        uncased_vocab_path,
        "--model_dir",
        str(tmp_path / "run"),
        "--steps",
        "2",
        "--batch_size",
        "2",
        "--seq_length",
        "16",
        "--quiet",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)  # it hung before the check
    assert result.returncode != 0 and f"{corpus}: no text" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("error: ") and "Traceback" not in result.stderr
