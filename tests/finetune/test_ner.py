"""NER: CoNLL reading, first-subword labels, end-to-end run with entity-level F1."""

import json

import numpy as np
import pytest
import tensorflow_datasets as tfds

from keras_bert_lite.data import ner
from keras_bert_lite.data.records import DataError
from keras_bert_lite.runners.ner import parse_args, run
from tests.finetune.conftest import common_flags, text_pipeline

SENTENCES = [
    [("EU", "B-ORG"), ("rejects", "O"), ("German", "B-MISC"), ("call", "O"), ("to", "O"), ("boycott", "O"),
     ("British", "B-MISC"), ("lamb", "O"), (".", "O")],
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
    assert ner.read_conll(str(spaced)).words == [["costs", "10\u00a0000", "euros"]]   # a no-break space is no column
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
    for s in range(len(data)):                                        # every word labelled exactly once
        firsts = [w for w, f in zip(word_of[s], first[s]) if f]
        assert firsts == list(range(len(data.words[s])))
        assert [labels[s][k] for k in np.flatnonzero(first[s])] == tags[s].tolist()
    # Packing puts IGNORE on [CLS], [SEP] and padding.
    packed = ner.pack_token_labels({"input_word_ids": np.zeros((3, 16), np.int32)},
                                   ner.token_labels(word_of, first, tags)).numpy()
    assert (packed[:, 0] == ner.IGNORE).all() and packed[1, 1 + us[0]] == labels[1][us[0]]
    assert packed[2, 1 + len(labels[2])] == ner.IGNORE


def test_run_ner_end_to_end(tiny_init, tmp_path):
    train = conll(tmp_path / "train.txt", copies=4)
    dev = conll(tmp_path / "dev.txt")
    out = tmp_path / "run"
    summary = run(parse_args(common_flags(tiny_init, out, "--train_file", train, "--dev_file", dev,
                                          "--test_file", dev, "--epochs", "2")))
    assert {"precision", "recall", "f1"} <= set(summary["metrics"])
    info = json.loads((out / "task.json").read_text())
    assert info["task_type"] == "token_classification" and info["labels"][0] == "O"
    assert info["lower_case"] is True        # the vocabulary's own casing (bert-base-uncased's tokens)
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
