"""Whether the caller of an RPC still waits for its answer, readable from any thread.

The RPC's coroutine learns that its caller is gone (the deadline passed, or the client cancelled) when gRPC
cancels it; the worker thread doing the call's work reads the same fact from a `Call` before it starts the
model, so work nobody will read is dropped instead of computed.
"""

import logging
import threading
import time

import grpc

from keras_bert_lite.serving.errors import ServingError

log = logging.getLogger(__name__)


class Call:
    """The deadline and cancellation of one RPC.

    Args:
        method: The RPC's method name, for the log.
        timeout: Seconds the caller gave the call (`context.time_remaining()`), or None for no deadline.
        clock: The monotonic clock (tests swap it).
    """

    def __init__(self, method, timeout=None, clock=time.monotonic):
        self.method = method
        self._clock = clock
        self._deadline = None if timeout is None else clock() + timeout
        self._cancelled = threading.Event()

    def cancel(self):
        """Marks the call as abandoned by its caller."""
        self._cancelled.set()

    def gone(self):
        """None while the caller waits; otherwise the status it ended with (CANCELLED or DEADLINE_EXCEEDED)."""
        if self._deadline is not None and self._clock() >= self._deadline:
            return grpc.StatusCode.DEADLINE_EXCEEDED
        if self._cancelled.is_set():
            return grpc.StatusCode.CANCELLED
        return None

    def check(self):
        """Raises a `ServingError` (and logs the drop) when the caller is gone: its work must not start."""
        code = self.gone()
        if code is not None:
            message = f"{self.method} dropped before the model ran: its caller is gone ({code.name})"
            log.info("%s", message)
            raise ServingError(code, message)
