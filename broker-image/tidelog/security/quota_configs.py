"""Broker config keys of the quota area, with Kafka 3.9's names, types and defaults.

Client quotas are measured over ``quota.window.num`` samples of
``quota.window.size.seconds`` each; controller mutations (KIP-599) over their own
``controller.quota.window.*``. Kafka's ``client.quota.callback.class`` (a Java class
plugged into the broker) cannot run here: tidelog's quotas are those of Kafka's default
callback, and a broker configured with a class refuses to start, in one line.
"""

from __future__ import annotations

from tidelog.server.config_key import ConfigKey
from tidelog.storage.config_values import at_least, invalid

__all__ = ["QUOTA_KEYS"]


def _no_callback_class(key: str, value: object) -> None:
    if value:
        raise invalid(
            key,
            value,
            "tidelog applies Kafka's default quota callback only (users' and client ids' "
            "quotas from ZooKeeper); a Java callback class cannot run: leave it unset",
        )


QUOTA_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey("quota.window.num", "int", 11, validator=at_least(1)),
    ConfigKey("quota.window.size.seconds", "int", 1, validator=at_least(1)),
    ConfigKey("controller.quota.window.num", "int", 11, validator=at_least(1)),
    ConfigKey("controller.quota.window.size.seconds", "int", 1, validator=at_least(1)),
    ConfigKey("client.quota.callback.class", "string", None, validator=_no_callback_class),
)
