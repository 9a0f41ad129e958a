"""The REST model status and metadata answers: the gRPC responses in protobuf's JSON mapping, as TF Serving
writes them (`http_rest_api_util.cc`).

Status: `GetModelStatusResponse` with every field printed, e.g. {"model_version_status": [{"version": "3",
"state": "AVAILABLE", "status": {"error_code": "OK", "error_message": ""}}]}. Metadata: {"model_spec": ...,
"metadata": {"signature_def": <SignatureDefMap>}}, proto field names kept (`signature_def`, `tensor_shape`).
"""

from google.protobuf import json_format
from tensorflow_serving.apis import get_model_metadata_pb2

from keras_bert_lite.serving.metadata import SIGNATURE_DEF


def status_json(response):
    """The JSON object of a `GetModelStatusResponse`."""
    return json_format.MessageToDict(response, always_print_fields_with_no_presence=True)


def metadata_json(response):
    """The JSON object of a `GetModelMetadataResponse` (whose metadata holds a packed `SignatureDefMap`)."""
    signature_defs = get_model_metadata_pb2.SignatureDefMap()
    response.metadata[SIGNATURE_DEF].Unpack(signature_defs)
    return {"model_spec": _dict(response.model_spec), "metadata": {SIGNATURE_DEF: _dict(signature_defs)}}


def _dict(message):
    return json_format.MessageToDict(
        message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )
