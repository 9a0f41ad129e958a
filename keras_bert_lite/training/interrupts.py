"""Ctrl-C during training: stop cleanly at the next step, with nothing half-written.

Python runs a signal handler only between the bytecodes of its main thread. While a compiled training loop runs
(`Trainer` runs up to `steps_per_loop` steps in one call), Ctrl-C waits for the call to return, and its
`KeyboardInterrupt` then surfaces wherever Python happens to be: inside a log line, or a checkpoint save.

Inside `stop_requests()` the first Ctrl-C (SIGINT) is a request instead: `requested()` turns true, the training
loops check it at every step boundary and raise `TrainingInterrupted` there, naming the step and the checkpoint
kept. The signal also wakes a thread (through `signal.set_wakeup_fd`), which runs the `on_request` callbacks at
once, while the main thread is still inside TensorFlow: `Trainer` sets a variable that its compiled loop reads
before each step. A second Ctrl-C raises `KeyboardInterrupt` as usual, for a step that never ends.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading

from keras_bert_lite.training.callbacks import FitStepCallback

_QUIT = b"\0"  # what `stop_requests` writes to end its thread (no signal has the number 0)


class TrainingInterrupted(KeyboardInterrupt):
    """Training stopped at a step boundary after Ctrl-C; the message says what is kept and how to resume."""


class _Requests:
    """The process's record of Ctrl-C while `stop_requests()` is active."""

    def __init__(self):
        self.event = threading.Event()
        self.callbacks = []
        self.presses = 0
        self.active = False

    def on_signal(self, signum, frame):
        """The Python-level SIGINT handler: the first press requests a stop, the next one interrupts."""
        self.presses += 1
        self.notify()
        if self.presses > 1:
            raise KeyboardInterrupt

    def notify(self):
        if not self.event.is_set():
            self.event.set()
            for callback in list(self.callbacks):
                callback()


_REQUESTS = _Requests()


def requested() -> bool:
    """Whether Ctrl-C was pressed inside the active `stop_requests()` block."""
    return _REQUESTS.event.is_set()


@contextlib.contextmanager
def on_request(callback):
    """Inside the block, `callback()` runs as soon as a stop is requested (from another thread: keep it short,
    e.g. a variable's `assign`). It runs at once if one was requested already."""
    _REQUESTS.callbacks.append(callback)
    try:
        if requested():
            callback()
        yield
    finally:
        _REQUESTS.callbacks.remove(callback)


@contextlib.contextmanager
def stop_requests():
    """Inside the block, the first Ctrl-C is a request to stop at the next step (module docstring).

    Nested blocks share the outer one's requests. Outside the main thread (where Python handles no signals) the
    block changes nothing.
    """
    if _REQUESTS.active or threading.current_thread() is not threading.main_thread():
        yield
        return
    restore = _take_sigint()
    try:
        yield
    finally:
        restore()


def _take_sigint():
    """Makes SIGINT a request (`_Requests.on_signal`, and `_watch` through the wakeup fd); returns `restore()`,
    which puts back the previous handling and ends the thread."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    watcher = threading.Thread(target=_watch, args=(read_fd,), name="stop-requests", daemon=True)
    _REQUESTS.event.clear()
    _REQUESTS.presses, _REQUESTS.active = 0, True
    previous_handler = signal.signal(signal.SIGINT, _REQUESTS.on_signal)
    previous_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    watcher.start()

    def restore():
        signal.set_wakeup_fd(previous_fd)
        signal.signal(signal.SIGINT, previous_handler)
        _REQUESTS.active = False
        os.write(write_fd, _QUIT)
        watcher.join()
        os.close(write_fd)
        os.close(read_fd)

    return restore


def _watch(read_fd: int) -> None:
    """Reads the signal numbers written to `read_fd` until `_QUIT`; a SIGINT notifies the callbacks."""
    while True:
        received = os.read(read_fd, 64)
        if bytes([signal.SIGINT]) in received:
            _REQUESTS.notify()
        if not received or _QUIT in received:
            return


def interrupted_message(step: int, kept: str) -> str:
    """The one line a stopped run reports: the step it stopped at and what is kept (`kept`, e.g. "the last
    checkpoint (step 100) is kept in runs/x/checkpoints"; "" for nothing)."""
    if not kept:
        return f"interrupted at step {step}, before the first checkpoint: run the same command to start again"
    return f"interrupted at step {step}: {kept}; run the same command to resume"


class StopOnInterrupt(FitStepCallback):
    """Raises `TrainingInterrupted` after the `fit` batch during which Ctrl-C was pressed (inside
    `stop_requests()`), before any epoch-end callback saves a partial epoch.

    Args:
        kept: `() -> str`, what is kept, for the message (`interrupted_message`); called when it stops.
    """

    def __init__(self, kept):
        super().__init__()
        self.kept = kept

    def on_train_batch_end(self, batch, logs=None):
        if requested():
            raise TrainingInterrupted(interrupted_message(self.fit_step(batch), self.kept()))
