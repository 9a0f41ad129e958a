"""kbl-serve's flags: every limit is one, its help gives the true default, and bad values are refused by name."""

import re

import pytest

from keras_bert_lite.serving.flags import parse_args, request_limits
from keras_bert_lite.serving.limits import RequestLimits


def parse(tmp_path, *flags):
    return parse_args(["--model_name", "m", "--model_base_path", str(tmp_path), *flags])


def test_defaults_are_the_documented_ones(tmp_path, capsys):
    args = parse(tmp_path)
    assert request_limits(args) == RequestLimits()
    assert (args.max_concurrent_requests, args.load_timeout_seconds, args.max_load_retries) == (32, 300.0, 5)
    assert (args.host, args.ssl_cert, args.ssl_key) == ("127.0.0.1", None, None)
    with pytest.raises(SystemExit):
        parse(tmp_path, "--help")
    help_text = " ".join(capsys.readouterr().out.split())
    limits = RequestLimits()
    for flag, default in [
        ("--max_request_examples", limits.max_examples),
        ("--max_request_elements", limits.max_elements),
        ("--max_string_bytes", limits.max_string_bytes),
        ("--max_request_bytes", limits.max_request_bytes),
        ("--max_concurrent_requests", 32),
        ("--load_timeout_seconds", 300),
        ("--max_load_retries", 5),
        ("--max_message_mb", 64),
    ]:
        shown = re.search(rf"{flag} {flag[2:].upper()} .*?\(default ([0-9.]+)", help_text)
        assert shown and float(shown.group(1)) == default, flag


def test_every_port_number_is_accepted(tmp_path):
    assert [parse(tmp_path, "--port", port).port for port in ("0", "65535")] == [0, 65535]


def test_concurrency_default_grows_with_the_batch_size(tmp_path):
    assert parse(tmp_path, "--max_batch_size", "64").max_concurrent_requests == 128
    assert parse(tmp_path, "--max_batch_size", "64", "--max_concurrent_requests", "8").max_concurrent_requests == 8


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--max_request_examples", "0"], "argument --max_request_examples: must be > 0, got 0"),
        (["--max_string_bytes", "-5"], "argument --max_string_bytes: must be > 0, got -5"),
        (["--max_concurrent_requests", "0"], "argument --max_concurrent_requests: must be > 0, got 0"),
        (["--load_timeout_seconds", "0"], "argument --load_timeout_seconds: must be > 0, got 0"),
        (["--max_load_retries", "-1"], "argument --max_load_retries: must be >= 0, got -1"),
        (["--port", "70000"], "argument --port: must be in 0..65535, got 70000"),  # it listened on 70000 % 65536
        (["--port", "-5"], "argument --port: must be in 0..65535, got -5"),
        (["--port", "x"], "argument --port: invalid int value: 'x'"),
        # Each reached a threading wait that raised: every batched request INTERNAL, no version loaded, no polling.
        (
            ["--max_batch_size", "8", "--batch_timeout_ms", "inf"],
            "argument --batch_timeout_ms: must be a finite number",
        ),
        (["--load_timeout_seconds", "nan"], "argument --load_timeout_seconds: must be a finite number"),
        (["--load_timeout_seconds", "1e300"], "argument --load_timeout_seconds: must be a finite number of at most"),
        (["--poll_seconds", "inf"], "argument --poll_seconds: must be a finite number"),
        (["--poll_seconds", "-1"], "argument --poll_seconds: must be >= 0, got -1"),
        (["--max_message_mb", "2048"], "argument --max_message_mb: must be in 1..2047, got 2048"),  # OverflowError
        (["--max_batch_size", "8", "--batch_timeout_ms", "-2"], "argument --batch_timeout_ms: must be >= 0, got -2"),
        (["--ssl_cert", "cert.pem"], "--ssl_cert and --ssl_key go together"),
        (["--ssl_cert", "missing.pem", "--ssl_key", "missing.pem"], "--ssl_cert missing.pem is not a file"),
    ],
)
def test_bad_flags_are_refused_by_name(tmp_path, capsys, flags, message):
    with pytest.raises(SystemExit) as raised:
        parse(tmp_path, *flags)
    assert raised.value.code == 2
    assert message in capsys.readouterr().err
