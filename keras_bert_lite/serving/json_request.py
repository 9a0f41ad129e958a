"""The top level of a REST request body, as TF Serving reads it: a UTF-8 JSON object, its "signature_name".

JSON's `NaN`, `Infinity` and `-Infinity` are accepted, as TF Serving accepts them. A body that is empty, not
JSON, nested too deep for the parser, or not an object is INVALID_ARGUMENT.
"""

import json

from keras_bert_lite.serving.errors import invalid_argument
from keras_bert_lite.serving.json_tensors import debug_string

SIGNATURE_NAME = "signature_name"


def parse_document(body):
    """The JSON object a request body (bytes) holds.

    Raises:
        ServingError: INVALID_ARGUMENT naming what is wrong with the body.
    """
    if not body:
        raise invalid_argument("JSON Parse error: The document is empty")
    try:
        document = json.loads(body)
    except RecursionError:
        raise invalid_argument("JSON Parse error: the document nests lists or objects too deep") from None
    except ValueError as error:  # includes UnicodeDecodeError: the body is not UTF-8
        raise invalid_argument(f"JSON Parse error: {error}") from None
    if not isinstance(document, dict):
        raise format_error(document, "Is not object")
    return document


def fill_signature_name(document, model_spec):
    """Sets `model_spec.signature_name` from the document's optional "signature_name"."""
    if SIGNATURE_NAME not in document:
        return
    if not isinstance(document[SIGNATURE_NAME], str):
        raise format_error(document, f"not formatted correctly. '{SIGNATURE_NAME}' key must be a string value.")
    model_spec.signature_name = document[SIGNATURE_NAME]


def format_error(value, what):
    """INVALID_ARGUMENT quoting the (start of the) JSON value, as TF Serving's FormatError."""
    return invalid_argument(f"JSON Value: {debug_string(value)} {what}")
