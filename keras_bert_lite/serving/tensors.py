"""Conversion between TensorProtos and NumPy arrays, with TF Serving-style INVALID_ARGUMENT errors."""

import tensorflow as tf
from tensorflow.core.framework import types_pb2

from keras_bert_lite.serving.errors import invalid_argument


def request_to_ndarray(key, proto, spec, signature_name):
    """Converts the request TensorProto for input `key` to a NumPy array, checking dtype and shape.

    Args:
        key: The input key (alias) in the signature.
        proto: The request's `TensorProto`.
        spec: The `tf.TensorSpec` the signature declares for `key`.
        signature_name: Used in error messages.

    Raises:
        ServingError: INVALID_ARGUMENT when the dtype differs, the proto is malformed, or the shape does not fit.
    """
    if proto.dtype != spec.dtype.as_datatype_enum:
        raise invalid_argument(
            f"input '{key}' of signature '{signature_name}' has dtype {_dtype_name(proto.dtype)}, "
            f"expected {_dtype_name(spec.dtype.as_datatype_enum)}"
        )
    try:
        array = tf.make_ndarray(proto)
    except (ValueError, TypeError) as error:
        raise invalid_argument(
            f"input '{key}' of signature '{signature_name}' is not a valid TensorProto: {error}"
        ) from None
    if not spec.shape.is_compatible_with(array.shape):
        raise invalid_argument(
            f"input '{key}' of signature '{signature_name}' has shape {list(array.shape)}, expected "
            f"{_shape_str(spec.shape)} (None = any size)"
        )
    return array


def ndarray_to_proto(array):
    """The TensorProto of a NumPy array returned by a signature function."""
    return tf.make_tensor_proto(array)


def _dtype_name(enum_value):
    return types_pb2.DataType.Name(enum_value) if enum_value in types_pb2.DataType.values() else str(enum_value)


def _shape_str(shape):
    return "any shape" if shape.rank is None else str(shape.as_list())
