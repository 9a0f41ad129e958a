"""Tensors in TF Serving's REST JSON, both ways, by the rules of its `util/json_tensor.cc`.

A request value becomes a `TensorProto` of the dtype its signature declares: lists nest as deep as the tensor's
rank, taken from the first element at each level, and every list at a level must have that level's length;
every leaf sits at the deepest level. Numbers go to numeric dtypes (integers, within the dtype's range, to
integer ones; never `true`/`false`), `true`/`false` to DT_BOOL, strings to DT_STRING as UTF-8, and
`{"b64": "<base64>"}` to DT_STRING as the decoded bytes. Any mismatch is INVALID_ARGUMENT naming the value;
a dtype JSON cannot carry (half floats, complex) is UNIMPLEMENTED, as in TF Serving.

Response tensors become JSON values the same way back: floats as the shortest decimal that reads back as the
same float32 (or float64), with `NaN`, `Infinity` and `-Infinity` as TF Serving writes them; strings as text,
or `{"b64": ...}` for a tensor whose name ends in `_bytes` (bytes that are not UTF-8 in another tensor are
written with U+FFFD in their place).
"""

import base64
import binascii
import json

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import tensor_pb2, tensor_shape_pb2, types_pb2

from keras_bert_lite.serving.errors import invalid_argument, unimplemented

B64 = "b64"
BYTES_SUFFIX = "_bytes"
DEBUG_CHARS = 256  # TF Serving's kMaxJsonDebugStringBytes: a value quoted in an error is cut there
_JSON_TYPES = {dict: "Object", list: "Array", str: "String", bool: "Boolean", type(None): "Null"}


def to_tensor_proto(value, dtype):
    """The `TensorProto` of JSON `value` (already parsed) as a tensor of `dtype` (a `types_pb2.DataType`).

    Raises:
        ServingError: INVALID_ARGUMENT for a value that is not a dense tensor of `dtype`.
    """
    shape, leaves = dense_values(value, dtype)
    return tensor_from_leaves(leaves, shape, dtype)


def dense_values(value, dtype):
    """(shape, flat list of converted leaves) of JSON `value` as a dense tensor of `dtype`."""
    shape = dense_shape(value)
    leaves = []
    _collect(value, shape, 0, _leaf_converter(dtype), leaves)
    return shape, leaves


def dense_shape(value):
    """The shape a JSON value declares: the length of its list at each level, following first elements."""
    shape = []
    while isinstance(value, list):
        shape.append(len(value))
        if not value:
            break
        value = value[0]
    return shape


def tensor_from_leaves(leaves, shape, dtype):
    """A `TensorProto` of `dtype` and `shape` holding `leaves` (converted by `dense_values`), in order."""
    if dtype == types_pb2.DT_STRING:
        proto = tensor_pb2.TensorProto(dtype=dtype, string_val=leaves)
        proto.tensor_shape.dim.extend(tensor_shape_pb2.TensorShapeProto.Dim(size=size) for size in shape)
        return proto
    with np.errstate(over="ignore"):  # 1e300 as float32 is inf, as in TF Serving
        array = np.array(leaves, dtype=tf.as_dtype(dtype).as_numpy_dtype).reshape(shape)
    return tf.make_tensor_proto(array)


def is_b64(value):
    """Whether a JSON value is a binary string: an object whose only key is "b64", holding a string."""
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get(B64), str)


def decode_b64(value):
    """The bytes of a `{"b64": ...}` object (standard alphabet; padding optional, as absl reads it)."""
    if not is_b64(value):
        raise invalid_argument(f"JSON Value: {debug_string(value)} not formatted correctly for base64 data")
    text = value[B64]
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise invalid_argument("Unable to base64 decode") from None


def utf8(text):
    """A JSON string's UTF-8 bytes; a lone surrogate (`"\\ud800"`) is INVALID_ARGUMENT."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise invalid_argument(
            f"JSON Value: {debug_string(text)} is not valid Unicode (a lone surrogate): send "
            f'binary data as {{"b64": ...}}'
        ) from None


def debug_string(value):
    """`value` as compact JSON, cut at `DEBUG_CHARS` characters, for error messages."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))[:DEBUG_CHARS]


def json_type(value):
    """The JSON type name of a parsed value, as TF Serving's messages name it."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "Number"
    return _JSON_TYPES.get(type(value), type(value).__name__)


def to_json_value(array, name=""):
    """A NumPy array (or scalar) from a response tensor as a JSON-ready value (see the module docstring).

    Raises:
        ServingError: INVALID_ARGUMENT for a dtype JSON cannot carry (complex).
    """
    array = np.asarray(array)
    if array.dtype == object or array.dtype.kind == "S":
        as_bytes = name.endswith(BYTES_SUFFIX)
        return np.vectorize(_b64_object if as_bytes else _text, otypes=[object])(array).tolist()
    if array.dtype.kind == "f" and array.dtype.itemsize < 8:
        return array.astype(str).astype(np.float64).tolist()  # the shortest decimal of each float32
    if array.dtype.kind in "biuf":
        return array.tolist()
    raise invalid_argument(f"Failed to write JSON value for tensor type: {array.dtype.name}")


def _collect(value, shape, level, convert, leaves):
    rank = len(shape)
    if not isinstance(value, list):
        if level != rank:
            raise invalid_argument(
                f"JSON Value: {debug_string(value)} found at incorrect level: {level + 1} in the "
                f"JSON DOM. Expected at level: {rank}"
            )
        leaves.append(convert(value))
        return
    if level >= rank:
        raise invalid_argument(f"Encountered list at unexpected level: {level} expected < {rank}")
    if len(value) != shape[level]:
        raise invalid_argument(
            f"Encountered list at unexpected size: {len(value)} at level: {level} expected size: {shape[level]}"
        )
    for item in value:
        _collect(item, shape, level + 1, convert, leaves)


def _leaf_converter(dtype):
    """The function that checks and converts one JSON leaf to a value of `dtype`."""
    tf_dtype = _known_dtype(dtype)
    if tf_dtype == tf.string:
        return _string_leaf
    if tf_dtype == tf.bool:
        return lambda value: _checked(value, isinstance(value, bool), tf_dtype)
    if tf_dtype in (tf.float32, tf.float64):
        return lambda value: _checked(value, _is_number(value), tf_dtype)
    if tf_dtype.is_integer and not tf_dtype.is_quantized:
        low, high = tf_dtype.min, tf_dtype.max
        return lambda value: _checked(value, _is_integer(value) and low <= value <= high, tf_dtype)
    raise unimplemented(
        f"Conversion of JSON values to type: {tf_dtype.name} is not supported (TF Serving's REST "
        f"API takes bool, string, integer, float and double tensors): use the gRPC API"
    )


def _known_dtype(dtype):
    try:
        return tf.as_dtype(dtype)
    except TypeError:
        raise invalid_argument(f"unknown dtype {dtype}") from None


def _string_leaf(value):
    if isinstance(value, str):
        return utf8(value)
    if isinstance(value, dict):
        return decode_b64(value)
    raise _type_error(value, tf.string)


def _checked(value, ok, dtype):
    if not ok:
        raise _type_error(value, dtype)
    return value


def _type_error(value, dtype):
    return invalid_argument(
        f"JSON Value: {debug_string(value)} Type: {json_type(value)} is not of expected type: {dtype.name}"
    )


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_integer(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _b64_object(value):
    return {B64: base64.b64encode(value if isinstance(value, bytes) else str(value).encode()).decode("ascii")}
