"""Resident memory after the largest request the default limits allow returns to within 20% of where it was."""

import os

import pytest

from keras_bert_lite.serving.limits import RequestLimits
from tests.serving.stubs import predict_request, prediction_stub

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc (Linux)")


def resident_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS line")


def test_resident_memory_returns_after_the_largest_allowed_requests(toy_v1, start_server):
    server = start_server(toy_v1)
    stub = prediction_stub(server.address)
    limits = RequestLimits()
    size = limits.max_request_bytes // limits.max_examples  # the default limits' largest request: 16 MiB of text
    largest = predict_request({"text": [b"x" * size] * limits.max_examples}, output_filter=["length"])
    small = predict_request({"text": ["warm up"] * 8}, output_filter=["length"])
    for _ in range(20):
        stub.Predict(small, timeout=30)
    before = resident_mib(server.process.pid)
    for _ in range(5):
        assert stub.Predict(largest, timeout=120).outputs["length"].tensor_shape.dim[0].size == limits.max_examples
    after = resident_mib(server.process.pid)
    print(
        f"resident memory: {before:.0f} MiB before, {after:.0f} MiB after 5 requests of "
        f"{largest.ByteSize() / 2**20:.1f} MiB"
    )
    assert after <= 1.2 * before
