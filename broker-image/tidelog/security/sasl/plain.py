"""SASL/PLAIN, server side (RFC 4616), with Kafka's users and messages.

The client sends one message, ``authzid NUL authcid NUL password``; Kafka's PLAIN
accepts an empty authzid or one equal to the user. The users are the listener's JAAS
entry's ``user_<name>="<password>"`` options (Kafka's ``PlainLoginModule``).
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from tidelog.security.jaas import JaasEntry
from tidelog.security.sasl.mechanism import SaslAuthenticationError, SaslFailure

__all__ = ["PLAIN", "PlainServer", "plain_users"]

PLAIN = "PLAIN"
_USER_PREFIX = "user_"


def plain_users(entry: JaasEntry) -> dict[str, str]:
    """user → password from a JAAS entry's ``user_<name>`` options."""
    return {
        key[len(_USER_PREFIX) :]: value
        for key, value in entry.options.items()
        if key.startswith(_USER_PREFIX)
    }


class PlainServer:
    name = PLAIN
    token_authenticated = False
    credential_expiry_ms = None

    def __init__(self, users: Mapping[str, str]):
        self._users = users
        self._user: str | None = None
        self._done = False

    @property
    def complete(self) -> bool:
        return self._user is not None

    @property
    def authorization_id(self) -> str:
        if self._user is None:
            raise RuntimeError("PLAIN authentication has not completed")
        return self._user

    def evaluate(self, token: bytes) -> bytes:
        if self._done:
            raise SaslFailure("PLAIN takes one message")
        self._done = True
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise SaslAuthenticationError(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}"
            )
        try:
            authzid, user, password = (part.decode() for part in parts)
        except UnicodeDecodeError:
            raise SaslFailure("Invalid SASL/PLAIN response: not UTF-8") from None
        if not user:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self._users.get(user)
        # compared in constant time even for an unknown user
        matches = hmac.compare_digest(
            (expected if expected is not None else "\0" + password).encode(), password.encode()
        )
        if not matches or expected is None:
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authzid and authzid != user:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        self._user = user
        return b""
