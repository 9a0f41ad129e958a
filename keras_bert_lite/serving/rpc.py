"""Answers one call, gRPC or REST: parse, admit, run on a worker thread, turn exceptions into statuses, log and
count the call.

Statuses: `ServingError`s keep their code and message; TensorFlow errors raised by the model keep
TensorFlow's code and message (INVALID_ARGUMENT for bad input data caught inside the graph). Anything else is
a server bug, and so are INTERNAL and UNKNOWN errors from TensorFlow: the client gets INTERNAL with a generic
message and an error id, and the log gets the exception text and traceback under the same id. The server
keeps serving in every case.

Requests are parsed by `receiver`, which keeps the size of the serialized message for the access log (asking
a parsed message for its size would serialize it again) and turns unparsable bytes into INVALID_ARGUMENT.
"""

import asyncio
import logging
import time
import uuid

import grpc
import tensorflow as tf
from google.protobuf import message as protobuf_message
from google.protobuf import message_factory

from keras_bert_lite.serving import memory
from keras_bert_lite.serving.access_log import log_call
from keras_bert_lite.serving.calls import Call
from keras_bert_lite.serving.errors import ServingError, from_tf_error, invalid_argument, overloaded
from keras_bert_lite.serving.limits import check_response_size

log = logging.getLogger(__name__)
_SERVER_FAULTS = (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN)
GRPC = "grpc"
REST = "rest"
# gRPC's deadline timer can cancel a call a few milliseconds before `time_remaining()` reaches 0 (seen on a loaded
# 2-core machine): a cancellation that close to the deadline is the deadline, not the client cancelling.
DEADLINE_TIMER_SLACK_S = 0.02


class Received:
    """A request as it arrived: the parsed message (None when it could not be parsed), its size in bytes, and
    why it could not be read: the parser's error, or a `ServingError` the call is answered with as it is."""

    __slots__ = ("message", "size", "error")

    def __init__(self, message, size, error=None):
        self.message = message
        self.size = size
        self.error = error


def receiver(message_class):
    """A gRPC request deserializer that returns a `Received` instead of raising on bad bytes."""

    def deserialize(data):
        try:
            return Received(message_class.FromString(data), len(data))
        except protobuf_message.DecodeError as error:
            return Received(None, len(data), error)

    return deserialize


def service_handler(service_descriptor, methods):
    """The gRPC handler of a protobuf service whose methods are async callables (Received, context) -> response.

    Args:
        service_descriptor: The service's `ServiceDescriptor` (e.g. from `prediction_service_pb2.DESCRIPTOR`).
        methods: {method name: coroutine function}; must cover every method of the service.
    """
    handlers = {}
    for method in service_descriptor.methods:
        request_class = message_factory.GetMessageClass(method.input_type)
        response_class = message_factory.GetMessageClass(method.output_type)
        handlers[method.name] = grpc.unary_unary_rpc_method_handler(
            methods[method.name],
            request_deserializer=receiver(request_class),
            response_serializer=response_class.SerializeToString,
        )
    return grpc.method_handlers_generic_handler(service_descriptor.full_name, handlers)


class Outcome:
    """How a call ended: its response (None when it failed), its status (None when OK) and, when the call
    asked for one, the response rendered (e.g. REST's JSON)."""

    __slots__ = ("response", "status", "rendered")

    def __init__(self, response=None, status=None, rendered=None):
        self.response = response
        self.status = status
        self.rendered = rendered


class Answerer:
    """Answers calls of both front ends (gRPC and REST), running the blocking part of each on a `WorkerPool`
    thread: admission, statuses, the access log and the metrics are the same for both.

    Args:
        workers: The `WorkerPool`; a call that finds no free thread is shed with UNAVAILABLE.
        max_response_bytes: The largest response gRPC may send (the server's message limit): a bigger one is
            answered RESOURCE_EXHAUSTED instead (see `limits.check_response_size`); None checks nothing.
        metrics: The `Metrics` every call is counted in, or None.
    """

    def __init__(self, workers, max_response_bytes=None, metrics=None):
        self._workers = workers
        self._max_response_bytes = max_response_bytes
        self._metrics = metrics

    async def answer(self, method, received, context, respond, on_worker=True):
        """Returns `respond(request, call)`'s response, or aborts the RPC with the status its exception maps to.

        Args:
            method: The method name, for the access log.
            received: The `Received` request.
            context: The `grpc.aio.ServicerContext`.
            respond: Callable (request message, `Call`) -> response message.
            on_worker: Whether `respond` blocks (converts inputs, runs a model): it then runs on a worker thread
                and the call must be admitted; quick answers run in the event loop.
        """
        outcome = await self.settle(method, received, context, respond, on_worker)
        if outcome.status is not None:
            await context.abort(outcome.status.code, outcome.status.message)
        return outcome.response

    async def settle(self, method, received, context, respond, on_worker=True, render=None, protocol=GRPC):
        """Runs a call to its `Outcome`, logged and counted; only cancellation (the caller left) propagates.

        Args:
            method, received, respond, on_worker: As for `answer`.
            context: The call's context: `time_remaining()` (seconds, or None for no deadline) and `peer()`.
            render: Callable (response) -> what the front end sends, run where `respond` ran, after the size
                check; None: nothing rendered.
            protocol: The front end, for the access log and the metrics ("grpc" or "rest").
        """
        start = time.monotonic()
        call = Call(method, context.time_remaining())
        response = rendered = status = error_id = None
        try:
            response, rendered = await self._respond(received, call, respond, on_worker, render)
        except ServingError as error:
            status = error
        except tf.errors.OpError as error:
            status = from_tf_error(error)
        except asyncio.CancelledError:  # the caller left (deadline or cancel): nobody reads an answer
            remaining = context.time_remaining()
            expired = remaining is not None and remaining <= DEADLINE_TIMER_SLACK_S  # None: no deadline
            code = grpc.StatusCode.DEADLINE_EXCEEDED if expired else grpc.StatusCode.CANCELLED
            call.cancel()
            self._record(method, received, None, code, start, context, None, protocol)
            raise
        except Exception as error:  # noqa: BLE001 - a server bug: reported under an id, never to the client
            status, error_id = _server_fault(method, error)
        if status is not None and status.code in _SERVER_FAULTS and error_id is None:
            status, error_id = _server_fault(method, status)
        code = grpc.StatusCode.OK if status is None else status.code
        self._record(method, received, response, code, start, context, error_id, protocol)
        return Outcome(response, status, rendered)

    def _record(self, method, received, response, code, start, context, error_id, protocol):
        seconds = time.monotonic() - start
        log_call(method, received.message, response, code, seconds, received.size, context.peer(), error_id, protocol)
        if self._metrics is not None:
            self._metrics.count_call(protocol, method, received.message, response, code, seconds)

    async def _respond(self, received, call, respond, on_worker, render):
        request = received.message
        if isinstance(received.error, ServingError):
            raise received.error
        if request is None:
            raise invalid_argument(f"cannot parse the request: {received.error}")
        if "model_spec" in request.DESCRIPTOR.fields_by_name and not request.HasField("model_spec"):
            raise invalid_argument("Missing ModelSpec")
        if not on_worker:
            return _answered(respond(request, call), self._max_response_bytes, render)
        future = self._workers.try_run(lambda: _work(respond, received, call, self._max_response_bytes, render))
        if future is None:
            raise overloaded(self._workers.size)
        return await future


def _work(respond, received, call, max_response_bytes, render):
    """What a worker thread does for a call: drop it if its caller left, else respond, then give back memory.

    A response over `max_response_bytes`, which gRPC could not send, is refused instead (RESOURCE_EXHAUSTED).
    Returns (response, rendered response).
    """
    call.check()
    try:
        return _answered(respond(received.message, call), max_response_bytes, render)
    finally:
        if received.size >= memory.BIG_REQUEST_BYTES:
            memory.release()


def _answered(response, max_response_bytes, render):
    """(response, its rendering) once its size is checked."""
    check_response_size(response, max_response_bytes)
    return response, (render(response) if render is not None else None)


def _server_fault(method, error):
    """Logs `error` (an exception or a ServingError) under a new id; returns (the generic status, the id)."""
    error_id = uuid.uuid4().hex[:12]
    if isinstance(error, ServingError):
        log.error("error %s answering %s: %s %s", error_id, method, error.code.name, error.message)
    else:
        log.error("error %s answering %s", error_id, method, exc_info=error)
    return ServingError(
        grpc.StatusCode.INTERNAL, f"internal server error (error id {error_id}; the server's log has the details)"
    ), error_id
