"""The Predict API: validates a PredictRequest against a signature, runs it, and builds the PredictResponse.

Checks and status codes follow TF Serving's `predict_util.cc` (RunPredict / PreProcessPrediction):
unknown signature key -> FAILED_PRECONDITION; inputs that do not match the signature's keys, unknown or
duplicate `output_filter` aliases -> INVALID_ARGUMENT; dtype/shape mismatches -> INVALID_ARGUMENT (TF Serving
gets these from `Session::Run`, we check them up front against the SignatureDef). Then the request's declared
shapes and sizes are checked against the server's `RequestLimits`, before any input is converted. For a pair
signature (inputs `text` and `text_b`, as our exporter writes them), both must hold the same number of texts:
INVALID_ARGUMENT naming both sizes, rather than the model's shape assertion.
"""

from tensorflow_serving.apis import predict_pb2

from keras_bert_lite.serving.errors import failed_precondition, invalid_argument
from keras_bert_lite.serving.tensors import ndarray_to_proto, request_to_ndarray

DEFAULT_SIGNATURE = "serving_default"
PAIR_INPUTS = ("text", "text_b")


def run_predict(servable, request, limits, run):
    """Answers `request` with `servable`.

    Args:
        servable: The `Servable` resolved from `request.model_spec`.
        request: A `PredictRequest`.
        limits: The `RequestLimits` its inputs are checked against, before any is converted.
        run: Callable (signature, {key: np.ndarray}) -> {key: np.ndarray}; the batcher or a direct run.

    Returns:
        A `PredictResponse` with the (filtered) outputs and the model spec that answered.
    """
    signature_name = request.model_spec.signature_name or DEFAULT_SIGNATURE
    signature = servable.signatures.get(signature_name)
    if signature is None:
        raise failed_precondition(f'Serving signature key "{signature_name}" not found.')
    _check_input_keys(signature, request)
    output_keys = _output_keys(signature, request.output_filter)
    limits.check_tensors(request.inputs)
    inputs = {
        key: request_to_ndarray(key, proto, signature.inputs[key], signature_name)
        for key, proto in request.inputs.items()
    }
    _check_pair_sizes(signature, inputs)
    outputs = run(signature, inputs)

    response = predict_pb2.PredictResponse()
    response.model_spec.name = servable.name
    response.model_spec.signature_name = signature_name
    response.model_spec.version.value = servable.version
    for key in output_keys:
        response.outputs[key].CopyFrom(ndarray_to_proto(outputs[key]))
    return response


def _check_input_keys(signature, request):
    sent, expected = set(request.inputs), set(signature.inputs)
    if sent != expected:
        raise invalid_argument(
            f"input size does not match signature '{signature.name}': {len(sent)}!={len(expected)} "
            f"len({_keys(sent)}) != len({_keys(expected)}). Sent extra: {_keys(sent - expected)}. "
            f"Missing but required: {_keys(expected - sent)}."
        )


def _check_pair_sizes(signature, inputs):
    """A pair signature's `text` and `text_b` must hold one text_b per text (their dim 0 must agree)."""
    if not set(PAIR_INPUTS) <= set(inputs):
        return
    text, text_b = (inputs[key] for key in PAIR_INPUTS)
    if text.ndim and text_b.ndim and text.shape[0] != text_b.shape[0]:
        raise invalid_argument(
            f"inputs 'text' and 'text_b' of signature '{signature.name}' must have the same batch size (one "
            f"text_b per text), got 'text' with {text.shape[0]} and 'text_b' with {text_b.shape[0]}: send them "
            f"in pairs"
        )


def _output_keys(signature, output_filter):
    if not output_filter:
        return sorted(signature.outputs)
    seen = set()
    for key in output_filter:
        if key not in signature.outputs:
            raise invalid_argument(
                f"output tensor alias not found in signature: {key} Outputs expected to be in "
                f"the set {_keys(signature.outputs)}."
            )
        if key in seen:
            raise invalid_argument(f"duplicate output tensor alias: {key}")
        seen.add(key)
    return list(output_filter)


def _keys(keys):
    return "{" + ",".join(sorted(keys)) + "}"
