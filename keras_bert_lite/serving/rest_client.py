"""A client for TF Serving's REST API (stock tensorflow_model_server or `kbl-serve`), with `ServingClient`'s calls.

    from keras_bert_lite.serving.rest_client import RestClient

    with RestClient("bert", "http://127.0.0.1:8501") as client:
        outputs = client.predict(["a great movie", "a dull one"])      # {output key: np.ndarray}

It answers as `ServingClient` does, to the bit: predict sends the columnar format ("inputs") and reads each
output with the dtype the model's metadata declares (fetched once per signature and version), so float32 values
come back as the same float32 and strings as bytes; classify's scores are the same float32s. Failures raise
`ServingClientError` with the status code TF Serving's HTTP status stands for (`http_status.code_of`) and the
server's "error" message, or `ServerUnavailableError` when no server answers. It uses the standard library's
urllib (one connection per call): no dependency beyond the package's own.
"""

import base64
import json
import socket
import ssl
import urllib.error
import urllib.parse
import urllib.request

import grpc
import numpy as np
import tensorflow as tf
from google.protobuf import json_format
from tensorflow_serving.apis import get_model_metadata_pb2

from keras_bert_lite.serving.client import (
    ModelClient,
    ServerUnavailableError,
    ServingClientError,
    encoded_texts,
    require_outputs,
)
from keras_bert_lite.serving.http_status import code_of

B64 = "b64"


class RestClient(ModelClient):
    """Calls one model of a TF Serving REST API.

    Args:
        model_name: The model's name on the server.
        url: Base URL of the REST API, e.g. "http://127.0.0.1:8501" ("https://" for a server with TLS).
        timeout: Seconds every call may take.
        root_certificates: PEM bytes of the certificate(s) to trust for https:// (None: the system's).
    """

    def __init__(self, model_name, url="http://127.0.0.1:8501", timeout=10.0, root_certificates=None):
        self.model_name = model_name
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._ssl = ssl.create_default_context(cadata=root_certificates.decode("ascii")) if root_certificates else None
        self._signatures = {}  # (version, signature) -> SignatureDef

    def predict(self, texts, text_b=None, signature="serving_default", version=None, output_filter=()):
        """Like `ServingClient.predict` (REST has no output_filter: the other outputs are dropped here)."""
        inputs = {key: [_json_text(value) for value in values] for key, values in encoded_texts(texts, text_b).items()}
        answer = self._call(self._path(version, ":predict"), {"signature_name": signature, "inputs": inputs})
        outputs = self.signature(signature, version).outputs
        values = answer["outputs"] if len(outputs) > 1 else {next(iter(outputs)): answer["outputs"]}
        keys = list(output_filter) or sorted(values)
        require_outputs(values, keys, signature)
        return {key: _array(values[key], outputs[key].dtype) for key in keys}

    def classify(self, texts, text_b=None, signature="classify", version=None):
        """Like `ServingClient.classify`: [(label, score), ...] per text."""
        examples = [
            dict(zip(keys, (_json_text(value) for value in row))) for keys, row in _rows(encoded_texts(texts, text_b))
        ]
        answer = self._call(self._path(version, ":classify"), {"signature_name": signature, "examples": examples})
        return [[(label, float(np.float32(score))) for label, score in pairs] for pairs in answer["results"]]

    def metadata(self, version=None):
        """{signature key: SignatureDef proto} of the served (or given) version."""
        answer = self._call(self._path(version, "/metadata"))
        signature_defs = json_format.ParseDict(
            answer["metadata"]["signature_def"], get_model_metadata_pb2.SignatureDefMap()
        )
        return dict(signature_defs.signature_def)

    def signature(self, name, version=None):
        """The `SignatureDef` of signature `name` (from the metadata, fetched once per version)."""
        if (version, name) not in self._signatures:
            for key, signature_def in self.metadata(version).items():
                self._signatures[(version, key)] = signature_def
        if (version, name) not in self._signatures:
            raise ServingClientError(
                grpc.StatusCode.INVALID_ARGUMENT, f'Serving signature name: "{name}" not found in signature def'
            )
        return self._signatures[(version, name)]

    def status(self, version=None):
        """Like `ServingClient.status`: one dict per version ("version", "state", "error_code", "error_message")."""
        answer = self._call(self._path(version, ""))
        return [
            {
                "version": int(status["version"]),
                "state": status["state"],
                "error_code": status.get("status", {}).get("error_code", "OK"),
                "error_message": status.get("status", {}).get("error_message", ""),
            }
            for status in answer["model_version_status"]
        ]

    def close(self):
        """Nothing to close: each call opens and closes its own connection."""

    def _path(self, version, suffix):
        name = urllib.parse.quote(self.model_name, safe="")
        return f"/v1/models/{name}" + (f"/versions/{version}" if version is not None else "") + suffix

    def _call(self, path, body=None):
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(self.url + path, data=data, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self._ssl) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            raise self._http_error(error) from None
        except (socket.timeout, TimeoutError):
            raise ServingClientError(
                grpc.StatusCode.DEADLINE_EXCEEDED,
                "timed out",
                (
                    f"DEADLINE_EXCEEDED: the server at {self.url} did not answer within {self.timeout} s (raise "
                    f"`timeout`?)"
                ),
            ) from None
        except (urllib.error.URLError, ConnectionError) as error:
            reason = getattr(error, "reason", error)
            raise ServerUnavailableError(
                grpc.StatusCode.UNAVAILABLE,
                str(reason),
                (
                    f"no TF Serving REST API at {self.url}: {reason}; start one with `kbl-serve --model_name "
                    f"{self.model_name} --model_base_path DIR --rest_api_port PORT`"
                ),
            ) from None

    def _http_error(self, error):
        try:
            details = json.loads(error.read()).get("error", "")
        except (ValueError, AttributeError, OSError):
            details = f"HTTP {error.code} {error.reason}"
        code = code_of(error.code)
        if code == grpc.StatusCode.UNAVAILABLE:
            return ServerUnavailableError(code, details)
        return ServingClientError(code, details)


def _json_text(value):
    """A text as JSON: a string when it is UTF-8, else {"b64": ...}."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return {B64: base64.b64encode(value).decode("ascii")}


def _rows(inputs):
    keys = list(inputs)
    return [(keys, row) for row in zip(*inputs.values())]


def _array(value, dtype_enum):
    """A JSON output value as the NumPy array gRPC would have given (dtype from the signature)."""
    dtype = tf.as_dtype(dtype_enum)
    if dtype == tf.string:
        return np.array(_bytes(value), dtype=object)
    return np.array(value, dtype=dtype.as_numpy_dtype)


def _bytes(value):
    if isinstance(value, list):
        return [_bytes(item) for item in value]
    if isinstance(value, dict):
        return base64.b64decode(value[B64])
    return value.encode("utf-8")
