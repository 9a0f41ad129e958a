"""1,000 calls in flight: all but the admitted ones are shed at once, nothing hangs, the server answers after."""

import threading
import time

import grpc
import pytest

from keras_bert_lite.serving import ServerUnavailableError, ServingClient
from keras_bert_lite.serving.flags import DEFAULT_MAX_CONCURRENT_REQUESTS
from tests.serving.stubs import predict_request, prediction_stub

CALLS = 1000
# The admitted calls wait 3 s in the batcher for a batch of 64 that never fills (they hold their slots without
# burning CPU), so every later call finds the server full.
HOLD = ("--max_batch_size", "64", "--batch_timeout_ms", "3000")


def test_1000_calls_in_flight_are_shed_not_hung_and_the_server_answers_after(toy_v1, start_server):
    server = start_server(toy_v1, *HOLD, "--max_concurrent_requests", str(DEFAULT_MAX_CONCURRENT_REQUESTS))
    stub = prediction_stub(server.address)
    request = predict_request({"text": ["abc"]}, output_filter=["length"])
    finished = {}
    all_but_admitted = threading.Condition()

    def record(index):
        def done(future):
            with all_but_admitted:
                finished[index] = time.monotonic()
                all_but_admitted.notify_all()

        return done

    start = time.monotonic()
    futures = []
    for index in range(CALLS):
        future = stub.Predict.future(request, timeout=60)
        future.add_done_callback(record(index))
        futures.append(future)
    with all_but_admitted:
        assert all_but_admitted.wait_for(lambda: len(finished) >= CALLS - DEFAULT_MAX_CONCURRENT_REQUESTS, 30)
    with ServingClient("toy", server.address, timeout=10) as client:  # still full: the client says so
        with pytest.raises(ServerUnavailableError) as raised:
            client.predict(["x"])
    assert str(raised.value).startswith("UNAVAILABLE: server overloaded: all 32 request slots are busy")
    codes = [future.exception().code() if future.exception() else grpc.StatusCode.OK for future in futures]

    admitted = [index for index, code in enumerate(codes) if code == grpc.StatusCode.OK]
    shed = [index for index, code in enumerate(codes) if code == grpc.StatusCode.UNAVAILABLE]
    print(f"{len(shed)} of {CALLS} shed, {len(admitted)} answered; all done in {time.monotonic() - start:.1f} s")
    assert len(admitted) + len(shed) == CALLS, {code.name for code in codes}
    assert 0 < len(admitted) <= DEFAULT_MAX_CONCURRENT_REQUESTS + 1
    assert len(shed) >= CALLS - DEFAULT_MAX_CONCURRENT_REQUESTS - 1
    details = futures[shed[0]].exception().details()
    assert details.startswith("server overloaded") and "--max_concurrent_requests 32" in details
    # Shed at once: every refusal arrived before the first admitted call could finish its model run.
    assert max(finished[index] for index in shed) < min(finished[index] for index in admitted)

    with ServingClient("toy", server.address, timeout=10) as client:
        assert client.predict(["after the storm"], output_filter=["length"])["length"].tolist() == [15]
    assert server.terminate() == 0
    statuses = [line.split(" status=")[1].split()[0] for line in server.access_lines("Predict")]
    assert statuses.count("UNAVAILABLE") == len(shed) + 1 and statuses.count("OK") == len(admitted) + 1
