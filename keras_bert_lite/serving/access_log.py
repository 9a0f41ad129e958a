"""One access-log line per call to the TF Serving APIs, answered or refused.

    access Predict model=bert version=3 status=OK latency_ms=4.1 request_bytes=57 peer=ipv4:127.0.0.1:50122

`version` is the version that answered, else the one the request named, else "-". Calls refused by the limits,
shed when the server is full, dropped because the caller left, or failed inside get a line too; an INTERNAL
line carries the `error_id` that its traceback in the log and the client's message share. Health checks are
not logged (load balancers call them every few seconds).

The model name comes from the client and the peer address partly does: in them, whitespace, control characters,
other unprintable characters and backslashes are written as backslash escapes (`\\n`, `\\x20`, `\\\\`), so that
a request can neither start a forged line nor add a field to its own.
"""

import logging

log = logging.getLogger("keras_bert_lite.serving.access")
_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def log_call(method, request, response, code, seconds, request_bytes, peer, error_id=None):
    """Writes the access-log line of one call.

    Args:
        method: The RPC's method name, e.g. "Predict".
        request: The request message (None when it could not be parsed).
        response: The response message, or None when the call failed.
        code: The `grpc.StatusCode` the call ended with.
        seconds: The call's latency.
        request_bytes: Size of the serialized request.
        peer: The client's address, as gRPC reports it.
        error_id: For INTERNAL errors, the id of the logged traceback.
    """
    spec = _model_spec(request)
    model = escape(spec.name) if spec is not None and spec.name else "-"
    line = (f"access {method} model={model} version={_version(spec, response)} status={code.name} "
            f"latency_ms={seconds * 1000:.1f} request_bytes={request_bytes} peer={escape(peer)}")
    if error_id is not None:
        line += f" error_id={error_id}"
    log.info("%s", line)


def escape(text):
    """`text` with whitespace, unprintable characters and backslashes as backslash escapes: one log field."""
    return "".join(_escape_char(char) for char in str(text))


def _escape_char(char):
    if char in _ESCAPES:
        return _ESCAPES[char]
    if char.isprintable() and not char.isspace():
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _model_spec(message):
    if message is not None and message.DESCRIPTOR.fields_by_name.get("model_spec") and message.HasField("model_spec"):
        return message.model_spec
    return None


def _version(request_spec, response):
    for spec in (_model_spec(response), request_spec):
        if spec is not None and spec.HasField("version"):
            return str(spec.version.value)
    return "-"
