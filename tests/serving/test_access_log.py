"""One access-log line per call, answered or refused; a server fault reaches the client as an id, not a traceback."""

import asyncio
import logging
import re
import threading

import grpc
import pytest
import tensorflow as tf
from tensorflow_serving.apis import predict_pb2

from keras_bert_lite.serving.access_log import log_call
from keras_bert_lite.serving.rpc import Answerer, Received
from keras_bert_lite.serving.workers import WorkerPool
from tests.serving.stubs import predict_request, prediction_stub, rpc_error
from tests.serving.test_limits import declared

LINE = re.compile(
    r"access (\w+) model=(\S+) version=(\S+) status=(\w+) latency_ms=(\d+\.\d) request_bytes=(\d+) "
    r"peer=(\S+) protocol=(grpc|rest)"
)


def test_every_call_gets_one_line_answered_or_refused(toy_v1, start_server):
    server = start_server(toy_v1)
    stub = prediction_stub(server.address)
    ok = predict_request({"text": ["abc"]}, version=1)
    stub.Predict(ok, timeout=30)
    too_big = predict_request({"text": declared([100_000])})
    rpc_error(stub.Predict, too_big)
    rpc_error(stub.Predict, predict_pb2.PredictRequest())  # no model spec
    garbage = grpc.insecure_channel(server.address).unary_unary("/tensorflow.serving.PredictionService/Predict")
    with pytest.raises(grpc.RpcError) as raised:
        garbage(b"\xff\xff\xff", timeout=30)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert server.terminate() == 0

    lines = [LINE.fullmatch(line) for line in server.access_lines()]
    assert all(lines), server.access_lines()
    fields = [match.groups()[:4] + (int(match.group(6)),) for match in lines]
    assert fields == [
        ("Predict", "toy", "1", "OK", ok.ByteSize()),
        ("Predict", "toy", "-", "RESOURCE_EXHAUSTED", too_big.ByteSize()),
        ("Predict", "-", "-", "INVALID_ARGUMENT", 0),
        ("Predict", "-", "-", "INVALID_ARGUMENT", 3),
    ]
    assert all(match.group(7).startswith("ipv4:127.0.0.1:") for match in lines)


def test_client_controlled_fields_cannot_forge_a_line_or_a_field(caplog):
    forged = "x\n2026-01-01 00:00:00,000 INFO keras_bert_lite.serving.access] access Predict model=toy version=1"
    request = predict_request({"text": ["a"]}, model=forged + "\r\t\\ \u2028\x00é")
    with caplog.at_level(logging.INFO, logger="keras_bert_lite.serving.access"):
        log_call("Predict", request, None, grpc.StatusCode.NOT_FOUND, 0.001, 10, "ipv4:127.0.0.1:1 status=OK")
    (line,) = [record.getMessage() for record in caplog.records]
    assert LINE.fullmatch(line), line
    assert line.startswith(
        r"access Predict model=x\n2026-01-01\x2000:00:00,000\x20INFO\x20keras_bert_lite.serving."
        r"access]\x20access\x20Predict\x20model=toy\x20version=1\r\t\\\x20\u2028\x00é "
        r"version=- status=NOT_FOUND "
    )
    assert line.endswith(r" peer=ipv4:127.0.0.1:1\x20status=OK protocol=grpc")


class FakeContext:
    """The parts of a grpc.aio.ServicerContext that `Answerer` uses; `abort` records the status.
    `remaining`: what each `time_remaining()` call returns, in turn (default: no deadline)."""

    def __init__(self, remaining=()):
        self.aborted = None
        self.remaining = list(remaining)

    def time_remaining(self):
        return self.remaining.pop(0) if self.remaining else None

    def peer(self):
        return "ipv4:127.0.0.1:1"

    async def abort(self, code, details):
        self.aborted = (code, details)
        raise grpc.RpcError()


@pytest.mark.parametrize(
    "fault",
    [RuntimeError("secret detail /etc/passwd"), tf.errors.InternalError(None, None, "secret detail in the graph")],
)
def test_a_server_fault_is_internal_with_an_id_and_its_text_stays_in_the_log(caplog, fault):
    def respond(request, call):
        raise fault

    async def answer():
        context = FakeContext()
        request = predict_request({"text": ["x"]})
        with pytest.raises(grpc.RpcError):
            await Answerer(WorkerPool(1)).answer("Predict", Received(request, 20), context, respond)
        return context.aborted

    with caplog.at_level(logging.INFO):
        code, details = asyncio.run(answer())
    assert code == grpc.StatusCode.INTERNAL
    assert "secret" not in details
    error_id = re.fullmatch(
        r"internal server error \(error id (\w{12}); the server's log has the details\)", details
    ).group(1)
    assert f"error {error_id} answering Predict" in caplog.text and "secret detail" in caplog.text
    assert "status=INTERNAL latency_ms=" in caplog.text and f"error_id={error_id}" in caplog.text


@pytest.mark.parametrize(
    "remaining,logged",
    [
        ((0.5, 0.004), "DEADLINE_EXCEEDED"),  # the timer fired 4 ms early
        ((0.5, -0.001), "DEADLINE_EXCEEDED"),
        ((0.5, 0.3), "CANCELLED"),  # the client cancelled
        ((), "CANCELLED"),
    ],
)  # no deadline at all
def test_a_call_cancelled_at_its_deadline_is_logged_as_deadline_exceeded(caplog, remaining, logged):
    """gRPC cancels the coroutine when the deadline passes, and its timer can fire a few milliseconds before
    `time_remaining()` reaches 0: that is still the deadline, not a client cancelling."""
    started, release = threading.Event(), threading.Event()

    def respond(request, call):
        started.set()
        release.wait(30)

    async def answer():
        task = asyncio.ensure_future(
            Answerer(WorkerPool(1)).answer(
                "Predict", Received(predict_request({"text": ["x"]}), 20), FakeContext(remaining), respond
            )
        )
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 30)  # respond is running
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()

    with caplog.at_level(logging.INFO):
        asyncio.run(answer())
    assert f"status={logged} latency_ms=" in caplog.text
