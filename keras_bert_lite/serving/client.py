"""A client for TF Serving's gRPC API (stock tensorflow_model_server or `python -m keras_bert_lite.serving`);
`rest_client.RestClient` is the same client over the REST API.

    from keras_bert_lite.serving import ServingClient

    with ServingClient("bert", "127.0.0.1:8500") as client:
        outputs = client.predict(["a great movie", "a dull one"])      # {output key: np.ndarray}
        labels, probabilities = client.predict_labels(["a great movie"])
        vectors = client.embed(["a great movie"])                      # an embedding model: [batch, D]

Our text-in SavedModels take `text` (and `text_b` for pair tasks): tf.string [batch]. Every call has a deadline
(`timeout`); failures raise `ServingClientError` carrying the gRPC code and the server's message, or its
subclass `ServerUnavailableError` when no server answers at the address.
"""

import time

import grpc
import tensorflow as tf
from tensorflow_serving.apis import (
    classification_pb2,
    get_model_metadata_pb2,
    get_model_status_pb2,
    model_service_pb2_grpc,
    predict_pb2,
    prediction_service_pb2_grpc,
)

from keras_bert_lite.serving.errors import OVERLOADED

TEXT = "text"
TEXT_B = "text_b"
LABEL = "label"
PROBABILITIES = "probabilities"
EMBEDDINGS = "embeddings"


class ServingClientError(Exception):
    """A failed call: `code` is the `grpc.StatusCode`, `details` the server's message."""

    def __init__(self, code, details, message=None):
        super().__init__(message or f"{code.name}: {details}")
        self.code = code
        self.details = details


class ServerUnavailableError(ServingClientError):
    """No server answered at the address (not started, wrong port, or shutting down), or it shed the call
    because it was full (retry with backoff)."""


class ModelClient:
    """What both clients (gRPC: `ServingClient`, REST: `RestClient`) build on `predict` and `status`."""

    def predict_labels(self, texts, text_b=None, signature="serving_default", version=None):
        """Returns (labels: list of str, probabilities: np.ndarray [batch, num_classes]) for a classifier.

        Raises:
            ServingClientError: When the signature has no `label` and `probabilities` outputs.
        """
        outputs = self.predict(texts, text_b, signature, version)
        require_outputs(outputs, (LABEL, PROBABILITIES), signature)
        return [text_of(label) for label in outputs[LABEL]], outputs[PROBABILITIES]

    def embed(self, texts, signature="serving_default", version=None):
        """Returns the float32 vectors `[batch, D]` of an embedding model (output `embeddings`), one per text.

        Raises:
            ServingClientError: When the signature has no `embeddings` output.
        """
        outputs = self.predict(texts, signature=signature, version=version)
        return require_outputs(outputs, (EMBEDDINGS,), signature)[EMBEDDINGS]

    def wait_until_available(self, seconds):
        """Waits up to `seconds` for the server to answer and a version of the model to be AVAILABLE.

        For scripts that start a server and call it right away. Raises the last `ServingClientError` (e.g.
        `ServerUnavailableError`, or NOT_FOUND while the model loads) when the time is up; when the server
        reports versions that failed to load, its message carries their load errors.
        """
        deadline = time.monotonic() + seconds
        while True:
            try:
                statuses = self.status()
                if any(s["state"] == "AVAILABLE" for s in statuses):
                    return
                failures = "".join(
                    f"; version {s['version']} failed to load: {s['error_code']}: {s['error_message']}"
                    for s in statuses
                    if s["error_code"] != grpc.StatusCode.OK.name
                )
                error = ServingClientError(
                    grpc.StatusCode.UNAVAILABLE, f"no version of the model is AVAILABLE yet{failures}"
                )
            except ServingClientError as e:
                error = e
            if time.monotonic() >= deadline:
                raise error
            time.sleep(0.25)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


class ServingClient(ModelClient):
    """Calls one model of a TF Serving gRPC server.

    Args:
        model_name: The model's name on the server (`--model_name`).
        address: "host:port" of the server.
        timeout: Deadline of every call, in seconds.
        max_message_mb: Largest request/response message, in MiB (match the server's --max_message_mb).
        root_certificates: PEM bytes of the certificate(s) to trust: connect over TLS (a server started with
            --ssl_cert/--ssl_key). None: plain TCP.
    """

    def __init__(self, model_name, address="127.0.0.1:8500", timeout=10.0, max_message_mb=64, root_certificates=None):
        self.model_name = model_name
        self.address = address
        self.timeout = timeout
        max_bytes = max_message_mb * 1024 * 1024
        options = [("grpc.max_send_message_length", max_bytes), ("grpc.max_receive_message_length", max_bytes)]
        if root_certificates is None:
            self._channel = grpc.insecure_channel(address, options=options)
        else:
            credentials = grpc.ssl_channel_credentials(root_certificates=root_certificates)
            self._channel = grpc.secure_channel(address, credentials, options=options)
        self._predictions = prediction_service_pb2_grpc.PredictionServiceStub(self._channel)
        self._models = model_service_pb2_grpc.ModelServiceStub(self._channel)

    def predict(self, texts, text_b=None, signature="serving_default", version=None, output_filter=()):
        """Runs a text-in signature on `texts` (and `text_b`); returns {output key: np.ndarray}.

        Args:
            texts: A list of str (or UTF-8 bytes), fed as the `text` input.
            text_b: For pair tasks, a list of the same length fed as `text_b`.
            signature: The signature key.
            version: A specific model version, or None for the latest.
            output_filter: Output keys to return; empty for all.

        Raises:
            TypeError, ValueError: For texts that are not lists of strings of one length (see `encoded_texts`).
        """
        inputs = encoded_texts(texts, text_b)
        request = predict_pb2.PredictRequest(output_filter=list(output_filter))
        self._model_spec(request.model_spec, signature, version)
        for key, values in inputs.items():
            request.inputs[key].CopyFrom(tf.make_tensor_proto(values, dtype=tf.string, shape=[len(values)]))
        response = self._call(self._predictions.Predict, request)
        return {key: tf.make_ndarray(proto) for key, proto in response.outputs.items()}

    def classify(self, texts, text_b=None, signature="classify", version=None):
        """Calls the Classify API with one tf.Example per text (features `text` and `text_b`, bytes).

        Returns:
            For each text, the list of (label, score) pairs the signature returned, in its class order.

        Raises:
            TypeError, ValueError: For texts that are not lists of strings of one length (see `encoded_texts`).
        """
        inputs = encoded_texts(texts, text_b)
        request = classification_pb2.ClassificationRequest()
        self._model_spec(request.model_spec, signature, version)
        for row in zip(*inputs.values()):
            example = request.input.example_list.examples.add()
            for key, value in zip(inputs, row):
                example.features.feature[key].bytes_list.value.append(value)
        response = self._call(self._predictions.Classify, request)
        return [
            [(entry.label, entry.score) for entry in classifications.classes]
            for classifications in response.result.classifications
        ]

    def metadata(self, version=None):
        """{signature key: SignatureDef proto} of the served (or given) version."""
        request = get_model_metadata_pb2.GetModelMetadataRequest(metadata_field=["signature_def"])
        self._model_spec(request.model_spec, None, version)
        response = self._call(self._predictions.GetModelMetadata, request)
        signature_defs = get_model_metadata_pb2.SignatureDefMap()
        response.metadata["signature_def"].Unpack(signature_defs)
        return dict(signature_defs.signature_def)

    def status(self, version=None):
        """One dict per version: {"version", "state" (e.g. "AVAILABLE"), "error_code", "error_message"}."""
        request = get_model_status_pb2.GetModelStatusRequest()
        self._model_spec(request.model_spec, None, version)
        response = self._call(self._models.GetModelStatus, request)
        state_name = get_model_status_pb2.ModelVersionStatus.State.Name
        return [
            {
                "version": status.version,
                "state": state_name(status.state),
                "error_code": grpc.StatusCode.OK.name
                if not status.status.error_code
                else _code_name(status.status.error_code),
                "error_message": status.status.error_message,
            }
            for status in response.model_version_status
        ]

    def close(self):
        self._channel.close()

    def _model_spec(self, spec, signature, version):
        spec.name = self.model_name
        if signature:
            spec.signature_name = signature
        if version is not None:
            spec.version.value = version

    def _call(self, method, request):
        try:
            return method(request, timeout=self.timeout)
        except grpc.RpcError as error:
            raise self._client_error(error) from None

    def _client_error(self, error):
        code, details = error.code(), error.details() or ""
        if code == grpc.StatusCode.UNAVAILABLE and details.startswith(OVERLOADED):
            return ServerUnavailableError(code, details)
        if code == grpc.StatusCode.UNAVAILABLE:
            reason = "connection refused" if "refused" in details.lower() else details
            return ServerUnavailableError(
                code,
                details,
                (
                    f"no TF Serving server at {self.address}: {reason}; start one with `python -m "
                    f"keras_bert_lite.serving --model_name {self.model_name} --model_base_path DIR "
                    f"--port {self.address.rsplit(':', 1)[-1]}`"
                ),
            )
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return ServingClientError(
                code,
                details,
                f"DEADLINE_EXCEEDED: the server at {self.address} did not "
                f"answer within {self.timeout} s (raise `timeout`?)",
            )
        return ServingClientError(code, details)


def encoded_texts(texts, text_b=None):
    """{"text": [bytes], "text_b": [bytes] (only for pairs)}: the texts of a request, as UTF-8 bytes.

    Raises:
        TypeError: For a single string instead of a list (Classify sent one example per character), or an
            element that is not str or bytes (`bytes(5)` sent five NUL bytes).
        ValueError: When `text_b` holds another number of texts than `texts` (Classify dropped the pairs past
            the shorter one).
    """
    inputs = {TEXT: _encoded(TEXT, texts)}
    if text_b is not None:
        inputs[TEXT_B] = _encoded(TEXT_B, text_b)
        if len(inputs[TEXT_B]) != len(inputs[TEXT]):
            raise ValueError(
                f"'{TEXT}' and '{TEXT_B}' must hold the same number of texts (one text_b per text), "
                f"got {len(inputs[TEXT])} and {len(inputs[TEXT_B])}"
            )
    return inputs


def _encoded(key, values):
    if isinstance(values, (str, bytes)):
        raise TypeError(f"'{key}' must be a list of strings, not a single {type(values).__name__}")
    return [_bytes(key, index, value) for index, value in enumerate(values)]


def _bytes(key, index, value):
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(
        f"'{key}'[{index}] is not a string but {type(value).__name__} {value!r:.40}: pass str or UTF-8 bytes"
    )


def require_outputs(outputs, keys, signature):
    """`outputs`, if it holds every one of `keys`; else a FAILED_PRECONDITION error naming the outputs it has."""
    missing = set(keys) - set(outputs)
    if missing:
        raise ServingClientError(
            grpc.StatusCode.FAILED_PRECONDITION,
            f"signature '{signature}' has no output "
            f"{sorted(missing)}; its outputs are {sorted(outputs)} (use predict())",
        )
    return outputs


def text_of(value):
    """A string output's element as text (bytes decoded as UTF-8, undecodable bytes replaced)."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _code_name(number):
    return next((code.name for code in grpc.StatusCode if code.value[0] == number), str(number))
