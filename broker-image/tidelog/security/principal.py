"""Who a connection acts for: Kafka's ``KafkaPrincipal`` (a type and a name, written
``User:alice``), as ACLs, quotas and logs name it.

A connection starts as ``User:ANONYMOUS``: on a PLAINTEXT listener it stays so; TLS with
a client certificate makes it the certificate's mapped subject; SASL makes it the
authenticated user.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ANONYMOUS", "USER_TYPE", "KafkaPrincipal"]

USER_TYPE = "User"


@dataclass(frozen=True)
class KafkaPrincipal:
    principal_type: str
    name: str

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """``User:alice`` → KafkaPrincipal("User", "alice"); ValueError without a type."""
        principal_type, sep, name = text.partition(":")
        if not sep or not principal_type:
            raise ValueError(f"principal {text!r} is not <type>:<name> (e.g. User:alice)")
        return cls(principal_type, name)

    @classmethod
    def user(cls, name: str) -> KafkaPrincipal:
        return cls(USER_TYPE, name)

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"


ANONYMOUS = KafkaPrincipal(USER_TYPE, "ANONYMOUS")
