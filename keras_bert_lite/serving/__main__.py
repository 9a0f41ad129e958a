"""`kbl-serve` (`python -m keras_bert_lite.serving`): a local TF Serving-compatible model server, gRPC and REST.

    kbl-serve --model_name bert --model_base_path exports/bert --port 8500 --rest_api_port 8501

Serves the highest integer version under --model_base_path, picks up new versions as they appear and answers
the tensorflow.serving PredictionService (Predict, Classify, GetModelMetadata) and ModelService
(GetModelStatus) gRPC APIs, plus grpc.health.v1.Health, and the same APIs over TF Serving's REST API (plus
Prometheus metrics with --monitoring_config_file). Requests are checked against per-request limits and
admitted up to --max_concurrent_requests at once (see `flags` for every limit and its default). SIGTERM or
SIGINT stop it gracefully: health turns NOT_SERVING, no new RPCs, in-flight ones finish, exit 0.
"""

import asyncio
import logging
import signal
import sys

from keras_bert_lite.serving.batcher import Batcher
from keras_bert_lite.serving.flags import DEFAULT_BATCH_TIMEOUT_MS, parse_args, request_limits
from keras_bert_lite.serving.health import Health
from keras_bert_lite.serving.limits import MIB
from keras_bert_lite.serving.manager import ModelManager
from keras_bert_lite.serving.metrics import Metrics
from keras_bert_lite.serving.rest_api import RestApi
from keras_bert_lite.serving.rest_server import RestServer
from keras_bert_lite.serving.rpc import Answerer
from keras_bert_lite.serving.server import ModelServer
from keras_bert_lite.serving.services import ModelService, PredictionService
from keras_bert_lite.serving.workers import WorkerPool

log = logging.getLogger("keras_bert_lite.serving")

SHUTDOWN_GRACE_SECONDS = 30


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
    return asyncio.run(serve(args))


async def serve(args):
    """Runs the server the parsed flags describe until SIGTERM or SIGINT; returns the exit code."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)

    health = Health(args.model_name)
    await health.set_serving(False)
    manager = ModelManager(args.model_name, args.model_base_path, args.poll_seconds,
                           load_timeout_seconds=args.load_timeout_seconds, max_load_retries=args.max_load_retries,
                           on_change=health.set_serving_threadsafe)
    metrics = Metrics(lambda: {manager.name: manager.version_states()})
    batcher = None
    if args.max_batch_size > 1:
        timeout_ms = DEFAULT_BATCH_TIMEOUT_MS if args.batch_timeout_ms is None else args.batch_timeout_ms
        batcher = Batcher(args.max_batch_size, timeout_ms / 1000, on_batch=metrics.count_batch)
    answerer = Answerer(WorkerPool(args.max_concurrent_requests), args.max_message_mb * MIB, metrics)
    predictions = PredictionService(manager, answerer, request_limits(args), batcher)
    models = ModelService(manager, answerer)
    server = ModelServer([predictions.handler(), models.handler()], args.host, args.port, args.max_message_mb,
                         _read_tls(args))
    health.add_to(server.grpc_server)
    rest = _rest_server(args, RestApi(predictions, models, answerer), metrics)
    try:
        port = server.bind()
        rest_port = rest.bind()
    except OSError as error:
        raise SystemExit(f"error: {error}") from None

    if not await _first_scan(manager, stop):
        log.info("Stopped before serving")
        return 0
    await rest.start()
    log.info("Exporting HTTP/REST API at %s:%d (TLS %s, metrics %s)", args.host, rest_port,
             "on" if args.ssl_cert else "off", f"at {args.metrics_path}" if args.metrics_path else "off")
    await server.start()
    log.info("Running gRPC ModelServer at %s:%d (model '%s', batching %s, %d requests at once, TLS %s)", args.host,
             port, args.model_name, f"up to {batcher.max_batch_size}" if batcher else "off",
             args.max_concurrent_requests, "on" if args.ssl_cert else "off")
    await stop.wait()
    log.info("Shutting down: no new requests, finishing in-flight ones")
    await health.shutting_down()
    await asyncio.gather(server.stop(SHUTDOWN_GRACE_SECONDS), rest.stop())
    manager.stop()
    if batcher is not None and batcher.runs:
        log.info("Batching: %d requests in %d model runs", batcher.requests, batcher.runs)
    log.info("Server stopped")
    return 0


async def _first_scan(manager, stop):
    """Starts the manager (its first load blocks) unless `stop` comes first; returns whether it started."""
    starting = asyncio.ensure_future(asyncio.get_running_loop().run_in_executor(None, manager.start))
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if stop.is_set():
        manager.stop()
        await starting
        return False
    await starting
    return True


def _rest_server(args, api, metrics):
    """The REST server the flags describe (it shares --host, --ssl_cert and --ssl_key with gRPC)."""
    timeout_ms = args.rest_api_timeout_in_ms
    return RestServer(api, args.host, args.rest_api_port, max_body_bytes=args.rest_api_max_body_mb * MIB,
                      read_timeout_seconds=args.rest_api_read_timeout_seconds,
                      timeout_seconds=timeout_ms / 1000 if timeout_ms else None,
                      max_connections=args.rest_api_max_connections,
                      tls=(args.ssl_cert, args.ssl_key) if args.ssl_cert else None, metrics=metrics,
                      metrics_path=args.metrics_path, grace_seconds=SHUTDOWN_GRACE_SECONDS)


def _read_tls(args):
    if args.ssl_cert is None:
        return None
    with open(args.ssl_cert, "rb") as chain, open(args.ssl_key, "rb") as key:
        return chain.read(), key.read()


if __name__ == "__main__":
    sys.exit(main())
