"""`kbl-serve` (`python -m keras_bert_lite.serving`): a local TF Serving-compatible model server, gRPC and REST.

    kbl-serve --model_name bert --model_base_path exports/bert --port 8500 --rest_api_port 8501
    kbl-serve --model_config_file models.config --model_config_file_poll_wait_seconds 60

Serves the highest integer version under --model_base_path (or the models of TF Serving's --model_config_file,
with their version policies and labels, re-read as it changes), picks up new versions as they appear, warms
each up with its assets.extra/tf_serving_warmup_requests before serving it, and answers the tensorflow.serving
PredictionService (Predict, Classify, GetModelMetadata) and ModelService (GetModelStatus) gRPC APIs, plus
grpc.health.v1.Health, and the same APIs over TF Serving's REST API (plus Prometheus metrics with
--monitoring_config_file). Requests are checked against per-request limits and admitted up to
--max_concurrent_requests at once (see `flags` for every limit and its default).

SIGTERM or SIGINT stop it gracefully: health turns NOT_SERVING, new calls are refused (UNAVAILABLE), in-flight
ones finish, loads in progress are abandoned, and the process exits 0 once every thread that can be inside
TensorFlow (the workers, the loads, the pollers) has finished: a thread that returns from TensorFlow while the
interpreter exits is killed mid-unwind, which aborts the process ("terminate called after throwing an instance
of ...", "FATAL: exception not rethrown", SIGABRT). Threads still running SHUTDOWN_GRACE_SECONDS after the signal
(a load or a model run that hangs) are left behind by `os._exit(0)` after the logs are flushed.
"""

import asyncio
import functools
import logging
import os
import signal
import sys
import time

from keras_bert_lite.serving.batcher import Batcher
from keras_bert_lite.serving.config_poller import ConfigPoller
from keras_bert_lite.serving.errors import ServingError
from keras_bert_lite.serving.flags import DEFAULT_BATCH_TIMEOUT_MS, parse_args, request_limits
from keras_bert_lite.serving.health import Health
from keras_bert_lite.serving.limits import MIB
from keras_bert_lite.serving.manager import ModelManager
from keras_bert_lite.serving.metrics import Metrics
from keras_bert_lite.serving.registry import ModelRegistry
from keras_bert_lite.serving.rest_api import RestApi
from keras_bert_lite.serving.rest_server import RestServer
from keras_bert_lite.serving.rpc import Answerer
from keras_bert_lite.serving.server import ModelServer
from keras_bert_lite.serving.services import ModelService, PredictionService
from keras_bert_lite.serving.warmup import WarmingLoader
from keras_bert_lite.serving.workers import WorkerPool

log = logging.getLogger("keras_bert_lite.serving")

SHUTDOWN_GRACE_SECONDS = 30


def register_tf_text_ops(enabled):
    """Imports tensorflow_text (registering its ops, as stock TF Serving links them) unless disabled."""
    if not enabled:
        if "tensorflow_text" in sys.modules:
            raise SystemExit(
                "--no_tf_text: tensorflow_text was already imported (by keras_bert_lite's package "
                "imports), so its ops are registered; the check would be meaningless"
            )
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
    unfinished = asyncio.run(serve(args))
    if unfinished:
        _exit_leaving(unfinished)
    return 0


async def serve(args):
    """Runs the server the parsed flags describe until SIGTERM or SIGINT; returns the names of the threads still
    running after the shutdown grace (none, normally)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)

    health = Health()
    await health.start()
    registry = ModelRegistry(
        _manager_factory(args), args.allow_version_labels_for_unavailable_models, on_change=health.set_model_threadsafe
    )
    workers = WorkerPool(args.max_concurrent_requests)
    metrics = Metrics(lambda: {name: registry.version_states(name) for name in registry.names()}, workers.busy)
    batcher = None
    if args.max_batch_size > 1:
        timeout_ms = DEFAULT_BATCH_TIMEOUT_MS if args.batch_timeout_ms is None else args.batch_timeout_ms
        batcher = Batcher(args.max_batch_size, timeout_ms / 1000, on_batch=metrics.count_batch)
    answerer = Answerer(workers, args.max_message_mb * MIB, metrics)
    predictions = PredictionService(registry, answerer, request_limits(args), batcher)
    models = ModelService(registry, answerer)
    server = ModelServer(
        [predictions.handler(), models.handler()], args.host, args.port, args.max_message_mb, _read_tls(args)
    )
    health.add_to(server.grpc_server)
    rest = _rest_server(args, RestApi(predictions, models, answerer), metrics)
    try:
        port = server.bind()
        rest_port = rest.bind()
    except OSError as error:
        raise SystemExit(f"error: {error}") from None

    if not await _first_scan(registry, args.model_configs, stop):
        log.info("Stopped before serving")
        return _stop_threads(registry, None, workers, time.monotonic() + SHUTDOWN_GRACE_SECONDS)
    poller = None
    if args.model_config_file is not None and args.model_config_file_poll_wait_seconds > 0:
        poller = ConfigPoller(args.model_config_file, registry, args.model_config_file_poll_wait_seconds)
        poller.start()
    await rest.start()
    log.info(
        "Exporting HTTP/REST API at %s:%d (TLS %s, metrics %s)",
        args.host,
        rest_port,
        "on" if args.ssl_cert else "off",
        f"at {args.metrics_path}" if args.metrics_path else "off",
    )
    await server.start()
    log.info(
        "Running gRPC ModelServer at %s:%d (models %s, batching %s, %d requests at once, TLS %s)",
        args.host,
        port,
        ", ".join(registry.names()) or "none",
        f"up to {batcher.max_batch_size}" if batcher else "off",
        args.max_concurrent_requests,
        "on" if args.ssl_cert else "off",
    )
    await stop.wait()
    deadline = time.monotonic() + SHUTDOWN_GRACE_SECONDS
    log.info("Shutting down: no new requests, finishing in-flight ones")
    await health.shutting_down()
    await asyncio.gather(server.stop(SHUTDOWN_GRACE_SECONDS), rest.stop())
    unfinished = _stop_threads(registry, poller, workers, deadline)
    if batcher is not None and batcher.runs:
        log.info("Batching: %d requests in %d model runs", batcher.requests, batcher.runs)
    log.info("Server stopped")
    return unfinished


def _manager_factory(args):
    """Callable (ModelConfig, on_change) -> ModelManager, as the flags configure every model's manager."""
    return functools.partial(
        ModelManager,
        poll_seconds=args.poll_seconds,
        load=WarmingLoader(request_limits(args), args.enable_model_warmup),
        load_timeout_seconds=args.load_timeout_seconds,
        max_load_retries=args.max_load_retries,
    )


async def _first_scan(models, configs, stop):
    """Applies the first config (its loads block) unless `stop` comes first; returns whether it was applied.

    Raises:
        SystemExit: The config's labels are refused (TF Serving does not start either).
    """
    starting = asyncio.ensure_future(asyncio.get_running_loop().run_in_executor(None, models.apply, configs))
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if stop.is_set():
        models.stop()
    try:
        await starting
    except ServingError as error:
        raise SystemExit(f"error: --model_config_file: {error.message}") from None
    return not stop.is_set()


def _stop_threads(models, poller, workers, deadline):
    """Stops the pollers and loads, lets the workers finish, and waits for all of them until `deadline`.

    Returns:
        The names of the threads still running then.
    """
    if poller is not None:
        poller.stop()
    models.stop()
    unfinished = (poller.join(deadline) if poller is not None else []) + models.join(deadline)
    return unfinished + workers.close(deadline)


def _exit_leaving(threads):
    """Exits 0 at once, leaving `threads` (still inside TensorFlow, or blocked) behind: a normal interpreter exit
    would abort when one of them returns to Python. Logs them first and flushes every stream."""
    log.warning(
        "Exiting with threads still running %d s after the stop signal: %s (a load or a model run that "
        "did not finish; an interpreter exit would abort when one returns to Python)",
        SHUTDOWN_GRACE_SECONDS,
        ", ".join(threads),
    )
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _rest_server(args, api, metrics):
    """The REST server the flags describe (it shares --host, --ssl_cert and --ssl_key with gRPC)."""
    timeout_ms = args.rest_api_timeout_in_ms
    return RestServer(
        api,
        args.host,
        args.rest_api_port,
        max_body_bytes=args.rest_api_max_body_mb * MIB,
        read_timeout_seconds=args.rest_api_read_timeout_seconds,
        timeout_seconds=timeout_ms / 1000 if timeout_ms else None,
        max_connections=args.rest_api_max_connections,
        tls=(args.ssl_cert, args.ssl_key) if args.ssl_cert else None,
        metrics=metrics,
        metrics_path=args.metrics_path,
        grace_seconds=SHUTDOWN_GRACE_SECONDS,
    )


def _read_tls(args):
    if args.ssl_cert is None:
        return None
    with open(args.ssl_cert, "rb") as chain, open(args.ssl_key, "rb") as key:
        return chain.read(), key.read()


if __name__ == "__main__":
    sys.exit(main())
