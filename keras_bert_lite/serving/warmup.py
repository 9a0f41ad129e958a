"""Warm-up: a version's `assets.extra/tf_serving_warmup_requests` is replayed before the version is served.

TensorFlow initialises lazily: the first run of a signature optimises its graph and builds its kernels, so the
first request to a new version is many times slower than the next. TF Serving therefore replays sample requests
shipped with the SavedModel when it loads a version (saved_model_warmup_util.cc), and so does `kbl-serve`, with
TF Serving's file format and rules:

- the file is a TFRecord file of `tensorflow.serving.PredictionLog` records, at most 1000 (TF Serving's limit,
  kept so that a file `kbl-serve` takes is one TF Serving takes);
- each `predict_log` / `classify_log` request runs once through the request path every call takes
  (`run_predict` / `run_classify`, the same checks and the same `RequestLimits`), against the version being
  loaded, whatever model name or version the record names; no admission, no access-log line, no metrics: it is
  not a user request;
- a record that is not a PredictionLog, a corrupt file, too many records or a request that fails fail the load
  of the version (as in TF Serving), which `ModelManager` reports and retries like any failed load;
- `regress_log` and `multi_inference_log` records are skipped with a warning (kbl-serve answers neither API);
  `predict_streamed_log` and `session_run_log` records are UNIMPLEMENTED, as in TF Serving.

Warm-up runs on the loading thread, inside the load's `--load_timeout_seconds`, and stops between records when
the load is abandoned (shutdown, timeout, the model left the config).
"""

import logging
import os
import time

import grpc
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2

from keras_bert_lite.serving.classify import run_classify
from keras_bert_lite.serving.errors import ServingError, from_tf_error, invalid_argument, unimplemented
from keras_bert_lite.serving.predict import run_predict
from keras_bert_lite.serving.servable import load_servable

log = logging.getLogger(__name__)
WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")
MAX_RECORDS = 1000  # TF Serving's WarmupConsts::kMaxNumRecords
_RUNNERS = {"predict_log": run_predict, "classify_log": run_classify}
_SKIPPED = ("regress_log", "multi_inference_log")


class WarmingLoader:
    """A `ModelManager` loader: `load_servable`, then the version's warm-up requests.

    Args:
        limits: The `RequestLimits` warm-up requests are checked against, as every request.
        enabled: False loads without warming up (`--enable_model_warmup=false`).
    """

    def __init__(self, limits, enabled=True):
        self.limits = limits
        self.enabled = enabled

    def __call__(self, name, version, path, cancelled):
        servable = load_servable(name, version, path)
        if self.enabled:
            warm_up(servable, self.limits, cancelled)
        return servable


def warm_up(servable, limits, cancelled=None):
    """Replays the warm-up requests of `servable` (see the module docstring); returns how many ran.

    Args:
        servable: The loaded `Servable`, not served yet.
        limits: The `RequestLimits` each request is checked against.
        cancelled: A `threading.Event`; once set, no further request starts.

    Raises:
        ServingError: The file or a record is malformed, or a request failed; the message names the record.
    """
    path = os.path.join(servable.path, WARMUP_FILE)
    if not os.path.exists(path):
        return 0
    start = time.monotonic()
    count = 0
    for number, record in enumerate(_records(path), 1):
        if cancelled is not None and cancelled.is_set():
            raise ServingError(grpc.StatusCode.CANCELLED, f"warm-up of {servable.path} cancelled")
        if number > MAX_RECORDS:
            raise invalid_argument(f"Number of warmup records exceeds the maximum ({MAX_RECORDS}) at {path}")
        count += _replay(servable, _parse(record, number, path), limits, number, path)
    log.info(
        "Finished reading warmup data for model at %s. Number of warmup records read: %d. Elapsed time "
        "(microseconds): %d.",
        path,
        count,
        (time.monotonic() - start) * 1e6,
    )
    return count


def _records(path):
    """The records of the TFRecord file at `path`, as bytes; DATA_LOSS for a file that is not one."""
    try:
        for record in tf.data.TFRecordDataset(path):
            yield record.numpy()
    except tf.errors.OpError as error:
        failure = from_tf_error(error)
        raise ServingError(
            failure.code, f"{failure.message}. Please verify your warmup data is in TFRecord format."
        ) from None


def _parse(record, number, path):
    try:
        return prediction_log_pb2.PredictionLog.FromString(record)
    except Exception:  # noqa: BLE001 - protobuf's DecodeError and friends: the record is not a PredictionLog
        raise invalid_argument(
            f"Failed to parse warmup record {number} from {path}: not a serialized tensorflow.serving.PredictionLog"
        ) from None


def _replay(servable, prediction_log, limits, number, path):
    """Runs one record's request; returns 1 if it ran, 0 if it was skipped."""
    kind = prediction_log.WhichOneof("log_type")
    if kind is None:
        return 0
    if kind in _SKIPPED:
        log.warning(
            "warm-up record %d of %s is a %s: skipped (kbl-serve serves neither Regress nor MultiInference)",
            number,
            path,
            kind,
        )
        return 0
    if kind not in _RUNNERS:
        raise unimplemented(f"Unsupported log_type for warmup: {kind} (record {number} of {path})")
    try:
        _RUNNERS[kind](servable, getattr(prediction_log, kind).request, limits, _run)
    except tf.errors.OpError as error:
        raise _failed(from_tf_error(error), number, path) from None
    except ServingError as error:
        raise _failed(error, number, path) from None
    return 1


def _failed(error, number, path):
    return ServingError(error.code, f"warm-up request {number} of {path} failed: {error.code.name}: {error.message}")


def _run(signature, inputs):
    return signature.run(inputs)
