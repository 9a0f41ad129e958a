"""The gRPC hardening tests' REST counterparts, against real servers: limits, oversize and slow bodies, stalled and
surplus connections, shedding, deadlines, cancellation and SIGTERM (REST over TLS and the non-loopback warning:
test_tls).

The tests that leave their server as they found it share one (`limited`: every limit they test at once); those that
need a read timeout, a batch timeout or a SIGTERM of their own start their own."""

import concurrent.futures
import threading
import time

import grpc
import pytest
import tensorflow as tf

from tests.serving import http
from tests.serving.server_process import ServerProcess
from tests.serving.stubs import predict_request, prediction_stub
from tests.serving.test_limits import LIMITS

PREDICT = "/v1/models/toy:predict"
MAX_CONNECTIONS = 4


@pytest.fixture(scope="module")
def limited(toy_v1):
    """A server with small request limits, a 1 MiB body limit, 4 REST connections and 2 request slots: the tests
    that use it each leave it as they found it (connections closed, slots free)."""
    flags = ("--rest_api_max_body_mb", "1", "--rest_api_max_connections", str(MAX_CONNECTIONS))
    server = ServerProcess(toy_v1, *LIMITS, *flags, "--max_concurrent_requests", "2")
    try:
        yield server.wait_ready()
    finally:
        server.kill()


def lines_from_now(server, timeout=30):
    """The index of the server's next log line, once the lines of every call answered so far have come through
    (they are logged before the answer goes out, so a status call's own access line comes after them)."""
    count = len(server.access_lines("GetModelStatus"))
    assert http.get(server.url + "/v1/models/toy")[0] == 200
    deadline = time.monotonic() + timeout
    while len(server.access_lines("GetModelStatus")) == count:
        assert time.monotonic() < deadline, "the status call's access line never came"
        threading.Event().wait(0.01)
    return len(server.lines)


def request_head(port, length, path=PREDICT, extra=""):
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n{extra}\r\n"
    ).encode()


@pytest.mark.parametrize(
    "body, flag",
    [
        ({"instances": ["x"] * 5}, "--max_request_examples"),
        ({"instances": ["x" * 101]}, "--max_string_bytes"),
        ({"signature_name": "ids", "inputs": [[1] * 7, [2] * 7]}, "--max_request_elements"),
        ({"signature_name": "classify", "examples": [{"text": "a"}] * 5}, "--max_request_examples"),
    ],
)
def test_requests_over_the_limits_are_429_naming_the_flag(limited, body, flag):
    api = "classify" if "examples" in body else "predict"
    status, _, answer = http.post(f"{limited.url}/v1/models/toy:{api}", body)
    assert status == 429 and f"({flag})" in answer["error"], answer


def test_an_oversize_body_is_413_before_it_is_sent_and_the_server_keeps_serving(limited):
    server, start = limited, lines_from_now(limited)
    with http.raw_connection(server.rest_port, timeout=30) as sock:  # declares 2 MiB, sends none of it
        sock.sendall(request_head(server.rest_port, 2 * 1024 * 1024))
        answer = http.read_response(sock)
    assert answer.startswith(b"HTTP/1.1 413 ") and b"(--rest_api_max_body_mb)" in answer
    chunked = b'{"instances": ["' + b"x" * (1024 * 1024) + b'"]}'
    with http.raw_connection(server.rest_port, timeout=30) as sock:  # no Content-Length: refused once too long
        sock.sendall(request_head(server.rest_port, 0).replace(b"Content-Length: 0", b"Transfer-Encoding: chunked"))
        sock.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(chunked), chunked))
        assert http.read_response(sock).startswith(b"HTTP/1.1 413 ")
    assert http.post(server.url + PREDICT, {"instances": ["fine"]})[0] == 200
    assert "".join(server.lines[start:]).count("status=RESOURCE_EXHAUSTED") == 2


def test_a_slow_body_is_408_and_slow_headers_are_cut_off(toy_v1, start_server):
    server = start_server(toy_v1, "--rest_api_read_timeout_seconds", "1")
    with (
        http.raw_connection(server.rest_port, timeout=30) as body_loris,
        http.raw_connection(server.rest_port, timeout=30) as header_loris,
    ):
        start = time.monotonic()
        body_loris.sendall(request_head(server.rest_port, 100) + b'{"instances": ')  # 14 of 100 bytes, then nothing
        header_loris.sendall(b"POST /v1/models/toy:predict HTTP/1.1\r\nHost: x\r\n")  # headers never end
        assert http.post(server.url + PREDICT, {"instances": ["meanwhile"]})[0] == 200
        answer = http.read_response(body_loris)
        assert answer.startswith(b"HTTP/1.1 408 ") and b"did not arrive within 1 s" in answer
        assert http.read_response(header_loris) == b""  # closed without an answer
        assert time.monotonic() - start < 15
    assert "status=DEADLINE_EXCEEDED" in server.log() and "Traceback" not in server.log()


def test_48_stalled_connections_do_not_block_a_normal_request(toy_server):
    stalled = [http.raw_connection(toy_server.rest_port) for _ in range(48)]
    try:
        for index, sock in enumerate(stalled):
            half = request_head(toy_server.rest_port, 100) + b"{" if index % 2 else b"POST /v1/mod"
            sock.sendall(half)
        start = time.monotonic()
        status, _, answer = http.post(toy_server.url + PREDICT, {"instances": ["still served"]}, timeout=5)
        latency = time.monotonic() - start
        print(f"REST predict with 48 stalled connections open: {latency * 1000:.1f} ms")
        assert status == 200 and answer["predictions"][0]["length"] == 12 and latency < 1.0
    finally:
        for sock in stalled:
            sock.close()


def test_connections_over_the_limit_get_503_and_are_closed(limited):
    server = limited
    idle = [http.raw_connection(server.rest_port) for _ in range(MAX_CONNECTIONS)]
    try:
        deadline = time.monotonic() + 30
        while True:  # the server counts a connection once it has accepted it
            status, _, answer = http.post(server.url + PREDICT, {"instances": ["one too many"]})
            if status == 503 or time.monotonic() > deadline:
                break
        assert status == 503 and "all 4 REST connections are in use (--rest_api_max_connections 4)" in answer["error"]
    finally:
        for sock in idle:
            sock.close()
    deadline = time.monotonic() + 30
    while http.post(server.url + PREDICT, {"instances": ["room again"]})[0] != 200:
        assert time.monotonic() < deadline, "the closed connections were never given back"


def test_rest_calls_share_the_grpc_admission_slots_and_are_shed_with_503(limited, tmp_path_factory):
    server = limited
    stub = prediction_stub(server.address)
    markers = [tmp_path_factory.mktemp("m") / f"in-{index}" for index in range(2)]  # short: --max_string_bytes 100
    held = [
        stub.Predict.future(predict_request({"text": ["3.0", str(marker)]}, signature="slow"), timeout=60)
        for marker in markers
    ]  # each busy 3 s in the model once it has written its marker
    deadline = time.monotonic() + 60
    while not all(marker.exists() for marker in markers):  # both slots are now held by gRPC calls
        assert time.monotonic() < deadline and not any(future.done() for future in held)
        threading.Event().wait(0.01)
    start = time.monotonic()
    status, _, answer = http.post(server.url + PREDICT, {"instances": ["shed?"]}, timeout=60)
    assert status == 503 and answer["error"].startswith("server overloaded: all 2 request slots are busy")
    assert time.monotonic() - start < 1.0
    assert [tf.make_ndarray(future.result().outputs["length"]).tolist() for future in held] == [
        [3, len(str(marker))] for marker in markers
    ]
    assert http.post(server.url + PREDICT, {"instances": ["after"]}, timeout=60)[0] == 200


def test_a_rest_call_over_its_timeout_is_504_and_dropped_before_the_model_runs(toy_v1, start_server):
    server = start_server(
        toy_v1, "--max_batch_size", "8", "--batch_timeout_ms", "1500", "--rest_api_timeout_in_ms", "500"
    )
    start = time.monotonic()
    status, _, answer = http.post(server.url + PREDICT, {"instances": ["abc"]})
    assert status == 504 and "(--rest_api_timeout_in_ms)" in answer["error"]
    assert time.monotonic() - start < 1.4
    server.wait_for_log("Predict dropped before the model ran: its caller is gone (DEADLINE_EXCEEDED)")
    assert server.terminate() == 0
    assert "Batching: 0 requests in 0 model runs" not in server.log()  # nothing ran at all: no summary line
    assert "access Predict model=toy version=- status=DEADLINE_EXCEEDED" in server.log()


def test_a_client_that_disconnects_cancels_its_call(toy_v1, start_server, tmp_path):
    monitoring = tmp_path / "monitoring.config"
    monitoring.write_text("prometheus_config { enable: true }\n")
    server = start_server(
        toy_v1, "--max_batch_size", "8", "--batch_timeout_ms", "3000", "--monitoring_config_file", str(monitoring)
    )
    body = b'{"instances": ["abc"]}'
    with http.raw_connection(server.rest_port) as sock:
        sock.sendall(request_head(server.rest_port, len(body)) + body)
        wait_for_metric(server, "kbl_serving_calls_in_flight 1.0")  # admitted, waiting 3 s for its batch
    server.wait_for_log("status=CANCELLED")
    server.wait_for_log("Predict dropped before the model ran: its caller is gone (CANCELLED)")
    # 8 examples fill a batch: it runs at once, through the batcher the dropped call went through.
    assert http.post(server.url + PREDICT, {"instances": ["next"] * 8})[0] == 200


def wait_for_metric(server, line, timeout=30):
    deadline = time.monotonic() + timeout
    while line not in http.get(f"{server.url}/monitoring/prometheus/metrics")[2]:
        assert time.monotonic() < deadline, f"{line!r} never appeared in the metrics"


def test_sigterm_finishes_rest_calls_in_flight_then_refuses_connections(toy_v1, start_server, tmp_path):
    server = start_server(toy_v1)
    marker = tmp_path / "inside-the-model"
    slow = {"signature_name": "slow", "instances": ["2.0", str(marker)]}  # busy 2 s after writing `marker`
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        in_flight = pool.submit(http.post, server.url + PREDICT, slow)
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert time.monotonic() < deadline and not in_flight.done(), "the request never reached the model"
            threading.Event().wait(0.01)
        assert server.terminate() == 0
        assert in_flight.result()[:2] == (200, "application/json")
    with pytest.raises(OSError, match="refused"):
        http.post(server.url + PREDICT, {"instances": ["after"]}, timeout=5)
    stub = prediction_stub(server.address)
    with pytest.raises(grpc.RpcError):
        stub.Predict(predict_request({"text": ["after"]}), timeout=5)
