"""Broker config keys of the quota area, with Kafka 3.9's names, types and defaults.

Client quotas are measured over ``quota.window.num`` samples of
``quota.window.size.seconds`` each; controller mutations (KIP-599) over their own
``controller.quota.window.*``. Kafka's ``client.quota.callback.class`` (a Java class
plugged into the broker) has no counterpart: tidelog's quotas are Kafka's default ones.
"""

from __future__ import annotations

from tidelog.server.config_key import ConfigKey
from tidelog.storage.config_values import at_least

__all__ = ["QUOTA_KEYS"]

QUOTA_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey("quota.window.num", "int", 11, validator=at_least(1)),
    ConfigKey("quota.window.size.seconds", "int", 1, validator=at_least(1)),
    ConfigKey("controller.quota.window.num", "int", 11, validator=at_least(1)),
    ConfigKey("controller.quota.window.size.seconds", "int", 1, validator=at_least(1)),
)
