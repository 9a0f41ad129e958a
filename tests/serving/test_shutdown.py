"""SIGTERM: the server stops taking requests, finishes the ones in flight, and exits with code 0."""

import concurrent.futures
import os
import shutil
import threading
import time

import grpc
import pytest
import tensorflow as tf

from keras_bert_lite.serving import ServerUnavailableError, ServingClient
from tests.serving.server_process import ServerProcess
from tests.serving.stubs import predict_request, prediction_stub
from tests.serving.toy_models import GateModel, export_version, slow_loading_model

REPETITIONS = 20
AT_ONCE = 4  # servers running side by side


def test_sigterm_finishes_in_flight_requests_and_exits_0(toy_v1, start_server, tmp_path):
    server = start_server(toy_v1)
    stub = prediction_stub(server.address)
    marker = tmp_path / "inside-the-model"
    slow = predict_request({"text": ["2.0", str(marker)]}, signature="slow")  # busy 2 s, after writing `marker`
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        in_flight = pool.submit(stub.Predict, slow, timeout=60)
        deadline = time.monotonic() + 60
        while not marker.exists():  # the request is now running inside the model
            assert time.monotonic() < deadline and not in_flight.done(), "the request never reached the model"
            threading.Event().wait(0.01)
        assert server.terminate() == 0
        lengths = tf.make_ndarray(in_flight.result().outputs["length"])
        assert lengths[0] == 3  # it finished and was answered; then the server exited
    assert "Server stopped" in server.log()
    assert "Server stopped" in server.log()
    with pytest.raises(ServerUnavailableError, match="connection refused"):
        ServingClient("toy", server.address, timeout=5).predict(["after"])


@pytest.fixture(scope="module")
def gate_and_slow_load(tmp_path_factory):
    """Version 1: GateModel; version 2: a model whose load takes long (kept aside, copied in by the test)."""
    root = tmp_path_factory.mktemp("shutdown")
    export_version(GateModel(), root / "gate", 1)
    module, signatures = slow_loading_model()
    export_version(module, root / "slow", 2, signatures)
    return root / "gate" / "1", root / "slow" / "2"


@pytest.mark.slow
def test_sigterm_under_load_with_a_version_loading_exits_0_every_time(gate_and_slow_load, tmp_path):
    # A thread still inside tf.saved_model.load when the interpreter exited aborted the process: SIGABRT after
    # "Server stopped", "terminate called after throwing an instance of ...", "FATAL: exception not rethrown".
    with concurrent.futures.ThreadPoolExecutor(AT_ONCE) as pool:
        outcomes = list(
            pool.map(lambda index: _sigterm_once(gate_and_slow_load, tmp_path / str(index)), range(REPETITIONS))
        )
    assert [outcome for outcome in outcomes if outcome] == []


def _sigterm_once(versions, base_path):
    """One server: two requests held inside the model, version 2 loading, SIGTERM. Returns what went wrong."""
    gate_version, slow_version = versions
    shutil.copytree(gate_version, base_path / "1")
    server = ServerProcess(base_path, "--poll_seconds", "0.05", "--no_tf_text")
    try:
        return _check_shutdown(server.wait_ready(), base_path, slow_version)
    finally:
        server.kill()


def _check_shutdown(server, base_path, slow_version):
    gates = [base_path / f"release-{index}" for index in range(2)]
    stub = prediction_stub(server.address)
    in_flight = [
        stub.Predict.future(predict_request({"text": [str(base_path / f"inside-{index}"), str(gate)]}), timeout=60)
        for index, gate in enumerate(gates)
    ]
    _wait(lambda: all((base_path / f"inside-{index}").exists() for index in range(2)), "requests inside the model")
    shutil.copytree(slow_version, base_path / ".copying")
    os.rename(base_path / ".copying", base_path / "2")
    server.wait_for_log("Loading servable version {name: toy version: 2}")
    server.process.terminate()
    server.wait_for_log("Shutting down")
    refused = _code(prediction_stub(server.address).Predict, predict_request({"text": ["late"]}))
    for gate in gates:  # lets the requests in flight finish
        gate.touch()
    answered = [tf.make_ndarray(call.result().outputs["length"]).tolist() for call in in_flight]
    code = server.process.wait(60)
    problems = []
    if code != 0 or "Server stopped" not in server.log():
        problems.append(f"exit status {code}:\n{server.log()[-3000:]}")
    if refused != grpc.StatusCode.UNAVAILABLE:
        problems.append(f"a request after SIGTERM got {refused}")
    if answered != [[len(str(base_path / f"inside-{index}")), len(str(gate))] for index, gate in enumerate(gates)]:
        problems.append(f"requests in flight answered {answered}")
    return problems


def _code(call, request):
    try:
        call(request, timeout=30)
    except grpc.RpcError as error:
        return error.code()
    return grpc.StatusCode.OK


def _wait(condition, what, seconds=60):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        threading.Event().wait(0.01)
