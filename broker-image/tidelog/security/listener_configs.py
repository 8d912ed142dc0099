"""Broker config keys of listeners and TLS (``ssl.*``), with Kafka 3.9's types and
defaults; a listener's own value is set with Kafka's ``listener.name.<name>.`` prefix."""

from __future__ import annotations

from tidelog.server.config_key import ConfigKey, Scope

__all__ = ["LISTENER_KEYS"]

_P = Scope.PER_BROKER

LISTENER_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey("ssl.keystore.password", "password", None, _P),
    ConfigKey("ssl.key.password", "password", None, _P),
    ConfigKey("ssl.truststore.password", "password", None, _P),
)
