"""A fixed set of worker threads that run admitted calls; a call that finds none free is shed at once.

The gRPC server is asynchronous: reading requests, writing answers and waiting happen in its event loop, so a
client that opens a stream and never sends the body holds no thread. What blocks - converting inputs and
running the model (TensorFlow releases the GIL while it computes), or waiting in the batcher for a batch to
run - happens on these threads. There is no queue in front of them: a call is admitted only when a thread is
free for it, so at most `size` calls are in the model or in the batcher at once, each admitted call starts at
once, and the rest are refused immediately instead of waiting without bound.

The threads are daemons: a model run that never returns cannot keep the process from exiting at shutdown.
But a thread still inside TensorFlow when the interpreter exits may abort the process, so at shutdown `close()`
lets each thread finish the call it runs and end, and waits for them.
"""

import asyncio
import logging
import queue
import threading
import time

log = logging.getLogger(__name__)


class WorkerPool:
    """Runs functions on `size` daemon threads, admitting one only when a thread is free.

    The thread that became free last takes the next call: under light load the same few threads do all the
    work, so the memory the allocator keeps per thread (glibc keeps an arena per thread) is kept by few.

    Args:
        size: Number of threads, and so of calls admitted at once.
    """

    def __init__(self, size):
        if size < 1:
            raise ValueError(f"a worker pool needs at least one thread, got {size}")
        self.size = size
        self._lock = threading.Lock()
        self._idle = [queue.SimpleQueue() for _ in range(size)]  # each idle thread's inbox; the last freed on top
        self._inboxes = list(self._idle)
        self._closed = False
        self._threads = [
            threading.Thread(target=self._work, args=(inbox,), name=f"worker-{index}", daemon=True)
            for index, inbox in enumerate(self._idle)
        ]
        for thread in self._threads:
            thread.start()

    def try_run(self, function):
        """Starts `function()` on a free thread; returns an asyncio future of its result, or None when all are busy.

        Must be called from the running event loop, which gets the result.
        """
        with self._lock:
            if not self._idle or self._closed:
                return None
            inbox = self._idle.pop()
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        inbox.put((function, loop, future))
        return future

    def close(self, deadline):
        """Admits no more calls; each thread ends once its call (if any) is done. Waits for them until `deadline`
        (time.monotonic()).

        Returns:
            The names of the threads still running a call.
        """
        with self._lock:
            self._closed = True
        for inbox in self._inboxes:
            inbox.put(None)
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return [thread.name for thread in self._threads if thread.is_alive()]

    def busy(self):
        """How many threads are running a call now (admitted calls not finished)."""
        with self._lock:
            return self.size - len(self._idle)

    def _work(self, inbox):
        while (work := inbox.get()) is not None:
            self._run(inbox, *work)  # in a call of its own: an idle thread keeps no request alive

    def _run(self, inbox, function, loop, future):
        try:
            outcome = (function(), None)
        except BaseException as error:  # noqa: BLE001 - handed to the awaiting coroutine, which reports it
            outcome = (None, error)
        with self._lock:
            self._idle.append(inbox)  # before the answer leaves, so the caller's next request finds a thread
        try:
            loop.call_soon_threadsafe(_settle, future, *outcome)
        except RuntimeError:  # the event loop is closed: the server has stopped, nobody waits for this
            log.debug("dropped the result of a call that finished after the server stopped")


def _settle(future, result, error):
    if future.done():  # the awaiting coroutine was cancelled (its caller left)
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
