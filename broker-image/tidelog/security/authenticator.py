"""A SASL connection's authentication: which requests it may send when, the mechanism's
exchange, the principal it ends with, and its session's lifetime (Kafka's
``SaslServerAuthenticator``).

States and what each admits (:meth:`ConnectionAuthenticator.admit`; anything else closes
the connection, with one log line):

==================  ===========================================  =========================
state               admits                                       then
==================  ===========================================  =========================
HANDSHAKE           ApiVersions, SaslHandshake                   v0: RAW_TOKENS, v1:
                                                                 AUTHENTICATE; an unknown
                                                                 mechanism: FAILED
RAW_TOKENS          frames that are the mechanism's raw tokens   COMPLETE, or closed
AUTHENTICATE        SaslAuthenticate                             COMPLETE or FAILED
COMPLETE            every request; once the session expired      a SaslHandshake v1 starts
                    (``connections.max.reauth.ms``) only         re-authentication
                    SaslHandshake                                (REAUTHENTICATE)
REAUTHENTICATE      SaslAuthenticate                             COMPLETE (same principal
                                                                 and mechanism) or FAILED
FAILED              nothing                                      closed
==================  ===========================================  =========================

Before authentication a frame above ``sasl.server.max.receive.size`` closes the
connection. A failed exchange is answered (SASL_AUTHENTICATION_FAILED, with no more
reason than Kafka gives, see :mod:`tidelog.security.sasl.mechanism`) only after
``connection.failed.authentication.delay.ms``; raw tokens get no answer, the connection
is closed after the delay. A failed connection is closed once its answer is written, as
Kafka closes it. KIP-368: SaslAuthenticate v1+ tells the client its session's
lifetime; a client that re-authenticates within it goes on, one that does not is closed
at its next request.

No I/O here: the dispatcher calls :meth:`admit` and :meth:`raw_token`, the SaslHandshake
and SaslAuthenticate handlers call :meth:`handshake` and :meth:`authenticate`.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from tidelog.security.principal import KafkaPrincipal
from tidelog.security.sasl import PlainServer, SaslFailure, ScramServer, ServerMechanism
from tidelog.security.sasl.plain import PLAIN
from tidelog.security.sasl_listeners import SASL_PROTOCOLS, SaslListener, sasl_listeners
from tidelog.security.scram_credentials import ScramCredential, user_credentials
from tidelog.server.config_key import ConfigError
from tidelog.server.network import CloseConnection, ConnectionContext

__all__ = [
    "AuthenticateResult",
    "AuthenticationSettings",
    "AuthenticatorFactory",
    "ConnectionAuthenticator",
    "State",
]

logger = logging.getLogger(__name__)

_SIZE_BYTES = 4


class State(enum.Enum):
    HANDSHAKE = "SASL handshake"
    RAW_TOKENS = "SASL authentication with raw tokens"
    AUTHENTICATE = "SASL authentication"
    COMPLETE = "authenticated"
    REAUTHENTICATE = "SASL re-authentication"
    FAILED = "failed SASL authentication"


_ADMITS = {
    State.HANDSHAKE: frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE}),
    State.AUTHENTICATE: frozenset({ApiKey.SASL_AUTHENTICATE}),
    State.REAUTHENTICATE: frozenset({ApiKey.SASL_AUTHENTICATE}),
    State.FAILED: frozenset(),
}


@dataclass(frozen=True)
class AuthenticationSettings:
    failed_delay_ms: int = 100  # connection.failed.authentication.delay.ms
    reauth_ms: int = 0  # connections.max.reauth.ms
    max_receive_size: int = 524288  # sasl.server.max.receive.size

    @classmethod
    def from_config(cls, config) -> AuthenticationSettings:
        return cls(
            config["connection.failed.authentication.delay.ms"],
            config["connections.max.reauth.ms"],
            config["sasl.server.max.receive.size"],
        )


@dataclass(frozen=True)
class AuthenticateResult:
    """What a SaslAuthenticate response carries."""

    error_code: int
    error_message: str | None = ""  # Kafka's answers carry an empty one, not null
    auth_bytes: bytes = b""
    session_lifetime_ms: int = 0


MechanismFactory = Callable[[str], ServerMechanism]


class ConnectionAuthenticator:
    """One SASL connection's authentication; sets ``context.principal`` when done."""

    def __init__(
        self,
        context: ConnectionContext,
        listener: SaslListener,
        mechanisms: MechanismFactory,
        settings: AuthenticationSettings,
        clock: Callable[[], float] = time.monotonic,
        wall_clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ):
        self._context = context
        self._wall_clock_ms = wall_clock_ms
        self._listener = listener
        self._new_mechanism = mechanisms
        self._settings = settings
        self._clock = clock
        self.state = State.HANDSHAKE
        self._mechanism: ServerMechanism | None = None
        self._mechanism_name: str | None = None  # of the last successful authentication
        self._expires_at: float | None = None
        self._lifetime_ms: int | None = None
        # whether the principal logged in with a delegation token (which may not ask
        # for delegation tokens, as Kafka has it)
        self.token_authenticated = False

    @property
    def expects_raw_token(self) -> bool:
        """Whether the next frame is a raw token (after SaslHandshake v0)."""
        return self.state is State.RAW_TOKENS

    def admits_all(self) -> bool:
        """Whether every request passes (authenticated, the session not expired)."""
        return self.state is State.COMPLETE and (
            self._expires_at is None or self._clock() < self._expires_at
        )

    def _where(self) -> str:
        context = self._context
        return f"client at {context.peer_host}:{context.peer_port} on {context.listener}"

    def admit(self, frame_size: int, api_key: int) -> None:
        """Close (CloseConnection) unless the connection's state admits a request of
        ``api_key`` in a frame of ``frame_size`` bytes."""
        state = self.state
        if state is State.COMPLETE:
            if (
                self._expires_at is not None
                and self._clock() >= self._expires_at
                and api_key != ApiKey.SASL_HANDSHAKE
            ):
                raise CloseConnection(
                    f"SASL session of {self._context.principal} expired without "
                    f"re-authentication ({self._where()})"
                )
            return
        self._check_size(frame_size)
        if api_key not in _ADMITS[state]:
            try:
                name = ApiKey(api_key).name
            except ValueError:
                name = f"API {api_key}"
            raise CloseConnection(
                f"Unexpected Kafka request of type {name} during {state.value} ({self._where()})"
            )

    def _check_size(self, frame_size: int) -> None:
        if frame_size > self._settings.max_receive_size:
            raise CloseConnection(
                f"frame of {frame_size} bytes during {self.state.value} is larger than "
                f"sasl.server.max.receive.size={self._settings.max_receive_size} "
                f"({self._where()})"
            )

    def handshake(self, mechanism: str, version: int) -> tuple[int, list[str]]:
        """SaslHandshake: (error code, the listener's enabled mechanisms)."""
        enabled = list(self._listener.mechanisms)
        if self.state is State.COMPLETE:
            if version < 1:  # Kafka's request handler answers it, with no mechanisms
                return ErrorCode.ILLEGAL_SASL_STATE, []
            if mechanism != self._mechanism_name:
                self._fail(f"re-authentication with {mechanism}, not {self._mechanism_name}")
                return ErrorCode.UNSUPPORTED_SASL_MECHANISM, [self._mechanism_name]
            self._mechanism = self._new_mechanism(mechanism)
            self.state = State.REAUTHENTICATE
            return ErrorCode.NONE, enabled
        if self.state is not State.HANDSHAKE:
            return ErrorCode.ILLEGAL_SASL_STATE, enabled
        if mechanism not in enabled:
            self._fail(f"unsupported SASL mechanism {mechanism!r}")
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM, enabled
        self._mechanism = self._new_mechanism(mechanism)
        self.state = State.RAW_TOKENS if version == 0 else State.AUTHENTICATE
        return ErrorCode.NONE, enabled

    async def authenticate(self, token: bytes) -> AuthenticateResult:
        """SaslAuthenticate: the mechanism's answer to ``token``; a failure is answered
        after ``connection.failed.authentication.delay.ms``."""
        if self.state not in (State.AUTHENTICATE, State.REAUTHENTICATE):
            return AuthenticateResult(
                ErrorCode.ILLEGAL_SASL_STATE,
                "SaslAuthenticate request received after successful authentication"
                if self.state is State.COMPLETE
                else "Unexpected SaslAuthenticate request",
            )
        mechanism = self._mechanism
        try:
            answer = mechanism.evaluate(token)
            if mechanism.complete:
                self._complete(mechanism)
        except SaslFailure as failure:
            self._fail(str(failure))
            await self._delay()
            return AuthenticateResult(
                ErrorCode.SASL_AUTHENTICATION_FAILED, failure.client_message(mechanism.name)
            )
        lifetime = (self._lifetime_ms or 0) if mechanism.complete else 0
        return AuthenticateResult(ErrorCode.NONE, "", answer, lifetime)

    async def raw_token(self, frame: bytes) -> list[bytes]:
        """A raw token's answer, framed as Kafka frames it (a 4-byte size; PLAIN's empty
        answer too, which clients read); a failure closes after the delay."""
        self._check_size(len(frame))
        mechanism = self._mechanism
        try:
            answer = mechanism.evaluate(frame)
            if mechanism.complete:
                self._complete(mechanism)
        except SaslFailure as failure:
            self._fail(str(failure), logged=False)  # the close is logged
            await self._delay()
            raise CloseConnection(
                f"Failed authentication with {self._where()} ({failure})"
            ) from None
        return [len(answer).to_bytes(_SIZE_BYTES, "big"), answer]

    def _complete(self, mechanism: ServerMechanism) -> None:
        principal = KafkaPrincipal.user(mechanism.authorization_id)
        if self.state is State.REAUTHENTICATE and principal != self._context.principal:
            raise SaslFailure(
                f"Cannot change principals during re-authentication from "
                f"{self._context.principal}: {principal}"
            )
        self._context.principal = principal
        self.token_authenticated = mechanism.token_authenticated
        self._mechanism_name = mechanism.name
        self._mechanism = None
        self.state = State.COMPLETE
        self._lifetime_ms = self._session_lifetime_ms(mechanism)
        self._expires_at = (
            self._clock() + self._lifetime_ms / 1000 if self._lifetime_ms is not None else None
        )

    def _session_lifetime_ms(self, mechanism: ServerMechanism) -> int | None:
        """KIP-368: ``connections.max.reauth.ms``, or less when the credential (a
        delegation token) expires sooner; None when neither bounds the session."""
        reauth_ms = self._settings.reauth_ms if self._settings.reauth_ms > 0 else None
        expiry_ms = mechanism.credential_expiry_ms
        if expiry_ms is None:
            return reauth_ms
        left = max(0, expiry_ms - self._wall_clock_ms())
        return left if reauth_ms is None else min(left, reauth_ms)

    def _fail(self, reason: str, *, logged: bool = True) -> None:
        self.state = State.FAILED
        self._context.close_after_answer = True
        if logged:
            logger.info("Failed authentication with %s (%s)", self._where(), reason)

    async def _delay(self) -> None:
        if self._settings.failed_delay_ms > 0:
            await asyncio.sleep(self._settings.failed_delay_ms / 1000)


class AuthenticatorFactory:
    """The broker's maker of connection authenticators, one per connection to a SASL
    listener; SCRAM logs users in with their credentials (``user_configs``) and, with
    ``tokenauth=true``, delegation tokens (``token_login(token id, mechanism)``). Built
    at start from the configuration (ConfigError when a SASL listener cannot serve); a
    new configuration (dynamic per-broker SASL keys) is read for the connections after
    it, and one that cannot serve is logged and ignored."""

    def __init__(
        self,
        config: Callable[[], object],
        user_configs: Callable[[str], Mapping[str, str]],
        token_login: Callable[[str, str], tuple[ScramCredential, str, int] | None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._config = config
        self._user_configs = user_configs
        self._token_login = token_login
        self._clock = clock
        self._built_for = config()
        self._listeners = sasl_listeners(self._built_for)
        self._settings = AuthenticationSettings.from_config(self._built_for)

    def _follow_config(self) -> None:
        current = self._config()
        if current is self._built_for:
            return
        self._built_for = current
        try:
            self._listeners = sasl_listeners(current)
        except ConfigError as error:
            logger.error("SASL listeners keep their settings: %s", error)
        self._settings = AuthenticationSettings.from_config(current)

    def _mechanism(self, listener: SaslListener, name: str) -> ServerMechanism:
        if name == PLAIN:
            return PlainServer(listener.plain_users)
        tokens = None
        if self._token_login is not None:
            token_login = self._token_login

            def tokens(token_id: str) -> tuple[ScramCredential, str, int] | None:
                return token_login(token_id, name)

        return ScramServer(
            name, lambda user: user_credentials(self._user_configs(user)).get(name), tokens
        )

    def for_connection(self, context: ConnectionContext) -> ConnectionAuthenticator | None:
        """The authenticator of a new connection; None when its listener is no SASL one."""
        if context.security_protocol not in SASL_PROTOCOLS:
            return None
        self._follow_config()
        listener = self._listeners.get(context.listener)
        if listener is None:
            raise CloseConnection(f"listener {context.listener} has no SASL settings")
        return ConnectionAuthenticator(
            context,
            listener,
            lambda name: self._mechanism(listener, name),
            self._settings,
            self._clock,
        )
