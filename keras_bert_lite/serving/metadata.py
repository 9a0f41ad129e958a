"""The GetModelMetadata API: the SignatureDefMap of the served version, as TF Serving returns it."""

from tensorflow_serving.apis import get_model_metadata_pb2

from keras_bert_lite.serving.errors import invalid_argument

SIGNATURE_DEF = "signature_def"


def model_metadata(models, request):
    """Answers a `GetModelMetadataRequest` from the `ModelRegistry` `models`; "signature_def" is the only metadata
    field (as in TF Serving)."""
    if not request.metadata_field:
        raise invalid_argument("GetModelMetadataRequest must specify at least one metadata_field")
    for field in request.metadata_field:
        if field != SIGNATURE_DEF:
            raise invalid_argument(f"Metadata field {field} is not supported")
    servable = models.servable(request.model_spec)
    signature_defs = get_model_metadata_pb2.SignatureDefMap()
    for key, signature_def in servable.signature_defs.items():
        signature_defs.signature_def[key].CopyFrom(signature_def)
    response = get_model_metadata_pb2.GetModelMetadataResponse()
    response.model_spec.name = servable.name
    response.model_spec.version.value = servable.version
    response.metadata[SIGNATURE_DEF].Pack(signature_defs)
    return response
