"""Broker config keys of the SASL area, with Kafka 3.9's names, types, defaults and
dynamic scope.

A listener sets its own ``sasl.enabled.mechanisms`` with Kafka's
``listener.name.<listener>.`` prefix, and the JAAS entry of each mechanism it serves with
``listener.name.<listener>.<mechanism>.sasl.jaas.config`` (mechanism in lower case), as a
Kafka broker reads them (see :mod:`tidelog.security.sasl_listeners`).
"""

from __future__ import annotations

from tidelog.server.config_key import ConfigKey, Scope
from tidelog.storage.config_values import at_least

__all__ = ["SASL_KEYS"]

_P = Scope.PER_BROKER

SASL_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey("sasl.enabled.mechanisms", "list", ["GSSAPI"], _P),
    ConfigKey("sasl.mechanism.inter.broker.protocol", "string", "GSSAPI", _P),
    ConfigKey("sasl.jaas.config", "password", None, _P),
    ConfigKey(
        "connections.max.reauth.ms",
        "long",
        0,
        doc="KIP-368: a SASL session's lifetime; the client re-authenticates within it or "
        "its connection is closed at its next request. 0: sessions never expire.",
    ),
    ConfigKey(
        "connection.failed.authentication.delay.ms",
        "int",
        100,
        doc="How long the answer to a failed authentication, and the close, are delayed.",
        validator=at_least(0),
    ),
    ConfigKey(
        "delegation.token.secret.key",
        "password",
        None,
        doc="The secret delegation tokens' HMACs are made with; unset: no delegation tokens.",
    ),
    ConfigKey("delegation.token.master.key", "password", None, doc="Deprecated: the secret key."),
    ConfigKey("delegation.token.max.lifetime.ms", "long", 604800000, validator=at_least(1)),
    ConfigKey("delegation.token.expiry.time.ms", "long", 86400000, validator=at_least(1)),
    ConfigKey("delegation.token.expiry.check.interval.ms", "long", 3600000, validator=at_least(1)),
    ConfigKey(
        "sasl.server.max.receive.size",
        "int",
        524288,
        doc="The largest frame read from a SASL connection before it is authenticated.",
    ),
)
