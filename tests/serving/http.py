"""A real HTTP client for the REST tests (the standard library's urllib), and raw sockets for misbehaving ones."""

import json
import socket
import urllib.error
import urllib.request


def call(method, url, body=None, timeout=60, context=None, headers=None):
    """(HTTP status, Content-Type, parsed JSON body (or the text when it is not JSON)) of one request.

    `body`: bytes or str sent as is, anything else sent as JSON.
    """
    if body is not None and not isinstance(body, (bytes, str)):
        body = json.dumps(body)
    data = body.encode("utf-8") if isinstance(body, str) else body
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            return response.status, response.headers.get("Content-Type"), _parsed(response.read())
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type"), _parsed(error.read())


def get(url, **kwargs):
    return call("GET", url, **kwargs)


def post(url, body, **kwargs):
    return call("POST", url, body, **kwargs)


def raw_connection(port, timeout=60):
    """A plain TCP connection to 127.0.0.1:`port`, for requests no HTTP library would send."""
    return socket.create_connection(("127.0.0.1", port), timeout=timeout)


def read_response(sock):
    """Everything the server sends on `sock` until it closes the connection (bytes)."""
    chunks = []
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _parsed(data):
    try:
        return json.loads(data)
    except ValueError:
        return data.decode("utf-8", "replace")
