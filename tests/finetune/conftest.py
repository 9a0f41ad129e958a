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


def common_flags(init, model_dir, *extra):
    return [
        "--init",
        init,
        "--model_dir",
        str(model_dir),
        "--epochs",
        "1",
        "--batch_size",
        "8",
        "--seq_length",
        "32",
        "--quiet",
        *extra,
    ]


def read_tsv(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n").split("\t") for line in f]


@functools.lru_cache(maxsize=2)
def text_pipeline(vocab_path):
    """(Vocab, BertTokenizer with the vocabulary's casing), built once per vocabulary (tracing takes seconds)."""
    vocab = Vocab.from_file(vocab_path)
    return vocab, BertTokenizer(vocab)
