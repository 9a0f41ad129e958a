"""The Classify API: serialized tf.Examples in, (label, score) lists out, following TF Serving's classifier.cc.

A signature can answer Classify when it has the classification structure TF Serving checks for (with
`--enable_signature_method_name_check` off, TF Serving's default, the `method_name` is not checked, so TF2
SavedModels whose signatures all say "tensorflow/serving/predict" work):

- exactly one input, key "inputs": DT_STRING, shape [batch] - one serialized `tf.Example` per element;
- one or two outputs among "classes" (DT_STRING, [batch, num_classes]) and "scores" (DT_FLOAT,
  [batch, num_classes]); with both, num_classes must agree.

What goes into the tf.Examples is between the client and the model: `ServingClient.classify` sends a bytes
feature "text" (and "text_b" for pairs), so our exporter's classify signature parses those.

Every problem is INVALID_ARGUMENT (TF Serving 2.x); an unknown signature key is INVALID_ARGUMENT too
("No signature was found with the name: ..."), unlike Predict's FAILED_PRECONDITION.
"""

import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import classification_pb2

from keras_bert_lite.serving.errors import invalid_argument
from keras_bert_lite.serving.predict import DEFAULT_SIGNATURE

INPUTS = "inputs"
CLASSES = "classes"
SCORES = "scores"


def run_classify(servable, request, limits, run):
    """Answers a `ClassificationRequest` with `servable` (see the module docstring for the signature contract).

    Args:
        servable: The `Servable` resolved from `request.model_spec`.
        request: A `ClassificationRequest`.
        limits: The `RequestLimits` its examples are checked against.
        run: Callable (signature, {key: np.ndarray}) -> {key: np.ndarray}.
    """
    signature_name = request.model_spec.signature_name or DEFAULT_SIGNATURE
    signature = servable.signatures.get(signature_name)
    if signature is None:
        raise invalid_argument(f"No signature was found with the name: {signature_name}")
    _check_signature(signature)
    examples = serialized_examples(request.input, limits)
    if not signature.inputs[INPUTS].shape.is_compatible_with([len(examples)]):
        raise invalid_argument(
            f"Signature '{signature.name}' cannot classify {len(examples)} examples: input "
            f"'{INPUTS}' has shape {signature.inputs[INPUTS].shape}, expected [None]"
        )
    outputs = run(signature, {INPUTS: np.array(examples, dtype=object)})
    classes, scores = outputs.get(CLASSES), outputs.get(SCORES)
    num_classes = _check_outputs(classes, scores, len(examples))

    response = classification_pb2.ClassificationResponse()
    response.model_spec.name = servable.name
    response.model_spec.signature_name = signature_name
    response.model_spec.version.value = servable.version
    for i in range(len(examples)):
        classifications = response.result.classifications.add()
        for c in range(num_classes):
            entry = classifications.classes.add()
            if classes is not None:
                entry.label = classes[i, c].decode("utf-8", "replace")
            if scores is not None:
                entry.score = float(scores[i, c])
    return response


def serialized_examples(input_proto, limits):
    """The serialized examples of a `tensorflow.serving.Input`, context prepended as TF Serving does.

    Concatenating two serialized protos merges them, so each example sees the context features plus its own.
    The examples are checked against `limits` before the context is prepended to each: one context repeated
    for every example would multiply its size.
    """
    kind = input_proto.WhichOneof("kind")
    context, examples = b"", []
    if kind == "example_list":
        examples = input_proto.example_list.examples
    elif kind == "example_list_with_context":
        context = input_proto.example_list_with_context.context.SerializeToString()
        examples = input_proto.example_list_with_context.examples
    if not examples:
        raise invalid_argument("Input is empty.")
    limits.check_example_count(len(examples))
    serialized = [example.SerializeToString() for example in examples]
    limits.check_examples([len(context) + len(example) for example in serialized])
    return [context + example for example in serialized] if context else serialized


def _check_signature(signature):
    if set(signature.inputs) != {INPUTS}:
        raise invalid_argument(
            f"Signature '{signature.name}' cannot classify: expected exactly one input "
            f"'{INPUTS}' (serialized tf.Examples), found {sorted(signature.inputs)}"
        )
    if signature.inputs[INPUTS].dtype != tf.string:
        raise invalid_argument(
            f"Signature '{signature.name}' cannot classify: input '{INPUTS}' must be DT_STRING, "
            f"found {signature.inputs[INPUTS].dtype.name}"
        )
    outputs = set(signature.outputs)
    if not outputs or not outputs <= {CLASSES, SCORES}:
        raise invalid_argument(
            f"Signature '{signature.name}' cannot classify: expected outputs '{CLASSES}' "
            f"and/or '{SCORES}' only, found {sorted(outputs)}"
        )


def _check_outputs(classes, scores, num_examples):
    for key, value, dtype in ((CLASSES, classes, object), (SCORES, scores, np.float32)):
        if value is None:
            continue
        if value.ndim != 2:
            raise invalid_argument(f"Expected '{key}' of shape [batch_size num_classes] but got {list(value.shape)}")
        if value.dtype != dtype:
            raise invalid_argument(
                f"Expected '{key}' of dtype {'DT_STRING' if dtype is object else 'DT_FLOAT'}, got {value.dtype}"
            )
        if value.shape[0] != num_examples:
            raise invalid_argument(f"Expected '{key}' output batch size of {num_examples}. Got: {value.shape[0]}")
    if classes is not None and scores is not None and classes.shape[1] != scores.shape[1]:
        raise invalid_argument(
            f"Tensors class and score should match in dim_size(1). Got {classes.shape[1]} vs. {scores.shape[1]}"
        )
    return (classes if classes is not None else scores).shape[1]
