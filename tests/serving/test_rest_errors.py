"""Bad REST input against a real server: TF Serving's HTTP status and a JSON {"error": ...} body each, one access
line each, no traceback, and the server keeps answering."""

import grpc
import pytest

from keras_bert_lite.serving.errors import ServingError
from keras_bert_lite.serving.http_status import http_status
from tests.serving import http

TOY = "/v1/models/toy"
# (method, path, body, HTTP status, text the error must hold)
BAD = {
    "malformed JSON": ("POST", f"{TOY}:predict", '{"instances": ["a"', 400, "JSON Parse error"),
    "empty body": ("POST", f"{TOY}:predict", "", 400, "JSON Parse error: The document is empty"),
    "not an object": ("POST", f"{TOY}:predict", "[1, 2]", 400, "JSON Value: [1,2] Is not object"),
    "not UTF-8": ("POST", f"{TOY}:predict", b'{"instances": ["\xff"]}', 400, "JSON Parse error"),
    "nested too deep": (
        "POST",
        f"{TOY}:predict",
        '{"instances": ' + "[" * 100_000 + "]" * 100_000 + "}",
        400,
        "too deep",
    ),
    "lone surrogate": ("POST", f"{TOY}:predict", '{"instances": ["\\ud800"]}', 400, "lone surrogate"),
    "bad base64": ("POST", f"{TOY}:predict", {"instances": [{"b64": "!!!"}]}, 400, "Unable to base64 decode"),
    "b64 not a string": (
        "POST",
        f"{TOY}:predict",
        {"instances": [{"text": {"b64": 5}}]},
        400,
        "not formatted correctly for base64 data",
    ),
    "number for a string": (
        "POST",
        f"{TOY}:predict",
        {"instances": [1, 2]},
        400,
        "JSON Value: 1 Type: Number is not of expected type: string",
    ),
    "float for an int": (
        "POST",
        f"{TOY}:predict",
        {"signature_name": "ids", "instances": [[1.5]]},
        400,
        "is not of expected type: int32",
    ),
    "int out of range": (
        "POST",
        f"{TOY}:predict",
        {"signature_name": "ids", "inputs": [[2**31]]},
        400,
        "JSON Value: 2147483648 Type: Number is not of expected type: int32",
    ),
    "wrong rank": ("POST", f"{TOY}:predict", {"instances": [["a"], ["b"]]}, 400, "has shape [2, 1], expected [None]"),
    "ragged instances": (
        "POST",
        f"{TOY}:predict",
        {"signature_name": "ids", "instances": [[1, 2], [3]]},
        400,
        "Expecting tensor size: 2 but got: 1",
    ),
    "ragged columns": (
        "POST",
        f"{TOY}:predict",
        {"signature_name": "ids", "inputs": [[1, 2], [3]]},
        400,
        "Encountered list at unexpected size: 1 at level: 1 expected size: 2",
    ),
    "both formats": (
        "POST",
        f"{TOY}:predict",
        {"instances": ["a"], "inputs": ["a"]},
        400,
        "expecting only one of 'inputs' or 'instances'",
    ),
    "no inputs": (
        "POST",
        f"{TOY}:predict",
        {"signature_name": "serving_default"},
        400,
        "Missing 'inputs' or 'instances' key",
    ),
    "empty instances": ("POST", f"{TOY}:predict", {"instances": []}, 400, "No values in 'instances' array"),
    "missing named input": (
        "POST",
        f"{TOY}:predict",
        {"signature_name": "pair", "inputs": {"text": ["a"]}},
        400,
        "Missing named input: text_b in 'inputs' object.",
    ),
    "unknown named input": (
        "POST",
        f"{TOY}:predict",
        {"instances": [{"txt": "a"}]},
        400,
        "does not have named input: txt",
    ),
    "signature_name not a string": (
        "POST",
        f"{TOY}:predict",
        {"signature_name": 1, "instances": ["a"]},
        400,
        "'signature_name' key must be a string value",
    ),
    "unknown signature": (
        "POST",
        f"{TOY}:predict",
        {"signature_name": "nope", "instances": ["a"]},
        400,
        'Serving signature name: "nope" not found in signature def',
    ),
    "scalar output in rows": (
        "POST",
        f"{TOY}:predict",
        {"signature_name": "stats", "instances": ["a"]},
        400,
        "Tensor name: count has no shape information",
    ),
    "bad example": (
        "POST",
        f"{TOY}:classify",
        {"signature_name": "classify", "examples": [{"text": None}]},
        400,
        "Feature: text has element with unexpected JSON type: Null",
    ),
    "no examples": (
        "POST",
        f"{TOY}:classify",
        {"signature_name": "classify"},
        400,
        "key 'examples' is expected and was not found",
    ),
    "mixed feature kinds": (
        "POST",
        f"{TOY}:classify",
        {"examples": [{"text": ["a", 1]}]},
        400,
        "Unexpected element type in feature: text expecting type: bytes",
    ),
    "regress": ("POST", f"{TOY}:regress", {"examples": [{"x": 1.0}]}, 501, "Regress is not supported"),
    "unknown model": (
        "POST",
        "/v1/models/nope:predict",
        {"instances": ["a"]},
        404,
        "Servable not found for request: Latest(nope)",
    ),
    "unknown version": (
        "POST",
        f"{TOY}/versions/7:predict",
        {"instances": ["a"]},
        404,
        "Servable not found for request: Specific(toy, 7)",
    ),
    "unknown version status": ("GET", f"{TOY}/versions/7", None, 404, "Could not find version 7 of model toy"),
    "unknown label": (
        "POST",
        f"{TOY}/labels/canary:predict",
        {"instances": ["a"]},
        400,
        "Unrecognized servable version label: canary",
    ),
    "version beyond int64": (
        "POST",
        f"{TOY}/versions/99999999999999999999:predict",
        {"instances": ["a"]},
        400,
        "Failed to convert version: 99999999999999999999 to numeric.",
    ),
    "undecodable model name": ("GET", "/v1/models/%ff", None, 400, "Failed to decode model name"),
    "unknown API": ("POST", f"{TOY}:explain", {"instances": ["a"]}, 400, f"Malformed request: POST {TOY}:explain"),
    "upper-case API": ("POST", f"{TOY}:PREDICT", {"instances": ["a"]}, 400, "Malformed request"),
    "GET a POST API": ("GET", f"{TOY}:predict", None, 400, f"Malformed request: GET {TOY}:predict"),
    "POST a GET API": ("POST", TOY, {"instances": ["a"]}, 400, f"Malformed request: POST {TOY}"),
    "PUT": ("PUT", f"{TOY}:predict", {"instances": ["a"]}, 400, "Malformed request: PUT"),
    "no model name": ("GET", "/v1/models", None, 400, "Missing model name in request."),
    "outside /v1/": ("GET", "/v2/models/toy", None, 404, "no such path: /v2/models/toy"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_gets_tf_servings_status_and_a_json_error(toy_server, case):
    method, path, body, status, message = BAD[case]
    answer = http.call(method, toy_server.url + path, body)
    assert answer[:2] == (status, "application/json"), answer
    assert list(answer[2]) == ["error"] and message in answer[2]["error"], answer


def test_the_server_keeps_answering_and_logs_each_bad_call_without_a_traceback(toy_server):
    for method, path, body, _, _ in BAD.values():
        http.call(method, toy_server.url + path, body)
    status, _, answer = http.post(f"{toy_server.url}{TOY}:predict", {"instances": ["still here"]})
    assert status == 200 and answer["predictions"][0]["length"] == 10
    assert "Traceback" not in toy_server.log() and "status=INTERNAL" not in toy_server.log()
    rest_lines = [line for line in toy_server.access_lines() if line.endswith("protocol=rest")]
    assert len(rest_lines) >= len(BAD) + 1


def test_http_statuses_follow_tf_servings_table():
    expected = {
        "INVALID_ARGUMENT": 400,
        "FAILED_PRECONDITION": 400,
        "NOT_FOUND": 404,
        "RESOURCE_EXHAUSTED": 429,
        "DEADLINE_EXCEEDED": 504,
        "UNAVAILABLE": 503,
        "UNIMPLEMENTED": 501,
        "INTERNAL": 500,
        "CANCELLED": 499,
        "UNAUTHENTICATED": 401,
        "PERMISSION_DENIED": 403,
    }
    assert {name: http_status(ServingError(grpc.StatusCode[name], "")) for name in expected} == expected
