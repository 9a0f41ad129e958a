"""TF Serving's gRPC protocol, locally: a model server (`python -m keras_bert_lite.serving`) and a client.

The server (see `__main__`) serves the latest version of one SavedModel directory tree with TF Serving's
PredictionService (Predict, Classify, GetModelMetadata) and ModelService (GetModelStatus) APIs, so code written
against a real tensorflow_model_server runs unchanged against it, in tests and CI where the real binary cannot
be installed; also the standard grpc.health.v1 health service. Every request is checked against limits (see
`flags`). `ServingClient` talks to either.
"""

from keras_bert_lite.serving.client import ServerUnavailableError, ServingClient, ServingClientError

__all__ = ["ServingClient", "ServingClientError", "ServerUnavailableError"]
