"""WordPiece training: reserved tokens first, words split as the tokenizer splits them, CLI."""

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
