"""Clients that open a Predict stream and never send the request body hold no worker: others are still answered."""

import threading
import time

import grpc
import tensorflow as tf
from tensorflow_serving.apis import predict_pb2

from tests.serving.stubs import predict_request, prediction_stub

STALLED = 48
PREDICT = "/tensorflow.serving.PredictionService/Predict"


def open_stalled_stream(address, index, release):
    """Opens a Predict call on its own connection: the headers go out, the request body never does.

    A client-streaming call whose request iterator blocks looks, on the wire, exactly like a unary call whose
    client stops after the headers.
    """
    channel = grpc.insecure_channel(address, options=[("grpc.channel_id", index)])  # no shared connection
    grpc.channel_ready_future(channel).result(timeout=30)

    def never_sends():
        release.wait()
        yield from ()

    stream = channel.stream_unary(
        PREDICT,
        request_serializer=predict_pb2.PredictRequest.SerializeToString,
        response_deserializer=predict_pb2.PredictResponse.FromString,
    )
    return channel, stream.future(never_sends(), timeout=120)


def test_48_stalled_streams_do_not_block_a_normal_predict(toy_server):
    release = threading.Event()
    stalled = [open_stalled_stream(toy_server.address, index, release) for index in range(STALLED)]
    try:
        stub = prediction_stub(toy_server.address)
        start = time.monotonic()
        response = stub.Predict(predict_request({"text": ["still served"]}, output_filter=["length"]), timeout=1.0)
        latency = time.monotonic() - start
        print(f"Predict with {STALLED} stalled streams open: {latency * 1000:.1f} ms")
        assert tf.make_ndarray(response.outputs["length"]).tolist() == [12]
        assert latency < 1.0
        assert not any(call.done() for _, call in stalled), "the stalled streams were closed, not held open"
    finally:
        release.set()
        for channel, call in stalled:
            call.cancel()
            channel.close()
