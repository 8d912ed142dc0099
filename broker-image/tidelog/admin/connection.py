"""One blocking connection to a broker: send a request, read its response.

A connection is made with a :class:`~tidelog.security.client_security.ClientSecurity`:
TLS (the broker's host name checked as its settings say), then ApiVersions, then for
SASL the mechanism's exchange (SaslAuthenticationFailed when refused), then the caller's
requests.
"""

from __future__ import annotations

import itertools
import socket
import struct

from tidelog.protocol import ApiKey, api_specs, decode_response, encode_request
from tidelog.protocol.headers import RequestHeader
from tidelog.security.client_security import PLAINTEXT, ClientSecurity
from tidelog.security.sasl_client import authenticate

__all__ = ["BrokerConnection"]

_SIZE = struct.Struct(">i")


class BrokerConnection:
    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str = "tidelog-admin",
        timeout: float = 30.0,
        security: ClientSecurity | None = None,
    ):
        security = security or PLAINTEXT
        self.client_id = client_id
        self._socket = socket.create_connection((host, port), timeout=timeout)
        self._correlation = itertools.count(1)
        try:
            if security.ssl_context is not None:
                self._socket = security.ssl_context.wrap_socket(self._socket, server_hostname=host)
            self._versions = self._negotiate()
            if security.uses_sasl:
                authenticate(
                    self.request,
                    security.sasl_mechanism,
                    security.sasl_username,
                    security.sasl_password,
                )
        except BaseException:
            self._socket.close()
            raise

    def _negotiate(self) -> dict[int, int]:
        response = self.request(ApiKey.API_VERSIONS, 0, {})
        ours = api_specs()
        return {
            item.api_key: min(item.max_version, ours[ApiKey(item.api_key)].max_version)
            for item in response.api_keys
            if item.api_key in {int(k) for k in ours}
        }

    def version(self, api_key: ApiKey) -> int:
        return self._versions[int(api_key)]

    def request(self, api_key: ApiKey, version: int | None, body) -> object:
        """Send ``body`` (an object or dict) and return the decoded response body."""
        version = self.version(api_key) if version is None else version
        header = RequestHeader(
            request_api_key=int(api_key),
            request_api_version=version,
            correlation_id=next(self._correlation),
            client_id=self.client_id,
        )
        frame = encode_request(header, body)
        self._socket.sendall(_SIZE.pack(len(frame)) + frame)
        (size,) = _SIZE.unpack(self._read(4))
        _, response = decode_response(self._read(size), int(api_key), version)
        return response

    def _read(self, count: int) -> bytes:
        chunks, left = [], count
        while left:
            chunk = self._socket.recv(left)
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        self._socket.close()

    def __enter__(self) -> BrokerConnection:
        return self

    def __exit__(self, *_) -> None:
        self.close()
