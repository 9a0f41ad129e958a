"""TF Serving's REST API against a real server and an export of our exporter, with a real HTTP client (urllib):
the documented request formats give the documented response shapes, and the same predictions as gRPC."""

import base64
import math

import numpy as np
import pytest

from keras_bert_lite.serving import ServingClient
from tests.serving import http
from tests.serving.exports import LABELS
from tests.serving.server_process import ServerProcess

TEXTS = ["a great movie, I loved it", "two hours I will never get back"]
OUTPUTS = ("label", "label_id", "logits", "probabilities")


@pytest.fixture(scope="module")
def served(exported_classifier):
    server = ServerProcess(exported_classifier, "--max_batch_size", "8", model_name="clf")
    try:
        yield server.wait_ready()
    finally:
        server.kill()


@pytest.fixture(scope="module")
def grpc_outputs(served):
    with ServingClient("clf", served.address, timeout=60) as client:
        return client.predict(TEXTS)


def test_model_status_is_tf_servings_json(served):
    expected = {
        "model_version_status": [
            {"version": "1", "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}}
        ]
    }
    assert http.get(f"{served.url}/v1/models/clf") == (200, "application/json", expected)
    assert http.get(f"{served.url}/v1/models/clf/versions/1")[2] == expected


def test_model_metadata_is_tf_servings_json(served):
    status, _, answer = http.get(f"{served.url}/v1/models/clf/metadata")
    assert status == 200
    assert answer["model_spec"] == {"name": "clf", "signature_name": "", "version": "1"}
    signatures = answer["metadata"]["signature_def"]["signature_def"]
    assert {"serving_default", "preprocess", "encode", "classify"} <= set(signatures)
    text = signatures["serving_default"]["inputs"]["text"]
    assert text["dtype"] == "DT_STRING" and text["tensor_shape"]["dim"] == [{"size": "-1", "name": ""}]
    assert set(signatures["serving_default"]["outputs"]) == set(OUTPUTS)
    assert signatures["serving_default"]["method_name"] == "tensorflow/serving/predict"


def test_row_format_predicts_one_object_per_instance_as_grpc_does(served, grpc_outputs):
    status, kind, answer = http.post(f"{served.url}/v1/models/clf:predict", {"instances": TEXTS})
    assert (status, kind, list(answer)) == (200, "application/json", ["predictions"])
    predictions = answer["predictions"]
    assert [sorted(row) for row in predictions] == [sorted(OUTPUTS)] * len(TEXTS)
    assert all(
        row["label"] in LABELS and math.isclose(sum(row["probabilities"]), 1, abs_tol=1e-6) for row in predictions
    )
    assert_same_as_grpc({key: [row[key] for row in predictions] for key in OUTPUTS}, grpc_outputs)


@pytest.mark.parametrize(
    "body",
    [
        {"inputs": {"text": TEXTS}},  # columnar, named
        {"inputs": TEXTS},  # columnar, the single input bare
        {"signature_name": "serving_default", "inputs": {"text": TEXTS}},
    ],
)
def test_columnar_format_predicts_one_value_per_output_as_grpc_does(served, grpc_outputs, body):
    status, _, answer = http.post(f"{served.url}/v1/models/clf:predict", body)
    assert status == 200 and list(answer) == ["outputs"] and sorted(answer["outputs"]) == sorted(OUTPUTS)
    assert_same_as_grpc(answer["outputs"], grpc_outputs)


@pytest.mark.parametrize(
    "instances",
    [
        [{"text": text} for text in TEXTS],  # named instances
        [{"b64": base64.b64encode(text.encode()).decode()} for text in TEXTS],  # binary strings
        [{"text": {"b64": base64.b64encode(text.encode()).decode()}} for text in TEXTS],
    ],
)
def test_named_and_base64_instances_predict_the_same(served, grpc_outputs, instances):
    status, _, answer = http.post(f"{served.url}/v1/models/clf:predict", {"instances": instances})
    assert status == 200
    assert_same_as_grpc({key: [row[key] for row in answer["predictions"]] for key in OUTPUTS}, grpc_outputs)


def test_another_signature_and_a_version_in_the_url(served):
    body = {"signature_name": "preprocess", "instances": ["a great movie"]}
    status, _, answer = http.post(f"{served.url}/v1/models/clf/versions/1:predict", body)
    assert status == 200
    (row,) = answer["predictions"]
    assert sorted(row) == ["input_mask", "input_type_ids", "input_word_ids"]
    assert row["input_word_ids"][:5] == [101, 1037, 2307, 3185, 102]  # [CLS] a great movie [SEP]
    assert row["input_mask"] == [1] * 5 + [0] * 27


def test_classify_gives_label_score_pairs_per_example_as_grpc_does(served):
    body = {
        "signature_name": "classify",
        "examples": [{"text": TEXTS[0]}, {"text": {"b64": base64.b64encode(TEXTS[1].encode()).decode()}}],
    }
    status, _, answer = http.post(f"{served.url}/v1/models/clf:classify", body)
    assert status == 200 and list(answer) == ["results"]
    assert [[label for label, _ in pairs] for pairs in answer["results"]] == [list(LABELS)] * 2
    with ServingClient("clf", served.address, timeout=60) as client:
        expected = client.classify(TEXTS)
    assert [[(label, float(np.float32(score))) for label, score in pairs] for pairs in answer["results"]] == expected


def assert_same_as_grpc(rest, grpc):
    """REST's JSON values read back to exactly gRPC's arrays (float32s written as their shortest decimal)."""
    assert sorted(rest) == sorted(grpc)
    for key, value in grpc.items():
        if value.dtype == object:
            assert [item.encode() for item in rest[key]] == value.tolist(), key
        else:
            np.testing.assert_array_equal(np.array(rest[key], dtype=value.dtype), value, err_msg=key)
