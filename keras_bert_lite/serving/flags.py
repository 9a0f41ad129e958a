"""The command-line flags of `kbl-serve` (`python -m keras_bert_lite.serving`), with their defaults.

Every limit the server enforces is a flag here, and every default is safe to run with unread: loopback only,
requests bounded in examples, elements and bytes, a bounded number of requests admitted at once, loads that
time out.
"""

import argparse
import os
import threading

from keras_bert_lite.serving import limits, rest_server
from keras_bert_lite.serving.manager import DEFAULT_LOAD_TIMEOUT_SECONDS, DEFAULT_MAX_LOAD_RETRIES
from keras_bert_lite.serving.model_config import ConfigError, ModelConfig, read_config_file
from keras_bert_lite.serving.monitoring_config import metrics_path

DEFAULT_BATCH_TIMEOUT_MS = 0.0
DEFAULT_MAX_CONCURRENT_REQUESTS = 32
MAX_PORT = 65535
MAX_MESSAGE_MB = (2**31 - 1) // limits.MIB  # gRPC takes message sizes as int32 bytes: 2048 MiB crashed at start
DEFAULT_REST_API_PORT = 8501
DEFAULT_REST_TIMEOUT_MS = 30000.0  # TF Serving's --rest_api_timeout_in_ms
DEFAULT_REST_MAX_BODY_MB = 32
DEFAULT_REST_READ_TIMEOUT_SECONDS = 30.0
DEFAULT_REST_MAX_CONNECTIONS = 512
_DEFAULT_LIMITS = limits.RequestLimits()


def parse_args(argv):
    """Parses and checks `argv`; exits with a usage error naming the flag when one is wrong."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.batch_timeout_ms is not None and args.max_batch_size <= 1:
        parser.error("--batch_timeout_ms needs --max_batch_size > 1")
    args.model_configs = _model_configs(parser, args)
    if (args.ssl_cert is None) != (args.ssl_key is None):
        parser.error("--ssl_cert and --ssl_key go together: pass both to serve over TLS, or neither")
    for flag, path in (("--ssl_cert", args.ssl_cert), ("--ssl_key", args.ssl_key)):
        if path is not None and not os.path.isfile(path):
            parser.error(f"{flag} {path} is not a file")
    if args.max_concurrent_requests is None:
        args.max_concurrent_requests = max(DEFAULT_MAX_CONCURRENT_REQUESTS, 2 * args.max_batch_size)
    try:
        args.metrics_path = metrics_path(args.monitoring_config_file) if args.monitoring_config_file else None
    except ValueError as error:
        parser.error(f"--monitoring_config_file: {error}")
    return args


def build_parser():
    """kbl-serve's parser: every numeric flag's type refuses values out of its range."""
    parser = argparse.ArgumentParser(prog="kbl-serve", description="A local TF Serving-compatible gRPC model server.")
    parser.add_argument("--model_name", help="name clients use in model_spec.name (one model; or --model_config_file)")
    parser.add_argument("--model_base_path", help="directory with one subdirectory per version (with --model_name)")
    add_model_config_flags(parser)
    parser.add_argument(
        "--port",
        type=_port(),
        default=8500,
        help="gRPC port; 0 picks a free one (default 8500)",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="interface to bind (default 127.0.0.1: this machine only); another address without "
        "--ssl_cert/--ssl_key logs a warning",
    )
    parser.add_argument("--ssl_cert", help="PEM certificate chain: serve over TLS (needs --ssl_key; default: no TLS)")
    parser.add_argument("--ssl_key", help="PEM private key of --ssl_cert")
    parser.add_argument(
        limits.MESSAGE_FLAG,
        type=_message_mb(),
        default=64,
        help=f"largest request/response message in MiB, at most {MAX_MESSAGE_MB} (default 64)",
    )
    add_limit_flags(parser)
    add_rest_flags(parser)
    parser.add_argument(
        "--poll_seconds",
        type=_non_negative(float),
        default=1.0,
        help="seconds between scans for new versions; 0 scans once at start (default 1)",
    )
    parser.add_argument(
        "--load_timeout_seconds",
        type=_positive(float),
        default=DEFAULT_LOAD_TIMEOUT_SECONDS,
        help="a version still loading after this long is abandoned and counts as failed "
        f"(default {DEFAULT_LOAD_TIMEOUT_SECONDS:g})",
    )
    parser.add_argument(
        "--max_load_retries",
        type=_non_negative(int),
        default=DEFAULT_MAX_LOAD_RETRIES,
        help="retries, with backoff doubling from --poll_seconds, of a version that failed to load "
        "and whose files do not change; a version whose files change is retried at the next "
        f"poll regardless (default {DEFAULT_MAX_LOAD_RETRIES}, as TF Serving)",
    )
    parser.add_argument(
        "--max_batch_size",
        type=_non_negative(int),
        default=0,
        help="merge concurrent Predict requests into batches of up to this many examples; "
        "0 or 1 disables batching (default 0)",
    )
    parser.add_argument(
        "--batch_timeout_ms",
        type=_non_negative(float),
        default=None,
        help="how long a batch waits for more requests once the model is idle (default "
        f"{DEFAULT_BATCH_TIMEOUT_MS:g}: batches form only from requests that arrive while the "
        "previous batch runs); needs --max_batch_size > 1",
    )
    parser.add_argument(
        "--no_tf_text",
        action="store_true",
        help="do not import tensorflow_text (its ops stay unregistered, as in a portable runtime)",
    )
    return parser


def add_model_config_flags(parser):
    """Several models from TF Serving's config file, their version labels, and warm-up."""
    parser.add_argument(
        "--model_config_file",
        help="TF Serving's ModelServerConfig text proto: several models, each with its base_path, "
        "model_version_policy and version_labels (instead of --model_name/--model_base_path)",
    )
    parser.add_argument(
        "--model_config_file_poll_wait_seconds",
        type=_non_negative(float),
        default=0.0,
        help="seconds between reads of --model_config_file, whose changes are applied (models added, "
        "removed, reconfigured; labels moved); 0 reads it once at start (default 0, as TF "
        "Serving)",
    )
    parser.add_argument(
        "--allow_version_labels_for_unavailable_models",
        type=_boolean,
        nargs="?",
        const=True,
        default=False,
        help="let a new version label point to a version not loaded yet (a label in "
        "use still moves only to a loaded version) (default false, as TF Serving)",
    )
    parser.add_argument(
        "--enable_model_warmup",
        type=_boolean,
        nargs="?",
        const=True,
        default=True,
        help="replay a version's assets.extra/tf_serving_warmup_requests before serving it, so its "
        "first request is not slow (default true, as TF Serving)",
    )


def add_limit_flags(parser):
    """The per-request limits and the admission limit."""
    parser.add_argument(
        limits.EXAMPLES_FLAG,
        dest="max_request_examples",
        type=_positive(int),
        default=_DEFAULT_LIMITS.max_examples,
        help="most examples (dim 0 of an input, or Classify examples) in one request "
        f"(default {_DEFAULT_LIMITS.max_examples})",
    )
    parser.add_argument(
        limits.ELEMENTS_FLAG,
        dest="max_request_elements",
        type=_positive(int),
        default=_DEFAULT_LIMITS.max_elements,
        help="most elements over all the inputs of one request, as declared by their shapes "
        f"(default {_DEFAULT_LIMITS.max_elements})",
    )
    parser.add_argument(
        limits.STRING_BYTES_FLAG,
        dest="max_string_bytes",
        type=_positive(int),
        default=_DEFAULT_LIMITS.max_string_bytes,
        help=f"largest string in a request, in bytes (default {_DEFAULT_LIMITS.max_string_bytes})",
    )
    parser.add_argument(
        limits.REQUEST_BYTES_FLAG,
        dest="max_request_bytes",
        type=_positive(int),
        default=_DEFAULT_LIMITS.max_request_bytes,
        help="largest total size of a request's inputs once converted, padding of short tensors "
        f"included, in bytes (default {_DEFAULT_LIMITS.max_request_bytes})",
    )
    parser.add_argument(
        "--max_concurrent_requests",
        type=_positive(int),
        default=None,
        help="most Predict/Classify requests admitted at once (running or waiting for a batch); "
        "more are refused at once with UNAVAILABLE (default "
        f"{DEFAULT_MAX_CONCURRENT_REQUESTS}, or 2 x --max_batch_size when that is larger)",
    )


def add_rest_flags(parser):
    """The REST API's port and its HTTP limits, and the metrics it serves."""
    parser.add_argument(
        "--rest_api_port",
        type=_port(),
        default=DEFAULT_REST_API_PORT,
        help="port of TF Serving's REST API (HTTP/JSON) on --host; 0 picks a free one (where TF "
        f"Serving serves no REST) and the log says which (default {DEFAULT_REST_API_PORT})",
    )
    parser.add_argument(
        rest_server.TIMEOUT_FLAG,
        type=_non_negative(float),
        default=DEFAULT_REST_TIMEOUT_MS,
        help="most milliseconds a REST call may take once its body has arrived (504 after that); 0: "
        f"no limit (default {DEFAULT_REST_TIMEOUT_MS:g}, as TF Serving)",
    )
    parser.add_argument(
        rest_server.BODY_FLAG,
        type=_message_mb(),
        default=DEFAULT_REST_MAX_BODY_MB,
        help="largest REST request body in MiB; a larger one is "
        f"refused (413) before it is read (default {DEFAULT_REST_MAX_BODY_MB})",
    )
    parser.add_argument(
        rest_server.READ_TIMEOUT_FLAG,
        type=_positive(float),
        default=DEFAULT_REST_READ_TIMEOUT_SECONDS,
        help="seconds a REST request's headers, then its body, each have to arrive: a slower body is "
        "refused (408), slower headers close the connection, and so does an idle keep-alive "
        f"connection (default {DEFAULT_REST_READ_TIMEOUT_SECONDS:g})",
    )
    parser.add_argument(
        rest_server.CONNECTIONS_FLAG,
        type=_positive(int),
        default=DEFAULT_REST_MAX_CONNECTIONS,
        help="most REST connections open at once; another one is answered 503 and closed (default "
        f"{DEFAULT_REST_MAX_CONNECTIONS})",
    )
    parser.add_argument(
        "--monitoring_config_file",
        help="TF Serving's MonitoringConfig text proto, e.g. "
        "'prometheus_config { enable: true }': serve Prometheus metrics on the REST port (default: no "
        "metrics)",
    )


def request_limits(args):
    """The `RequestLimits` the parsed flags set."""
    return limits.RequestLimits(
        max_examples=args.max_request_examples,
        max_elements=args.max_request_elements,
        max_string_bytes=args.max_string_bytes,
        max_request_bytes=args.max_request_bytes,
    )


def _model_configs(parser, args):
    """The `ModelConfig`s to serve: --model_config_file's, or the one model of --model_name/--model_base_path."""
    if args.model_config_file is not None:
        if args.model_name is not None or args.model_base_path is not None:
            parser.error(
                "--model_config_file names the models to serve: give it, or --model_name with "
                "--model_base_path, not both"
            )
        try:
            return read_config_file(args.model_config_file) or ()
        except ConfigError as error:
            parser.error(f"--model_config_file: {error}")
    if args.model_name is None or args.model_base_path is None:
        parser.error("--model_name and --model_base_path (one model), or --model_config_file (several), are required")
    if not os.path.isdir(args.model_base_path):
        parser.error(
            f"--model_base_path {args.model_base_path} is not a directory; export a model into "
            f"{args.model_base_path}/1/ first"
        )
    return (ModelConfig(args.model_name, args.model_base_path),)


def _boolean(value):
    """An argparse type for TF Serving's boolean flags: true/false (or 1/0)."""
    if value.lower() in ("true", "1"):
        return True
    if value.lower() in ("false", "0"):
        return False
    raise argparse.ArgumentTypeError(f"must be true or false, got {value}")


def _port():
    return _checked(int, lambda number: 0 <= number <= MAX_PORT, f"in 0..{MAX_PORT}")


def _message_mb():
    """A message or body size in MiB: one that gRPC's int32 byte sizes hold."""
    return _checked(int, lambda number: 0 < number <= MAX_MESSAGE_MB, f"in 1..{MAX_MESSAGE_MB}")


def _positive(kind):
    return _checked(kind, lambda number: number > 0, "> 0")


def _non_negative(kind):
    return _checked(kind, lambda number: number >= 0, ">= 0")


def _checked(kind, test, text):
    """An argparse type: `kind(value)`, refused unless `test` holds. A float (seconds or milliseconds) must also
    be one that threading waits take: inf, nan or 1e300 made them raise (every batched request failed INTERNAL,
    no version loaded, the version poll died)."""

    def parse(value):
        number = kind(value)
        if kind is float and not abs(number) <= threading.TIMEOUT_MAX:
            raise argparse.ArgumentTypeError(
                f"must be a finite number of at most {threading.TIMEOUT_MAX:g}, got {value}"
            )
        if not test(number):
            raise argparse.ArgumentTypeError(f"must be {text}, got {value}")
        return number

    parse.__name__ = kind.__name__  # argparse names the type in "invalid int value: 'x'"
    return parse
