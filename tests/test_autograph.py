"""The library's graph code is traced without autograph: no source rewrite of its functions at each start.

Autograph rewrites the source of every Python function a `tf.function` or a `tf.data` map calls (unless told not
to), once per process: for the tokenizer, the NSP spans, the masker, the loss and the export signatures that was a
third of a short command's time. These tests record every function of the library that autograph converts while
the input pipelines, the training loop, `inference_function` and the export signatures are built and run.
"""

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.autograph.impl import api as autograph_api

import keras_bert_lite as kbl
from keras_bert_lite.artifacts import TaskSpec
from keras_bert_lite.data.features import packed_dataset
from keras_bert_lite.data.masking import DynamicMasker
from keras_bert_lite.data.pretraining import pretraining_dataset, text_file_documents
from keras_bert_lite.export.serving_module import ServingModule
from keras_bert_lite.export.tf_hub_preprocessor import HubPreprocessor
from keras_bert_lite.runners.pretrain import parse_args, run
from keras_bert_lite.text import BertPacker, BertTokenizer, Vocab
from tests.conftest import tiny_bert_config

# The training loop itself needs autograph (a tf.range loop that breaks on a non-finite loss); the helpers it
# calls directly are converted with it. Everything below the replica step is not.
TRAINING_LOOP = {
    "keras_bert_lite.training.trainer.Trainer._train_loop_fn.<locals>.train_loop",
    "keras_bert_lite.training.trainer.Trainer._train_loop_fn.<locals>.distribute",
    "keras_bert_lite.training.trainer.Trainer._train_loop_fn.<locals>.gradient_norm",
}


@pytest.fixture
def converted(monkeypatch):
    """The names of the library's functions autograph converts during the test."""
    names = []
    convert = autograph_api._convert_actual

    def recording(entity, program_ctx):
        if getattr(entity, "__module__", "").startswith("keras_bert_lite"):
            names.append(f"{entity.__module__}.{entity.__qualname__}")
        return convert(entity, program_ctx)

    monkeypatch.setattr(autograph_api, "_convert_actual", recording)
    return names


@pytest.fixture(scope="module")
def vocab(uncased_vocab_path):
    return Vocab.from_file(uncased_vocab_path)


def test_the_pretraining_pipeline(converted, vocab, pydoc_corpus):
    masker = DynamicMasker.from_vocab(vocab, max_predictions=20)
    dataset = pretraining_dataset(
        text_file_documents(pydoc_corpus[0]),
        BertTokenizer(vocab, lower_case=True),
        BertPacker(64, vocab=vocab),
        masker,
        window_docs=4,
        shuffle_buffer=10,
    )
    features, _ = next(iter(dataset.batch(2)))
    assert features["input_word_ids"].shape == (2, 64)
    assert set(converted) <= {
        "keras_bert_lite.data.pretraining.split_documents",
        "keras_bert_lite.data.pretraining.text_file_documents.<locals>.<lambda>",
    }, converted


def test_the_fine_tuning_batches(converted, vocab):
    tokenizer = BertTokenizer(vocab, lower_case=True)
    segments = (tokenizer.tokenize(tf.constant(["a short sentence", "and another one, a little longer"])),)
    inputs, labels = next(
        iter(packed_dataset(segments, [0, 1], BertPacker(32, vocab=vocab, dynamic=True), 2, shuffle_seed=0))
    )
    assert inputs["input_word_ids"].shape[0] == 2 and sorted(labels.numpy()) == [0, 1]
    assert converted == []


def test_inference_and_the_export_signatures(converted, vocab):
    encoder = kbl.build_encoder(tiny_bert_config(len(vocab)))
    ids = np.full((2, 8), vocab.cls_id, np.int32)
    out = kbl.inference_function(encoder, outputs="sequence_output")(
        {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}
    )
    assert out.shape == (2, 8, 32)
    classifier = kbl.build_classifier(encoder, num_classes=2)
    signatures = ServingModule(
        classifier, TaskSpec("classification", True, 32, labels=("no", "yes")), vocab
    ).signatures()
    assert signatures["serving_default"](text=tf.constant(["a test"]))["label"].shape == (1,)
    preprocessor = HubPreprocessor(vocab, seq_length=32)  # callable as TF Hub's loaded SavedModels are
    assert preprocessor.__call__(tf.constant(["a test"]))["input_word_ids"].shape == (1, 32)
    assert converted == []


def test_the_training_loop(converted, tmp_path, uncased_vocab_path, pydoc_corpus):
    config = str(tmp_path / "config.json")
    tiny_bert_config(30522).to_json(config)
    history = run(
        parse_args(
            [
                "--input_files",
                pydoc_corpus[0],
                "--vocab",
                uncased_vocab_path,
                "--config",
                config,
                "--model_dir",
                str(tmp_path / "run"),
                "--seq_length",
                "64",
                "--batch_size",
                "4",
                "--steps",
                "2",
                "--log_every",
                "2",
                "--window_docs",
                "4",
                "--shuffle_buffer",
                "10",
                "--quiet",
            ]
        )
    )
    assert [h["step"] for h in history] == [2]
    assert TRAINING_LOOP & set(converted) and set(converted) <= TRAINING_LOOP | {
        "keras_bert_lite.data.pretraining.split_documents",
        "keras_bert_lite.data.pretraining.text_file_documents.<locals>.<lambda>",
    }, converted
