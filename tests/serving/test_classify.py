"""The Classify API on the toy model's `classify` signature (TF Serving's classification convention)."""

import grpc
import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import classification_pb2

from keras_bert_lite.serving import ServingClient
from tests.serving.stubs import prediction_stub, rpc_error
from tests.serving.toy_models import LABELS


@pytest.fixture(scope="module")
def client(toy_server):
    with ServingClient("toy", toy_server.address, timeout=30) as client:
        yield client


def _request(texts, signature="classify", context=None):
    request = classification_pb2.ClassificationRequest()
    request.model_spec.name = "toy"
    request.model_spec.signature_name = signature
    examples = request.input.example_list_with_context if context else request.input.example_list
    for text in texts:
        examples.examples.add().features.feature["text"].bytes_list.value.append(text.encode())
    if context:
        examples.context.features.feature["other"].bytes_list.value.append(context.encode())
    return request


def test_classify_returns_classes_and_scores_of_the_model(client, toy_v1):
    texts = ["short", "a text longer than eight characters"]
    results = client.classify(texts)
    local = tf.saved_model.load(str(toy_v1 / "1")).signatures["serving_default"](text=tf.constant(texts))
    assert [[label for label, _ in result] for result in results] == [list(LABELS)] * 2
    np.testing.assert_allclose(
        [[score for _, score in result] for result in results], local["probabilities"].numpy(), rtol=1e-6
    )


def test_classify_with_context(toy_server):
    response = prediction_stub(toy_server.address).Classify(_request(["abc", "defg"], context="ctx"), timeout=30)
    assert response.model_spec.signature_name == "classify"
    assert response.model_spec.version.value == 1
    assert len(response.result.classifications) == 2
    assert response.result.classifications[0].classes[0].label == "short"


@pytest.mark.parametrize(
    "request_, message",
    [
        (_request([]), "Input is empty."),
        (_request(["a"], signature="nope"), "No signature was found with the name: nope"),
        (_request(["a"], signature="serving_default"), "expected exactly one input 'inputs'"),
    ],
)
def test_classify_errors_are_invalid_argument(toy_server, request_, message):
    error = rpc_error(prediction_stub(toy_server.address).Classify, request_)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert message in error.details()
