"""SASL on the client side of a connection (the broker's own, the admin tools'): PLAIN and
SCRAM-SHA-256/512, as Kafka's clients speak them.

:func:`authenticate` (blocking) and :func:`authenticate_async` take a connection's
``request(api_key, version, body)`` method, called after ApiVersions and before anything
else: SaslHandshake v1 names the mechanism, then SaslAuthenticate requests carry the
mechanism's tokens (v2 is flexible and tagged; v1 is what every broker since Kafka 2.0
answers, so that is what is sent). Both drive one sans-IO exchange
(:func:`_exchange`), and raise :class:`SaslAuthenticationFailed` with the broker's
message when the broker refuses, or when the broker's SCRAM answer does not prove that
it knows the user's credential.
"""

from __future__ import annotations

import base64
import hmac
import secrets
from collections.abc import Awaitable, Callable, Generator

from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from tidelog.security.scram_credentials import SCRAM_MECHANISMS

__all__ = [
    "CLIENT_MECHANISMS",
    "SaslAuthenticationFailed",
    "ScramClient",
    "authenticate",
    "authenticate_async",
    "plain_client_token",
]

HANDSHAKE_VERSION = 1
AUTHENTICATE_VERSION = 1

CLIENT_MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)

Request = tuple[ApiKey, int, dict]


class SaslAuthenticationFailed(Exception):
    """The broker refused the client's SASL authentication; ``error_code`` is Kafka's
    (SASL_AUTHENTICATION_FAILED, UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE)."""

    def __init__(self, message: str, error_code: int = ErrorCode.SASL_AUTHENTICATION_FAILED):
        super().__init__(message)
        self.error_code = error_code


def plain_client_token(username: str, password: str) -> bytes:
    """PLAIN's one message: no authzid, the user, the password."""
    return f"\0{username}\0{password}".encode()


def _sasl_name(username: str) -> str:
    return username.replace("=", "=3D").replace(",", "=2C")


class ScramClient:
    """One SCRAM exchange, client side: :meth:`first`, then :meth:`final` with the
    server's first message, then :meth:`verify` the server's final message. With
    ``token_auth``, ``username`` and ``password`` are a delegation token's id and HMAC."""

    def __init__(
        self,
        mechanism: str,
        username: str,
        password: str,
        *,
        token_auth: bool = False,
        nonce: str | None = None,
    ):
        self._mechanism = SCRAM_MECHANISMS[mechanism]
        self._password = password
        self._nonce = nonce if nonce is not None else secrets.token_urlsafe(24)
        self._bare = f"n={_sasl_name(username)},r={self._nonce}"
        if token_auth:  # Kafka's extension: the user is a delegation token's id
            self._bare += ",tokenauth=true"
        self._server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self._bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        mechanism = self._mechanism
        text = server_first.decode()
        fields = dict(item.partition("=")[::2] for item in text.split(","))
        try:
            nonce, salt, iterations = fields["r"], base64.b64decode(fields["s"]), int(fields["i"])
        except (KeyError, ValueError) as error:
            raise SaslAuthenticationFailed(
                f"invalid SCRAM server first message ({error})"
            ) from None
        if not nonce.startswith(self._nonce) or nonce == self._nonce:
            raise SaslAuthenticationFailed("SCRAM server nonce does not extend the client's")
        if iterations < mechanism.min_iterations:
            raise SaslAuthenticationFailed(
                f"SCRAM iterations {iterations} below the minimum {mechanism.min_iterations}"
            )
        salted = mechanism.salted_password(self._password, salt, iterations)
        without_proof = f"c=biws,r={nonce}"  # biws: base64 of the gs2 header "n,,"
        auth_message = f"{self._bare},{text},{without_proof}".encode()
        client_key = mechanism.client_key(salted)
        signature = mechanism.hmac(mechanism.hash(client_key), auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = mechanism.hmac(mechanism.server_key(salted), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        text = server_final.decode(errors="replace")
        if text.startswith("e="):
            raise SaslAuthenticationFailed(f"SCRAM server error: {text[2:]}")
        signature = base64.b64decode(text[2:]) if text.startswith("v=") else b""
        if not hmac.compare_digest(signature, self._server_signature):
            raise SaslAuthenticationFailed("SCRAM server signature is invalid")


def _exchange(
    mechanism: str, username: str, password: str, token_auth: bool
) -> Generator[Request, object, None]:
    """The requests of one authentication, each sent with its response sent back in."""
    if mechanism not in CLIENT_MECHANISMS:
        raise SaslAuthenticationFailed(
            f"SASL mechanism {mechanism} is not supported by this client "
            f"({', '.join(CLIENT_MECHANISMS)})",
            ErrorCode.UNSUPPORTED_SASL_MECHANISM,
        )
    handshake = yield ApiKey.SASL_HANDSHAKE, HANDSHAKE_VERSION, {"mechanism": mechanism}
    if handshake.error_code != ErrorCode.NONE:
        raise SaslAuthenticationFailed(
            f"the broker does not serve SASL mechanism {mechanism} "
            f"(enabled: {', '.join(handshake.mechanisms) or 'none'})",
            handshake.error_code,
        )

    def authenticate(token: bytes):
        response = yield ApiKey.SASL_AUTHENTICATE, AUTHENTICATE_VERSION, {"auth_bytes": token}
        if response.error_code != ErrorCode.NONE:
            raise SaslAuthenticationFailed(
                response.error_message or ErrorCode(response.error_code).name,
                response.error_code,
            )
        return response.auth_bytes

    if mechanism == "PLAIN":
        yield from authenticate(plain_client_token(username, password))
    else:
        client = ScramClient(mechanism, username, password, token_auth=token_auth)
        server_first = yield from authenticate(client.first())
        server_final = yield from authenticate(client.final(server_first))
        client.verify(server_final)


def authenticate(
    request: Callable[[ApiKey, int, dict], object],
    mechanism: str,
    username: str,
    password: str,
    *,
    token_auth: bool = False,
) -> None:
    """Authenticate a blocking connection; SaslAuthenticationFailed if refused."""
    exchange = _exchange(mechanism, username, password, token_auth)
    try:
        sent = next(exchange)
        while True:
            sent = exchange.send(request(*sent))
    except StopIteration:
        return


async def authenticate_async(
    request: Callable[[ApiKey, int, dict], Awaitable[object]],
    mechanism: str,
    username: str,
    password: str,
    *,
    token_auth: bool = False,
) -> None:
    """Authenticate an asyncio connection; SaslAuthenticationFailed if refused."""
    exchange = _exchange(mechanism, username, password, token_auth)
    try:
        sent = next(exchange)
        while True:
            sent = exchange.send(await request(*sent))
    except StopIteration:
        return
