"""TF Serving's JSON tensor rules in process: values to TensorProtos by the signature's dtype (after the limits),
and back."""

import json

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.framework import types_pb2
from tensorflow.core.protobuf import meta_graph_pb2
from tensorflow_serving.apis import predict_pb2

from keras_bert_lite.serving.errors import ServingError
from keras_bert_lite.serving.json_predict import fill_inputs
from keras_bert_lite.serving.json_tensors import to_json_value, to_tensor_proto
from keras_bert_lite.serving.limits import RequestLimits
from keras_bert_lite.serving.rest_api import json_bytes


@pytest.mark.parametrize(
    "value, dtype, expected",
    [
        ([[1, 2], [3, 4]], types_pb2.DT_INT32, np.array([[1, 2], [3, 4]], np.int32)),
        ([1, 2.5, 1e300], types_pb2.DT_FLOAT, np.array([1, 2.5, np.inf], np.float32)),
        (3.25, types_pb2.DT_DOUBLE, np.float64(3.25)),
        ([True, False], types_pb2.DT_BOOL, np.array([True, False])),
        (["a", {"b64": "AP8="}, {"b64": "aGk"}], types_pb2.DT_STRING, np.array([b"a", b"\x00\xff", b"hi"], object)),
        ([], types_pb2.DT_INT64, np.zeros([0], np.int64)),
    ],
)
def test_values_become_tensors_of_the_signatures_dtype(value, dtype, expected):
    array = tf.make_ndarray(to_tensor_proto(value, dtype))
    assert array.dtype == expected.dtype and array.shape == expected.shape
    assert array.tolist() == expected.tolist()


@pytest.mark.parametrize(
    "value, dtype",
    [
        ([True], types_pb2.DT_FLOAT),
        ([1], types_pb2.DT_BOOL),
        ([128], types_pb2.DT_INT8),
        ([-1], types_pb2.DT_UINT8),
        ([1.0], types_pb2.DT_INT64),
        ([[1], 2], types_pb2.DT_INT32),
        ([None], types_pb2.DT_STRING),
    ],
)
def test_values_of_another_type_or_shape_are_invalid_argument(value, dtype):
    with pytest.raises(ServingError) as raised:
        to_tensor_proto(value, dtype)
    assert raised.value.code.name == "INVALID_ARGUMENT"


def test_a_dtype_json_cannot_carry_is_unimplemented():
    with pytest.raises(ServingError) as raised:
        to_tensor_proto([1.0], types_pb2.DT_HALF)
    assert raised.value.code.name == "UNIMPLEMENTED"


def test_floats_are_written_as_the_shortest_decimal_of_the_float32_with_tf_servings_special_values():
    values = np.array([0.1, 1 / 3, 3.0, np.nan, np.inf, -np.inf, 1e-7], np.float32)
    text = json_bytes(to_json_value(values)).decode()
    assert text == "[0.1, 0.33333334, 3.0, NaN, Infinity, -Infinity, 1e-07]\n"
    assert np.array_equal(np.array(json.loads(text), np.float32), values, equal_nan=True)
    assert to_json_value(np.array([0.1])) == [0.1]  # float64 stays float64


def test_strings_are_text_and_bytes_outputs_base64():
    strings = np.array([[b"caf\xc3\xa9", b"\xff"]], object)
    assert to_json_value(strings, "tokens") == [["café", "\ufffd"]]
    assert to_json_value(strings, "image_bytes") == [[{"b64": "Y2Fmw6k="}, {"b64": "/w=="}]]


@pytest.mark.parametrize(
    "document",
    [
        {"instances": ["a"] * 5 + [1]},  # the 1 would fail its conversion: the limit comes first
        {"inputs": {"text": ["a"] * 5 + [1]}},
    ],
)
def test_declared_shapes_meet_the_limits_before_any_value_is_converted(document):
    infos = {"text": meta_graph_pb2.TensorInfo(dtype=types_pb2.DT_STRING)}
    with pytest.raises(ServingError) as raised:
        fill_inputs(document, infos, predict_pb2.PredictRequest(), RequestLimits(max_examples=4))
    assert raised.value.code.name == "RESOURCE_EXHAUSTED" and "(--max_request_examples)" in raised.value.message
