"""Fixtures for the fine-tuning runners: a tiny pretrained-looking init (our pretraining model_dir layout)."""

import functools
import os
import shutil

import pytest

from keras_bert_lite import BertConfig, build_encoder
from keras_bert_lite.text import BertTokenizer, Vocab
from keras_bert_lite.utils.files import atomic_save_model


@pytest.fixture(scope="session")
def tiny_init(tmp_path_factory, uncased_vocab_path):
    """A model_dir with encoder.keras (L2 H32, bert-base-uncased's 30522-token vocab) and vocab.txt."""
    directory = tmp_path_factory.mktemp("tiny_init")
    config = BertConfig(
        vocab_size=30522, hidden_size=32, num_layers=2, num_heads=4, intermediate_size=64, max_position_embeddings=128
    )
    atomic_save_model(build_encoder(config), os.path.join(directory, "encoder.keras"))
    shutil.copy(uncased_vocab_path, os.path.join(directory, "vocab.txt"))
    return str(directory)


def common_flags(init, model_dir, *extra, **flags):
    """A fine-tuning command line: --init, --model_dir, one epoch of batches of 8 at --seq_length 32, --quiet.

    Keyword arguments add flags or replace those defaults (`epochs=4`, `train_file=path`, `tune_threshold=True`
    for a bare switch, None or False to leave one out); `extra` is appended as given."""
    settings = {"epochs": 1, "batch_size": 8, "seq_length": 32, **flags}
    args = ["--init", init, "--model_dir", str(model_dir)]
    for name, value in settings.items():
        if value is not None and value is not False:
            args += [f"--{name}"] + ([] if value is True else [str(value)])
    return [*args, "--quiet", *extra]


def review_flags(init, model_dir, train, dev, *extra, **flags):
    """`common_flags` for a CSV of reviews (`tests.finetune.test_custom.reviews`): --train_file, --dev_file,
    --text_a review, --label stars."""
    return common_flags(
        init, model_dir, *extra, train_file=train, dev_file=dev, text_a="review", label="stars", **flags
    )


def read_tsv(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n").split("\t") for line in f]


@functools.lru_cache(maxsize=2)
def text_pipeline(vocab_path):
    """(Vocab, BertTokenizer with the vocabulary's casing), built once per vocabulary (tracing takes seconds)."""
    vocab = Vocab.from_file(vocab_path)
    return vocab, BertTokenizer(vocab)
