"""SIGTERM: the server stops taking requests, finishes the ones in flight, and exits with code 0."""

import concurrent.futures
import time

import pytest

from keras_bert_lite.serving import ServerUnavailableError, ServingClient
from tests.serving.stubs import predict_request, prediction_stub


def test_sigterm_finishes_in_flight_requests_and_exits_0(toy_v1, start_server):
    server = start_server(toy_v1)
    stub = prediction_stub(server.address)
    slow = predict_request({"text": ["3.0"]}, signature="slow")  # busy for 3 s inside the model
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        in_flight = pool.submit(stub.Predict, slow, timeout=60)
        time.sleep(1.0)  # the request is now running inside the model
        started = time.monotonic()
        assert server.terminate() == 0
        assert in_flight.result().outputs["length"].int_val == [3]
    assert time.monotonic() - started >= 1.0, "the server exited before the in-flight request could finish"
    assert "Server stopped" in server.log()
    with pytest.raises(ServerUnavailableError, match="connection refused"):
        ServingClient("toy", server.address, timeout=5).predict(["after"])
