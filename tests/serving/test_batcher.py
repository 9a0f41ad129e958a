"""The batcher, in-process: merging, splitting, error isolation, and the signatures it must not batch."""

import concurrent.futures
import threading
import time

import grpc
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import meta_graph_pb2

from keras_bert_lite.serving.batcher import Batcher
from keras_bert_lite.serving.calls import Call
from keras_bert_lite.serving.errors import ServingError
from keras_bert_lite.serving.servable import Signature, is_batchable


def signature_def(inputs, outputs):
    """A SignatureDef from {key: (tf.DType, shape)} dicts."""
    proto = meta_graph_pb2.SignatureDef()
    for field, specs in ((proto.inputs, inputs), (proto.outputs, outputs)):
        for key, (dtype, shape) in specs.items():
            field[key].CopyFrom(
                meta_graph_pb2.TensorInfo(
                    name=f"{key}:0", dtype=dtype.as_datatype_enum, tensor_shape=tf.TensorShape(shape).as_proto()
                )
            )
    return proto


class Recorder:
    """A signature function that doubles `x` and records the batch sizes it was called with.

    With `hold_first`, the first call signals `started` and then runs only once the test sets `release`: what
    queues meanwhile is decided by the test, not by timing.
    """

    def __init__(self, scalar_output=False, delay=0.05, hold_first=False):
        self.batch_sizes = []
        self.scalar_output = scalar_output
        self.delay = delay
        self.lock = threading.Lock()
        self.started, self.release = threading.Event(), threading.Event()
        if not hold_first:
            self.release.set()

    def __call__(self, x):
        with self.lock:
            self.batch_sizes.append(int(x.shape[0]))
        self.started.set()
        assert self.release.wait(30), "the test never released the first call"
        threading.Event().wait(self.delay)  # long enough for concurrent requests to queue up
        tf.debugging.assert_non_negative(x, message="negative input")
        outputs = {"y": x * 2.0}
        if self.scalar_output:
            outputs["total"] = tf.reduce_sum(x)
        return outputs


def make_signature(function, scalar_output=False):
    outputs = {"y": (tf.float32, [None, 3])}
    if scalar_output:
        outputs["total"] = (tf.float32, [None])  # declared batch-major, but really a scalar
    return Signature("f", signature_def({"x": (tf.float32, [None, 3])}, outputs), function)


def run_concurrently(batcher, signature, requests):
    with concurrent.futures.ThreadPoolExecutor(len(requests)) as pool:
        futures = [pool.submit(batcher.run, signature, {"x": request}) for request in requests]
        return [future.exception() or future.result() for future in futures]


def requests_of_sizes(sizes, sign=1.0):
    return [sign * np.full((size, 3), index + 1, np.float32) for index, size in enumerate(sizes)]


def test_concurrent_requests_are_merged_and_split_back():
    recorder = Recorder()
    requests = requests_of_sizes([1, 2, 1, 3, 1, 1, 2, 1])
    results = run_concurrently(Batcher(max_batch_size=16, timeout_seconds=0.2), make_signature(recorder), requests)
    for request, result in zip(requests, results):
        np.testing.assert_array_equal(result["y"], request * 2)
    assert sum(recorder.batch_sizes) == 12
    assert len(recorder.batch_sizes) < len(requests)  # some requests shared a run
    assert max(recorder.batch_sizes) <= 16


def wait_until(condition, seconds=30):
    """Waits until `condition()` holds (checked every 10 ms); fails after `seconds`."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        threading.Event().wait(0.01)


def test_requests_arriving_while_a_batch_runs_form_the_next_batch_even_without_timeout():
    recorder = Recorder(delay=0, hold_first=True)
    batcher, signature = Batcher(max_batch_size=16, timeout_seconds=0), make_signature(recorder)
    requests = requests_of_sizes([1, 1, 2, 1, 1])
    with concurrent.futures.ThreadPoolExecutor(len(requests)) as pool:
        first = pool.submit(batcher.run, signature, {"x": requests[0]})
        assert recorder.started.wait(30)  # the first request is running alone: the model was idle
        rest = [pool.submit(batcher.run, signature, {"x": request}) for request in requests[1:]]
        wait_until(lambda: batcher.waiting() == 4)  # the other four queued behind it
        recorder.release.set()
        results = [future.result() for future in [first] + rest]
    assert recorder.batch_sizes == [1, 5]
    for request, result in zip(requests, results):
        np.testing.assert_array_equal(result["y"], request * 2)


def test_batches_never_exceed_max_batch_size_and_big_requests_run_alone():
    recorder = Recorder()
    requests = requests_of_sizes([3, 3, 3, 3, 9])
    results = run_concurrently(Batcher(max_batch_size=6, timeout_seconds=0.2), make_signature(recorder), requests)
    for request, result in zip(requests, results):
        np.testing.assert_array_equal(result["y"], request * 2)
    assert max(recorder.batch_sizes) <= 9 and recorder.batch_sizes.count(9) == 1
    assert all(size <= 6 for size in recorder.batch_sizes if size != 9)


def test_a_bad_request_fails_alone():
    recorder = Recorder()
    requests = requests_of_sizes([1, 1, 1, 1])
    requests[2] = -requests[2]
    results = run_concurrently(Batcher(max_batch_size=8, timeout_seconds=0.2), make_signature(recorder), requests)
    assert isinstance(results[2], tf.errors.InvalidArgumentError) and "negative input" in results[2].message
    for index in (0, 1, 3):
        np.testing.assert_array_equal(results[index]["y"], requests[index] * 2)


def test_outputs_that_are_not_batch_major_turn_batching_off():
    recorder = Recorder(scalar_output=True)
    signature = make_signature(recorder, scalar_output=True)
    requests = requests_of_sizes([1, 2, 1, 2])
    results = run_concurrently(Batcher(max_batch_size=8, timeout_seconds=0.2), signature, requests)
    for request, result in zip(requests, results):
        assert result["total"] == pytest.approx(request.sum())
    assert not signature.batchable


def test_empty_requests_run_alone():
    recorder = Recorder(delay=0)
    result = Batcher(8, 0.2).run(make_signature(recorder), {"x": np.zeros((0, 3), np.float32)})
    assert result["y"].shape == (0, 3) and recorder.batch_sizes == [0]


@pytest.mark.parametrize(
    "inputs, outputs, expected",
    [
        ({"x": [None, 3]}, {"y": [None, 2]}, True),
        ({"x": [None, None]}, {"y": [None]}, True),
        ({"x": [None]}, {"y": []}, False),  # scalar output
        ({"x": [None]}, {"y": [None, None]}, False),  # trailing size depends on the batch (padding)
        ({"x": [None]}, {"y": None}, False),  # unknown rank
        ({"x": []}, {"y": [None]}, False),  # scalar input
        ({"x": [4]}, {"y": [4]}, False),  # fixed batch size
    ],
)
def test_is_batchable(inputs, outputs, expected):
    def specs(shapes):
        return {key: tf.TensorSpec(shape, tf.float32) for key, shape in shapes.items()}

    assert is_batchable(specs(inputs), specs(outputs)) is expected


def test_requests_whose_caller_left_are_taken_out_of_the_batch():
    recorder = Recorder(delay=0, hold_first=True)
    batcher, signature = Batcher(max_batch_size=16, timeout_seconds=0), make_signature(recorder)
    first, requests = requests_of_sizes([1])[0], requests_of_sizes([2, 3, 4])
    calls = [Call("Predict"), Call("Predict"), Call("Predict")]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        running = pool.submit(batcher.run, signature, {"x": first})
        assert recorder.started.wait(30)  # the first request runs alone; the next three queue behind it
        queued = [pool.submit(batcher.run, signature, {"x": request}, call) for request, call in zip(requests, calls)]
        wait_until(lambda: batcher.waiting() == 3)
        calls[1].cancel()  # the client of the 3-example request gives up while it waits
        recorder.release.set()
        running.result()
        results = [future.exception() or future.result() for future in queued]
    assert recorder.batch_sizes == [1, 2 + 4]  # the model never saw the cancelled request
    assert isinstance(results[1], ServingError) and results[1].code == grpc.StatusCode.CANCELLED
    for index in (0, 2):
        np.testing.assert_array_equal(results[index]["y"], requests[index] * 2)
    assert (batcher.runs, batcher.requests) == (2, 3)


def test_a_batch_whose_callers_all_left_does_not_run():
    recorder = Recorder(delay=0)
    now = [0.0]
    call = Call("Predict", timeout=1.0, clock=lambda: now[0])
    now[0] = 2.0  # the deadline passed
    with pytest.raises(ServingError) as raised:
        Batcher(8, 0).run(make_signature(recorder), {"x": requests_of_sizes([2])[0]}, call)
    assert raised.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert recorder.batch_sizes == []
