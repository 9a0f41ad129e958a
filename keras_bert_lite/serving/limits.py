"""Per-request limits, checked on what a request declares before anything is materialised.

A TensorProto declares its shape, and its values may be fewer than the shape holds: `tf.make_ndarray` pads by
repeating the last value, so a 40-byte request declaring a string tensor of shape [100000] becomes 100,000
examples once converted. The checks here therefore work on the declared shape (in Python integers, so a
dimension of 2**62 cannot overflow) and on the bytes the conversion would produce, padding included, and run
before any input is converted.

A malformed declaration (a negative dimension, an unknown rank, more values than the shape has room for,
strings in tensor_content) is INVALID_ARGUMENT; a well-formed request over a limit is RESOURCE_EXHAUSTED, and its
message names the limit and the `kbl-serve` flag that sets it. So is a response gRPC could not send
(`check_response_size`).
"""

import dataclasses
import math

import tensorflow as tf

from keras_bert_lite.serving.errors import invalid_argument, resource_exhausted

EXAMPLES_FLAG = "--max_request_examples"
ELEMENTS_FLAG = "--max_request_elements"
STRING_BYTES_FLAG = "--max_string_bytes"
REQUEST_BYTES_FLAG = "--max_request_bytes"
MESSAGE_FLAG = "--max_message_mb"
MIB = 1024 * 1024
# The TensorProto field holding a dtype's values when tensor_content is empty, as `tf.make_ndarray` reads them
# (the other integer and quantized dtypes use int_val; a complex value is two entries).
_VALUE_FIELDS = {
    "string": "string_val",
    "float16": "half_val",
    "bfloat16": "half_val",
    "float32": "float_val",
    "float64": "double_val",
    "int64": "int64_val",
    "uint32": "uint32_val",
    "uint64": "uint64_val",
    "bool": "bool_val",
    "complex64": "scomplex_val",
    "complex128": "dcomplex_val",
    "float8_e5m2": "float8_val",
    "float8_e4m3fn": "float8_val",
    "float4_e2m1fn": "float8_val",
}


@dataclasses.dataclass(frozen=True)
class RequestLimits:
    """What one Predict or Classify request may ask for; the defaults are `kbl-serve`'s.

    Attributes:
        max_examples: Largest dim 0 of any input (for Classify: number of examples).
        max_elements: Largest number of elements over all the inputs of a request.
        max_string_bytes: Largest string element (for Classify: serialized example).
        max_request_bytes: Largest total size of a request's inputs once converted, padding included.
    """

    max_examples: int = 256
    max_elements: int = 1024 * 1024
    max_string_bytes: int = 4 * MIB
    max_request_bytes: int = 16 * MIB

    def check_tensors(self, protos):
        """Checks the `TensorProto`s of a request ({input key: proto}) against the limits.

        Raises:
            ServingError: INVALID_ARGUMENT for a malformed declaration, RESOURCE_EXHAUSTED over a limit.
        """
        elements = total_bytes = 0
        for key, proto in sorted(protos.items()):
            shape = _declared_shape(key, proto)
            elements = self._check_shape(key, shape, elements)
            total_bytes += self._converted_bytes(key, proto, shape, math.prod(shape))
            if total_bytes > self.max_request_bytes:
                raise _over(
                    f"the request's inputs come to {total_bytes} bytes once converted",
                    self.max_request_bytes,
                    "bytes per request",
                    REQUEST_BYTES_FLAG,
                )

    def check_shapes(self, shapes):
        """Checks the shapes ({input key: [dims]}) of inputs not converted yet (REST's JSON values) against the
        examples and elements limits, before the conversion costs anything.

        Raises:
            ServingError: RESOURCE_EXHAUSTED over a limit.
        """
        elements = 0
        for key, shape in sorted(shapes.items()):
            elements = self._check_shape(key, shape, elements)

    def _check_shape(self, key, shape, elements):
        """Checks one input's shape; returns the elements of the request so far, this input's included."""
        for size in shape:
            if size > self.max_elements:
                raise _over(
                    f"input '{key}' declares a dimension of {size} (shape {shape})",
                    self.max_elements,
                    "elements per request",
                    ELEMENTS_FLAG,
                )
        if shape and shape[0] > self.max_examples:
            raise _over(
                f"input '{key}' declares {shape[0]} examples (shape {shape})",
                self.max_examples,
                "examples per request",
                EXAMPLES_FLAG,
            )
        elements += math.prod(shape)
        if elements > self.max_elements:
            raise _over(
                f"the request declares {elements} elements over its inputs",
                self.max_elements,
                "elements per request",
                ELEMENTS_FLAG,
            )
        return elements

    def check_example_count(self, count):
        """Checks the number of Classify examples, before they are serialized."""
        if count > self.max_examples:
            raise _over(f"the request holds {count} examples", self.max_examples, "examples per request", EXAMPLES_FLAG)

    def check_examples(self, lengths):
        """Checks the sizes of the serialized Classify examples (a list of ints) against the byte limits."""
        self._check_strings("the request", lengths, len(lengths))

    def _converted_bytes(self, key, proto, shape, count):
        try:
            dtype = tf.as_dtype(proto.dtype)
        except TypeError:
            raise invalid_argument(f"input '{key}' has an unknown dtype ({proto.dtype})") from None
        _check_value_count(key, proto, dtype, shape, count)
        if dtype == tf.string:
            if proto.tensor_content:
                raise invalid_argument(
                    f"input '{key}' is DT_STRING but holds tensor_content: send its strings in "
                    f"string_val (as tf.make_tensor_proto does)"
                )
            return self._check_strings(f"input '{key}'", [len(value) for value in proto.string_val], count)
        if proto.tensor_content and len(proto.tensor_content) != count * dtype.size:
            raise invalid_argument(
                f"input '{key}' has {len(proto.tensor_content)} bytes of tensor_content, "
                f"but shape {shape} of {dtype.name} needs {count * dtype.size}"
            )
        return count * dtype.size

    def _check_strings(self, what, lengths, count):
        """The bytes of `count` strings of which `lengths` are given (the last one repeats to fill the rest)."""
        longest = max(lengths, default=0)
        if longest > self.max_string_bytes:
            raise _over(
                f"{what} holds a string of {longest} bytes",
                self.max_string_bytes,
                "bytes per string",
                STRING_BYTES_FLAG,
            )
        total = sum(lengths) + (count - len(lengths)) * (lengths[-1] if lengths else 0)
        if total > self.max_request_bytes:
            raise _over(
                f"{what} comes to {total} bytes of strings once converted",
                self.max_request_bytes,
                "bytes per request",
                REQUEST_BYTES_FLAG,
            )
        return total


def check_response_size(response, max_bytes):
    """A response over the gRPC message limit is RESOURCE_EXHAUSTED naming the flag, before gRPC gets it.

    gRPC cannot send it: the client got gRPC's own "Sent message larger than max", while the access log said OK
    and the log a traceback from inside gRPC.

    Args:
        response: The response message.
        max_bytes: The largest message the server sends (`--max_message_mb` in bytes), or None for no check.
    """
    if max_bytes is None:
        return
    size = response.ByteSize()
    if size > max_bytes:
        raise _over(
            f"the response comes to {size} bytes (fewer outputs, by output_filter, make it smaller)",
            max_bytes,
            "bytes per message",
            MESSAGE_FLAG,
        )


def _declared_shape(key, proto):
    if proto.tensor_shape.unknown_rank:
        raise invalid_argument(f"input '{key}' has an unknown rank: a request tensor needs a known shape")
    shape = [dim.size for dim in proto.tensor_shape.dim]
    if any(size < 0 for size in shape):
        raise invalid_argument(
            f"input '{key}' declares a negative dimension (shape {shape}): every dimension "
            f"of a request tensor must be >= 0"
        )
    return shape


def _check_value_count(key, proto, dtype, shape, count):
    """More values in the dtype's value field than the shape has room for is INVALID_ARGUMENT, and so are values
    only in a field the dtype does not read.

    Fewer are padded with the last one, as TensorFlow does; more made `tf.make_ndarray` fail with NumPy's
    "index can't contain negative values". With tensor_content set, the value fields are not read. Values in
    another dtype's field (an int32 tensor's ids in float_val) are not read either, and TensorFlow fills a tensor
    without values with zeros: such a request would be answered for all-zero inputs.
    """
    if proto.tensor_content:
        return
    field = _VALUE_FIELDS.get(dtype.name, "int_val")
    values = len(getattr(proto, field)) // (2 if dtype.is_complex else 1)
    if values > count:
        raise invalid_argument(
            f"input '{key}' holds {values} values in {field} but its shape {shape} has room for "
            f"{count}: send one value per element, or fix the shape"
        )
    misplaced = _value_fields_holding_values(proto) if count and not values else []
    if misplaced:
        raise invalid_argument(
            f"input '{key}' is {dtype.name}, whose values go in {field}, but it holds them in "
            f"{misplaced[0]}: send {field} (or tensor_content), or declare the dtype the values are"
        )


def _value_fields_holding_values(proto):
    """The names of the TensorProto's non-empty value fields (`*_val`)."""
    return [name for name in proto.DESCRIPTOR.fields_by_name if name.endswith("_val") and len(getattr(proto, name))]


def _over(what, limit, unit, flag):
    return resource_exhausted(
        f"{what}; this server takes at most {limit} {unit} ({flag}): split the request, or raise {flag}"
    )
