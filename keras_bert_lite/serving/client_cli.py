"""Send texts to a TF Serving model (or `python -m keras_bert_lite.serving`); print one JSON object per text.

    kbl-client --model_name bert reviews.txt            (or python export/client.py ...)
    echo "a great movie" | kbl-client --model_name bert
    printf "question\tpassage\n" | kbl-client --model_name bert --pairs

Each output line holds the text (and text_b), then the signature's outputs for it, e.g.
{"text": "a great movie", "label": "positive", "probabilities": [0.02, 0.98]}.
"""

import argparse
import json
import sys

import numpy as np

from keras_bert_lite.serving import ServingClient, ServingClientError


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("input", nargs="?", type=argparse.FileType("r", encoding="utf-8"), default=sys.stdin,
                        help="file with one text per line (default: stdin)")
    parser.add_argument("--model_name", required=True, help="the model's name on the server")
    parser.add_argument("--server", default="127.0.0.1:8500", help="host:port of the server (default %(default)s)")
    parser.add_argument("--signature", default="serving_default", help="signature key (default %(default)s)")
    parser.add_argument("--pairs", action="store_true", help="lines are 'text<TAB>text_b' (pair tasks)")
    parser.add_argument("--batch_size", type=int, default=32, help="texts per request (default %(default)s)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request (default %(default)s)")
    parser.add_argument("--ssl_ca", type=argparse.FileType("rb"),
                        help="PEM certificate(s) to trust: connect over TLS, to a server started with "
                             "--ssl_cert/--ssl_key (default: plain TCP)")
    parser.add_argument("--wait", type=float, default=0.0, help="first wait up to this many seconds for the server "
                        "and the model to be available (for scripts that have just started the server)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    rows = [line.rstrip("\r\n").split("\t", 1) if args.pairs else [line.rstrip("\r\n")] for line in args.input]
    rows = [row for row in rows if row[0]]
    if args.pairs and any(len(row) != 2 for row in rows):
        print("error: --pairs expects 'text<TAB>text_b' on every line", file=sys.stderr)
        return 2
    try:
        root_certificates = args.ssl_ca.read() if args.ssl_ca else None
        with ServingClient(args.model_name, args.server, timeout=args.timeout,
                           root_certificates=root_certificates) as client:
            if args.wait > 0:
                client.wait_until_available(args.wait)
            for start in range(0, len(rows), args.batch_size):
                batch = rows[start:start + args.batch_size]
                texts = [row[0] for row in batch]
                text_b = [row[1] for row in batch] if args.pairs else None
                outputs = client.predict(texts, text_b, signature=args.signature)
                for index, row in enumerate(batch):
                    record = dict(zip(("text", "text_b"), row))
                    record.update({key: _json_value(value[index]) for key, value in _ordered(outputs)})
                    print(json.dumps(record, ensure_ascii=False), flush=True)
    except ServingClientError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def _ordered(outputs):
    """label and probabilities first (the usual thing to read), then the other outputs alphabetically."""
    return sorted(outputs.items(), key=lambda item: (item[0] not in ("label", "probabilities"), item[0]))


def _json_value(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.ndarray):
        return [_json_value(item) for item in value]
    return value.item() if isinstance(value, np.generic) else value


if __name__ == "__main__":
    sys.exit(main())
