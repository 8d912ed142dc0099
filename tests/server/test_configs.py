"""DescribeConfigs' values, sources and synonyms, and IncrementalAlterConfigs' operations,
as Kafka's ZooKeeper-mode broker computes them."""

import dataclasses

import pytest

from tidelog.protocol.admin_enums import ConfigSource
from tidelog.server.config import BrokerConfig
from tidelog.server.handlers.config_describe import (
    DescribeOptions,
    broker_synonyms,
    describe_broker,
    describe_topic,
    format_value,
)
from tidelog.server.handlers.config_resources import (
    APPEND,
    BROKER,
    DELETE,
    SET,
    SUBTRACT,
    TOPIC,
    ConfigRequestError,
)
from tidelog.server.handlers.configs import _check_broker_keys, apply_incremental
from tidelog.storage.config import LogConfig
from tidelog.storage.topic_configs import TOPIC_CONFIGS

S = ConfigSource
ALL = DescribeOptions(include_synonyms=True)


def config(static=None, cluster=None, broker=None) -> BrokerConfig:
    base = BrokerConfig({"zookeeper.connect": "zk:2181", "broker.id": "1", **(static or {})})
    return base.with_dynamic(cluster or {}, broker or {})


def entries(described):
    return {e.name: e for e in described}


def synonyms(entry):
    return [(s.name, s.value, s.source) for s in entry.synonyms]


def test_every_log_config_field_is_a_described_topic_config():
    fields = {f.name.replace("_", ".") for f in dataclasses.fields(LogConfig)}
    assert fields == set(TOPIC_CONFIGS)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (True, "true"),
        (("delete", "compact"), "delete,compact"),
        (["a"], "a"),
        (0.5, "0.5"),
        (1.0, "1.0"),
        (1e-4, "1.0E-4"),
        (12345678.0, "1.2345678E7"),
        (2**63 - 1, "9223372036854775807"),
        (None, None),
    ],
)
def test_values_print_as_kafka_prints_them(value, text):
    assert format_value(value) == text


def test_retention_ms_is_a_default_until_log_retention_ms_is_set():
    # Kafka keeps the synonyms from log.retention.ms on: hours alone leave none.
    assert broker_synonyms(config({"log.retention.hours": "24"}), "log.retention.ms", False) == []
    topic = entries(describe_topic(config({"log.retention.hours": "24"}), {}, ALL))
    assert topic["retention.ms"].value == str(24 * 3600 * 1000)
    assert topic["retention.ms"].config_source == S.DEFAULT_CONFIG
    assert synonyms(topic["retention.ms"]) == []


def test_synonyms_are_grouped_by_source_in_precedence_order():
    layered = config(
        {"log.retention.ms": "1000", "log.retention.minutes": "5"},
        cluster={"log.retention.ms": "2000"},
        broker={"log.retention.ms": "3000"},
    )
    topic = entries(describe_topic(layered, {"retention.ms": "4000"}, ALL))["retention.ms"]
    assert (topic.value, topic.config_source) == ("4000", S.DYNAMIC_TOPIC_CONFIG)
    assert synonyms(topic) == [
        ("retention.ms", "4000", S.DYNAMIC_TOPIC_CONFIG),
        ("log.retention.ms", "3000", S.DYNAMIC_BROKER_CONFIG),
        ("log.retention.ms", "2000", S.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("log.retention.ms", "1000", S.STATIC_BROKER_CONFIG),
        ("log.retention.minutes", "5", S.STATIC_BROKER_CONFIG),
        ("log.retention.hours", "168", S.DEFAULT_CONFIG),
    ]
    without_override = entries(describe_topic(layered, {}, ALL))["retention.ms"]
    assert (without_override.value, without_override.config_source) == (
        "3000",
        S.DYNAMIC_BROKER_CONFIG,
    )


def test_topic_entries_without_synonyms_ask_for_nothing():
    topic = entries(describe_topic(config(), {"cleanup.policy": "compact"}, DescribeOptions()))
    policy = topic["cleanup.policy"]
    assert (policy.value, policy.config_source, policy.synonyms) == (
        "compact",
        S.DYNAMIC_TOPIC_CONFIG,
        [],
    )
    assert policy.config_type == 7 and not policy.read_only and not policy.is_sensitive
    throttled = topic["leader.replication.throttled.replicas"]  # no broker synonym
    assert (throttled.value, throttled.config_source) == ("", S.DEFAULT_CONFIG)
    assert topic["segment.ms"].is_default and not policy.is_default


def test_an_unusable_stored_override_is_left_out():
    topic = entries(describe_topic(config(), {"retention.ms": "x", "segment.ms": "5"}, ALL))
    assert topic["segment.ms"].config_source == S.DYNAMIC_TOPIC_CONFIG
    assert topic["retention.ms"].config_source == S.DEFAULT_CONFIG


def test_key_filter_and_documentation():
    options = DescribeOptions(keys=frozenset({"retention.ms"}), include_documentation=True)
    (only,) = describe_topic(config(), {}, options)
    assert only.name == "retention.ms" and only.documentation


def test_broker_entries():
    layered = config({"log.segment.bytes": "2048"}, cluster={"log.segment.bytes": "4096"})
    broker = entries(describe_broker(layered, True, ALL))
    assert (broker["broker.id"].value, broker["broker.id"].read_only) == ("1", True)
    segment = broker["log.segment.bytes"]
    assert (segment.value, segment.config_source, segment.read_only) == (
        "4096",
        S.DYNAMIC_DEFAULT_BROKER_CONFIG,
        False,
    )
    assert synonyms(segment) == [
        ("log.segment.bytes", "4096", S.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("log.segment.bytes", "2048", S.STATIC_BROKER_CONFIG),
        ("log.segment.bytes", str(1024**3), S.DEFAULT_CONFIG),
    ]
    password = broker["ssl.key.password"]
    assert password.is_sensitive and password.value is None and password.config_type == 9
    # log.retention.hours as described: the ms and minutes keys come first, so are dropped.
    assert synonyms(broker["log.retention.hours"]) == [
        ("log.retention.hours", "168", S.DEFAULT_CONFIG)
    ]
    cluster = entries(describe_broker(layered, False, ALL))
    assert list(cluster) == ["log.segment.bytes"]
    assert synonyms(cluster["log.segment.bytes"]) == [
        ("log.segment.bytes", "4096", S.DYNAMIC_DEFAULT_BROKER_CONFIG)
    ]


def test_incremental_operations():
    current = {"retention.ms": "5"}
    result = apply_incremental(
        TOPIC,
        current,
        [
            ("cleanup.policy", APPEND, "compact,delete"),
            ("retention.ms", DELETE, None),
            ("segment.ms", SET, "10"),
        ],
    )
    # APPEND starts from Kafka's default of the key, never repeats a value.
    assert result == {"cleanup.policy": "delete,compact", "segment.ms": "10"}
    assert current == {"retention.ms": "5"}
    assert apply_incremental(TOPIC, result, [("cleanup.policy", SUBTRACT, "delete")]) == {
        "cleanup.policy": "compact",
        "segment.ms": "10",
    }
    replicas = apply_incremental(
        TOPIC, {}, [("leader.replication.throttled.replicas", APPEND, "0:1")]
    )
    assert replicas == {"leader.replication.throttled.replicas": "0:1"}
    assert apply_incremental(BROKER, {}, [("log.cleanup.policy", APPEND, "compact")]) == {
        "log.cleanup.policy": "delete,compact"
    }


@pytest.mark.parametrize(
    ("kind", "operation", "code", "message"),
    [
        (TOPIC, ("retention.ms", APPEND, "1"), 42, "append is not allowed"),
        (TOPIC, ("retention.ms", SUBTRACT, "1"), 42, "subtract is not allowed"),
        (TOPIC, ("no.such", APPEND, "1"), 40, "Unknown topic config name: no.such"),
        (BROKER, ("num.io.threads", APPEND, "1"), 42, "append is not allowed"),
        (TOPIC, ("retention.ms", 9, "1"), 42, "Unknown config operation 9"),
    ],
)
def test_incremental_operation_errors(kind, operation, code, message):
    with pytest.raises(ConfigRequestError, match=message) as failure:
        apply_incremental(kind, {}, [operation])
    assert failure.value.code == code


def test_dynamic_broker_keys_follow_their_scope():
    assert _check_broker_keys({"log.retention.ms": "1"}, per_broker=False) is None
    assert _check_broker_keys({"custom.plugin.key": "1"}, per_broker=False) is None
    assert _check_broker_keys({"broker.id": "2", "log.dirs": "/x"}, per_broker=True) == (
        "Cannot update these configs dynamically: Set(broker.id, log.dirs)"
    )
    problem = _check_broker_keys({"advertised.listeners": "PLAINTEXT://h:1"}, per_broker=False)
    assert problem.startswith("Cannot update these configs at default cluster level")
    assert _check_broker_keys({"advertised.listeners": "PLAINTEXT://h:1"}, per_broker=True) is None
    assert "listener prefix" in _check_broker_keys({"ssl.key.password": "x"}, per_broker=True)
