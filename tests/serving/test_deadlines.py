"""A call whose deadline passes while it waits for its batch is dropped: the model never runs it."""

import grpc
import tensorflow as tf

from tests.serving.stubs import predict_request, prediction_stub, rpc_error


def test_a_queued_call_whose_deadline_passed_is_dropped_not_run(toy_v1, start_server):
    # Every batch waits 1.5 s for more requests: a call with a 0.5 s deadline is gone before its batch runs.
    server = start_server(toy_v1, "--max_batch_size", "8", "--batch_timeout_ms", "1500")
    stub = prediction_stub(server.address)
    late = rpc_error(stub.Predict, predict_request({"text": ["abc"]}), timeout=0.5)
    assert late.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    server.wait_for_log("Predict dropped before the model ran: its caller is gone (DEADLINE_EXCEEDED)")
    # 8 examples fill a batch, which runs at once (one request, as the summary line below counts).
    answered = stub.Predict(predict_request({"text": ["abcd"] * 8}, output_filter=["length"]), timeout=30)
    assert tf.make_ndarray(answered.outputs["length"]).tolist() == [4] * 8
    assert server.terminate() == 0
    assert "Batching: 1 requests in 1 model runs" in server.log()  # the dropped call's batch never ran
    assert "access Predict model=toy version=- status=DEADLINE_EXCEEDED" in server.log()
