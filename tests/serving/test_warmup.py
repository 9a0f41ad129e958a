"""Warm-up: a version's assets.extra/tf_serving_warmup_requests replayed before it is served, by TF Serving's
rules; a bad file or a failing request fails the load (reported, retried, the previous version kept)."""

import os
import threading

import grpc
import pytest
import tensorflow as tf
from tensorflow_serving.apis import classification_pb2, prediction_log_pb2

from keras_bert_lite.serving import ServingClient
from keras_bert_lite.serving.errors import ServingError
from keras_bert_lite.serving.limits import RequestLimits
from keras_bert_lite.serving.servable import load_servable
from keras_bert_lite.serving.warmup import MAX_RECORDS, WARMUP_FILE, warm_up
from tests.serving.stubs import predict_request
from tests.serving.toy_models import ToyModel, export_version


def predict_log(inputs, signature=""):
    return prediction_log_pb2.PredictionLog(
        predict_log=prediction_log_pb2.PredictLog(request=predict_request(inputs, signature=signature))
    )


def classify_log(texts):
    request = classification_pb2.ClassificationRequest()
    request.model_spec.signature_name = "classify"
    for text in texts:
        request.input.example_list.examples.add().features.feature["text"].bytes_list.value.append(text.encode())
    return prediction_log_pb2.PredictionLog(classify_log=prediction_log_pb2.ClassifyLog(request=request))


def write_records(version_dir, records):
    path = os.path.join(version_dir, WARMUP_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path) as writer:
        for record in records:
            writer.write(record if isinstance(record, bytes) else record.SerializeToString())
    return path


@pytest.fixture(scope="module")
def version_dir(tmp_path_factory):
    return export_version(ToyModel("v1"), tmp_path_factory.mktemp("warm"), 1)


@pytest.fixture
def servable(version_dir):
    yield load_servable("toy", 1, version_dir)
    path = os.path.join(version_dir, WARMUP_FILE)
    if os.path.exists(path):
        os.remove(path)


def warm_error(servable, records, limits=RequestLimits()):
    write_records(servable.path, records)
    with pytest.raises(ServingError) as raised:
        warm_up(servable, limits)
    return raised.value


def test_predict_and_classify_records_run_and_others_are_skipped(servable):
    regress = prediction_log_pb2.PredictionLog(regress_log=prediction_log_pb2.RegressLog())
    write_records(
        servable.path,
        [
            predict_log({"text": ["a", "bb"]}),
            classify_log(["x"]),
            regress,
            prediction_log_pb2.PredictionLog(),
            predict_log({"text": ["c"]}, "stats"),
        ],
    )
    assert warm_up(servable, RequestLimits()) == 3


def test_no_file_is_no_warm_up(servable):
    assert warm_up(servable, RequestLimits()) == 0


@pytest.mark.parametrize(
    "records, code, message",
    [
        (
            [b"not a prediction log"],
            grpc.StatusCode.INVALID_ARGUMENT,
            "Failed to parse warmup record 1 from {file}: not a serialized tensorflow.serving.PredictionLog",
        ),
        (
            [predict_log({"text": ["fine"]}), predict_log({"txt": ["x"]})],
            grpc.StatusCode.INVALID_ARGUMENT,
            "warm-up request 2 of {file} failed: INVALID_ARGUMENT: input size does not match signature",
        ),
        (
            [predict_log({"text": [b"\xff"]})],
            grpc.StatusCode.INVALID_ARGUMENT,  # fails inside the graph
            "warm-up request 1 of {file} failed: INVALID_ARGUMENT: ",
        ),
        (
            [predict_log({"text": ["x"]}, "nope")],
            grpc.StatusCode.FAILED_PRECONDITION,
            'warm-up request 1 of {file} failed: FAILED_PRECONDITION: Serving signature key "nope" not found.',
        ),
        (
            [prediction_log_pb2.PredictionLog(session_run_log=prediction_log_pb2.SessionRunLog())],
            grpc.StatusCode.UNIMPLEMENTED,
            "Unsupported log_type for warmup: session_run_log (record 1 of {file})",
        ),
        (
            [predict_log({"text": ["x"]})] * (MAX_RECORDS + 1),
            grpc.StatusCode.INVALID_ARGUMENT,
            "Number of warmup records exceeds the maximum (1000) at {file}",
        ),
    ],
)
def test_a_bad_record_fails_warm_up_naming_it(servable, records, code, message):
    error = warm_error(servable, records)
    file = os.path.join(servable.path, WARMUP_FILE)
    assert error.code == code and error.message.startswith(message.format(file=file)), error.message


def test_a_file_that_is_not_tfrecord_is_data_loss(servable):
    path = write_records(servable.path, [])
    with open(path, "wb") as f:
        f.write(b"\x01" * 40)
    with pytest.raises(ServingError) as raised:
        warm_up(servable, RequestLimits())
    assert raised.value.code == grpc.StatusCode.DATA_LOSS
    assert raised.value.message.endswith("Please verify your warmup data is in TFRecord format.")


def test_warm_up_requests_are_held_to_the_request_limits(servable):
    error = warm_error(servable, [predict_log({"text": ["a"] * 3})], RequestLimits(max_examples=2))
    assert error.code == grpc.StatusCode.RESOURCE_EXHAUSTED and "--max_request_examples" in error.message


def test_a_cancelled_load_stops_warming_up(servable):
    write_records(servable.path, [predict_log({"text": ["a"]})])
    cancelled = threading.Event()
    cancelled.set()
    with pytest.raises(ServingError, match="cancelled") as raised:
        warm_up(servable, RequestLimits(), cancelled)
    assert raised.value.code == grpc.StatusCode.CANCELLED


def test_the_server_warms_a_version_up_before_serving_it_and_retries_a_bad_file(tmp_path, start_server):
    export_version(ToyModel("v1"), tmp_path, 1)
    server = start_server(tmp_path, "--poll_seconds", "0.2")
    version_2 = export_version(ToyModel("v2"), tmp_path / "staging", 2)
    write_records(version_2, [predict_log({"text": ["x"]}, "nope")])
    os.rename(version_2, tmp_path / "2")
    server.wait_for_log("Loading servable: {name: toy version: 2} failed: warm-up request 1 of")
    with ServingClient("toy", server.address) as client:
        assert client.predict(["abc"])["tag"].tolist() == [b"v1"]  # the previous version still serves
        failed = client.status()[0]
        assert (failed["version"], failed["state"], failed["error_code"]) == (2, "END", "FAILED_PRECONDITION")
        write_records(str(tmp_path / "2"), [predict_log({"text": ["x", "yy"]}), classify_log(["z"])])
        server.wait_for_log("Successfully loaded servable version {name: toy version: 2}")
        assert client.predict(["abc"])["tag"].tolist() == [b"v2"]
    log = server.log()
    warmed = log.index(
        f"Finished reading warmup data for model at {tmp_path / '2' / WARMUP_FILE}. Number of warmup records read: 2."
    )
    assert warmed < log.index("Successfully loaded servable version {name: toy version: 2}")
    assert len(server.access_lines("Predict")) == 2 and not server.access_lines("Classify")  # not user requests


def test_warm_up_can_be_turned_off(tmp_path, start_server):
    version = export_version(ToyModel("v1"), tmp_path, 1)
    write_records(version, [predict_log({"text": ["x"]}, "nope")])  # would fail the load
    server = start_server(tmp_path, "--enable_model_warmup=false")
    with ServingClient("toy", server.address) as client:
        assert client.predict(["abc"])["tag"].tolist() == [b"v1"]
    assert "warmup" not in server.log()
