"""The quota area's broker keys: Kafka's defaults, and a quota callback class refused in
one line (tidelog runs Kafka's default quota callback only)."""

import pytest

from tidelog.server.config import BrokerConfig, ConfigError

BASE = {"zookeeper.connect": "127.0.0.1:2181"}


def test_quota_windows_default_as_in_kafka():
    config = BrokerConfig(BASE)
    assert (config["quota.window.num"], config["quota.window.size.seconds"]) == (11, 1)
    windows = (
        config["controller.quota.window.num"],
        config["controller.quota.window.size.seconds"],
    )
    assert windows == (11, 1)
    assert config["client.quota.callback.class"] is None


def test_a_quota_callback_class_is_refused():
    with pytest.raises(ConfigError, match="client.quota.callback.class.*default quota callback"):
        BrokerConfig({**BASE, "client.quota.callback.class": "com.example.Callback"})
