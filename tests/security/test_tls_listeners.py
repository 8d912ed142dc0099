"""Listeners and their settings as Kafka reads them: protocols from the map, the
inter-broker and control-plane listeners, listener-prefixed settings; Kafka's refusals."""

from __future__ import annotations

import pytest

from tidelog.security.client_security import ClientSecurity
from tidelog.security.listeners import (
    ListenerSpec,
    control_plane_listener,
    inter_broker_listener,
    listener_specs,
    ssl_settings,
)
from tidelog.server.config import BrokerConfig, ConfigError

BASE = {"zookeeper.connect": "127.0.0.1:2181"}
TWO = {
    "listeners": "PLAINTEXT://:9092,secure://127.0.0.1:9093",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SECURE:SSL",
}


def config(**keys: str) -> BrokerConfig:
    return BrokerConfig({**BASE, **{k.replace("_", "."): v for k, v in keys.items()}})


def with_keys(keys: dict[str, str]) -> BrokerConfig:
    return BrokerConfig({**BASE, **keys})


def test_each_listener_has_the_protocol_the_map_gives() -> None:
    assert listener_specs(with_keys(TWO)) == [
        ListenerSpec("PLAINTEXT", "", 9092, "PLAINTEXT"),
        ListenerSpec("SECURE", "127.0.0.1", 9093, "SSL"),
    ]
    assert [s.uses_tls for s in listener_specs(with_keys(TWO))] == [False, True]


def test_the_default_map_names_the_protocols_themselves() -> None:
    chosen = config(listeners="SSL://:9093,SASL_SSL://:9094", inter_broker_listener_name="SSL")
    specs = listener_specs(chosen, advertised=True)
    assert [s.security_protocol for s in specs] == ["SSL", "SASL_SSL"]


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"listeners": "EXTERNAL://:9092"}, "No security protocol defined for listener EXTERNAL"),
        (
            {"listeners": "PLAINTEXT://:9092,PLAINTEXT://:9093"},
            "Each listener must have a different name",
        ),
        (
            {"listeners": "PLAINTEXT://:9092,SSL://:9092"},
            "Each listener must have a different port",
        ),
        (
            {**TWO, "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SECURE:TLS"},
            "listener.security.protocol.map",
        ),
        (
            {
                **TWO,
                "inter.broker.listener.name": "SECURE",
                "security.inter.broker.protocol": "SSL",
            },
            "Only one of inter.broker.listener.name and security.inter.broker.protocol",
        ),
        (
            {**TWO, "inter.broker.listener.name": "OTHER"},
            "inter.broker.listener.name must be a listener name defined in advertised.listeners",
        ),
        (
            {"listeners": "SSL://:9093"},
            "inter.broker.listener.name must be a listener name defined in advertised.listeners",
        ),
        (
            {
                **TWO,
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SECURE:SSL,OTHER:SSL",
                "advertised.listeners": "OTHER://h:1",
            },
            "advertised.listeners listener names must be equal to or a subset",
        ),
        (
            {
                **TWO,
                "inter.broker.listener.name": "SECURE",
                "control.plane.listener.name": "SECURE",
            },
            "should have a different value from the inter broker listener name",
        ),
        ({**TWO, "control.plane.listener.name": "NONE"}, "control.plane.listener.name must be"),
        ({**TWO, "security.inter.broker.protocol": "TLS"}, "security.inter.broker.protocol"),
    ],
)
def test_kafkas_refusals(keys: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        with_keys(keys)


def test_the_inter_broker_listener_is_named_or_follows_the_protocol() -> None:
    assert inter_broker_listener(with_keys(TWO)) == "PLAINTEXT"
    named = with_keys({**TWO, "inter.broker.listener.name": "secure"})
    assert inter_broker_listener(named) == "SECURE"
    assert control_plane_listener(named) == "SECURE"
    by_protocol = config(listeners="SSL://:9093", security_inter_broker_protocol="SSL")
    assert inter_broker_listener(by_protocol) == "SSL"
    plane = with_keys({**TWO, "control.plane.listener.name": "SECURE"})
    assert control_plane_listener(plane) == "SECURE"


def test_a_listeners_own_setting_wins_over_the_unprefixed_one() -> None:
    keys = {
        **TWO,
        "ssl.client.auth": "requested",
        "ssl.keystore.location": "/all.p12",
        "listener.name.secure.ssl.keystore.location": "/secure.p12",
    }
    settings = ssl_settings(with_keys(keys), "SECURE")
    assert settings["ssl.keystore.location"] == "/secure.p12"
    assert settings["ssl.client.auth"] == "requested"
    assert settings["ssl.keystore.type"] == "JKS"
    assert ssl_settings(with_keys(keys), "PLAINTEXT")["ssl.keystore.location"] == "/all.p12"


def test_a_prefixed_key_is_parsed_and_checked_as_its_base_key() -> None:
    with pytest.raises(ConfigError, match="listener.name.secure.ssl.client.auth"):
        with_keys({**TWO, "listener.name.secure.ssl.client.auth": "sometimes"})
    assert with_keys({**TWO, "listener.name.secure.ssl.client.auth": "required"}).unknown == []


def test_a_dynamic_prefixed_key_overrides_for_its_listener() -> None:
    static = with_keys(TWO)
    dynamic = static.with_dynamic({}, {"listener.name.secure.ssl.keystore.location": "/new.p12"})
    assert ssl_settings(dynamic, "SECURE")["ssl.keystore.location"] == "/new.p12"


def test_the_inter_broker_client_security_is_the_listeners() -> None:
    assert ClientSecurity.inter_broker(with_keys(TWO)) == ClientSecurity()
