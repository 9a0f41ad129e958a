"""Merges concurrent Predict requests to the same signature of the same version into one model run.

Requests join the open batch of their signature (and trailing input shapes) until it holds `max_batch_size`
examples. The first request of a batch is its leader: once the model is idle - the previous batch of the
signature has run - and the batch has waited `timeout_seconds` (or is full), it concatenates every input along
dim 0, runs the signature once and splits each output back by the requests' offsets; followers wait for their
slice. Batches of a signature run one at a time, so while one runs, the requests arriving meanwhile gather in
the next: under load batches grow by themselves, even with a zero timeout, and an idle server adds no delay
beyond the timeout.

A request runs alone, unbatched, when the signature is not batchable (`servable.is_batchable`: outputs
without a batch dimension such as scalars, or with unknown trailing dimensions), when its inputs do not share
one dim 0, when it is empty or bigger than `max_batch_size`. Requests are only merged with requests whose
inputs have the same trailing shapes. If a merged run fails, each request is re-run alone, so one bad request
(say, invalid UTF-8) gets its own error and never fails the requests it was batched with.

A request whose caller is gone (its `Call` says the deadline passed or the client cancelled) while it waited
for its batch is taken out of the batch when the batch runs: the model never sees it, and it gets the `Call`'s
CANCELLED or DEADLINE_EXCEEDED error. A batch whose callers are all gone does not run.
"""

import collections
import logging
import threading
import time
import weakref

import numpy as np

from keras_bert_lite.serving.errors import ServingError

log = logging.getLogger(__name__)


class Batcher:
    """Batches `Signature.run` calls made concurrently from several threads.

    Args:
        max_batch_size: Largest merged batch, in examples (sum of the requests' dim 0).
        timeout_seconds: How long a batch waits for more requests once the model is idle (0: batches only
            gather while the previous batch of the signature runs).
        on_batch: Called as on_batch(model name, signature name, examples) after each batch the model ran (for
            the metrics), from the thread that ran it; None: not called.
    """

    def __init__(self, max_batch_size, timeout_seconds, on_batch=None):
        self.max_batch_size = max_batch_size
        self.timeout_seconds = timeout_seconds
        self._on_batch = on_batch
        self._queues = weakref.WeakKeyDictionary()  # Signature -> {trailing shapes: _Queue}; dies with the version
        self._lock = threading.Lock()
        self.runs = 0  # merged model runs, for tests and logs
        self.requests = 0  # requests answered from merged runs

    def run(self, signature, inputs, call=None, model_name=""):
        """Like `signature.run(inputs)`, possibly sharing the model run with concurrent requests.

        Args:
            signature: The `Signature` to run.
            inputs: {key: np.ndarray}, already validated.
            call: The request's `Call`, or None: a request whose caller is gone is dropped, not run.
            model_name: The name of the model the signature belongs to, for `on_batch`.
        """
        size = _batch_size(inputs)
        if not signature.batchable or not size or size > self.max_batch_size:
            if call is not None:
                call.check()
            return signature.run(inputs)
        queue = self._queue(signature, inputs)
        batch, index, leader = queue.join(inputs, size, self.max_batch_size, call)
        if leader:
            queue.wait_turn(batch, self.timeout_seconds)
            try:
                ran, examples = batch.execute(signature)
            finally:
                queue.finished()
            with self._lock:
                self.runs += bool(ran)
                self.requests += ran
            if ran and self._on_batch is not None:
                self._on_batch(model_name, signature.name, examples)
        else:
            batch.done.wait()
        return batch.result(index)

    def waiting(self) -> int:
        """Requests queued for a model run that has not started yet (for monitoring, and for tests to wait on)."""
        with self._lock:
            queues = [queue for per_signature in self._queues.values() for queue in per_signature.values()]
        return sum(queue.waiting() for queue in queues)

    def _queue(self, signature, inputs):
        shapes = tuple(sorted((key, value.shape[1:]) for key, value in inputs.items()))
        with self._lock:
            queues = self._queues.setdefault(signature, {})
            return queues.setdefault(shapes, _Queue())


class _Queue:
    """The batches of one signature and one set of trailing input shapes: one open, the closed ones in order.

    Batches of a queue run one at a time, oldest first; while one runs, new requests join the open batch.
    """

    def __init__(self):
        self._cond = threading.Condition()
        self._open = None  # the batch accepting requests
        self._closed = collections.deque()  # batches no longer accepting requests, waiting to run, oldest first
        self._running = False

    def join(self, inputs, size, max_batch_size, call):
        """Adds a request to the open batch (opening one if needed); returns (batch, index, is_leader)."""
        with self._cond:
            batch, leader = self._open, False
            if batch is None or batch.size + size > max_batch_size:
                if batch is not None:
                    self._close(batch)
                batch, leader = _Batch(), True
                self._open = batch
            index = batch.add(inputs, size, call)
            if batch.size >= max_batch_size:
                self._close(batch)
            return batch, index, leader

    def wait_turn(self, batch, timeout_seconds):
        """Blocks `batch`'s leader until the batch may run, and marks the queue running.

        A closed batch runs when the batches closed before it have run. The open batch closes when the queue
        is idle and it has waited `timeout_seconds`; while another batch runs it keeps accepting requests.
        """
        deadline = time.monotonic() + timeout_seconds
        with self._cond:
            while True:
                idle = not self._running
                if self._open is batch and idle and not self._closed:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        self._open = None
                        break
                    self._cond.wait(remaining)
                elif self._open is not batch and idle and self._closed[0] is batch:
                    self._closed.popleft()
                    break
                else:
                    self._cond.wait()
            self._running = True

    def waiting(self) -> int:
        """Requests in this queue's batches that have not started to run."""
        with self._cond:
            return len(self._open.items if self._open is not None else ()) + sum(len(b.items) for b in self._closed)

    def finished(self):
        """Called by the leader once its batch has run: lets the next batch go."""
        with self._cond:
            self._running = False
            self._cond.notify_all()

    def _close(self, batch):
        self._open = None
        self._closed.append(batch)
        self._cond.notify_all()


class _Batch:
    def __init__(self):
        self.items = []
        self.sizes = []
        self.calls = []
        self.size = 0
        self.done = threading.Event()
        self._results = []

    def add(self, inputs, size, call):
        self.items.append(inputs)
        self.sizes.append(size)
        self.calls.append(call)
        self.size += size
        return len(self.items) - 1

    def execute(self, signature):
        """Runs the batch and wakes the followers; every request gets its outputs or its own error.

        Returns:
            (how many requests the model ran (the others were dropped), how many examples they held).
        """
        live = []
        try:
            results = [_dropped(call) for call in self.calls]
            live = [index for index, result in enumerate(results) if result is None]
            outcomes = _run_together(
                signature, [self.items[index] for index in live], [self.sizes[index] for index in live]
            )
            for index, outcome in zip(live, outcomes):
                results[index] = outcome
            self._results = results
        except Exception as error:  # noqa: BLE001 - never leave followers without a result
            self._results = [(error, None)] * len(self.items)
        finally:
            self.done.set()
        return len(live), sum(self.sizes[index] for index in live)

    def result(self, index):
        error, outputs = self._results[index]
        if error is not None:
            raise error
        return outputs


def _run_together(signature, items, sizes):
    """Runs `items` (requests of `sizes` examples) as one merged run; [(error, outputs)] per request."""
    if len(items) <= 1:
        return [_outcome(signature.run, item) for item in items]
    merged = {key: np.concatenate([item[key] for item in items]) for key in items[0]}
    error, outputs = _outcome(signature.run, merged)
    if error is not None:  # some request in the batch is bad: run each alone to tell which
        return [_outcome(signature.run, item) for item in items]
    total = sum(sizes)
    if not all(np.ndim(value) and len(value) == total for value in outputs.values()):
        log.warning(
            "signature '%s' returned outputs that are not batch-major (%s); it will run unbatched",
            signature.name,
            {key: np.shape(value) for key, value in outputs.items()},
        )
        signature.batchable = False
        return [_outcome(signature.run, item) for item in items]
    offsets = np.cumsum([0] + sizes)
    return [
        (None, {key: value[start:end] for key, value in outputs.items()})
        for start, end in zip(offsets[:-1], offsets[1:])
    ]


def _dropped(call):
    """(the error, None) when the caller of `call` is gone, else None."""
    if call is None:
        return None
    try:
        call.check()
    except ServingError as error:
        return error, None
    return None


def _outcome(function, inputs):
    try:
        return None, function(inputs)
    except Exception as error:  # noqa: BLE001 - handed to the request's own thread, which raises it
        return error, None


def _batch_size(inputs):
    """The common dim 0 of {key: np.ndarray}; None when an input is a scalar or the sizes differ."""
    sizes = {value.shape[0] if value.ndim else None for value in inputs.values()}
    return sizes.pop() if len(sizes) == 1 else None
