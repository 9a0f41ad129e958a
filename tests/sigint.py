"""Ctrl-C for subprocess tests: run a command, send it SIGINT once it has reached a given point (a line in its
output, a file), and collect what it printed."""

import signal
import subprocess
import threading
import time


def interrupt_when(command, ready, timeout: float = 600) -> tuple[int, str, float]:
    """Runs `command` (stderr merged into stdout) and sends it SIGINT as soon as `ready(output so far)` is true,
    polled until `timeout` seconds have passed.

    Returns:
        (exit status, the whole output, seconds from the signal to the exit).
    """
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []

    def read():
        for line in process.stdout:
            lines.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    try:
        while not ready("".join(lines)):
            assert process.poll() is None, "it ended first:\n" + "".join(lines)[-3000:]
            assert time.monotonic() < deadline, "it never got there:\n" + "".join(lines)[-3000:]
            time.sleep(0.02)
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=max(1.0, deadline - sent))
        reader.join(timeout=60)
        return code, "".join(lines), time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
