"""Per-request limits, against a real server: checked on the declared shape, before anything is materialised."""

import grpc
import pytest
import tensorflow as tf
from tensorflow.core.framework import tensor_pb2, types_pb2
from tensorflow_serving.apis import classification_pb2

from tests.serving.server_process import ServerProcess
from tests.serving.stubs import predict_request, prediction_stub, rpc_error

# Small limits, so that a request over each one stays small and fast.
LIMITS = (
    "--max_request_examples",
    "4",
    "--max_request_elements",
    "12",
    "--max_string_bytes",
    "100",
    "--max_request_bytes",
    "300",
)


def declared(dims, strings=(b"x",), dtype=types_pb2.DT_STRING, unknown_rank=False):
    """A TensorProto that declares `dims` but holds only `strings` (TensorFlow pads with the last one)."""
    proto = tensor_pb2.TensorProto(dtype=dtype, string_val=list(strings))
    proto.tensor_shape.unknown_rank = unknown_rank
    for size in dims:
        proto.tensor_shape.dim.add(size=size)
    return proto


@pytest.fixture(scope="module")
def limited(toy_v1):
    server = ServerProcess(toy_v1, *LIMITS)
    try:
        yield server.wait_ready()
    finally:
        server.kill()


def test_amplified_declared_shape_is_refused_by_default(toy_server):
    # 40 bytes on the wire, 100,000 examples once TensorFlow pads them: refused before conversion.
    request = predict_request({"text": declared([100_000])})
    assert request.ByteSize() < 50
    error = rpc_error(prediction_stub(toy_server.address).Predict, request)
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "declares 100000 examples" in error.details() and "(--max_request_examples)" in error.details()


@pytest.mark.parametrize("dims", [[2**62], [1, 2**62], [0, 2**62], [2**31, 2**31]])
def test_huge_dimensions_are_resource_exhausted_not_internal(toy_server, dims):
    error = rpc_error(prediction_stub(toy_server.address).Predict, predict_request({"text": declared(dims)}))
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, error.details()
    assert "--max_request_" in error.details()


@pytest.mark.parametrize(
    "proto, message",
    [
        (declared([-1]), "declares a negative dimension (shape [-1])"),
        (declared([2, -3]), "declares a negative dimension (shape [2, -3])"),
        (declared([], unknown_rank=True), "has an unknown rank"),
        (declared([2], [b"a", b"b", b"c"]), "holds 3 values in string_val but its shape [2] has room for 2"),
    ],
)
def test_malformed_declarations_are_invalid_argument(toy_server, proto, message):
    error = rpc_error(prediction_stub(toy_server.address).Predict, predict_request({"text": proto}))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in error.details()


def test_tensor_content_that_does_not_fill_the_shape_is_invalid_argument(toy_server):
    proto = tf.make_tensor_proto([1, 2, 3], dtype=tf.int32)
    proto.tensor_shape.dim[0].size = 100
    error = rpc_error(prediction_stub(toy_server.address).Predict, predict_request({"text": proto}))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "has 12 bytes of tensor_content, but shape [100] of int32 needs 400" in error.details()


OVER_EACH_LIMIT = {
    "examples": ({"text": declared([5])}, "--max_request_examples", "declares 5 examples"),
    "elements": (
        {"text": declared([2, 7], dtype=types_pb2.DT_FLOAT)},
        "--max_request_elements",
        "declares 14 elements",
    ),
    "string bytes": ({"text": [b"x" * 101]}, "--max_string_bytes", "a string of 101 bytes"),
    "request bytes": ({"text": [b"x" * 100, b"y" * 100, b"z" * 100, b"!"]}, "--max_request_bytes", "301 bytes"),
    "request bytes by padding": ({"text": declared([4], [b"x" * 80])}, "--max_request_bytes", "320 bytes"),
}


@pytest.mark.parametrize("case", OVER_EACH_LIMIT)
def test_a_request_over_each_limit_is_resource_exhausted_naming_its_flag(limited, case):
    inputs, flag, message = OVER_EACH_LIMIT[case]
    stub = prediction_stub(limited.address)
    error = rpc_error(stub.Predict, predict_request(inputs))
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert message in error.details() and f"({flag})" in error.details()


def test_requests_at_the_limits_are_answered(limited):
    stub = prediction_stub(limited.address)
    response = stub.Predict(predict_request({"text": [b"x" * 75] * 4}, output_filter=["length"]), timeout=30)
    assert tf.make_ndarray(response.outputs["length"]).tolist() == [75] * 4
    padded = stub.Predict(predict_request({"text": declared([3], [b"ab"])}, output_filter=["length"]), timeout=30)
    assert tf.make_ndarray(padded.outputs["length"]).tolist() == [2, 2, 2]


def _classify_request(texts, context=b""):
    request = classification_pb2.ClassificationRequest()
    request.model_spec.name = "toy"
    request.model_spec.signature_name = "classify"
    examples = request.input.example_list_with_context
    examples.context.features.feature["other"].bytes_list.value.append(context)
    for text in texts:
        examples.examples.add().features.feature["text"].bytes_list.value.append(text)
    return request


@pytest.mark.parametrize(
    "request_, flag",
    [
        (_classify_request([b"a"] * 5), "--max_request_examples"),
        (_classify_request([b"a"] * 4, context=b"c" * 60), "--max_request_bytes"),  # the context counts per example
    ],
)
def test_classify_is_limited_too(limited, request_, flag):
    error = rpc_error(prediction_stub(limited.address).Classify, request_)
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert f"({flag})" in error.details()


def test_a_response_over_the_message_limit_is_resource_exhausted_naming_its_flag(toy_v1, start_server):
    # 8 bytes on the wire declare a [256, 1024] int32 tensor; the ids signature echoes it: a 1 MiB response.
    server = start_server(toy_v1, "--max_message_mb", "1")
    stub = prediction_stub(server.address)
    proto = tensor_pb2.TensorProto(dtype=types_pb2.DT_INT32, int_val=[1])
    proto.tensor_shape.dim.add(size=256)
    proto.tensor_shape.dim.add(size=1024)
    error = rpc_error(stub.Predict, predict_request({"ids": proto}, signature="ids"))
    assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "bytes per message (--max_message_mb)" in error.details() and "output_filter" in error.details()
    small = stub.Predict(predict_request({"ids": proto}, signature="ids", output_filter=["total"]), timeout=30)
    assert tf.make_ndarray(small.outputs["total"]).tolist() == [1024] * 256
    server.wait_for_log("status=RESOURCE_EXHAUSTED")  # gRPC's failed send was logged as OK, with a traceback
    assert "Traceback" not in server.log()
