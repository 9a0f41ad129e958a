"""The client's errors, and the export/client.py command line."""

import io
import json
import os
import subprocess
import sys

import grpc
import pytest

from keras_bert_lite.serving import ServerUnavailableError, ServingClient, ServingClientError
from keras_bert_lite.serving.client_cli import main
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


# Each was sent: 5 as five NUL bytes, a str to Classify as one example per character, Classify's pairs cut to the
# shorter list.
BAD_TEXTS = {
    "int": ("predict", ([5],), {}, TypeError, r"'text'\[0\] is not a string but int 5: pass str or UTF-8 bytes"),
    "None": ("classify", (["a", None],), {}, TypeError, r"'text'\[1\] is not a string but NoneType None"),
    "one str": ("classify", ("hello",), {}, TypeError, "'text' must be a list of strings, not a single str"),
    "fewer text_b": (
        "classify",
        (["a", "b"],),
        {"text_b": ["c"]},
        ValueError,
        r"'text' and 'text_b' must hold the same number of texts \(one text_b per text\), got 2 and 1",
    ),
    "more text_b": ("predict", (["a"],), {"text_b": ["b", "c"], "signature": "pair"}, ValueError, "got 1 and 2"),
}


@pytest.mark.parametrize("case", BAD_TEXTS)
def test_client_refuses_texts_that_are_not_one_list_of_strings_each(toy_server, case):
    method, args, kwargs, error, message = BAD_TEXTS[case]
    with pytest.raises(error, match=message):
        getattr(ServingClient("toy", toy_server.address, timeout=30), method)(*args, **kwargs)


def test_client_sends_str_and_bytes_alike(toy_server):
    client = ServingClient("toy", toy_server.address, timeout=30)
    assert client.predict(["ab", b"cde", bytearray(b"f")], output_filter=["length"])["length"].tolist() == [2, 3, 1]
    assert len(client.classify(["ab", b"cde"])) == 2


def test_command_line_prints_one_json_object_per_line(toy_server):
    result = _run_cli(["--model_name", "toy", "--server", toy_server.address], "hello\na text longer than eight\n")
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(record["text"], record["label"], record["length"]) for record in records] == [
        ("hello", "short", 5),
        ("a text longer than eight", "long", 24),
    ]
    assert list(records[0])[:3] == ["text", "label", "probabilities"]
    assert sum(records[0]["probabilities"]) == pytest.approx(1)


def test_command_line_reports_a_missing_server(tmp_path, capsys):
    # In-process (export/client.py exits with main's return value: see the test above, run as a script).
    (tmp_path / "texts.txt").write_text("hello\n")
    assert main(["--model_name", "toy", "--server", "127.0.0.1:1", str(tmp_path / "texts.txt")]) == 1
    assert "no TF Serving server at 127.0.0.1:1" in capsys.readouterr().err


def test_command_line_keeps_every_non_blank_pair_line(toy_server, tmp_path, capsys):
    # A line with an empty text but a text_b was dropped: the outputs no longer lined up with the input lines.
    path = tmp_path / "pairs.txt"
    path.write_text("q1\tp1\n\tonly passage\n\n \t \nq3\tp3\n")
    assert (
        main(["--model_name", "toy", "--server", toy_server.address, "--signature", "pair", "--pairs", str(path)]) == 0
    )
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["text"], r["text_b"], r["length"], r["length_b"]) for r in records] == [
        ("q1", "p1", 2, 2),
        ("", "only passage", 0, 12),
        ("q3", "p3", 2, 2),
    ]


def test_command_line_refuses_a_pair_line_without_a_tab(tmp_path, capsys):
    path = tmp_path / "pairs.txt"
    path.write_text("q1\tp1\nno tab here\n")
    assert main(["--model_name", "toy", "--server", "127.0.0.1:1", "--pairs", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"error: {path} line 2 has no tab: --pairs expects 'text<TAB>text_b' on every line\n"
    )


def test_command_line_drops_a_utf8_bom(toy_server, tmp_path, capsys):
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbfhello\r\n\xef\xbb\xbfhi\n")  # only the file's first BOM is one
    assert main(["--model_name", "toy", "--server", toy_server.address, str(path)]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(record["text"], record["length"]) for record in records] == [("hello", 5), ("\ufeffhi", 3)]


@pytest.mark.parametrize("from_stdin", [False, True])
def test_command_line_names_the_line_that_is_not_utf8(tmp_path, capsys, monkeypatch, from_stdin):
    data = b"ok\n\xef\xbb\xbfb\xffad\n"
    path = tmp_path / "latin1.txt"
    path.write_bytes(data)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    name = "<stdin>" if from_stdin else str(path)
    assert main(["--model_name", "toy", "--server", "127.0.0.1:1", *([] if from_stdin else [str(path)])]) == 2
    assert capsys.readouterr() == (
        "",
        f"error: {name} line 2 is not UTF-8 (byte 0xff at position 5): convert "
        f"the file to UTF-8, e.g. with `iconv -f latin1 -t utf-8`\n",
    )


@pytest.mark.parametrize("size", ["0", "-1"])
def test_command_line_refuses_a_batch_size_below_one(capsys, size):
    with pytest.raises(SystemExit) as raised:
        main(["--model_name", "toy", "--batch_size", size])
    assert raised.value.code == 2
    assert f"argument --batch_size: must be >= 1, got {size}" in capsys.readouterr().err


@pytest.mark.parametrize("seconds", ["0", "-1", "nan", "inf"])
def test_command_line_refuses_a_timeout_that_is_not_positive_and_finite(capsys, seconds):
    # Each failed every call with "did not answer within inf s".
    with pytest.raises(SystemExit) as raised:
        main(["--model_name", "toy", "--timeout", seconds])
    assert raised.value.code == 2
    assert f"argument --timeout: must be a finite number of seconds > 0, got {seconds}" in capsys.readouterr().err


def test_wait_ends_with_the_load_error_of_the_model(tmp_path, start_server, capsys):
    # The client only said "no version of the model is AVAILABLE yet" when the version had failed to load.
    (tmp_path / "models" / "1").mkdir(parents=True)
    (tmp_path / "models" / "1" / "saved_model.pb").write_bytes(b"not a SavedModel")
    server = start_server(tmp_path / "models", "--poll_seconds", "0")
    with ServingClient("toy", server.address) as client:
        (status,) = client.status()
    assert (status["state"], status["error_code"]) == ("END", "UNKNOWN") and status["error_message"]
    (tmp_path / "texts.txt").write_text("hi\n")
    assert main(["--model_name", "toy", "--server", server.address, "--wait", "0.01", str(tmp_path / "texts.txt")]) == 1
    assert capsys.readouterr().err == (
        f"error: UNAVAILABLE: no version of the model is AVAILABLE yet; version 1 "
        f"failed to load: UNKNOWN: {status['error_message']}\n"
    )


def _run_cli(args, stdin):
    return subprocess.run(
        [sys.executable, str(REPO_ROOT / "export" / "client.py"), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
