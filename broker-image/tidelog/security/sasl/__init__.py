"""SASL server mechanisms, sans-IO: each takes the client's tokens and returns its own,
knowing nothing of connections, frames or Kafka's requests (the connection's
authenticator, :mod:`tidelog.security.authenticator`, carries them).

Served: PLAIN (RFC 4616, users from the listener's JAAS options) and SCRAM-SHA-256 /
SCRAM-SHA-512 (RFC 5802, RFC 7677, credentials from ZooKeeper, with Kafka's
``tokenauth`` extension for delegation tokens).
"""

from tidelog.security.sasl.mechanism import (
    SaslAuthenticationError,
    SaslFailure,
    ServerMechanism,
)
from tidelog.security.sasl.plain import PlainServer, plain_users
from tidelog.security.sasl.scram import CredentialLookup, ScramServer

__all__ = [
    "CredentialLookup",
    "PlainServer",
    "SaslAuthenticationError",
    "SaslFailure",
    "ScramServer",
    "ServerMechanism",
    "plain_users",
]
