"""NER: CoNLL reading, first-subword labels, end-to-end run with entity-level F1."""

import json
import logging
import re

import numpy as np
import pytest
import tensorflow_datasets as tfds

from keras_bert_lite.data import ner
from keras_bert_lite.data.errors import DataError
from keras_bert_lite.runners.ner import parse_args, run
from keras_bert_lite.runners.tasks.tagging import NerTask
from keras_bert_lite.text import BertPacker
from tests.finetune.conftest import common_flags, text_pipeline

SENTENCES = [
    [
        ("EU", "B-ORG"),
        ("rejects", "O"),
        ("German", "B-MISC"),
        ("call", "O"),
        ("to", "O"),
        ("boycott", "O"),
        ("British", "B-MISC"),
        ("lamb", "O"),
        (".", "O"),
    ],
    [("Peter", "B-PER"), ("Blackburn", "I-PER"), ("visited", "O"), ("U.S.", "B-LOC"), ("embassies", "O")],
    [("Müller", "B-PER"), ("lives", "O"), ("in", "O"), ("São", "B-LOC"), ("Paulo", "I-LOC")],
]


def conll(path, sentences=SENTENCES, copies=1):
    lines = ["-DOCSTART- -X- -X- O", ""]
    for _ in range(copies):
        for sentence in sentences:
            lines += [f"{w} NNP B-NP {t}" for w, t in sentence] + [""]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_read_conll_and_errors(tmp_path):
    data = ner.read_conll(conll(tmp_path / "a.txt"))
    assert data.words[1] == ["Peter", "Blackburn", "visited", "U.S.", "embassies"]
    assert data.tags[1][:2] == ["B-PER", "I-PER"] and data.lines == [3, 13, 19]
    assert ner.tag_names(data) == ["O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-LOC", "I-PER"]
    bad = tmp_path / "bad.txt"
    bad.write_text("EU B-ORG\nrejects\n\n")
    with pytest.raises(DataError, match=rf"{bad}:2: 'rejects' has one column"):
        ner.read_conll(str(bad))
    assert ner.read_conll(str(bad), skip_bad_rows=True).words == [["EU"]]
    spaced = tmp_path / "nbsp.txt"
    spaced.write_text("costs NN O\n10\u00a0000 CD O\neuros\tNNS\tO\n\n")
    assert ner.read_conll(str(spaced)).words == [["costs", "10\u00a0000", "euros"]]  # a no-break space is no column
    with pytest.raises(DataError, match=r"a.txt:3: unknown tag 'B-ORG' in this sentence; the known tags .* \['O'\]"):
        ner.encode_tags(data, ["O"])


def test_first_subword_labels(tmp_path, uncased_vocab_path):
    tokenizer = text_pipeline(uncased_vocab_path)[1]
    data = ner.read_conll(conll(tmp_path / "a.txt"))
    ids, word_of, first = ner.tokenize_words(tokenizer, data, max_tokens=30)
    tags = ner.encode_tags(data, ner.tag_names(data))
    labels = ner.token_labels(word_of, first, tags).to_list()
    pieces = [tokenizer.vocab.tokens[i] for i in ids[1].numpy()]
    # "U.S." is one CoNLL word but four BERT tokens: only the first carries B-LOC.
    us = [k for k, w in enumerate(word_of[1]) if w == 3]
    assert [pieces[k] for k in us] == ["u", ".", "s", "."]
    assert labels[1][us[0]] == ner.tag_names(data).index("B-LOC") and all(labels[1][k] == ner.IGNORE for k in us[1:])
    for s in range(len(data)):  # every word labelled exactly once
        firsts = [w for w, f in zip(word_of[s], first[s]) if f]
        assert firsts == list(range(len(data.words[s])))
        assert [labels[s][k] for k in np.flatnonzero(first[s])] == tags[s].tolist()
    # Packing puts IGNORE on [CLS], [SEP] and padding.
    packed = ner.pack_token_labels(
        {"input_word_ids": np.zeros((3, 16), np.int32)}, ner.token_labels(word_of, first, tags)
    ).numpy()
    assert (packed[:, 0] == ner.IGNORE).all() and packed[1, 1 + us[0]] == labels[1][us[0]]
    assert packed[2, 1 + len(labels[2])] == ner.IGNORE


def test_run_ner_end_to_end(tiny_init, tmp_path):
    train = conll(tmp_path / "train.txt", copies=4)
    dev = conll(tmp_path / "dev.txt")
    out = tmp_path / "run"
    summary = run(
        parse_args(
            common_flags(tiny_init, out, "--train_file", train, "--dev_file", dev, "--test_file", dev, "--epochs", "2")
        )
    )
    assert {"precision", "recall", "f1"} <= set(summary["metrics"])
    info = json.loads((out / "task.json").read_text())
    assert info["task_type"] == "token_classification" and info["labels"][0] == "O"
    assert info["lower_case"] is True  # the vocabulary's own casing (bert-base-uncased's tokens)
    blocks = (out / "dev_predictions.txt").read_text().strip().split("\n\n")
    assert len(blocks) == 3 and blocks[1].split("\n")[0].split(" ")[:2] == ["Peter", "B-PER"]
    assert (out / "test_predictions.txt").exists()


def test_ner_takes_the_casing_from_the_vocabulary():
    assert parse_args(["--model_dir", "x", "--preset", "tiny"]).lower_case is None


def test_tfds_conll2003_reader():
    with tfds.testing.mock_data(num_examples=3):
        data = ner.load_tfds("train")
    assert len(data) == 3 and all(isinstance(w, str) for words in data.words for w in words)
    assert all(t in ner.tag_names(data) for tags in data.tags for t in tags)


POS = [[("the", "DT"), ("cat", "NN"), ("runs", "VB")], [("a", "DT"), ("dog", "NN"), ("sleeps", "VB"), ("here", "RB")]]


def fake_predict(num_tags, choose):
    """`predict(dataset)` for NerTask: per batch, logits peaked at `choose(gold tag ids)` at every position."""

    def predict(dataset):
        return [np.eye(num_tags, dtype=np.float32)[choose(np.maximum(labels.numpy(), 0))] for _, labels in dataset]

    return predict


def tagging_task(uncased_vocab_path, train, dev, test=None):
    vocab, tokenizer = text_pipeline(uncased_vocab_path)
    return NerTask(tokenizer, BertPacker(32, vocab=vocab, dynamic=True), train, dev, test)


def test_word_tags_without_prefixes_score_word_accuracy(tmp_path, uncased_vocab_path, caplog):
    assert ner.marks_entities(["O", "B-PER"]) and ner.marks_entities(["O", "U-LOC"])
    assert not ner.marks_entities(["DT", "NN", "VB"]) and not ner.marks_entities(["O"])
    pos = ner.read_conll(conll(tmp_path / "pos.txt", POS))
    with caplog.at_level(logging.INFO, logger="keras_bert_lite.ner"):
        task = tagging_task(uncased_vocab_path, pos, pos)
    assert task.main_metric == "accuracy" and task.tag_names == ["DT", "NN", "RB", "VB"]
    assert "(DT, NN, RB, VB) have no B-/I-/E-/S-/L-/U- prefix" in caplog.text and "word accuracy" in caplog.text
    assert task.evaluate(fake_predict(4, lambda gold: gold)) == {"accuracy": 1.0}
    assert task.evaluate(fake_predict(4, np.zeros_like)) == {"accuracy": 2 / 7}  # "DT" everywhere: 2 of 7 words
    # IOB tags keep entity F1 as the main metric, without that line.
    caplog.clear()
    iob = ner.read_conll(conll(tmp_path / "iob.txt"))
    with caplog.at_level(logging.INFO, logger="keras_bert_lite.ner"):
        task = tagging_task(uncased_vocab_path, iob, iob)
    assert task.main_metric == "f1" and "word accuracy" not in caplog.text
    assert task.evaluate(fake_predict(len(task.tag_names), lambda gold: gold))["f1"] == 1.0


def test_a_tab_separated_word_may_hold_spaces(tmp_path, uncased_vocab_path):
    path = tmp_path / "tabs.txt"
    path.write_text("New York\tNNP\tB-LOC\nis \tVBZ\tO\t\n10\u00a0000 CD O\n\nLos Angeles\tB-LOC\n\n")
    data = ner.read_conll(str(path))
    assert data.words == [["New York", "is", "10\u00a0000"], ["Los Angeles"]]  # a space line keeps space columns
    assert data.tags == [["B-LOC", "O", "O"], ["B-LOC"]] and data.lines == [1, 5]
    task = tagging_task(uncased_vocab_path, data, data)
    dev = task.splits["dev"]
    ids, word_of, first, labels = dev.rows, dev.word_of, dev.first, dev.labels
    pieces = [text_pipeline(uncased_vocab_path)[0].tokens[i] for i in ids[0].numpy()]
    assert pieces[:2] == ["new", "york"] and list(word_of[0][:2]) == [0, 0]  # "New York": one word, two pieces
    assert [w for w, f in zip(word_of[0], first[0]) if f] == [0, 1, 2]  # one first piece per word
    assert labels.to_list()[0][:2] == [task.tag_names.index("B-LOC"), ner.IGNORE]
    task.write_predictions(fake_predict(len(task.tag_names), lambda gold: gold), str(tmp_path))
    written = (tmp_path / "dev_predictions.txt").read_text()
    assert written.startswith("New York\tB-LOC\tB-LOC\nis\tO\tO\n")  # one line per word, tab-separated
    assert ner.read_conll(str(tmp_path / "dev_predictions.txt")).words == data.words
    empty_word = tmp_path / "empty.txt"
    empty_word.write_text("\tO\n\n")
    with pytest.raises(DataError, match=re.escape(f"{empty_word}:1: '\\tO' has an empty word before its first tab")):
        ner.read_conll(str(empty_word))


def test_a_words_only_file_asks_for_a_dummy_tag_column(tmp_path):
    path = tmp_path / "test.txt"
    path.write_text("John\nlives\nhere\n\n")
    message = (
        f"{path}:1: 'John' has one column, as has every line of this file: no tag column; add one: each "
        "word's tag (`John B-PER`), or for unlabeled sentences to tag (--test_file) a dummy tag (`John O`)."
    )
    for skip_bad_rows in (False, True):  # skipping would skip every word
        with pytest.raises(DataError, match=f"^{re.escape(message)}$"):
            ner.read_conll(str(path), skip_bad_rows=skip_bad_rows)
