"""The standard gRPC health service (`grpc.health.v1.Health`), reporting which models have a version served.

Each model's name is a service: SERVING while a version of that model is loaded, NOT_SERVING otherwise (before
its first load, when every version is gone, after it left the config). The services "" (the server as a whole)
and "tensorflow.serving.PredictionService" are SERVING while any model is, so a load balancer keeps routing to a
server that can answer some of its traffic (check a model's own name to route by model). From the start of a
graceful shutdown on, every service is NOT_SERVING. Check and Watch both work.
"""

import asyncio

from grpc_health.v1 import health, health_pb2, health_pb2_grpc

PREDICTION_SERVICE = "tensorflow.serving.PredictionService"
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


class Health:
    """The health servicer of the server's models, updated from any thread.

    Must be created in the server's running event loop.
    """

    def __init__(self):
        self._servicer = health.aio.HealthServicer()
        self._serving = set()  # the names of the models with a version served
        self._order = asyncio.Lock()  # updates apply one at a time, in the order they were made
        self._loop = asyncio.get_running_loop()

    def add_to(self, server):
        health_pb2_grpc.add_HealthServicer_to_server(self._servicer, server)

    async def start(self):
        """The server as a whole NOT_SERVING until a model is served."""
        await self._set_server()

    async def set_model(self, name, serving):
        """Whether model `name` has a version served."""
        async with self._order:
            (self._serving.add if serving else self._serving.discard)(name)
            await self._servicer.set(name, SERVING if serving else NOT_SERVING)
            await self._set_server()

    def set_model_threadsafe(self, name, serving):
        """`set_model` for callers outside the event loop (the managers' threads); does not wait."""
        try:
            asyncio.run_coroutine_threadsafe(self.set_model(name, serving), self._loop)
        except RuntimeError:  # the event loop is closed: the server has stopped, nobody checks its health
            pass

    async def shutting_down(self):
        """Everything NOT_SERVING for good: the server is draining."""
        await self._servicer.enter_graceful_shutdown()

    async def _set_server(self):
        status = SERVING if self._serving else NOT_SERVING
        for service in ("", PREDICTION_SERVICE):
            await self._servicer.set(service, status)
