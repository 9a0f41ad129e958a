"""TF Serving's REST API, answered on the gRPC services' request path.

A REST call becomes the request proto its gRPC method takes: the URL gives the ModelSpec (`rest_routes`), the
JSON body the rest (`json_predict`, `json_examples`). The very same service method answers it, through the same
`Answerer` as gRPC calls (admission and shedding, limits, deadlines, the access log, the metrics), and the
response proto is written back as TF Serving's JSON. A call that fails is answered {"error": <message>} with
TF Serving's HTTP status for its status code (`http_status`).

Parsing the JSON body, answering and writing the JSON happen on the worker thread the call is admitted to, not
in the event loop that serves every connection of both front ends.
"""

import dataclasses
import json
import time

from tensorflow_serving.apis import (
    classification_pb2,
    get_model_metadata_pb2,
    get_model_status_pb2,
    predict_pb2,
    regression_pb2,
)

from keras_bert_lite.serving import json_examples, json_models, json_predict
from keras_bert_lite.serving.errors import ServingError
from keras_bert_lite.serving.http_status import http_status
from keras_bert_lite.serving.json_request import fill_signature_name, parse_document
from keras_bert_lite.serving.metadata import SIGNATURE_DEF
from keras_bert_lite.serving.rest_routes import route
from keras_bert_lite.serving.rpc import REST, Received

UNROUTED = "-"  # the method of a call whose URL names no API, in the access log and the metrics


@dataclasses.dataclass(frozen=True)
class _Api:
    """One REST API: the gRPC method it is, its request proto, how its body fills it, how its answer is written.

    `fill(call, document, request)` fills the request from the JSON body (None: the API takes no body);
    `respond(prediction service, model service)` is the service method; `render(call, response)` the answer.
    """

    method: str
    request: type
    fill: object
    respond: object
    render: object


def _fill_predict(call, document, request):
    infos = json_predict.input_infos(call.predictions.servable(request.model_spec), request.model_spec.signature_name)
    call.request_format = json_predict.fill_inputs(document, infos, request, call.predictions.limits)


def _fill_examples(call, document, request):
    json_examples.fill_input(document, request, call.predictions.limits)


APIS = {
    "predict": _Api(
        "Predict",
        predict_pb2.PredictRequest,
        _fill_predict,
        lambda predictions, models: predictions.predict,
        lambda call, response: json_predict.answer_json(response, call.request_format),
    ),
    "classify": _Api(
        "Classify",
        classification_pb2.ClassificationRequest,
        _fill_examples,
        lambda predictions, models: predictions.classify,
        lambda call, response: json_examples.classify_json(response),
    ),
    "regress": _Api(
        "Regress",
        regression_pb2.RegressionRequest,
        _fill_examples,
        lambda predictions, models: predictions.regress,
        lambda call, response: json_examples.regress_json(response),
    ),
    "metadata": _Api(
        "GetModelMetadata",
        get_model_metadata_pb2.GetModelMetadataRequest,
        None,
        lambda predictions, models: predictions.metadata,
        lambda call, response: json_models.metadata_json(response),
    ),
    "status": _Api(
        "GetModelStatus",
        get_model_status_pb2.GetModelStatusRequest,
        None,
        lambda predictions, models: models.status,
        lambda call, response: json_models.status_json(response),
    ),
}


class RestContext:
    """What the `Answerer` reads of a REST call: its deadline and its peer.

    Args:
        peer: The client's address, e.g. "ipv4:127.0.0.1:50122".
        timeout: Seconds the call may take from now, or None for no deadline.
    """

    def __init__(self, peer, timeout=None):
        self._peer = peer
        self._deadline = None if timeout is None else time.monotonic() + timeout

    def time_remaining(self):
        return None if self._deadline is None else self._deadline - time.monotonic()

    def peer(self):
        return self._peer


class RestApi:
    """Answers REST calls with the gRPC services.

    Args:
        predictions: The `PredictionService`.
        models: The `ModelService`.
        answerer: The `Answerer` the gRPC services use.
    """

    def __init__(self, predictions, models, answerer):
        self._predictions = predictions
        self._models = models
        self._answerer = answerer

    async def answer(self, http_method, raw_path, read_body, context):
        """Answers one REST call; returns (HTTP status, JSON body bytes).

        Args:
            http_method: "GET", "POST", ...
            raw_path: The URL path as sent (percent-encoded, without the query).
            read_body: Coroutine function returning the body's bytes, or raising a `ServingError` (too large,
                too slow); awaited only for APIs that take a body.
            context: The `RestContext`.
        """
        api, received = self._request(http_method, raw_path)
        if received.error is None and api.fill is not None:
            try:
                body = await read_body()
            except ServingError as error:
                received.error = error
            else:
                received.size = len(body)
                received.body = body
        call = _RestCall(api, self._predictions, received.body)
        respond = api.respond(self._predictions, self._models) if api.respond else None
        outcome = await self._answerer.settle(
            api.method,
            received,
            context,
            call.responder(respond),
            on_worker=api.fill is not None,
            render=call.render,
            protocol=REST,
        )
        if outcome.status is not None:
            return http_status(outcome.status), error_json(outcome.status.message)
        return http_status(None), outcome.rendered

    def _request(self, http_method, raw_path):
        """(the `_Api`, the `Received` request with the URL's ModelSpec, or with the routing error)."""
        try:
            where = route(http_method, raw_path)
        except ServingError as error:
            return _Api(UNROUTED, None, None, None, None), _RestReceived(None, error)
        api = APIS[where.api]
        request = api.request()
        where.fill(request.model_spec)
        if where.api == "metadata":
            request.metadata_field.append(SIGNATURE_DEF)
        return api, _RestReceived(request)


class _RestReceived(Received):
    """A REST request: the proto filled from the URL so far, and the body once read."""

    __slots__ = ("body",)

    def __init__(self, message, error=None):
        super().__init__(message, 0, error)
        self.body = b""


class _RestCall:
    """One REST call's JSON: its body parsed into the request before the service runs, its answer written after."""

    def __init__(self, api, predictions, body):
        self.api = api
        self.predictions = predictions
        self.body = body
        self.request_format = None

    def responder(self, respond):
        """The (request, call) -> response function the `Answerer` runs: fill from JSON, then `respond`."""

        def respond_to(request, call):
            if self.api.fill is not None:
                document = parse_document(self.body)
                fill_signature_name(document, request.model_spec)
                self.api.fill(self, document, request)
            return respond(request, call)

        return respond_to

    def render(self, response):
        return json_bytes(self.api.render(self, response))


def error_json(message):
    """TF Serving's error body: {"error": <message>}."""
    return json_bytes({"error": message})


def json_bytes(value):
    """UTF-8 JSON and a newline, NaN and Infinity as TF Serving writes them; a lone surrogate stays a JSON escape."""
    return (json.dumps(value, ensure_ascii=False, allow_nan=True) + "\n").encode("utf-8", "backslashreplace")
