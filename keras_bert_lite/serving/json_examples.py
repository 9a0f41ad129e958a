"""The REST classify and regress APIs' JSON: "examples" (and "context") into the `Input` of a Classification or
RegressionRequest, and the result back as "results", by TF Serving's `json_tensor.cc` rules.

Each example is an object of features; a feature is a value or a list of values, all of one kind: strings and
`{"b64": ...}` objects are bytes, numbers with a fraction or exponent floats, other numbers and `true`/`false`
int64. "context" holds features shared by every example. A classify answer holds, per example, its
`[label, score]` pairs; a regress answer one value per example.
"""

import numpy as np

from keras_bert_lite.serving.errors import invalid_argument
from keras_bert_lite.serving.json_request import format_error
from keras_bert_lite.serving.json_tensors import decode_b64, is_b64, json_type, utf8

EXAMPLES = "examples"
CONTEXT = "context"
RESULTS = "results"
_INT64 = (-(2**63), 2**63 - 1)
_KIND_NAMES = {"bytes_list": "bytes", "float_list": "float", "int64_list": "int64"}


def fill_input(document, request, limits):
    """Fills `request.input` (a Classification- or RegressionRequest's) from the body's examples and context; the
    number of examples is checked against `limits` (`RequestLimits`) before any is converted."""
    has_context = CONTEXT in document
    if has_context:
        fill_example(document[CONTEXT], request.input.example_list_with_context.context)
    if EXAMPLES not in document:
        raise format_error(document, f"When method is classify, key '{EXAMPLES}' is expected and was not found")
    examples = document[EXAMPLES]
    if not isinstance(examples, list):
        raise format_error(document, f"Expecting '{EXAMPLES}' value to be an list/array")
    if not examples:
        raise format_error(document, f"'{EXAMPLES}' value is an empty array")
    limits.check_example_count(len(examples))
    target = (request.input.example_list_with_context if has_context else request.input.example_list).examples
    for value in examples:
        fill_example(value, target.add())


def fill_example(value, example):
    """Fills a `tf.train.Example` from a JSON object of features."""
    if not isinstance(value, dict):
        raise invalid_argument(f"Example must be JSON object but got JSON {json_type(value)}")
    for name, content in value.items():
        feature = example.features.feature[name]
        for item in content if isinstance(content, list) else [content]:
            _add_value(name, item, feature)


def classify_json(response):
    """{"results": [[[label, score], ...] per example]} of a `ClassificationResponse`."""
    return {
        RESULTS: [
            [[entry.label, _float32(entry.score)] for entry in classifications.classes]
            for classifications in response.result.classifications
        ]
    }


def regress_json(response):
    """{"results": [value per example]} of a `RegressionResponse`."""
    return {RESULTS: [_float32(regression.value) for regression in response.result.regressions]}


def _add_value(name, value, feature):
    kind, converted = _kind_and_value(name, value)
    present = feature.WhichOneof("kind")
    if present is not None and present != kind:
        raise invalid_argument(f"Unexpected element type in feature: {name} expecting type: {_KIND_NAMES[present]}")
    getattr(feature, kind).value.append(converted)


def _kind_and_value(name, value):
    if isinstance(value, bool):
        return "int64_list", int(value)
    if isinstance(value, str):
        return "bytes_list", utf8(value)
    if is_b64(value):
        return "bytes_list", decode_b64(value)
    if isinstance(value, float):
        return "float_list", value
    if isinstance(value, int):
        if not _INT64[0] <= value <= _INT64[1]:
            raise invalid_argument(f"Feature: {name} has an integer outside int64. Only int64_t is supported.")
        return "int64_list", value
    raise invalid_argument(f"Feature: {name} has element with unexpected JSON type: {json_type(value)}")


def _float32(value):
    """A float32 as the shortest decimal that reads back as it."""
    return float(str(np.float32(value)))
