"""The demo's serving stage: `kbl-serve` in a child process on a free port, `kbl-client` on a file of sentences."""

import contextlib
import json
import os
import re
import shlex
import subprocess
import sys
import time

READY = re.compile(r"Running gRPC ModelServer at [^:]+:(\d+)")


def serve_and_classify(base_path: str, sentences: str, log_path: str, commands: list[str]) -> list[dict]:
    """Serves the versions under `base_path` and classifies each line of `sentences` through the server.

    Args:
        base_path: The export's model base path (model name "reviews").
        sentences: A text file, one sentence a line.
        log_path: Where the server's log is written.
        commands: Each command's line is appended here (and printed) as it runs.

    Returns:
        kbl-client's JSON line for each sentence (text, label, probabilities).

    Raises:
        SystemExit: When the server does not start or the client fails, naming the server's log.
    """
    server_argv = ["--model_name", "reviews", "--model_base_path", base_path, "--port", "0", "--rest_api_port", "0"]
    commands.append(" ".join(["kbl-serve"] + [shlex.quote(a) for a in server_argv]))
    print(f"$ {commands[-1]} &", flush=True)
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1")
    with (
        open(log_path, "w", encoding="utf-8") as log,
        _process([sys.executable, "-m", "keras_bert_lite.serving", *server_argv], log, env) as server,
    ):
        port = _wait_for(log_path, READY, server, 120)
        client_argv = ["--model_name", "reviews", "--server", f"127.0.0.1:{port}", "--wait", "120", sentences]
        commands.append(" ".join(["kbl-client"] + [shlex.quote(a) for a in client_argv]))
        print(f"$ {commands[-1]}", flush=True)
        out = subprocess.run(
            [sys.executable, "-m", "keras_bert_lite.serving.client_cli", *client_argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        if out.returncode:
            raise SystemExit(f"the client failed ({out.returncode}):\n{out.stderr[-2000:]}\nserver log: {log_path}")
    print(f"server stopped (exit {server.returncode}); its log: {log_path}")
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


@contextlib.contextmanager
def _process(argv: list[str], log, env: dict):
    """A child process that is stopped (SIGTERM, then kill) however the block ends."""
    process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_for(log_path: str, pattern: re.Pattern, process, timeout: float) -> str:
    """Waits until the process's log matches `pattern`; returns the first group."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(log_path, encoding="utf-8", errors="replace") as f:
            match = pattern.search(f.read())
        if match:
            return match.group(1)
        if process.poll() is not None:
            raise SystemExit(f"the server exited ({process.returncode}); see {log_path}")
        time.sleep(0.2)
    raise SystemExit(f"the server did not start in {timeout:.0f} s; see {log_path}")
