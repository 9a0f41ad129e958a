"""WordPiece training: reserved tokens first, words split as the tokenizer splits them, CLI."""

import bz2
import gzip
import logging
import os
import re

import pytest
import tensorflow as tf

from keras_bert_lite.runners import vocab as create_vocab
from keras_bert_lite.text import SPECIAL_TOKENS, BertTokenizer, Vocab, train_vocab
from keras_bert_lite.text.vocab_trainer import count_words

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
    create_vocab.main(
        ["--input", str(corpus), "--output", str(tmp_path / "vocab.txt"), "--vocab_size", "60", "--lower_case", "false"]
    )
    vocab = Vocab.from_file(tmp_path / "vocab.txt")
    assert vocab.tokens[:5] == SPECIAL_TOKENS and "The" in vocab.token_to_id
    assert vocab.lower_case is False and vocab.casing_source.endswith("tokenizer_config.json")  # recorded


def test_create_vocab_warns_once_per_file_of_lines_that_are_not_utf8(tmp_path, caplog):
    latin1 = tmp_path / "corpus.txt"
    latin1.write_bytes("\n".join(LINES[:2] + ["Un café crème.", "The cat.", "Déjà vu."] + LINES).encode("latin-1"))
    utf8 = tmp_path / "accents.txt"
    utf8.write_text("Un café crème, déjà vu, 東京.\n" * 3 + "\n".join(LINES), encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        create_vocab.main(
            [
                "--input",
                str(latin1),
                str(utf8),
                "--output",
                str(tmp_path / "vocab.txt"),
                "--vocab_size",
                "60",
                "--lower_case",
                "true",
            ]
        )
    warnings = [r.getMessage() for r in caplog.records if r.name.startswith("keras_bert_lite")]
    assert warnings == [
        f"{latin1}: 2 lines hold bytes that are not UTF-8 (first: line 3, byte 0xe9); they were "
        "dropped, as BERT's tokenizer drops them. If the file is Latin-1, re-encode it: iconv -f "
        f"latin1 -t utf-8 {latin1} > {tmp_path / 'corpus.utf8.txt'}"
    ]


def test_create_vocab_is_silent_on_utf8_with_accents(tmp_path, caplog):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("Un café crème, déjà vu, 東京, naïve 😀.\n" * 3 + "\n".join(LINES), encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        create_vocab.main(
            [
                "--input",
                str(corpus),
                "--output",
                str(tmp_path / "vocab.txt"),
                "--vocab_size",
                "80",
                "--lower_case",
                "true",
            ]
        )  # 71 tokens: no warning that it is larger either
    assert not [r.getMessage() for r in caplog.records if r.name.startswith("keras_bert_lite")]


def test_create_vocab_reads_a_gzip_corpus_as_its_text_and_refuses_other_compressions(tmp_path):
    text = ("\n".join(LINES) + "\n").encode()
    (tmp_path / "corpus.txt").write_bytes(text)
    (tmp_path / "corpus.gz").write_bytes(gzip.compress(text))
    tokens = []
    for name in ("corpus.txt", "corpus.gz"):
        create_vocab.main(
            [
                "--input",
                str(tmp_path / name),
                "--output",
                str(tmp_path / f"{name}.vocab"),
                "--vocab_size",
                "60",
                "--lower_case",
                "true",
            ]
        )
        tokens.append(Vocab.from_file(tmp_path / f"{name}.vocab").tokens)
    assert tokens[0] == tokens[1]
    packed = tmp_path / "corpus.bz2"
    packed.write_bytes(bz2.compress(text))
    with pytest.raises(SystemExit, match=f"^error: {packed}: is bzip2-compressed; .* | gzip > {packed}.gz$"):
        create_vocab.main(
            [
                "--input",
                str(packed),
                "--output",
                str(tmp_path / "bz2.vocab"),
                "--vocab_size",
                "60",
                "--lower_case",
                "true",
            ]
        )
    assert not (tmp_path / "bz2.vocab").exists()


def vocab_command(corpus, output, size=60):
    return ["--input", str(corpus), "--output", str(output), "--vocab_size", str(size), "--lower_case", "true"]


def test_an_output_that_is_an_input_is_refused_before_anything_is_read(tmp_path, monkeypatch):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    other = tmp_path / "other.txt"
    other.write_text("Another corpus.\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for output in ("corpus.txt", "./corpus.txt", str(corpus)):  # the same file, however it is spelt
        with pytest.raises(
            SystemExit,
            match=rf"^error: --output {re.escape(output)}: is one of the --input files, "
            "which writing the vocabulary would overwrite; give another --output.$",
        ):
            create_vocab.main(["--input", str(other), "missing.txt", "corpus.txt", *vocab_command(corpus, output)[2:]])
    assert corpus.read_text(encoding="utf-8") == "\n".join(LINES) + "\n"
    assert sorted(os.listdir(tmp_path)) == ["corpus.txt", "other.txt"]


def test_an_output_directory_gets_a_vocab_txt_inside(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    (tmp_path / "existing").mkdir()
    for output, written in ((f"{tmp_path}/new/", tmp_path / "new"), (tmp_path / "existing", tmp_path / "existing")):
        create_vocab.main(vocab_command(corpus, output))
        assert sorted(os.listdir(written)) == ["tokenizer_config.json", "vocab.txt"]
        assert Vocab.from_file(written / "vocab.txt").lower_case is True


@pytest.mark.parametrize(
    "lines, size, reason",
    [
        (
            LINES,
            20,
            r"37 tokens, 17 more than --vocab_size 20: the reserved tokens and the characters kept \(each also "
            r"as ##c, so that every word can be spelt\) are 35 already; a lower --max_unique_chars \(2000\)",
        ),
        (
            ["Un café crème, déjà vu, 東京, naïve 😀."] * 3 + LINES,
            60,
            r"61 tokens, 1 more than --vocab_size 60: the learner \(as tf_text's\) picks a whole-number word-frequency "
            r"threshold, and on this corpus none gives between 57 and 60 tokens\.$",
        ),
    ],
)
def test_a_vocabulary_larger_than_asked_is_warned_with_the_reason(tmp_path, caplog, lines, size, reason):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        vocab = create_vocab.run(create_vocab.parse_args(vocab_command(corpus, tmp_path / "vocab.txt", size)))
    (warning,) = [r.getMessage() for r in caplog.records if r.name.startswith("keras_bert_lite")]
    assert len(vocab) > size and re.match(rf"{re.escape(str(tmp_path / 'vocab.txt'))}: {reason}", warning), warning
