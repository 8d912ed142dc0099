"""The connection counts behind Kafka's connection limits (pure logic)."""

from __future__ import annotations

import pytest

from tidelog.security.connection_limits import (
    ConnectionCounts,
    ConnectionLimits,
    parse_ip_overrides,
)
from tidelog.server.config_key import ConfigError


def admit_all(counts, limits, arrivals):
    return [counts.admit(limits, listener, address) for listener, address in arrivals]


def test_per_ip_limit_and_its_overrides():
    limits = ConnectionLimits(per_ip=2, ip_overrides={"10.0.0.9": 3})
    counts = ConnectionCounts()
    refusals = admit_all(counts, limits, [("A", "10.0.0.1")] * 3 + [("A", "10.0.0.9")] * 4)
    assert refusals[:2] == [None, None]
    assert refusals[2] == "too many connections from 10.0.0.1 (max.connections.per.ip)"
    assert refusals[3:6] == [None, None, None] and refusals[6] is not None
    counts.release("A", "10.0.0.1")
    assert counts.admit(limits, "A", "10.0.0.1") is None
    assert counts.total == 5


def test_the_broker_limit_spares_the_protected_listener():
    limits = ConnectionLimits(broker=2, protected_listener="INTERNAL")
    counts = ConnectionCounts()
    assert admit_all(counts, limits, [("CLIENT", f"10.0.0.{i}") for i in range(2)]) == [None] * 2
    assert counts.admit(limits, "CLIENT", "10.0.0.7") == (
        "too many connections to this broker (max.connections)"
    )
    assert counts.admit(limits, "INTERNAL", "10.0.0.8") is None
    assert counts.total == 3  # protected connections still count


def test_a_listeners_own_limit():
    limits = ConnectionLimits(listeners={"CLIENT": 1})
    counts = ConnectionCounts()
    assert counts.admit(limits, "CLIENT", "10.0.0.1") is None
    assert counts.admit(limits, "CLIENT", "10.0.0.2") == (
        "too many connections on listener CLIENT (its max.connections)"
    )
    assert counts.admit(limits, "OTHER", "10.0.0.2") is None


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("", {}),
        ("127.0.0.1:5", {"127.0.0.1": 5}),
        (" localhost : 3 ,10.0.0.1:0", {"localhost": 3, "10.0.0.1": 0}),
        ("a:1:2", {"a:1": 2}),  # the count follows the last colon, as in Kafka
    ],
)
def test_overrides_are_read_as_kafka_reads_them(text, parsed):
    assert parse_ip_overrides(text) == parsed


@pytest.mark.parametrize("text", ["127.0.0.1", "127.0.0.1:x", "127.0.0.1:99999999999"])
def test_bad_overrides_name_the_entry(text):
    with pytest.raises(ConfigError, match="max.connections.per.ip.overrides: entry"):
        parse_ip_overrides(text)
