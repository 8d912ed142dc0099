"""One asyncio connection to another broker: send a request, await its response.

Requests on one connection are answered in order (the broker serves a connection one
request at a time), so a caller sends one request and awaits its response before the
next; the correlation id guards against a response to something else.

A connection is made with a :class:`~tidelog.security.client_security.ClientSecurity`:
TLS (the broker's host name checked as its settings say) and, for SASL, the mechanism's
exchange before any other request; a refusal is a :class:`SaslAuthenticationFailed`,
one of :data:`CONNECTION_ERRORS`, since a broker's own connection retries it like any
failed connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import struct

from tidelog.protocol import ApiKey, MalformedMessageError, decode_response, encode_request
from tidelog.protocol.headers import RequestHeader
from tidelog.security.client_security import PLAINTEXT, ClientSecurity
from tidelog.security.sasl_client import SaslAuthenticationFailed, authenticate_async

__all__ = ["CONNECTION_ERRORS", "AsyncBrokerConnection"]

_SIZE = struct.Struct(">i")
# What opening a connection or a request on it raises when the connection fails.
CONNECTION_ERRORS = (
    OSError,
    asyncio.IncompleteReadError,
    asyncio.TimeoutError,
    SaslAuthenticationFailed,
)


class AsyncBrokerConnection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str):
        self._reader = reader
        self._writer = writer
        self._client_id = client_id
        self._correlation = itertools.count(1)

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        *,
        client_id: str,
        connect_timeout_s: float | None = None,
        security: ClientSecurity = PLAINTEXT,
    ) -> AsyncBrokerConnection:
        """A connection to ``host:port``, its TLS handshake and SASL exchange done;
        TimeoutError once ``connect_timeout_s`` has passed without a connection (Kafka's
        ``socket.connection.setup.timeout.ms``, the TLS handshake included): a connect to
        an address nobody holds any more, such as a restarted pod's old one, which its
        name may resolve to for a moment, hangs rather than fails."""
        context = security.ssl_context
        async with asyncio.timeout(connect_timeout_s):
            reader, writer = await asyncio.open_connection(
                host, port, ssl=context, server_hostname=host if context else None
            )
        connection = cls(reader, writer, client_id)
        if security.uses_sasl:
            try:
                await authenticate_async(
                    connection.request,
                    security.sasl_mechanism,
                    security.sasl_username,
                    security.sasl_password,
                )
            except BaseException:
                connection.close()
                raise
        return connection

    async def request(self, api_key: ApiKey, version: int, body: object) -> object:
        """Send ``body`` and return the decoded response body. Raises OSError or
        asyncio.IncompleteReadError when the connection fails, MalformedMessageError on a
        response that does not match the request."""
        correlation_id = next(self._correlation)
        header = RequestHeader(
            request_api_key=int(api_key),
            request_api_version=version,
            correlation_id=correlation_id,
            client_id=self._client_id,
        )
        frame = encode_request(header, body)
        self._writer.write(_SIZE.pack(len(frame)) + frame)
        await self._writer.drain()
        (size,) = _SIZE.unpack(await self._reader.readexactly(4))
        response_header, response = decode_response(
            await self._reader.readexactly(size), int(api_key), version
        )
        if response_header.correlation_id != correlation_id:
            raise MalformedMessageError(
                f"response correlation id {response_header.correlation_id} for request "
                f"{correlation_id}"
            )
        return response

    async def until_closed_by_peer(self) -> None:
        """Return when the peer closes or resets the connection. Only for a connection
        with no request under way (a broker sends nothing unasked, so whatever arrives
        means the connection is done); cancel it before the next :meth:`request`."""
        with contextlib.suppress(OSError):
            await self._reader.read(1)

    def close(self) -> None:
        """Close at once, dropping whatever is unsent: the peer may be stuck, and a
        graceful close would wait for it to read."""
        self._writer.transport.abort()
