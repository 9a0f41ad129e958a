"""The client's errors, and the export/client.py command line."""

import json
import os
import subprocess
import sys

import grpc
import pytest

from keras_bert_lite.serving import ServerUnavailableError, ServingClient, ServingClientError
from tests.serving.server_process import REPO_ROOT


def test_no_server_is_a_clear_error():
    with pytest.raises(ServerUnavailableError) as raised:
        ServingClient("bert", "127.0.0.1:1", timeout=5).predict(["x"])
    message = str(raised.value)
    assert "no TF Serving server at 127.0.0.1:1: connection refused" in message
    assert "python -m keras_bert_lite.serving --model_name bert --model_base_path DIR --port 1" in message


def test_deadline_exceeded(toy_server):
    with pytest.raises(ServingClientError) as raised:
        ServingClient("toy", toy_server.address, timeout=0.3).predict(["2.0"], signature="slow")
    assert raised.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert "did not answer within 0.3 s" in str(raised.value)


def test_server_errors_keep_code_and_message(toy_server):
    with pytest.raises(ServingClientError) as raised:
        ServingClient("toy", toy_server.address).predict(["x"], signature="nope")
    assert raised.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert str(raised.value) == 'FAILED_PRECONDITION: Serving signature key "nope" not found.'


def test_predict_labels_needs_label_and_probabilities_outputs(toy_server):
    with pytest.raises(ServingClientError, match=r"signature 'stats' has no output \['label', 'probabilities'\]"):
        ServingClient("toy", toy_server.address).predict_labels(["x"], signature="stats")


def test_command_line_prints_one_json_object_per_line(toy_server):
    result = _run_cli(["--model_name", "toy", "--server", toy_server.address], "hello\na text longer than eight\n")
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(record["text"], record["label"], record["length"]) for record in records] == [
        ("hello", "short", 5), ("a text longer than eight", "long", 24)]
    assert list(records[0])[:3] == ["text", "label", "probabilities"]
    assert sum(records[0]["probabilities"]) == pytest.approx(1)


def test_command_line_reports_a_missing_server():
    result = _run_cli(["--model_name", "toy", "--server", "127.0.0.1:1"], "hello\n")
    assert result.returncode == 1
    assert "no TF Serving server at 127.0.0.1:1" in result.stderr


def _run_cli(args, stdin):
    return subprocess.run([sys.executable, str(REPO_ROOT / "export" / "client.py"), *args], input=stdin,
                          capture_output=True, text=True, timeout=120, cwd=REPO_ROOT,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "TF_CPP_MIN_LOG_LEVEL": "2"})

