"""The GetModelStatus API: the state of every version of the model, as TF Serving's get_model_status_impl.cc."""

from tensorflow_serving.apis import get_model_status_pb2

from keras_bert_lite.serving.errors import code_number, not_found


def model_status(models, request):
    """Answers a `GetModelStatusRequest` from the `ModelRegistry` `models`: one `ModelVersionStatus` per version,
    newest first. As in TF Serving, a version label is not resolved: the status of every version is returned.

    Raises:
        ServingError: NOT_FOUND for an unknown model, or a version this server never saw.
    """
    spec = request.model_spec
    states = models.version_states(spec.name)
    if spec.HasField("version"):
        if spec.version.value not in states:
            raise not_found(f"Could not find version {spec.version.value} of model {spec.name}")
        states = {spec.version.value: states[spec.version.value]}
    elif not states:
        raise not_found(f"Could not find any versions of model {spec.name}")
    response = get_model_status_pb2.GetModelStatusResponse()
    for version in sorted(states, reverse=True):
        status = response.model_version_status.add()
        status.version = version
        status.state = states[version].state
        status.status.SetInParent()  # OK, "" unless set below: TF Serving always sends it
        if states[version].error is not None:
            status.status.error_code = code_number(states[version].error.code)
            status.status.error_message = states[version].error.message
    return response
