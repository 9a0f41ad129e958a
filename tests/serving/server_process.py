"""Runs `python -m keras_bert_lite.serving` in a subprocess for tests, on a free port, and cleans it up."""

import os
import pathlib
import re
import signal
import subprocess
import sys
import threading
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
READY = re.compile(r"Running gRPC ModelServer at (\S+):(\d+)")
REST_READY = re.compile(r"Exporting HTTP/REST API at (\S+):(\d+)")


class ServerProcess:
    """A model server subprocess bound to 127.0.0.1 and ports it picks itself (--port 0 --rest_api_port 0, so no
    races).

    Args:
        model_base_path: The versions directory.
        *flags: More command-line flags, e.g. "--max_batch_size", "8".
        model_name: The --model_name.
        config_file: A --model_config_file to serve instead (then `model_base_path` is None).
    """

    def __init__(self, model_base_path, *flags, model_name="toy", config_file=None):
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "TF_CPP_MIN_LOG_LEVEL": "2"}
        models = (
            ["--model_config_file", str(config_file)]
            if config_file is not None
            else ["--model_name", model_name, "--model_base_path", str(model_base_path)]
        )
        command = [
            sys.executable,
            "-m",
            "keras_bert_lite.serving",
            *models,
            "--port",
            "0",
            "--rest_api_port",
            "0",
            *flags,
        ]
        self.process = subprocess.Popen(
            command, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.lines = []
        self.port = None
        self.rest_port = None
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read_output, daemon=True)
        self._reader.start()

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    @property
    def url(self):
        """The REST API's base URL, e.g. http://127.0.0.1:8501 (https:// with `tls`)."""
        return f"{'https' if '--ssl_cert' in self.process.args else 'http'}://127.0.0.1:{self.rest_port}"

    def log(self):
        return "".join(self.lines)

    def wait_ready(self, timeout=120):
        """Blocks until the server logs that it serves; fails with its log if it dies or is too slow."""
        deadline = time.monotonic() + timeout
        while not self._ready.wait(0.1):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"model server did not start (exit code {self.process.poll()}):\n{self.log()}")
        return self

    def wait_for_log(self, text, timeout=60):
        deadline = time.monotonic() + timeout
        while text not in self.log():
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} not logged within {timeout} s:\n{self.log()}")
            time.sleep(0.05)

    def terminate(self, timeout=60):
        """SIGTERM, then waits for the exit and the last log line; returns the exit code (kills it if it does not
        exit in time)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise
        self._reader.join(timeout)
        return code

    def access_lines(self, method=None):
        """The access-log lines logged so far (of `method` only, if given), from "access" on."""
        prefix = "access " if method is None else f"access {method} "
        return [line[line.index(prefix) :].strip() for line in self.lines if prefix in line]

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def _read_output(self):
        for line in self.process.stdout:
            self.lines.append(line)
            rest = REST_READY.search(line)
            if rest and self.rest_port is None:
                self.rest_port = int(rest.group(2))
            match = READY.search(line)
            if match and self.port is None:
                self.port = int(match.group(2))
                self._ready.set()
