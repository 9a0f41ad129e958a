"""Predict against a server subprocess: results equal the SavedModel run in-process; errors match TF Serving."""

import concurrent.futures

import grpc
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.framework import tensor_pb2, types_pb2

from keras_bert_lite.serving import ServingClient
from keras_bert_lite.serving.errors import op_message
from tests.serving.stubs import predict_request, prediction_stub, rpc_error
from tests.serving.toy_models import reference_outputs

TEXTS = ["hi", "a somewhat longer text", "héllo wörld ✓", ""]


@pytest.fixture(scope="module")
def client(toy_server):
    with ServingClient("toy", toy_server.address, timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def stub(toy_server):
    return prediction_stub(toy_server.address)


def test_predict_equals_the_savedmodel_in_process(client, toy_v1):
    served = client.predict(TEXTS)
    local = tf.saved_model.load(str(toy_v1 / "1")).signatures["serving_default"](text=tf.constant(TEXTS))
    assert sorted(served) == sorted(local) == ["label", "length", "logits", "probabilities", "tag"]
    for key, value in local.items():
        np.testing.assert_array_equal(served[key], value.numpy())
    reference = reference_outputs(TEXTS)
    np.testing.assert_array_equal(served["length"], [2, 22, 13, 0])  # characters, not bytes
    np.testing.assert_allclose(served["logits"], reference["logits"], rtol=1e-6)
    assert [label.decode() for label in served["label"]] == reference["label"]


def test_response_names_model_signature_and_version(stub):
    response = stub.Predict(predict_request({"text": ["x"]}), timeout=30)
    assert (response.model_spec.name, response.model_spec.signature_name, response.model_spec.version.value) == (
        "toy",
        "serving_default",
        1,
    )


def test_labels_and_probabilities_convenience(client):
    labels, probabilities = client.predict_labels(["short", "a text longer than eight characters"])
    assert labels == ["short", "long"]
    np.testing.assert_allclose(probabilities.sum(axis=1), [1, 1], rtol=1e-6)


def test_pair_signature_takes_text_b(client):
    outputs = client.predict(["ab", "c"], text_b=["xyz", ""], signature="pair")
    np.testing.assert_array_equal(outputs["length"], [2, 1])
    np.testing.assert_array_equal(outputs["length_b"], [3, 0])


def test_output_filter_returns_only_the_requested_outputs(stub):
    response = stub.Predict(predict_request({"text": ["abc"]}, output_filter=["length"]), timeout=30)
    assert list(response.outputs) == ["length"]
    assert tf.make_ndarray(response.outputs["length"]).tolist() == [3]


def test_empty_batch_gives_empty_outputs(client):
    outputs = client.predict([])
    assert outputs["length"].shape == (0,)
    assert outputs["logits"].shape == (0, 2)


def test_two_megabyte_string(client):
    text = "ab" * 1_000_000
    assert client.predict([text], output_filter=["length"])["length"].tolist() == [2_000_000]


def test_scalar_output_signature_is_not_mixed_up_by_batching(toy_server):
    # "stats" returns a scalar count: the batcher must run each request alone, concurrently or not.
    def count(size):
        with ServingClient("toy", toy_server.address, timeout=30) as client:
            return client.predict(["x"] * size, signature="stats")["count"].item()

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert list(pool.map(count, range(1, 17))) == list(range(1, 17))


def int32_proto(dims, values):
    """An int32 TensorProto that declares `dims` and holds `values` in int_val (tensor_content left empty)."""
    proto = tensor_pb2.TensorProto(dtype=types_pb2.DT_INT32, int_val=values)
    for size in dims:
        proto.tensor_shape.dim.add(size=size)
    return proto


def test_numeric_values_are_padded_to_the_declared_shape_as_tensorflow_does(stub):
    request = predict_request({"ids": int32_proto([2, 3], [1, 2, 3, 4])}, signature="ids", output_filter=["total"])
    response = stub.Predict(request, timeout=30)
    assert tf.make_ndarray(response.outputs["total"]).tolist() == [6, 12]  # rows [1, 2, 3] and [4, 4, 4]


BAD_REQUESTS = {
    "wrong dtype": (
        predict_request({"text": np.array([1, 2], np.int32)}),
        grpc.StatusCode.INVALID_ARGUMENT,
        "has dtype DT_INT32, expected DT_STRING",
    ),
    "missing input": (predict_request({}), grpc.StatusCode.INVALID_ARGUMENT, "Missing but required: {text}"),
    "missing text_b": (
        predict_request({"text": ["a"]}, signature="pair"),
        grpc.StatusCode.INVALID_ARGUMENT,
        "Missing but required: {text_b}",
    ),
    "extra input": (
        predict_request({"text": ["a"], "other": ["b"]}),
        grpc.StatusCode.INVALID_ARGUMENT,
        "Sent extra: {other}",
    ),
    "bad shape": (
        predict_request({"text": [["a"], ["b"]]}),
        grpc.StatusCode.INVALID_ARGUMENT,
        "has shape [2, 1], expected [None]",
    ),
    "unknown output": (
        predict_request({"text": ["a"]}, output_filter=["nope"]),
        grpc.StatusCode.INVALID_ARGUMENT,
        "output tensor alias not found in signature: nope",
    ),
    "unknown signature": (
        predict_request({"text": ["a"]}, signature="nope"),
        grpc.StatusCode.FAILED_PRECONDITION,
        'Serving signature key "nope" not found.',
    ),
    "unknown model": (
        predict_request({"text": ["a"]}, model="nope"),
        grpc.StatusCode.NOT_FOUND,
        "Servable not found for request: Latest(nope)",
    ),
    "unknown version": (
        predict_request({"text": ["a"]}, version=7),
        grpc.StatusCode.NOT_FOUND,
        "Servable not found for request: Specific(toy, 7)",
    ),
    "invalid UTF-8": (
        predict_request({"text": [b"ok", b"\xff\xfe"]}),
        grpc.StatusCode.INVALID_ARGUMENT,
        "Invalid formatting on input string",
    ),
    # TensorFlow's error quotes the bytes, which are not UTF-8: its message cannot become a str in Python.
    "not an Example, not UTF-8": (
        predict_request({"inputs": [b"\xff not an example"]}, signature="classify"),
        grpc.StatusCode.INVALID_ARGUMENT,
        "Could not parse example input, value: '\\xff not an example'",
    ),
    # tf.make_ndarray failed with NumPy's "index can't contain negative values" on these.
    "more int_val than the shape": (
        predict_request({"ids": int32_proto([1, 2], [1, 2, 3])}, signature="ids"),
        grpc.StatusCode.INVALID_ARGUMENT,
        "input 'ids' holds 3 values in int_val but its shape [1, 2] has room for 2",
    ),
    "int_val in an empty shape": (
        predict_request({"ids": int32_proto([0, 2], [1])}, signature="ids"),
        grpc.StatusCode.INVALID_ARGUMENT,
        "input 'ids' holds 1 values in int_val but its shape [0, 2] has room for 0",
    ),
    # Answered before for all-zero ids: TensorFlow reads no int_val and fills the tensor with zeros.
    "int32 values in float_val": (
        predict_request(
            {
                "ids": tensor_pb2.TensorProto(
                    dtype=types_pb2.DT_INT32, tensor_shape={"dim": [{"size": 1}, {"size": 2}]}, float_val=[5.0, 7.0]
                )
            },
            signature="ids",
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
        "input 'ids' is int32, whose values go in int_val, but it holds them in float_val: send int_val (or "
        "tensor_content), or declare the dtype the values are",
    ),
    # NumPy's "cannot create an OBJECT array from memory buffer" before.
    "strings in tensor_content": (
        predict_request(
            {
                "text": tensor_pb2.TensorProto(
                    dtype=types_pb2.DT_STRING, tensor_shape={"dim": [{"size": 1}]}, tensor_content=b"abcd"
                )
            }
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
        "input 'text' is DT_STRING but holds tensor_content: send its strings in string_val",
    ),
    "text_b size differs": (
        predict_request({"text": ["a", "b"], "text_b": ["c"]}, signature="pair"),
        grpc.StatusCode.INVALID_ARGUMENT,
        "inputs 'text' and 'text_b' of signature 'pair' must have the same batch size (one "
        "text_b per text), got 'text' with 2 and 'text_b' with 1",
    ),
}


@pytest.mark.parametrize("case", BAD_REQUESTS)
def test_bad_request_gets_its_status_and_the_server_keeps_serving(stub, case):
    request, code, message = BAD_REQUESTS[case]
    error = rpc_error(stub.Predict, request)
    assert error.code() == code
    assert message in error.details()
    assert tf.make_ndarray(
        stub.Predict(predict_request({"text": ["still up"]}), timeout=30).outputs["length"]
    ).tolist() == [8]


def test_a_graph_error_reaches_the_client_as_the_ops_message_as_tf_serving_sends_it(stub):
    details = rpc_error(stub.Predict, predict_request({"text": [b"ok", b"\xff\xfe"]})).details()
    assert details.startswith("Invalid formatting on input string\n\t [[{{node ") and details.endswith("}}]]")


def test_op_message_drops_the_eager_preamble_with_the_servers_source_paths():
    @tf.function
    def decode(text):
        return tf.strings.unicode_decode(text, "UTF-8", errors="strict").flat_values

    with pytest.raises(tf.errors.InvalidArgumentError) as caught:
        decode(tf.constant([b"\xff"]))
    assert caught.value.message.startswith("Graph execution error") and __file__ in caught.value.message
    message = op_message(caught.value)
    assert message.startswith("Invalid formatting on input string\n\t [[{{node ") and message.endswith("}}]]")


def test_version_label_is_invalid_argument(stub):
    request = predict_request({"text": ["a"]})
    request.model_spec.version_label = "stable"
    error = rpc_error(stub.Predict, request)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "Unrecognized servable version label: stable" in error.details()


def test_explicit_version_is_served(client):
    assert client.predict(["abc"], version=1)["tag"].tolist() == [b"v1"]
