"""The asyncio gRPC server: binds the address (with TLS or without, warning when exposed) and serves handlers.

It is a `grpc.aio` server: requests are read and answers written in the event loop, so a client that opens a
stream and never sends its request holds no thread (see `workers` for where the blocking work runs).
"""

import ipaddress
import logging

import grpc

from keras_bert_lite.serving.limits import MIB

log = logging.getLogger(__name__)


class ModelServer:
    """A `grpc.aio` server on one address. Create it inside the running event loop.

    Args:
        handlers: The generic RPC handlers to serve.
        host: Interface to bind; 127.0.0.1 keeps the server local.
        port: TCP port; 0 picks a free one (`bind()` returns it).
        max_message_mb: Largest request and response message, in MiB.
        tls: None, or (certificate chain PEM bytes, private key PEM bytes) to serve over TLS.
    """

    def __init__(self, handlers, host="127.0.0.1", port=8500, max_message_mb=64, tls=None):
        max_bytes = max_message_mb * MIB
        self._server = grpc.aio.server(
            handlers=handlers,
            options=[
                ("grpc.max_send_message_length", max_bytes),
                ("grpc.max_receive_message_length", max_bytes),
                ("grpc.so_reuseport", 0),
            ],
        )  # a second server on the same port must fail, not share it
        self.host = host
        self.address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self._tls = tls

    @property
    def grpc_server(self):
        """The underlying `grpc.aio.Server`, for services that register themselves (health)."""
        return self._server

    def bind(self):
        """Binds the address (before the model loads, so a busy port fails fast); returns the bound port.

        Logs a warning when the address is reachable from other machines and TLS is off.

        Raises:
            OSError: When the address cannot be bound (e.g. the port is in use).
        """
        try:
            if self._tls is None:
                port = self._server.add_insecure_port(self.address)
            else:
                chain, key = self._tls
                port = self._server.add_secure_port(self.address, grpc.ssl_server_credentials([(key, chain)]))
        except RuntimeError as error:
            port, reason = 0, str(error)
        else:
            reason = "the port is in use or the host is not a local interface"
        if not port:
            raise OSError(f"cannot listen on {self.address}: {reason}")
        if self._tls is None and not is_loopback(self.host):
            log.warning(
                "Serving on %s without TLS: anyone who can reach this address can call the model and read "
                "its answers in clear; pass --ssl_cert/--ssl_key, or bind --host 127.0.0.1",
                self.address,
            )
        return port

    async def start(self):
        """Starts answering RPCs on the bound address."""
        await self._server.start()

    async def stop(self, grace_seconds):
        """Stops accepting RPCs, lets in-flight ones finish (up to `grace_seconds`), then returns."""
        await self._server.stop(grace_seconds)


def is_loopback(host):
    """Whether `host` (an IP address or "localhost") is only reachable from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False
