"""gRPC status errors raised by the serving code, and the mapping from TensorFlow errors to gRPC codes.

TensorFlow's canonical error codes (`tf.errors.*`) and gRPC status codes share the same numbers, which is how
TF Serving turns a failing `Session::Run` into a gRPC status: an `InvalidArgumentError` raised inside the graph
(e.g. a strict UTF-8 decode of invalid bytes) reaches the client as INVALID_ARGUMENT with TensorFlow's message.
That message is the op's own (`Invalid formatting on input string\n\t [[{{node ...}}]]`): Python's eager runtime
wraps it in a "Graph execution error" preamble with the node's Python stack and an `[Op:__inference_...]` suffix,
which `op_message` takes off again, so clients read what TF Serving would send and never the server's file paths.
"""

import re

import grpc

_CODES_BY_NUMBER = {code.value[0]: code for code in grpc.StatusCode}
# What tensorflow/python/eager adds around an op's message: the preamble, the stack where the failing node was
# defined (indented frames and blank lines, or "<stack traces unavailable>" in a loaded SavedModel), and the
# function's name at the end.
_EAGER_PREAMBLE = re.compile(
    r"\AGraph execution error:\n\n(?:Detected at node .* defined at \(most recent call "
    r"last\):\n(?:<stack traces unavailable>\n|[ \t].*\n|\n)*)?(?:Node: .*\n)?"
)
_EAGER_SUFFIX = re.compile(r" \[Op:[\w.]+\]\Z")
OVERLOADED = "server overloaded"  # how the message of a shed call starts; the client recognises it


class ServingError(Exception):
    """An error that becomes a gRPC status: `code` (a `grpc.StatusCode`) and a human-readable message."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def not_found(message):
    return ServingError(grpc.StatusCode.NOT_FOUND, message)


def invalid_argument(message):
    return ServingError(grpc.StatusCode.INVALID_ARGUMENT, message)


def failed_precondition(message):
    return ServingError(grpc.StatusCode.FAILED_PRECONDITION, message)


def unimplemented(message):
    return ServingError(grpc.StatusCode.UNIMPLEMENTED, message)


def resource_exhausted(message):
    return ServingError(grpc.StatusCode.RESOURCE_EXHAUSTED, message)


def overloaded(slots):
    """UNAVAILABLE for a call shed because all `slots` admission slots are busy (retryable, as in TF Serving)."""
    return ServingError(
        grpc.StatusCode.UNAVAILABLE,
        f"{OVERLOADED}: all {slots} request slots are busy (--max_concurrent_requests {slots}); retry with backoff",
    )


def from_tf_error(error):
    """Converts a `tf.errors.OpError` raised while running a model into a `ServingError` with the same code."""
    return ServingError(_CODES_BY_NUMBER.get(error.error_code, grpc.StatusCode.UNKNOWN), op_message(error))


def op_message(error):
    """A `tf.errors.OpError`'s message as the failing op wrote it (what TF Serving's status carries), without the
    eager runtime's "Graph execution error" preamble, the Python stack and the `[Op:...]` suffix."""
    return _EAGER_SUFFIX.sub("", _EAGER_PREAMBLE.sub("", error.message, count=1))


def code_number(code):
    """The canonical number of a `grpc.StatusCode`, which `tensorflow.error.Code` shares."""
    return code.value[0]
