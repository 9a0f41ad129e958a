"""One access-log line per call to the TF Serving APIs, answered or refused.

    access Predict model=bert version=3 status=OK latency_ms=4.1 request_bytes=57 peer=ipv4:10.0.0.7:50122 protocol=grpc

A REST call's line names the gRPC method it is (`POST /v1/models/bert:predict` is Predict), its status code (the
HTTP status follows from it, see `http_status`) and `protocol=rest`; `request_bytes` is then the body's size.

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


def log_call(method, request, response, code, seconds, request_bytes, peer, error_id=None, protocol="grpc"):
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
        protocol: The front end the call came through: "grpc" or "rest".
    """
    name, version = model_and_version(request, response)
    line = (
        f"access {method} model={escape(name) if name else '-'} version={version} status={code.name} "
        f"latency_ms={seconds * 1000:.1f} request_bytes={request_bytes} peer={escape(peer)} protocol={protocol}"
    )
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


def model_and_version(request, response):
    """(the model name the request asked for or None, the version that answered or was asked for or "-")."""
    spec = _model_spec(request)
    return (spec.name if spec is not None and spec.name else None), _version(spec, response)


def _model_spec(message):
    if message is not None and message.DESCRIPTOR.fields_by_name.get("model_spec") and message.HasField("model_spec"):
        return message.model_spec
    return None


def _version(request_spec, response):
    for spec in (_model_spec(response), request_spec):
        if spec is not None and spec.HasField("version"):
            return str(spec.version.value)
    return "-"
