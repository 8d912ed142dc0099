"""What every server mechanism is, and how its exchanges fail.

Kafka tells a client why authentication failed only for some failures (its
``SaslAuthenticationException``: e.g. PLAIN's "Invalid username or password"); for any
other (a malformed token, an unknown SCRAM user, a wrong proof) it says only
"Authentication failed during authentication due to invalid credentials with SASL
mechanism <name>". :class:`SaslFailure` is the second kind, :class:`SaslAuthenticationError`
the first; the authenticator picks the message with :meth:`SaslFailure.client_message`.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["SaslAuthenticationError", "SaslFailure", "ServerMechanism"]


class SaslFailure(Exception):
    """The exchange failed; the reason (``str(error)``) is for the broker's log only."""

    def client_message(self, mechanism: str) -> str:
        return (
            "Authentication failed during authentication due to invalid credentials "
            f"with SASL mechanism {mechanism}"
        )


class SaslAuthenticationError(SaslFailure):
    """The exchange failed, and Kafka tells the client this reason."""

    def client_message(self, mechanism: str) -> str:
        return str(self)


class ServerMechanism(Protocol):
    """One exchange of one mechanism, server side."""

    name: str
    # whether the client logged in with a delegation token, and when that credential
    # expires (ms since the epoch; None: it does not)
    token_authenticated: bool
    credential_expiry_ms: int | None

    def evaluate(self, token: bytes) -> bytes:
        """The answer to the client's next token; raises SaslFailure when the exchange
        fails (and it stays failed)."""

    @property
    def complete(self) -> bool:
        """Whether the client is authenticated."""

    @property
    def authorization_id(self) -> str:
        """The authenticated user (only when complete)."""
