"""The server's Prometheus metrics (with prometheus-client), under TF Serving's names where it has them.

- `:tensorflow:serving:request_count{model_name, status, API, version, entrypoint}`: calls, by status code name
  (OK, INVALID_ARGUMENT, ...). TF Serving's counter, whose labels are model_name and status; the other labels
  are added (sum over them for TF Serving's series). Written as TF Serving writes it: samples under the metric's
  own name, without the `_total` that prometheus-client gives its counters (so typed `untyped`).
- `:tensorflow:serving:request_latency{model_name, API, entrypoint}`: latency of the calls answered OK, in
  microseconds, in TF Serving's buckets (10 us x 1.8^i).
- `:tensorflow:serving:batching:batch_size{model_name, op_name}`: examples per batch the batcher ran (op_name:
  the signature), in TensorFlow's buckets for it (1 x 1.5^i).
- `kbl_serving_model_version_state{model_name, version, state}`: 1 for the state each version of each model is
  in (LOADING, AVAILABLE, UNLOADING, END); TF Serving exports no such metric.
- `kbl_serving_calls_in_flight`: calls admitted and not finished (each holds one of --max_concurrent_requests
  worker threads).
- `process_*`: the server process's memory, CPU time and open files (prometheus-client's).

API is the gRPC method a call is (Predict, Classify, GetModelMetadata, GetModelStatus, ...; a REST call too),
entrypoint GRPC or REST. A model name that the server does not serve is counted as "-", and so is a version it
does not have: names and versions come from clients, and would otherwise add series without bound.
"""

import collections
import threading

import prometheus_client
from prometheus_client import core
from tensorflow_serving.apis import get_model_status_pb2

from keras_bert_lite.serving.access_log import model_and_version

REQUEST_COUNT = ":tensorflow:serving:request_count"
REQUEST_LATENCY = ":tensorflow:serving:request_latency"
BATCH_SIZE = ":tensorflow:serving:batching:batch_size"
MODEL_STATE = "kbl_serving_model_version_state"
IN_FLIGHT = "kbl_serving_calls_in_flight"
UNKNOWN = "-"
LATENCY_BUCKETS_US = tuple(10 * 1.8**i for i in range(33))  # TF Serving's Buckets::Exponential(10, 1.8, 33)
BATCH_SIZE_BUCKETS = tuple(1.5**i for i in range(20))  # TensorFlow's Buckets::Exponential(1, 1.5, 20)
CONTENT_TYPE = prometheus_client.CONTENT_TYPE_LATEST
_STATE_NAME = get_model_status_pb2.ModelVersionStatus.State.Name


class Metrics:
    """The metrics of one server, in their own registry.

    Args:
        model_states: Callable () -> {model name: {version: VersionState}} of every model served (a manager's
            `version_states()` per model); read at every scrape and call.
        calls_in_flight: Callable () -> calls admitted and not finished (`WorkerPool.busy`); None: not exported.
    """

    def __init__(self, model_states, calls_in_flight=None):
        prometheus_client.disable_created_metrics()  # TF Serving writes no `_created` series
        self.registry = prometheus_client.CollectorRegistry()
        self._model_states = model_states
        self._requests = _UntypedCounter(
            REQUEST_COUNT, "The total number of requests.", ("model_name", "status", "API", "version", "entrypoint")
        )
        self._latency = prometheus_client.Histogram(
            REQUEST_LATENCY,
            "Distribution of wall time (in microseconds) for Tensorflow Serving request.",
            ("model_name", "API", "entrypoint"),
            buckets=LATENCY_BUCKETS_US,
            registry=self.registry,
        )
        self._batch_size = prometheus_client.Histogram(
            BATCH_SIZE,
            "Tracks the batch size distribution on the batch result by model_name.",
            ("model_name", "op_name"),
            buckets=BATCH_SIZE_BUCKETS,
            registry=self.registry,
        )
        self.registry.register(self._requests)
        self.registry.register(_StateCollector(model_states))
        if calls_in_flight is not None:
            gauge = prometheus_client.Gauge(IN_FLIGHT, "Calls admitted and not finished.", registry=self.registry)
            gauge.set_function(calls_in_flight)
        prometheus_client.ProcessCollector(registry=self.registry)

    def count_call(self, protocol, method, request, response, code, seconds):
        """Counts one call (and its latency, when OK).

        Args:
            protocol: "grpc" or "rest".
            method: The gRPC method the call is, e.g. "Predict".
            request, response: The request and response messages (None when missing).
            code: The `grpc.StatusCode` the call ended with.
            seconds: The call's latency.
        """
        model, version = self._labels(request, response)
        entrypoint = protocol.upper()
        self._requests.inc((model, code.name, method, version, entrypoint))
        if code.name == "OK":
            self._latency.labels(model, method, entrypoint).observe(seconds * 1e6)

    def count_batch(self, model_name, signature_name, examples):
        """Counts one batch the batcher ran (`Batcher`'s on_batch)."""
        self._batch_size.labels(model_name or UNKNOWN, signature_name).observe(examples)

    def exposition(self):
        """The metrics in Prometheus' text format (bytes)."""
        return prometheus_client.generate_latest(self.registry)

    def _labels(self, request, response):
        """(model, version) labels: the request's, each "-" unless the server knows it."""
        name, version = model_and_version(request, response)
        versions = self._model_states().get(name)
        if versions is None:
            return UNKNOWN, UNKNOWN
        return name, version if version.isdigit() and int(version) in versions else UNKNOWN


class _UntypedCounter:
    """A counter written as TF Serving writes its counters: samples named as the metric, without `_total`."""

    def __init__(self, name, documentation, labels):
        self._name = name
        self._documentation = documentation
        self._labels = labels
        self._counts = collections.Counter()
        self._lock = threading.Lock()

    def inc(self, values):
        with self._lock:
            self._counts[values] += 1

    def collect(self):
        family = core.UnknownMetricFamily(self._name, self._documentation, labels=self._labels)
        with self._lock:
            counts = sorted(self._counts.items())
        for values, count in counts:
            family.add_metric(list(values), count)
        yield family


class _StateCollector:
    """The state of every version of every model, read at scrape time."""

    def __init__(self, model_states):
        self._model_states = model_states

    def collect(self):
        family = core.GaugeMetricFamily(
            MODEL_STATE, "1 for the state each version of each model is in.", labels=("model_name", "version", "state")
        )
        for model, versions in sorted(self._model_states().items()):
            for version, state in sorted(versions.items()):
                family.add_metric([model, str(version), _STATE_NAME(state.state)], 1)
        yield family
