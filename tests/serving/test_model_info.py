"""GetModelStatus and GetModelMetadata, and the APIs this server does not implement."""

import grpc
import pytest
from tensorflow_serving.apis import get_model_metadata_pb2, get_model_status_pb2, model_management_pb2, regression_pb2

from keras_bert_lite.serving import ServingClient
from keras_bert_lite.serving.servable import read_serving_meta_graph
from tests.serving.stubs import model_stub, prediction_stub, rpc_error


@pytest.fixture(scope="module")
def client(toy_server):
    with ServingClient("toy", toy_server.address, timeout=30) as client:
        yield client


def test_status_reports_the_served_version_available(client):
    assert client.status() == [{"version": 1, "state": "AVAILABLE", "error_code": "OK", "error_message": ""}]
    assert client.status(version=1)[0]["state"] == "AVAILABLE"


@pytest.mark.parametrize(
    "model, version, message",
    [
        ("toy", 9, "Could not find version 9 of model toy"),
        ("nope", None, "Could not find any versions of model nope"),
    ],
)
def test_status_of_unknown_model_or_version_is_not_found(toy_server, model, version, message):
    request = get_model_status_pb2.GetModelStatusRequest()
    request.model_spec.name = model
    if version is not None:
        request.model_spec.version.value = version
    error = rpc_error(model_stub(toy_server.address).GetModelStatus, request)
    assert (error.code(), error.details()) == (grpc.StatusCode.NOT_FOUND, message)


def test_metadata_returns_the_signature_defs_of_the_savedmodel(client, toy_v1):
    expected = dict(read_serving_meta_graph(str(toy_v1 / "1")).signature_def)
    served = client.metadata()
    assert (
        set(served)
        == set(expected)
        == {"serving_default", "pair", "classify", "stats", "ids", "slow", "__saved_model_init_op"}
    )
    assert served == expected
    assert served["serving_default"].inputs["text"].dtype == 7  # DT_STRING


@pytest.mark.parametrize(
    "fields, message",
    [
        ([], "must specify at least one metadata_field"),
        (["signature_def", "graph"], "Metadata field graph is not supported"),
    ],
)
def test_metadata_field_errors(toy_server, fields, message):
    request = get_model_metadata_pb2.GetModelMetadataRequest(metadata_field=fields)
    request.model_spec.name = "toy"
    error = rpc_error(prediction_stub(toy_server.address).GetModelMetadata, request)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in error.details()


def test_missing_model_spec_is_invalid_argument(toy_server):
    error = rpc_error(
        prediction_stub(toy_server.address).GetModelMetadata,
        get_model_metadata_pb2.GetModelMetadataRequest(metadata_field=["signature_def"]),
    )
    assert (error.code(), error.details()) == (grpc.StatusCode.INVALID_ARGUMENT, "Missing ModelSpec")


def test_regress_and_reload_config_are_unimplemented(toy_server):
    request = regression_pb2.RegressionRequest()
    request.model_spec.name = "toy"
    assert rpc_error(prediction_stub(toy_server.address).Regress, request).code() == grpc.StatusCode.UNIMPLEMENTED
    reload = model_management_pb2.ReloadConfigRequest()
    assert (
        rpc_error(model_stub(toy_server.address).HandleReloadConfigRequest, reload).code()
        == grpc.StatusCode.UNIMPLEMENTED
    )
