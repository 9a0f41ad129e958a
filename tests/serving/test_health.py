"""grpc.health.v1: SERVING while a version of the model is loaded, NOT_SERVING before, after and at shutdown."""

import shutil

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.serving.stubs import rpc_error
from tests.serving.toy_models import ToyModel, export_version

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def health_stub(address):
    return health_pb2_grpc.HealthStub(grpc.insecure_channel(address))


def check(address, service):
    return health_stub(address).Check(health_pb2.HealthCheckRequest(service=service), timeout=10).status


def watch(address, service):
    """A Watch stream of `service`: iterate it for each status change; cancel() it when done."""
    return health_stub(address).Watch(health_pb2.HealthCheckRequest(service=service), timeout=60)


@pytest.mark.parametrize("service", ["", "toy", "tensorflow.serving.PredictionService"])
def test_serving_while_a_version_is_loaded(toy_server, service):
    assert check(toy_server.address, service) == SERVING


def test_unknown_service_is_not_found(toy_server):
    error = rpc_error(health_stub(toy_server.address).Check, health_pb2.HealthCheckRequest(service="other"))
    assert error.code() == grpc.StatusCode.NOT_FOUND


def test_not_serving_until_a_version_loads_and_after_it_is_gone(tmp_path, start_server):
    server = start_server(tmp_path, "--poll_seconds", "0.2")  # nothing to serve yet
    assert check(server.address, "toy") == NOT_SERVING
    statuses = watch(server.address, "toy")
    try:
        assert next(statuses).status == NOT_SERVING
        version = export_version(ToyModel("v1"), tmp_path, 1)
        assert next(statuses).status == SERVING
        shutil.rmtree(version)
        assert next(statuses).status == NOT_SERVING
    finally:
        statuses.cancel()
    assert check(server.address, "") == NOT_SERVING


def test_not_serving_from_the_start_of_a_graceful_shutdown(toy_v1, start_server):
    server = start_server(toy_v1)
    statuses = watch(server.address, "")
    try:
        assert next(statuses).status == SERVING
        server.process.terminate()  # SIGTERM
        assert next(statuses).status == NOT_SERVING
    finally:
        statuses.cancel()
    assert server.terminate() == 0
