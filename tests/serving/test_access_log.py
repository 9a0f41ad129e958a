"""One access-log line per call, answered or refused; a server fault reaches the client as an id, not a traceback."""

import asyncio
import logging
import re

import grpc
import pytest
import tensorflow as tf
from tensorflow_serving.apis import predict_pb2

from keras_bert_lite.serving.rpc import Answerer, Received
from keras_bert_lite.serving.workers import WorkerPool
from tests.serving.stubs import predict_request, prediction_stub, rpc_error
from tests.serving.test_limits import declared

LINE = re.compile(r"access (\w+) model=(\S+) version=(\S+) status=(\w+) latency_ms=(\d+\.\d) request_bytes=(\d+) "
                  r"peer=(\S+)")


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
    assert fields == [("Predict", "toy", "1", "OK", ok.ByteSize()),
                      ("Predict", "toy", "-", "RESOURCE_EXHAUSTED", too_big.ByteSize()),
                      ("Predict", "-", "-", "INVALID_ARGUMENT", 0),
                      ("Predict", "-", "-", "INVALID_ARGUMENT", 3)]
    assert all(match.group(7).startswith("ipv4:127.0.0.1:") for match in lines)


class FakeContext:
    """The parts of a grpc.aio.ServicerContext that `Answerer` uses; `abort` records the status."""

    def __init__(self):
        self.aborted = None

    def time_remaining(self):
        return None

    def peer(self):
        return "ipv4:127.0.0.1:1"

    async def abort(self, code, details):
        self.aborted = (code, details)
        raise grpc.RpcError()


@pytest.mark.parametrize("fault", [RuntimeError("secret detail /etc/passwd"),
                                   tf.errors.InternalError(None, None, "secret detail in the graph")])
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
    error_id = re.fullmatch(r"internal server error \(error id (\w{12}); the server's log has the details\)",
                            details).group(1)
    assert f"error {error_id} answering Predict" in caplog.text and "secret detail" in caplog.text
    assert "status=INTERNAL latency_ms=" in caplog.text and f"error_id={error_id}" in caplog.text
