"""Turns the exceptions raised while answering an RPC into gRPC statuses."""

import logging

import grpc
import tensorflow as tf

from keras_bert_lite.serving.errors import ServingError, from_tf_error, invalid_argument

log = logging.getLogger(__name__)


def answer(context, request, respond):
    """Returns `respond()`, or aborts the RPC with the status matching the exception it raised.

    `ServingError`s keep their code; TensorFlow errors raised by the model keep TensorFlow's code and message
    (INVALID_ARGUMENT for bad input data caught inside the graph); anything else is a server bug: INTERNAL,
    logged with its traceback. The server keeps serving in every case.
    """
    try:
        if not request.HasField("model_spec"):
            raise invalid_argument("Missing ModelSpec")
        return respond()
    except ServingError as error:
        status = error
    except tf.errors.OpError as error:
        status = from_tf_error(error)
    except Exception as error:  # noqa: BLE001 - report it to the client, keep serving
        log.exception("internal error answering %s", type(request).__name__)
        status = ServingError(grpc.StatusCode.INTERNAL, f"{type(error).__name__}: {error}")
    context.abort(status.code, status.message)
