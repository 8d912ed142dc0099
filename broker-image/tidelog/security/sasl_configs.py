"""Broker config keys of the sasl area, with Kafka 3.9's names, types and defaults."""

from __future__ import annotations

from tidelog.server.config_key import ConfigKey

__all__ = ["SASL_KEYS"]

SASL_KEYS: tuple[ConfigKey, ...] = ()
