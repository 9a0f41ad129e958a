"""A gRPC server speaking TF Serving's protocol for one model (PredictionService and ModelService)."""

import concurrent.futures

import grpc
from tensorflow_serving.apis import model_service_pb2_grpc, prediction_service_pb2_grpc

from keras_bert_lite.serving.services import ModelService, PredictionService

MIN_WORKERS = 32


class ModelServer:
    """Serves the model of a `ModelManager` over gRPC.

    Args:
        manager: The `ModelManager` (already started or not; the server does not start it).
        host: Interface to bind; 127.0.0.1 keeps the server local.
        port: TCP port; 0 picks a free one (`start()` returns it).
        max_message_mb: Largest request and response message, in MiB.
        batcher: A `Batcher` for Predict, or None.
    """

    def __init__(self, manager, host="127.0.0.1", port=8500, max_message_mb=64, batcher=None):
        max_bytes = max_message_mb * 1024 * 1024
        # One worker per concurrent request: a batch only fills up if its followers each have a thread to wait
        # in. Model execution itself runs on TensorFlow's own thread pools, outside the GIL.
        workers = max(MIN_WORKERS, 2 * batcher.max_batch_size) if batcher is not None else MIN_WORKERS
        self._server = grpc.server(
            concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rpc"),
            options=[("grpc.max_send_message_length", max_bytes),
                     ("grpc.max_receive_message_length", max_bytes),
                     ("grpc.so_reuseport", 0)])  # a second server on the same port must fail, not share it
        prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(
            PredictionService(manager, batcher), self._server)
        model_service_pb2_grpc.add_ModelServiceServicer_to_server(ModelService(manager), self._server)
        self.address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    def bind(self):
        """Binds the address (before the model loads, so a busy port fails fast); returns the bound port.

        Raises:
            OSError: When the address cannot be bound (e.g. the port is in use).
        """
        try:
            port = self._server.add_insecure_port(self.address)
        except RuntimeError as error:
            port, reason = 0, str(error)
        else:
            reason = "the port is in use or the host is not a local interface"
        if not port:
            raise OSError(f"cannot listen on {self.address}: {reason}")
        return port

    def start(self):
        """Starts answering RPCs on the bound address."""
        self._server.start()

    def stop(self, grace_seconds):
        """Stops accepting RPCs, lets in-flight ones finish (up to `grace_seconds`), then returns."""
        self._server.stop(grace_seconds).wait()
