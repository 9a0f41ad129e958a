"""The HTTP server of the REST API and the metrics: aiohttp's low-level server, on the grpc.aio event loop.

aiohttp parses HTTP; this module only bounds what a client may make it hold:

- a body over `max_body_bytes` is refused with 413 before it is read when its Content-Length says so, else as
  soon as that many bytes have arrived;
- a body must arrive within `read_timeout_seconds` (else 408), and so must a request's headers after the
  connection opens or the previous answer is sent (else the connection is closed: aiohttp's keep-alive timer);
- at most `max_connections` connections are open at once: a further one gets a 503 JSON answer and is closed;
- a call may take `timeout_seconds` once its body has arrived (else 504, DEADLINE_EXCEEDED); a client that
  disconnects cancels its call (CANCELLED), as a gRPC client that cancels does, also while it sends its body.

With a certificate and key it serves HTTPS only. `stop()` closes the listening socket, lets calls in flight
finish (up to a grace period) and closes the connections.
"""

import asyncio
import logging
import socket
import ssl

import grpc
from aiohttp import web

from keras_bert_lite.serving.errors import ServingError
from keras_bert_lite.serving.http_status import PAYLOAD_TOO_LARGE, REQUEST_TIMEOUT, HttpRefusal
from keras_bert_lite.serving.metrics import CONTENT_TYPE as METRICS_TYPE
from keras_bert_lite.serving.rest_api import RestContext, error_json
from keras_bert_lite.serving.server import is_loopback

log = logging.getLogger(__name__)
JSON = "application/json"
LINGER_SECONDS = 2.0  # after refusing a body, how long its rest is read and dropped so the client sees the answer
BODY_FLAG = "--rest_api_max_body_mb"
READ_TIMEOUT_FLAG = "--rest_api_read_timeout_seconds"
TIMEOUT_FLAG = "--rest_api_timeout_in_ms"
CONNECTIONS_FLAG = "--rest_api_max_connections"


class RestServer:
    """Serves a `RestApi` (and optionally the metrics) over HTTP on one address.

    Args:
        api: The `RestApi`.
        host: Interface to bind; 127.0.0.1 keeps the server local.
        port: TCP port; 0 picks a free one (`bind()` returns it).
        max_body_bytes: Largest request body.
        read_timeout_seconds: Time a request's headers, and then its body, each have to arrive.
        timeout_seconds: Time a call may take once its body has arrived; None: no limit.
        max_connections: Most connections open at once.
        tls: None, or (certificate chain PEM path, private key PEM path) to serve HTTPS.
        metrics: The `Metrics` to serve at `metrics_path`, or None.
        metrics_path: URL path of the metrics.
        grace_seconds: How long `stop()` lets calls in flight finish.
    """

    def __init__(
        self,
        api,
        host,
        port,
        *,
        max_body_bytes,
        read_timeout_seconds,
        timeout_seconds,
        max_connections,
        tls=None,
        metrics=None,
        metrics_path=None,
        grace_seconds=30.0,
    ):
        self._api = api
        self.host = host
        self.port = port
        self._limits = (max_body_bytes, read_timeout_seconds, timeout_seconds)
        self._metrics = (metrics, metrics_path) if metrics is not None and metrics_path else (None, None)
        self._tls = tls
        self._socket = None
        self._server = _ConnectionLimitedServer(
            self._handle,
            max_connections,
            handler_cancellation=True,
            keepalive_timeout=read_timeout_seconds,
            lingering_time=LINGER_SECONDS,
            access_log=None,
        )
        self._runner = web.ServerRunner(self._server, shutdown_timeout=grace_seconds)

    def bind(self):
        """Binds the address (before the model loads, so a busy port fails fast); returns the bound port.

        Raises:
            OSError: When the address cannot be bound.
        """
        host = self.host.strip("[]")
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        try:
            self._socket = socket.create_server((host, self.port), family=family)
        except (OSError, OverflowError) as error:
            raise OSError(f"cannot listen on {self.host}:{self.port} (REST): {error}") from None
        if self._tls is None and not is_loopback(self.host):
            log.warning(
                "Serving REST on %s:%d without TLS: anyone who can reach this address can call the model and "
                "read its answers in clear; pass --ssl_cert/--ssl_key, or bind --host 127.0.0.1",
                self.host,
                self.port,
            )
        return self._socket.getsockname()[1]

    async def start(self):
        """Starts answering on the bound socket."""
        await self._runner.setup()
        await web.SockSite(self._runner, self._socket, ssl_context=_ssl_context(self._tls)).start()

    async def stop(self):
        """Stops accepting connections, lets calls in flight finish (up to the grace period), closes the rest."""
        await self._runner.cleanup()

    async def _handle(self, request):
        metrics, metrics_path = self._metrics
        if metrics is not None and request.path == metrics_path and request.method == "GET":
            return web.Response(body=metrics.exposition(), headers={"Content-Type": METRICS_TYPE})
        status, body = await self._answer(request)
        response = web.Response(status=status, body=body, content_type=JSON)
        if status in (PAYLOAD_TOO_LARGE, REQUEST_TIMEOUT):  # the body was not read to its end: start afresh
            response.force_close()
        return response

    async def _answer(self, request):
        peer = _peer(request)
        timeout = self._limits[2]
        context = RestContext(peer, timeout)
        answering = self._api.answer(request.method, request.url.raw_path, lambda: self._read_body(request), context)
        if timeout is None:
            return await answering
        try:
            return await asyncio.wait_for(answering, timeout)
        except asyncio.TimeoutError:
            return 504, error_json(f"Deadline exceeded: the call took longer than {timeout:g} s ({TIMEOUT_FLAG})")

    async def _read_body(self, request):
        max_bytes, read_timeout, _ = self._limits
        if request.content_length is not None and request.content_length > max_bytes:
            raise _too_large(f"the body is {request.content_length} bytes", max_bytes)
        if request.headers.get("Expect", "").lower() == "100-continue":
            await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        try:
            return await asyncio.wait_for(_read_at_most(request, max_bytes), read_timeout)
        except asyncio.TimeoutError:
            raise HttpRefusal(
                grpc.StatusCode.DEADLINE_EXCEEDED,
                f"the request body did not arrive within {read_timeout:g} s ({READ_TIMEOUT_FLAG})",
                REQUEST_TIMEOUT,
            ) from None


async def _read_at_most(request, max_bytes):
    chunks, size = [], 0
    while True:
        try:
            chunk = await request.content.readany()
        except ConnectionError:  # never raised out of the task wait_for runs this in: logged as never retrieved
            raise ServingError(
                grpc.StatusCode.CANCELLED, "the client closed the connection before its request body arrived"
            ) from None
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > max_bytes:
            raise _too_large(f"the body is over {size} bytes", max_bytes)
        chunks.append(chunk)


def _too_large(what, max_bytes):
    return HttpRefusal(
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        f"{what}; this server takes at most {max_bytes} bytes "
        f"per request body ({BODY_FLAG}): split the request, or "
        f"raise {BODY_FLAG}",
        PAYLOAD_TOO_LARGE,
    )


class _ConnectionLimitedServer(web.Server):
    """aiohttp's server, answering a connection beyond `max_connections` open ones with 503 and closing it."""

    def __init__(self, handler, max_connections, **kwargs):
        super().__init__(handler, **kwargs)
        self._max_connections = max_connections

    def __call__(self):
        if len(self.connections) >= self._max_connections:
            return _Refused(self._max_connections)
        return super().__call__()


class _Refused(asyncio.Protocol):
    """A connection over the limit: one 503 answer with TF Serving's error body, then closed.

    The answer goes out at once and the connection is half-closed, while what the client sends is read and
    dropped until it closes too (or `LINGER_SECONDS` pass): closing outright while the client still writes its
    request made the client fail on a broken pipe before it read the answer.
    """

    def __init__(self, max_connections):
        self._body = error_json(
            f"server overloaded: all {max_connections} REST connections are in use "
            f"({CONNECTIONS_FLAG} {max_connections}); retry with backoff"
        )
        self._closing = None

    def connection_made(self, transport):
        head = (
            f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: {JSON}\r\nContent-Length: {len(self._body)}\r\n"
            f"Connection: close\r\n\r\n"
        )
        transport.write(head.encode("ascii") + self._body)
        if transport.can_write_eof():
            transport.write_eof()
        self._closing = asyncio.get_running_loop().call_later(LINGER_SECONDS, transport.close)

    def data_received(self, data):
        """Drops the request: it has been answered."""

    def connection_lost(self, exc):
        if self._closing is not None:
            self._closing.cancel()


def _ssl_context(tls):
    if tls is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*tls)
    return context


def _peer(request):
    address = request.transport.get_extra_info("peername") if request.transport is not None else None
    if not address:
        return "-"
    host, port = address[:2]
    return f"ipv6:[{host}]:{port}" if ":" in host else f"ipv4:{host}:{port}"
