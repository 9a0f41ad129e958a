"""WordPiece training: reserved tokens first, words split as the tokenizer splits them, CLI."""

import bz2
import gzip
import logging

import pytest
import tensorflow as tf

from keras_bert_lite.text import SPECIAL_TOKENS, BertTokenizer, Vocab, train_vocab
from keras_bert_lite.text.vocab_trainer import count_words
from keras_bert_lite.runners import vocab as create_vocab

LINES = ["The cat sat on the mat.", "The dog sat on the log!", "Cats and dogs, mats and logs."] * 20


def test_count_words_uses_the_tokenizer_split():
    counts = count_words(["Héllo, WORLD\x01s!", "héllo"], lower_case=True)
    assert counts == {"hello": 2, ",": 1, "worlds": 1, "!": 1}


def test_train_vocab_covers_the_training_text():
    vocab = train_vocab(LINES, vocab_size=60, lower_case=True)
    assert vocab.tokens[:5] == SPECIAL_TOKENS
    assert "the" in vocab.token_to_id and "##s" in vocab.token_to_id
    ids = BertTokenizer(vocab, lower_case=True, variant="portable").tokenize(tf.constant(LINES[:3]))
    assert vocab.unk_id not in ids.flat_values.numpy()


def test_create_vocab_cli(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    create_vocab.main(["--input", str(corpus), "--output", str(tmp_path / "vocab.txt"), "--vocab_size", "60",
                       "--lower_case", "false"])
    vocab = Vocab.from_file(tmp_path / "vocab.txt")
    assert vocab.tokens[:5] == SPECIAL_TOKENS and "The" in vocab.token_to_id
    assert vocab.lower_case is False and vocab.casing_source.endswith("tokenizer_config.json")   # recorded


def test_create_vocab_warns_once_per_file_of_lines_that_are_not_utf8(tmp_path, caplog):
    latin1 = tmp_path / "corpus.txt"
    latin1.write_bytes("\n".join(LINES[:2] + ["Un café crème.", "The cat.", "Déjà vu."] + LINES).encode("latin-1"))
    utf8 = tmp_path / "accents.txt"
    utf8.write_text("Un café crème, déjà vu, 東京.\n" * 3 + "\n".join(LINES), encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        create_vocab.main(["--input", str(latin1), str(utf8), "--output", str(tmp_path / "vocab.txt"),
                           "--vocab_size", "60", "--lower_case", "true"])
    warnings = [r.getMessage() for r in caplog.records if r.name.startswith("keras_bert_lite")]
    assert warnings == [f"{latin1}: 2 lines hold bytes that are not UTF-8 (first: line 3, byte 0xe9); they were "
                        "dropped, as BERT's tokenizer drops them. If the file is Latin-1, re-encode it: iconv -f "
                        f"latin1 -t utf-8 {latin1} > {tmp_path / 'corpus.utf8.txt'}"]


def test_create_vocab_is_silent_on_utf8_with_accents(tmp_path, caplog):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("Un café crème, déjà vu, 東京, naïve 😀.\n" * 3 + "\n".join(LINES), encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        create_vocab.main(["--input", str(corpus), "--output", str(tmp_path / "vocab.txt"), "--vocab_size", "60",
                           "--lower_case", "true"])
    assert not [r.getMessage() for r in caplog.records if r.name.startswith("keras_bert_lite")]


def test_create_vocab_reads_a_gzip_corpus_as_its_text_and_refuses_other_compressions(tmp_path):
    text = ("\n".join(LINES) + "\n").encode()
    (tmp_path / "corpus.txt").write_bytes(text)
    (tmp_path / "corpus.gz").write_bytes(gzip.compress(text))
    tokens = []
    for name in ("corpus.txt", "corpus.gz"):
        create_vocab.main(["--input", str(tmp_path / name), "--output", str(tmp_path / f"{name}.vocab"),
                           "--vocab_size", "60", "--lower_case", "true"])
        tokens.append(Vocab.from_file(tmp_path / f"{name}.vocab").tokens)
    assert tokens[0] == tokens[1]
    packed = tmp_path / "corpus.bz2"
    packed.write_bytes(bz2.compress(text))
    with pytest.raises(SystemExit, match=f"^error: {packed}: is bzip2-compressed; .* | gzip > {packed}.gz$"):
        create_vocab.main(["--input", str(packed), "--output", str(tmp_path / "bz2.vocab"), "--vocab_size", "60",
                           "--lower_case", "true"])
    assert not (tmp_path / "bz2.vocab").exists()
