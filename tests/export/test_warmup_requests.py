"""Exports ship TF Serving warm-up requests (assets.extra/tf_serving_warmup_requests) for every text-in signature,
and every one of them runs on the export through kbl-serve's request path."""

import os

import keras
import pytest
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2

import keras_bert_lite as kbl
from keras_bert_lite.artifacts import TaskSpec
from keras_bert_lite.export.exporter import export_saved_model
from keras_bert_lite.export.warmup_requests import BATCH, WARMUP_FILE, warmup_texts
from keras_bert_lite.serving.limits import RequestLimits
from keras_bert_lite.serving.servable import load_servable
from keras_bert_lite.serving.warmup import warm_up
from keras_bert_lite.text import BertTokenizer, Vocab
from tests.conftest import tiny_bert_config


@pytest.fixture(scope="module")
def vocab(uncased_vocab_path):
    return Vocab.from_file(uncased_vocab_path)


def seeded_one_layer_config(vocab):
    keras.utils.set_random_seed(0)
    return tiny_bert_config(len(vocab), num_layers=1, num_heads=2)


def records(path):
    logs = [
        prediction_log_pb2.PredictionLog.FromString(record.numpy())
        for record in tf.data.TFRecordDataset(os.path.join(path, WARMUP_FILE))
    ]
    return [(log.WhichOneof("log_type"), getattr(log, log.WhichOneof("log_type")).request) for log in logs]


@pytest.mark.parametrize(
    "task, build, expected",
    [
        (
            TaskSpec(
                "classification", lower_case=True, seq_length=32, labels=("neg", "pos"), text_fields=("text", "text_b")
            ),
            lambda config: kbl.build_classifier(config, num_classes=2),
            {"serving_default": "predict_log", "preprocess": "predict_log", "classify": "classify_log"},
        ),
        (
            TaskSpec("span", lower_case=True, seq_length=48, text_fields=("text", "text_b")),
            kbl.build_span_labeler,
            {"serving_default": "predict_log", "preprocess": "predict_log"},
        ),
    ],
)
def test_every_text_in_signature_is_warmed_up_and_every_request_runs(vocab, tmp_path, task, build, expected):
    path = export_saved_model(build(seeded_one_layer_config(vocab)), task, vocab, str(tmp_path), target="portable")
    found = records(path)
    assert {request.model_spec.signature_name: kind for kind, request in found} == expected
    assert len(found) == 3 * len(expected)  # short, long, a batch
    sizes = sorted(
        {
            len(request.inputs["text"].string_val)
            if kind == "predict_log"
            else len(request.input.example_list.examples)
            for kind, request in found
        }
    )
    assert sizes == [1, BATCH]
    assert warm_up(load_servable("m", 1, path), RequestLimits()) == len(found)


def test_the_texts_reach_seq_length_and_fill_mask_texts_hold_the_mask(vocab):
    tokenizer = BertTokenizer(vocab, lower_case=True)
    short, (longest,), batch = warmup_texts(TaskSpec("classification", True, 32, labels=("a", "b")))
    assert len(short) == 1 and len(batch) == BATCH
    assert tokenizer.tokenize(tf.constant([longest])).row_lengths().numpy()[0] >= 32
    masked = warmup_texts(TaskSpec("fill_mask", True, 32))
    assert all("[MASK]" in text for texts in masked for text in texts)
