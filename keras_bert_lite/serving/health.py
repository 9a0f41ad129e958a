"""The standard gRPC health service (`grpc.health.v1.Health`), reporting whether a version is served.

Services "" (the server as a whole), the model name and "tensorflow.serving.PredictionService" are SERVING
while a version of the model is loaded and NOT_SERVING otherwise (before the first load, when every version is
gone, and from the start of a graceful shutdown on), so load balancers and `grpc_health_probe` route traffic
only to a server that can answer it. Check and Watch both work.
"""

import asyncio

from grpc_health.v1 import health, health_pb2, health_pb2_grpc

PREDICTION_SERVICE = "tensorflow.serving.PredictionService"
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


class Health:
    """The health servicer of one model, updated from any thread.

    Must be created in the server's running event loop.

    Args:
        model_name: The served model's name (one of the health service names).
    """

    def __init__(self, model_name):
        self._servicer = health.aio.HealthServicer()
        self._services = ("", model_name, PREDICTION_SERVICE)
        self._loop = asyncio.get_running_loop()

    def add_to(self, server):
        health_pb2_grpc.add_HealthServicer_to_server(self._servicer, server)

    async def set_serving(self, serving):
        for service in self._services:
            await self._servicer.set(service, SERVING if serving else NOT_SERVING)

    def set_serving_threadsafe(self, serving):
        """`set_serving` for callers outside the event loop (the manager's poller thread); does not wait."""
        asyncio.run_coroutine_threadsafe(self.set_serving(serving), self._loop)

    async def shutting_down(self):
        """Everything NOT_SERVING for good: the server is draining."""
        await self._servicer.enter_graceful_shutdown()
