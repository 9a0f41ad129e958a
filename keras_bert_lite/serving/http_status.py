"""The HTTP status of a REST answer: TF Serving's mapping of the call's status code (its `http_server.cc`).

    OK 200, INVALID_ARGUMENT / FAILED_PRECONDITION / OUT_OF_RANGE 400, UNAUTHENTICATED 401, PERMISSION_DENIED
    403, NOT_FOUND 404, ALREADY_EXISTS / ABORTED 409, RESOURCE_EXHAUSTED 429, CANCELLED 499, UNKNOWN /
    INTERNAL / DATA_LOSS 500, UNIMPLEMENTED 501, UNAVAILABLE 503, DEADLINE_EXCEEDED 504.

Two refusals of the HTTP layer itself keep their own status (`HttpRefusal`): a body over the size limit is 413
(its status code RESOURCE_EXHAUSTED), a body that does not arrive in time 408 (DEADLINE_EXCEEDED).
"""

import grpc

from keras_bert_lite.serving.errors import ServingError

_STATUS = {
    grpc.StatusCode.OK: 200,
    grpc.StatusCode.CANCELLED: 499,
    grpc.StatusCode.UNKNOWN: 500,
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.DEADLINE_EXCEEDED: 504,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.ALREADY_EXISTS: 409,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.FAILED_PRECONDITION: 400,
    grpc.StatusCode.ABORTED: 409,
    grpc.StatusCode.OUT_OF_RANGE: 400,
    grpc.StatusCode.UNIMPLEMENTED: 501,
    grpc.StatusCode.INTERNAL: 500,
    grpc.StatusCode.UNAVAILABLE: 503,
    grpc.StatusCode.DATA_LOSS: 500,
    grpc.StatusCode.UNAUTHENTICATED: 401,
}
PAYLOAD_TOO_LARGE = 413
REQUEST_TIMEOUT = 408
_CODES = {
    400: grpc.StatusCode.INVALID_ARGUMENT,
    401: grpc.StatusCode.UNAUTHENTICATED,
    403: grpc.StatusCode.PERMISSION_DENIED,
    404: grpc.StatusCode.NOT_FOUND,
    REQUEST_TIMEOUT: grpc.StatusCode.DEADLINE_EXCEEDED,
    409: grpc.StatusCode.ABORTED,
    PAYLOAD_TOO_LARGE: grpc.StatusCode.RESOURCE_EXHAUSTED,
    429: grpc.StatusCode.RESOURCE_EXHAUSTED,
    499: grpc.StatusCode.CANCELLED,
    500: grpc.StatusCode.INTERNAL,
    501: grpc.StatusCode.UNIMPLEMENTED,
    503: grpc.StatusCode.UNAVAILABLE,
    504: grpc.StatusCode.DEADLINE_EXCEEDED,
}


class HttpRefusal(ServingError):
    """A `ServingError` the REST front end answers with its own HTTP status instead of its code's."""

    def __init__(self, code, message, http_status):
        super().__init__(code, message)
        self.http_status = http_status


def http_status(error):
    """The HTTP status of a `ServingError`, or 200 for None."""
    if error is None:
        return _STATUS[grpc.StatusCode.OK]
    return getattr(error, "http_status", None) or _STATUS.get(error.code, 500)


def code_of(status):
    """The status code a client reads in an HTTP status (where several codes share one, the likeliest)."""
    return _CODES.get(status, grpc.StatusCode.UNKNOWN)
