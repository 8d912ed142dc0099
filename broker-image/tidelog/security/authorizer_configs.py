"""Broker config keys of the authorizer area, with Kafka 3.9's names, types and defaults."""

from __future__ import annotations

from tidelog.server.config_key import ConfigKey

__all__ = ["AUTHORIZER_KEYS"]

AUTHORIZER_KEYS: tuple[ConfigKey, ...] = ()
