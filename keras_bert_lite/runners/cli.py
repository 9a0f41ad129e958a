"""The `kbl-*` console commands: the command's `main`, with TensorFlow's noise kept out of its output.

TensorFlow's C++ side writes log lines straight to the process's standard error (fd 2): a dozen when it is
imported (oneDNN, CUDA, CPU features; twice, once for tensorflow_text), and more later (a CPU machine's failed
cuInit, at ERROR level; XLA's notices when it first compiles), none of which a setting of TensorFlow 2.21 silences
before they are written. Its Python side and absl log through `logging` (absl's "Sharding callback duration" at
every checkpoint save).

So a command runs inside `quiet_output`, for its whole life:

* `TF_CPP_MIN_LOG_LEVEL=2`, and fd 2 a pipe into a small filter process that drops the lines `NOISE` matches and
  passes every other line through unchanged. A process, not a thread: when the command dies inside C++ (an
  abort), the filter still drains the pipe, and the lines that explain the crash reach the user.
* `sys.stderr` writing to the real standard error, not through the pipe: tracebacks, warnings and log records
  keep their order against standard output.
* the `tensorflow` and `absl` loggers at ERROR and WARNING.

However the command ends, fd 2 is restored and the filter drained before Python reports an exception, so the
command's last `error:` line comes after every line the filter passed. With `--verbose`, or a
`TF_CPP_MIN_LOG_LEVEL` of the user's, nothing is filtered. Where there is no `fork` (Windows), a thread filters.

Nothing here imports TensorFlow at module level: this module is what the console scripts import.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import re
import signal
import sys
import threading
import time

from keras_bert_lite.utils.cli import exit_on_interrupt

# TensorFlow's lines that tell the user nothing: absl's pre-init notice, C++ INFO lines (the start-up ones, XLA's),
# the CPU feature notice's second line, and the failed cuInit of a machine without a GPU (an ERROR line).
NOISE = re.compile(
    rb"^(WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR"
    rb"|I\d{4} |To enable the following instructions: "
    rb"|E\d{4} [^\]]*cuda_platform\.cc:\d+\] failed call to cuInit)"
)
QUIET_LOGGERS = {"tensorflow": logging.ERROR, "absl": logging.WARNING}
_DRAIN_SECONDS = 10  # the most a command waits at its end for the filter to pass on what it holds


def _wants_everything(argv) -> bool:
    return "--verbose" in argv or "TF_CPP_MIN_LOG_LEVEL" in os.environ


@contextlib.contextmanager
def quiet_output(tf_text: bool = True):
    """Inside the block, TensorFlow (imported here, with tensorflow_text when installed and `tf_text`) writes none
    of its noise to stderr (module docstring)."""
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"  # C++ INFO and WARNING lines, where TensorFlow's logging reads it
    with filtered_stderr():
        _import_tensorflow(tf_text)
        for name, level in QUIET_LOGGERS.items():
            logging.getLogger(name).setLevel(level)
        yield


def _import_tensorflow(tf_text: bool) -> None:
    importlib.import_module("tensorflow")
    try:
        if tf_text:
            importlib.import_module("tensorflow_text")
    except ImportError:
        pass


@contextlib.contextmanager
def filtered_stderr(noise: re.Pattern = NOISE):
    """Inside the block, what is written to fd 2 passes through a filter that drops the lines `noise` matches,
    while `sys.stderr` writes to the real standard error. At the block's end, however it ends, fd 2 is restored
    and the filter drained."""
    sys.stderr.flush()
    real = os.dup(2)
    read_fd, write_fd = os.pipe()
    wait = _start_filter(read_fd, write_fd, real, noise)
    os.dup2(write_fd, 2)
    os.close(write_fd)
    saved = sys.stderr
    # Kept open afterwards: log handlers made inside the block keep writing to it.
    sys.stderr = open(real, "w", encoding=saved.encoding, errors=saved.errors, buffering=1, closefd=False)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(real, 2)  # the pipe's last writer (but children's) closes: the filter reads to its end
        wait()
        sys.stderr = saved


def _start_filter(read_fd: int, write_fd: int, out_fd: int, noise: re.Pattern):
    """Starts copying `read_fd`'s lines but `noise` to `out_fd`, in a forked process (a thread where there is no
    fork); returns `wait()`, which waits for it to reach the end of the pipe."""
    if not hasattr(os, "fork"):
        thread = threading.Thread(target=_copy_lines, args=(read_fd, out_fd, noise), daemon=True)
        thread.start()
        return lambda: thread.join(_DRAIN_SECONDS)
    pid = os.fork()
    if pid == 0:
        _filter_process(read_fd, write_fd, out_fd, noise)
    os.close(read_fd)
    return lambda: _wait_for_exit(pid, _DRAIN_SECONDS)


def _filter_process(read_fd: int, write_fd: int, out_fd: int, noise: re.Pattern) -> None:
    """The forked filter: holds nothing open but its pipe and the real stderr, outlives Ctrl-C and SIGTERM (it
    ends when the pipe does) and exits without running the command's exit handlers; never returns."""
    try:
        for fd in (write_fd, 0, 1, 2):
            os.close(fd)
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)
        _copy_lines(read_fd, out_fd, noise)
    finally:
        os._exit(0)


def _copy_lines(read_fd: int, out_fd: int, noise: re.Pattern) -> None:
    """Copies the lines read from `read_fd` to `out_fd` until the end of the pipe, except those `noise` matches."""
    pending = b""
    while chunk := os.read(read_fd, 1 << 16):
        *lines, pending = (pending + chunk).split(b"\n")
        _write_all(out_fd, b"".join(line + b"\n" for line in lines if not noise.match(line)))
    if not noise.match(pending):
        _write_all(out_fd, pending)


def _write_all(fd: int, data: bytes) -> None:
    """Writes all of `data`; if `fd` is gone (a closed terminal), drops it, so that the pipe is still drained."""
    try:
        while data:
            data = data[os.write(fd, data) :]
    except OSError:
        pass


def _wait_for_exit(pid: int, seconds: float) -> None:
    """Reaps the filter process, polling for up to `seconds` (a child the command started may still hold the pipe)."""
    deadline = time.monotonic() + seconds
    while os.waitpid(pid, os.WNOHANG) == (0, 0) and time.monotonic() < deadline:
        time.sleep(0.005)


def _run(module: str, tf_text: bool = True):
    argv = sys.argv[1:]
    quiet = contextlib.nullcontext() if _wants_everything(argv) else quiet_output(tf_text)
    with exit_on_interrupt(), quiet:
        return importlib.import_module(module).main(argv)


def vocab():
    _run("keras_bert_lite.runners.vocab")


def pretrain():
    _run("keras_bert_lite.runners.pretrain")


def glue():
    _run("keras_bert_lite.runners.glue")


def squad():
    _run("keras_bert_lite.runners.squad")


def ner():
    _run("keras_bert_lite.runners.ner")


def swag():
    _run("keras_bert_lite.runners.swag")


def pairs():
    _run("keras_bert_lite.runners.pairs")


def export():
    _run("keras_bert_lite.runners.export")


def fill_mask():
    _run("keras_bert_lite.runners.fill_mask")


def embed():
    _run("keras_bert_lite.runners.embed")


def demo():
    sys.exit(_run("keras_bert_lite.runners.demo"))


def serve():
    # --no_tf_text serves without TF.Text's ops registered: tensorflow_text must stay unimported.
    sys.exit(_run("keras_bert_lite.serving.__main__", tf_text="--no_tf_text" not in sys.argv[1:]))


def client():
    sys.exit(_run("keras_bert_lite.serving.client_cli", tf_text=False))
