"""Send texts to a TF Serving model (or `python -m keras_bert_lite.serving`); print one JSON object per text.

    kbl-client --model_name bert reviews.txt            (or python export/client.py ...)
    kbl-client --model_name bert --server http://127.0.0.1:8501 reviews.txt      (REST instead of gRPC)
    echo "a great movie" | kbl-client --model_name bert
    printf "question\tpassage\n" | kbl-client --model_name bert --pairs

Each output line holds the text (and text_b), then the signature's outputs for it, e.g.
{"text": "a great movie", "label": "positive", "probabilities": [0.02, 0.98]}; an embedding model's line holds
the text's vector, {"text": "a great movie", "embedding": [0.0123, -0.0456, ...]}; a multi-label model's the labels
it predicts, without the padding of the dense reply, {"text": ..., "labels": ["politics", "sports"],
"probabilities": [0.91, 0.03, 0.88], "label_ids": [0, 2], ...}. float32 values are written
with the fewest digits that read back as the same float32. Input is UTF-8 (a leading BOM is dropped); blank lines
(nothing but whitespace) are skipped, every other line gets its output line.
"""

import argparse
import json
import math
import sys

import numpy as np

from keras_bert_lite.serving import ServingClient, ServingClientError
from keras_bert_lite.serving.client import EMBEDDINGS
from keras_bert_lite.serving.rest_client import RestClient

PER_TEXT_KEYS = {EMBEDDINGS: "embedding"}  # a batch output's key -> its key on one text's line
PADDING = {"labels": b"", "label_ids": -1}  # multi-label outputs: the padding left out of a text's line


def parse_args(argv):
    return build_parser().parse_args(argv)


def build_parser():
    """kbl-client's parser: every numeric flag's type refuses values out of its range."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "input",
        nargs="?",
        type=argparse.FileType("rb"),
        default=None,
        help="UTF-8 file with one text per line (default: stdin)",
    )
    parser.add_argument("--model_name", required=True, help="the model's name on the server")
    parser.add_argument(
        "--server",
        default="127.0.0.1:8500",
        help="host:port of the gRPC API, or the REST API's URL (http://host:8501, or https://) (default %(default)s)",
    )
    parser.add_argument("--signature", default="serving_default", help="signature key (default %(default)s)")
    parser.add_argument("--pairs", action="store_true", help="lines are 'text<TAB>text_b' (pair tasks)")
    parser.add_argument("--batch_size", type=_positive_int, default=32, help="texts per request (default %(default)s)")
    parser.add_argument(
        "--timeout", type=_positive_seconds, default=30.0, help="seconds per request (default %(default)s)"
    )
    parser.add_argument(
        "--ssl_ca",
        type=argparse.FileType("rb"),
        help="PEM certificate(s) to trust: connect over TLS, to a server started with "
        "--ssl_cert/--ssl_key (default: plain TCP)",
    )
    parser.add_argument(
        "--wait",
        type=_wait_seconds,
        default=0.0,
        help="first wait up to this many seconds for the "
        "server and the model to be available (for scripts that have just started the server; "
        "default 0: no wait)",
    )
    return parser


def main(argv=None):
    args = parse_args(argv)
    try:
        rows = read_rows(args.input or sys.stdin.buffer, args.pairs)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        root_certificates = args.ssl_ca.read() if args.ssl_ca else None
        with connect(args.model_name, args.server, args.timeout, root_certificates) as client:
            if args.wait > 0:
                client.wait_until_available(args.wait)
            for start in range(0, len(rows), args.batch_size):
                batch = rows[start : start + args.batch_size]
                texts = [row[0] for row in batch]
                text_b = [row[1] for row in batch] if args.pairs else None
                outputs = client.predict(texts, text_b, signature=args.signature)
                for index, row in enumerate(batch):
                    record = dict(zip(("text", "text_b"), row))
                    record.update(
                        {
                            PER_TEXT_KEYS.get(key, key): _json_value(_unpadded(key, value[index]))
                            for key, value in _ordered(outputs)
                        }
                    )
                    print(json.dumps(record, ensure_ascii=False), flush=True)
    except ServingClientError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def connect(model_name, server, timeout, root_certificates=None):
    """A `RestClient` for an http:// or https:// URL, else a `ServingClient` (gRPC) for host:port."""
    if server.startswith(("http://", "https://")):
        return RestClient(model_name, server, timeout=timeout, root_certificates=root_certificates)
    return ServingClient(model_name, server, timeout=timeout, root_certificates=root_certificates)


class InputError(Exception):
    """A line of the input that cannot be sent: not UTF-8, or not 'text<TAB>text_b' with --pairs."""


def read_rows(lines, pairs):
    """The [text] (or [text, text_b] with `pairs`) of each non-blank line of `lines`, a binary file.

    Lines are decoded as UTF-8 (a BOM at the start of the first one is dropped, as "utf-8-sig" does) and lose
    their line ending; blank lines (nothing but whitespace) are skipped, every other line gives one row.

    Raises:
        InputError: For a line that is not UTF-8, or one without a tab with `pairs`, naming the file and line.
    """
    name = getattr(lines, "name", "<stdin>")
    rows = []
    for number, raw in enumerate(lines, 1):
        try:
            line = raw.decode("utf-8-sig" if number == 1 else "utf-8").rstrip("\r\n")
        except UnicodeDecodeError as error:
            position = len(raw) - len(error.object) + error.start  # "utf-8-sig" reports it after the BOM
            raise InputError(
                f"{name} line {number} is not UTF-8 (byte 0x{raw[position]:02x} at position "
                f"{position + 1}): convert the file to UTF-8, e.g. with `iconv -f latin1 -t utf-8`"
            ) from None
        if not line.strip():
            continue
        if pairs and "\t" not in line:
            raise InputError(f"{name} line {number} has no tab: --pairs expects 'text<TAB>text_b' on every line")
        rows.append(line.split("\t", 1) if pairs else [line])
    return rows


def _positive_seconds(value):
    """A finite number of seconds > 0: 0, -1, nan and inf each failed every call as 'did not answer within'."""
    return _seconds(value, zero_allowed=False)


def _wait_seconds(value):
    """A finite number of seconds >= 0: inf waited forever, and -1 or nan did not wait without a word."""
    return _seconds(value, zero_allowed=True)


def _seconds(value, zero_allowed):
    bound = ">= 0" if zero_allowed else "> 0"
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds {bound}, got {value!r}") from None
    if not (0 <= number if zero_allowed else 0 < number) or not number < math.inf:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds {bound}, got {value}")
    return number


def _positive_int(value):
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return number


def _ordered(outputs):
    """label(s) and probabilities first (the usual thing to read), then the other outputs alphabetically."""
    return sorted(outputs.items(), key=lambda item: (item[0] not in ("label", "labels", "probabilities"), item[0]))


def _unpadded(key, value):
    """One text's output, without the padding of a `PADDING` output."""
    return value[value != PADDING[key]] if key in PADDING else value


def _json_value(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.ndarray):
        return [_json_value(item) for item in value]
    if isinstance(value, np.floating) and value.dtype.itemsize < 8:
        return float(str(value))  # numpy's shortest text for this float32: 0.1, not 0.10000000149011612
    return value.item() if isinstance(value, np.generic) else value


if __name__ == "__main__":
    sys.exit(main())
