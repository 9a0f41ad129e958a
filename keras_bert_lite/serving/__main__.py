"""`python -m keras_bert_lite.serving`: a local TF Serving-compatible gRPC model server.

    python -m keras_bert_lite.serving --model_name bert --model_base_path exports/bert --port 8500

Serves the highest integer version under --model_base_path, picks up new versions as they appear and answers
the tensorflow.serving PredictionService (Predict, Classify, GetModelMetadata) and ModelService
(GetModelStatus) gRPC APIs. SIGTERM or SIGINT stop it gracefully: no new RPCs, in-flight ones finish, exit 0.
"""

import argparse
import logging
import os
import signal
import sys
import threading

from keras_bert_lite.serving.batcher import Batcher
from keras_bert_lite.serving.manager import ModelManager
from keras_bert_lite.serving.server import ModelServer

log = logging.getLogger("keras_bert_lite.serving")

SHUTDOWN_GRACE_SECONDS = 30
DEFAULT_BATCH_TIMEOUT_MS = 0.0


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m keras_bert_lite.serving",
                                     description="A local TF Serving-compatible gRPC model server.")
    parser.add_argument("--model_name", required=True, help="name clients use in model_spec.name")
    parser.add_argument("--model_base_path", required=True, help="directory with one subdirectory per version")
    parser.add_argument("--port", type=int, default=8500, help="gRPC port; 0 picks a free one (default 8500)")
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--max_message_mb", type=int, default=64,
                        help="largest request/response message in MiB (default 64)")
    parser.add_argument("--poll_seconds", type=float, default=1.0,
                        help="seconds between scans for new versions; 0 scans once at start (default 1)")
    parser.add_argument("--max_batch_size", type=int, default=0,
                        help="merge concurrent Predict requests into batches of up to this many examples; "
                             "0 or 1 disables batching (default 0)")
    parser.add_argument("--batch_timeout_ms", type=float, default=None,
                        help="how long a batch waits for more requests once the model is idle (default "
                             f"{DEFAULT_BATCH_TIMEOUT_MS:g}: batches form only from requests that arrive while the "
                             "previous batch runs); needs --max_batch_size > 1")
    parser.add_argument("--no_tf_text", action="store_true",
                        help="do not import tensorflow_text (its ops stay unregistered, as in a portable runtime)")
    args = parser.parse_args(argv)
    if args.batch_timeout_ms is not None and args.max_batch_size <= 1:
        parser.error("--batch_timeout_ms needs --max_batch_size > 1")
    if not os.path.isdir(args.model_base_path):
        parser.error(f"--model_base_path {args.model_base_path} is not a directory; export a model into "
                     f"{args.model_base_path}/1/ first")
    return args


def register_tf_text_ops(enabled):
    """Imports tensorflow_text (registering its ops, as stock TF Serving links them) unless disabled."""
    if not enabled:
        if "tensorflow_text" in sys.modules:
            raise SystemExit("--no_tf_text: tensorflow_text was already imported (by keras_bert_lite's package "
                             "imports), so its ops are registered; the check would be meaningless")
        log.info("--no_tf_text: TF.Text ops are not registered; models that use them will fail to load")
        return
    try:
        import tensorflow_text  # noqa: F401 - imported for its op registrations
    except ImportError:
        log.warning("tensorflow_text is not installed: models that use TF.Text ops will fail to load")


def main(argv=None):
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s] %(message)s")
    register_tf_text_ops(not args.no_tf_text)
    manager = ModelManager(args.model_name, args.model_base_path, args.poll_seconds)
    batcher = None
    if args.max_batch_size > 1:
        timeout_ms = DEFAULT_BATCH_TIMEOUT_MS if args.batch_timeout_ms is None else args.batch_timeout_ms
        batcher = Batcher(args.max_batch_size, timeout_ms / 1000)
    server = ModelServer(manager, args.host, args.port, args.max_message_mb, batcher)

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda received, frame: stop.set())
    try:
        port = server.bind()
    except OSError as error:
        raise SystemExit(f"error: {error}") from None
    manager.start()
    server.start()
    log.info("Running gRPC ModelServer at %s:%d (model '%s', batching %s)", args.host, port, args.model_name,
             f"up to {batcher.max_batch_size}" if batcher else "off")
    while not stop.wait(0.5):
        pass
    log.info("Shutting down: no new requests, finishing in-flight ones")
    server.stop(SHUTDOWN_GRACE_SECONDS)
    manager.stop()
    if batcher is not None and batcher.runs:
        log.info("Batching: %d requests in %d model runs", batcher.requests, batcher.runs)
    log.info("Server stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
