"""SCRAM credentials (RFC 5802, RFC 7677): derived from a password, and stored where and
how Kafka stores them.

A user's credential for a mechanism is the salt, the iteration count and two keys
derived from the salted password; the password itself is never kept. Kafka keeps it in
the user's config znode, ``/config/users/<user>``, under the mechanism's name::

    {"version":1,"config":{"SCRAM-SHA-512":"salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=4096"}}

The same znode holds the user's quotas (``producer_byte_rate``...); writing it is
:mod:`tidelog.security.scram_store`'s, so that this module, which clients use too
(:mod:`tidelog.security.sasl_client`), needs no ZooKeeper client.

Passwords are UTF-8 bytes as Kafka uses them (no SASLprep).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "MAX_ITERATIONS",
    "SCRAM_MECHANISMS",
    "ScramCredential",
    "ScramMechanism",
    "user_credentials",
]

MAX_ITERATIONS = 16384  # Kafka refuses more in AlterUserScramCredentials


@dataclass(frozen=True)
class ScramMechanism:
    """A SCRAM mechanism: its SASL name, hash, and Kafka's least iteration count."""

    name: str
    hash_name: str
    min_iterations: int = 4096
    wire_type: int = 0  # its number in Describe/AlterUserScramCredentials

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self.hash_name).digest()

    def salted_password(self, password: str, salt: bytes, iterations: int) -> bytes:
        """RFC 5802's Hi(password, salt, i): PBKDF2 with this mechanism's HMAC."""
        return hashlib.pbkdf2_hmac(self.hash_name, password.encode(), salt, iterations)

    def client_key(self, salted_password: bytes) -> bytes:
        return self.hmac(salted_password, b"Client Key")

    def server_key(self, salted_password: bytes) -> bytes:
        return self.hmac(salted_password, b"Server Key")


SCRAM_MECHANISMS: dict[str, ScramMechanism] = {
    m.name: m
    for m in (
        ScramMechanism("SCRAM-SHA-256", "sha256", wire_type=1),
        ScramMechanism("SCRAM-SHA-512", "sha512", wire_type=2),
    )
}


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def from_salted_password(
        cls, mechanism: ScramMechanism, salt: bytes, salted_password: bytes, iterations: int
    ) -> ScramCredential:
        """The credential of a salted password (what AlterUserScramCredentials carries)."""
        return cls(
            salt,
            mechanism.hash(mechanism.client_key(salted_password)),
            mechanism.server_key(salted_password),
            iterations,
        )

    @classmethod
    def from_password(
        cls,
        mechanism: ScramMechanism,
        password: str,
        iterations: int = 4096,
        salt: bytes | None = None,
    ) -> ScramCredential:
        """A credential for ``password``; a random 32-byte salt unless one is given."""
        salt = os.urandom(32) if salt is None else salt
        salted = mechanism.salted_password(password, salt, iterations)
        return cls.from_salted_password(mechanism, salt, salted, iterations)

    def to_config_value(self) -> str:
        """Kafka's stored form (``salt=...,stored_key=...,server_key=...,iterations=n``)."""
        return (
            f"salt={_b64(self.salt)},stored_key={_b64(self.stored_key)},"
            f"server_key={_b64(self.server_key)},iterations={self.iterations}"
        )

    @classmethod
    def parse(cls, text: str) -> ScramCredential:
        """The stored form read back; ValueError if a field is missing or malformed."""
        fields = dict(part.partition("=")[::2] for part in text.split(","))
        try:
            return cls(
                base64.b64decode(fields["salt"], validate=True),
                base64.b64decode(fields["stored_key"], validate=True),
                base64.b64decode(fields["server_key"], validate=True),
                int(fields["iterations"]),
            )
        except (KeyError, ValueError) as error:
            raise ValueError(f"malformed SCRAM credential ({error})") from None


def user_credentials(config: Mapping[str, str]) -> dict[str, ScramCredential]:
    """The SCRAM credentials among a user's configs, by mechanism name (a malformed one
    is left out: nobody can log in with it)."""
    credentials = {}
    for name in SCRAM_MECHANISMS:
        if name in config:
            try:
                credentials[name] = ScramCredential.parse(config[name])
            except ValueError:
                continue
    return credentials
