"""The warm-up requests an export ships: `assets.extra/tf_serving_warmup_requests`, in TF Serving's format.

TensorFlow builds a signature's kernels and optimises its graph on its first run, and oneDNN its primitives on
the first run of each shape, so the first requests to a freshly loaded version are many times slower than the
rest. TF Serving (and `kbl-serve`) replay the requests of this file when they load a version, before serving it.
It is a TFRecord file of `tensorflow.serving.PredictionLog` records (TF Serving's saved_model_warmup format; at
most 1000): for every text-in signature (each of `serving_default`, `preprocess`, and the task's `embed` or
`fill_mask`) a Predict request of one short text, one text as long as `seq_length` allows and a batch of
`BATCH` texts of lengths spread up to it; for `classify`, the same texts as TF Serving Classify requests (one
tf.Example per text). The encoder's `encode` signature takes token ids, not text, and is not warmed up.
"""

from __future__ import annotations

import os

import tensorflow as tf
from tensorflow_serving.apis import classification_pb2, predict_pb2, prediction_log_pb2

from keras_bert_lite.artifacts import TaskSpec

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")  # TF Serving's name and place
BATCH = 8
CLASSIFY = "classify"
_TEXT_IN = ("serving_default", "preprocess", "embed", "fill_mask")
_WORDS = (
    "the film opens on a quiet street where two old friends meet again after many years and talk about "
    "everything they lost and found along the way"
).split()
_MASK = "[MASK]"


def warmup_texts(spec: TaskSpec) -> list[list[str]]:
    """The batches of texts warm-up sends (each text a sentence; a fill_mask export's hold the mask token)."""
    longest = max(spec.seq_length, 8)
    lengths = [[4], [longest]] + [[max(4, longest * (index + 1) // BATCH) for index in range(BATCH)]]
    return [[_text(length, spec.task_type == "fill_mask") for length in batch] for batch in lengths]


def warmup_logs(spec: TaskSpec, signature_keys) -> list[prediction_log_pb2.PredictionLog]:
    """The PredictionLog records of an export of `spec` with signatures `signature_keys`."""
    logs = []
    for key in signature_keys:
        for texts in warmup_texts(spec):
            if key in _TEXT_IN:
                logs.append(_predict_log(key, spec.text_fields, texts))
            elif key == CLASSIFY:
                logs.append(_classify_log(spec.text_fields, texts))
    return logs


def write_warmup_requests(saved_model_dir: str, spec: TaskSpec, signature_keys) -> str:
    """Writes `saved_model_dir`/assets.extra/tf_serving_warmup_requests; returns its path."""
    path = os.path.join(saved_model_dir, WARMUP_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path) as writer:
        for log in warmup_logs(spec, signature_keys):
            writer.write(log.SerializeToString())
    return path


def _text(words: int, masked: bool) -> str:
    picked = [_WORDS[index % len(_WORDS)] for index in range(words)]
    if masked:
        picked[len(picked) // 2] = _MASK
    return " ".join(picked)


def _predict_log(signature: str, fields, texts: list[str]) -> prediction_log_pb2.PredictionLog:
    request = predict_pb2.PredictRequest()
    request.model_spec.signature_name = signature
    for field in fields:
        request.inputs[field].CopyFrom(tf.make_tensor_proto(texts, dtype=tf.string, shape=[len(texts)]))
    return prediction_log_pb2.PredictionLog(predict_log=prediction_log_pb2.PredictLog(request=request))


def _classify_log(fields, texts: list[str]) -> prediction_log_pb2.PredictionLog:
    request = classification_pb2.ClassificationRequest()
    request.model_spec.signature_name = CLASSIFY
    for text in texts:
        example = request.input.example_list.examples.add()
        for field in fields:
            example.features.feature[field].bytes_list.value.append(text.encode())
    return prediction_log_pb2.PredictionLog(classify_log=prediction_log_pb2.ClassifyLog(request=request))
