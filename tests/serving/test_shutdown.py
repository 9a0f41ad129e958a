"""SIGTERM: the server stops taking requests, finishes the ones in flight, and exits with code 0."""

import concurrent.futures
import threading
import time

import pytest
import tensorflow as tf

from keras_bert_lite.serving import ServerUnavailableError, ServingClient
from tests.serving.stubs import predict_request, prediction_stub


def test_sigterm_finishes_in_flight_requests_and_exits_0(toy_v1, start_server, tmp_path):
    server = start_server(toy_v1)
    stub = prediction_stub(server.address)
    marker = tmp_path / "inside-the-model"
    slow = predict_request({"text": ["2.0", str(marker)]}, signature="slow")  # busy 2 s, after writing `marker`
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        in_flight = pool.submit(stub.Predict, slow, timeout=60)
        deadline = time.monotonic() + 60
        while not marker.exists():             # the request is now running inside the model
            assert time.monotonic() < deadline and not in_flight.done(), "the request never reached the model"
            threading.Event().wait(0.01)
        assert server.terminate() == 0
        lengths = tf.make_ndarray(in_flight.result().outputs["length"])
        assert lengths[0] == 3                # it finished and was answered; then the server exited
    assert "Server stopped" in server.log()
    assert "Server stopped" in server.log()
    with pytest.raises(ServerUnavailableError, match="connection refused"):
        ServingClient("toy", server.address, timeout=5).predict(["after"])
