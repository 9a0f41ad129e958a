"""The REST predict API's JSON: a request's "instances" (row format) or "inputs" (columnar) into a
`PredictRequest`, and its outputs back as "predictions" or "outputs", by TF Serving's `json_tensor.cc` rules.

Row format: "instances" is a non-empty list with one item per example. With one signature input an item is
that input's value (a bare value or list, or `{"b64": ...}`); otherwise each item is an object with exactly
one key per input. Every item's value of an input must have the same shape; the input's tensor is their stack
(shape [number of items] + that shape). Columnar format: "inputs" is the value of the single input, or an
object with a key per input (keys the signature does not have are ignored, as in TF Serving).

The answer mirrors the request: "predictions" is a list with one item per example (the value of the single
output, else an object with a key per output; every output must then have the same dim 0), "outputs" the value
of the single output or an object with a key per output.
"""

import math

import tensorflow as tf

from keras_bert_lite.serving.errors import ServingError, invalid_argument
from keras_bert_lite.serving.json_request import format_error
from keras_bert_lite.serving.json_tensors import (
    debug_string,
    dense_shape,
    dense_values,
    is_b64,
    tensor_from_leaves,
    to_json_value,
    to_tensor_proto,
)
from keras_bert_lite.serving.predict import DEFAULT_SIGNATURE

ROW = "instances"
COLUMNAR = "inputs"
ANSWER_KEYS = {ROW: "predictions", COLUMNAR: "outputs"}


def input_infos(servable, signature_name):
    """{input key: TensorInfo} of a signature of `servable`, which the JSON is converted against.

    Raises:
        ServingError: INVALID_ARGUMENT for a signature the version does not have (TF Serving's REST message).
    """
    name = signature_name or DEFAULT_SIGNATURE
    signature_def = servable.signature_defs.get(name)
    if signature_def is None:
        raise invalid_argument(f'Serving signature name: "{name}" not found in signature def')
    if not signature_def.inputs:
        raise invalid_argument(f"Failed to get input map for signature: {name}")
    return dict(signature_def.inputs)


def fill_inputs(document, infos, request, limits):
    """Fills `request.inputs` from a predict body's "instances" or "inputs"; returns which of the two it was.

    The shapes the JSON declares are checked against `limits` (`RequestLimits`) before any value is converted.
    """
    if ROW in document and COLUMNAR in document:
        raise format_error(
            document, f"Not formatted correctly expecting only one of '{COLUMNAR}' or '{ROW}' keys to exist "
        )
    if ROW in document:
        _fill_rows(document, infos, request, limits)
        return ROW
    if COLUMNAR in document:
        _fill_columns(document[COLUMNAR], infos, request, limits)
        return COLUMNAR
    raise invalid_argument(f"Missing '{COLUMNAR}' or '{ROW}' key")


def answer_json(response, request_format):
    """The JSON object answering a predict request made in `request_format` (`ROW` or `COLUMNAR`)."""
    outputs = {key: tf.make_ndarray(proto) for key, proto in sorted(response.outputs.items())}
    if not outputs:
        raise invalid_argument("Cannot convert empty tensor map to JSON")
    if request_format == COLUMNAR:
        values = {key: to_json_value(value, key) for key, value in outputs.items()}
        return {ANSWER_KEYS[COLUMNAR]: _single_or_object(values)}
    return {ANSWER_KEYS[ROW]: _rows(outputs)}


def _fill_rows(document, infos, request, limits):
    instances = document[ROW]
    if not isinstance(instances, list):
        raise format_error(document, f"Expecting '{ROW}' to be an list/array")
    if not instances:
        raise format_error(document, f"No values in '{ROW}' array")
    named = _is_named(instances[0])
    if not named and len(infos) > 1:
        raise invalid_argument(
            "instances is a plain list, but expecting list of objects as multiple input tensors "
            "required as per tensorinfo_map"
        )
    first = instances[0].items() if named else [(next(iter(infos)), instances[0])]
    limits.check_shapes({name: [len(instances)] + dense_shape(value) for name, value in first})
    columns = {}
    for index, item in enumerate(instances):
        items = _named_items(index, item, infos) if named else _bare_item(index, item, infos)
        for name, value in items:
            column = columns.setdefault(name, _Column(infos[name].dtype))
            _add(column, value, index, name if named else None)
    for name, column in columns.items():
        request.inputs[name].CopyFrom(column.proto())


def _named_items(index, item, infos):
    if not _is_named(item):
        raise invalid_argument(f"Expecting object but got list at item {index} of input list")
    unknown = sorted(set(item) - set(infos))
    if unknown:
        raise invalid_argument(
            f"Failed to process element: {index} key: {unknown[0]} of 'instances' list. Error: "
            f"INVALID_ARGUMENT: JSON object: does not have named input: {unknown[0]}"
        )
    if set(item) != set(infos):
        raise invalid_argument(
            f"Failed to process element: {index} of 'instances' list. JSON object: "
            f"{debug_string(item)} keys must be equal to: {','.join(sorted(infos))}"
        )
    return sorted(item.items())


def _bare_item(index, item, infos):
    if _is_named(item):
        raise invalid_argument(f"Expecting value/list but got object at item {index} of input list")
    return [(next(iter(infos)), item)]


def _add(column, value, index, name):
    try:
        column.add(value)
    except ServingError as error:
        key = f" key: {name}" if name is not None else ""
        raise invalid_argument(
            f"Failed to process element: {index}{key} of 'instances' list. Error: {error.code.name}: {error.message}"
        ) from None


class _Column:
    """The values one input takes over the instances, checked to share one shape, stacked into one tensor."""

    def __init__(self, dtype):
        self.dtype = dtype
        self.shape = None
        self.count = 0
        self.leaves = []

    def add(self, value):
        shape, leaves = dense_values(value, self.dtype)
        if self.shape is not None and math.prod(shape) != math.prod(self.shape):
            raise invalid_argument(f"Expecting tensor size: {math.prod(self.shape)} but got: {math.prod(shape)}")
        if self.shape is not None and shape != self.shape:
            raise invalid_argument(f"Expecting shape {_shape(self.shape)} but got: {_shape(shape)}")
        self.shape = shape
        self.count += 1
        self.leaves.extend(leaves)

    def proto(self):
        return tensor_from_leaves(self.leaves, [self.count] + self.shape, self.dtype)


def _fill_columns(value, infos, request, limits):
    if not isinstance(value, dict) or is_b64(value):
        if len(infos) > 1:
            raise invalid_argument(
                "inputs is a plain value/list, but expecting an object as multiple input tensors "
                "required as per tensorinfo_map"
            )
        value = {next(iter(infos)): value}
    missing = sorted(set(infos) - set(value))
    if missing:
        raise invalid_argument(f"Missing named input: {missing[0]} in '{COLUMNAR}' object.")
    limits.check_shapes({name: dense_shape(value[name]) for name in infos})
    for name, info in sorted(infos.items()):
        request.inputs[name].CopyFrom(to_tensor_proto(value[name], info.dtype))


def _rows(outputs):
    batch = None
    for key, value in outputs.items():
        if value.ndim == 0:
            raise invalid_argument(f"Tensor name: {key} has no shape information ")
        if batch is not None and value.shape[0] != batch:
            raise invalid_argument(
                f"Tensor name: {key} has inconsistent batch size: {value.shape[0]} expecting: {batch}"
            )
        batch = value.shape[0]
    columns = {key: to_json_value(value, key) for key, value in outputs.items()}
    if len(columns) == 1:
        return next(iter(columns.values()))
    return [dict(zip(columns, row)) for row in zip(*columns.values())]


def _single_or_object(values):
    return next(iter(values.values())) if len(values) == 1 else values


def _is_named(value):
    return isinstance(value, dict) and not is_b64(value)


def _shape(shape):
    return "[" + ",".join(str(size) for size in shape) + "]"
