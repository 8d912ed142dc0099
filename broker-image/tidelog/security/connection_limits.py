"""How many connections a broker takes: Kafka's ``max.connections`` (the broker's, and a
listener's own with the ``listener.name.<name>.`` prefix), ``max.connections.per.ip`` and
``max.connections.per.ip.overrides`` (Kafka's ``ConnectionQuotas``), counted as they are
accepted, before any TLS handshake or SASL exchange.

A connection past a limit is closed as soon as it is accepted, and the refusal says which
limit. Kafka blocks its acceptor at the broker-wide limit instead, leaving the client in
the listen backlog; asyncio's server has no pause, so here the client is refused at once
and retries, which bounds the broker's connections the same. As in Kafka (KIP-402), the
inter-broker listener's connections are not held to the broker-wide limit (only to their
listener's own), so that a flood of clients cannot cut the brokers off each other.

The counts are plain values owned by the event loop (:class:`ConnectionCounts`); the
limits are read from the broker's config at each accept, so dynamic changes
(``kafka-configs.sh --entity-type brokers --entity-default``) apply to new connections.
"""

from __future__ import annotations

import collections
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass

from tidelog.security.listeners import inter_broker_listener, listener_settings, listener_specs
from tidelog.server.config_key import ConfigError, ConfigKey, Scope
from tidelog.storage.config_values import at_least

__all__ = [
    "CONNECTION_LIMIT_KEYS",
    "ConnectionCounts",
    "ConnectionLimits",
    "LimitsOfConfig",
    "parse_ip_overrides",
]

_INT_MAX = 2**31 - 1
_INT = re.compile(r"[+-]?\d+")
_C = Scope.CLUSTER_WIDE

CONNECTION_LIMIT_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey("max.connections", "int", _INT_MAX, _C, validator=at_least(0)),
    ConfigKey("max.connections.per.ip", "int", _INT_MAX, _C, validator=at_least(0)),
    ConfigKey("max.connections.per.ip.overrides", "string", "", _C),
)


def parse_ip_overrides(text: str) -> dict[str, int]:
    """``host:count,host:count`` → {host: count}, read as Kafka reads the map (the count
    after the last colon; hosts are resolved when the limits are applied). ConfigError
    names the entry that cannot be used."""
    overrides = {}
    for entry in (e.strip() for e in (text or "").split(",")):
        if not entry:
            continue
        host, sep, count = (part.strip() for part in entry.rpartition(":"))
        if not sep or not _INT.fullmatch(count) or not -(2**31) <= int(count) <= _INT_MAX:
            raise ConfigError(
                f"Invalid value {text} for configuration max.connections.per.ip.overrides: "
                f"entry {entry!r} is not host:count"
            )
        overrides[host] = int(count)
    return overrides


def _resolved(overrides: Mapping[str, int]) -> dict[str, int]:
    """Host names → addresses, as Kafka's ConnectionQuotas resolves them."""
    resolved = {}
    for host, count in overrides.items():
        try:
            resolved[socket.getaddrinfo(host, None)[0][4][0]] = count
        except OSError:
            raise ConfigError(f"max.connections.per.ip.overrides: unknown host {host}") from None
    return resolved


@dataclass(frozen=True)
class ConnectionLimits:
    """The limits in force: the broker's, each listener's, each client address's."""

    broker: int = _INT_MAX
    listeners: Mapping[str, int] | None = None  # a listener's own max.connections
    per_ip: int = _INT_MAX
    ip_overrides: Mapping[str, int] | None = None
    protected_listener: str | None = None  # the inter-broker listener

    def for_ip(self, address: str) -> int:
        return (self.ip_overrides or {}).get(address, self.per_ip)


class ConnectionCounts:
    """The connections open now, by listener and by client address."""

    def __init__(self) -> None:
        self.total = 0
        self.by_listener: collections.Counter[str] = collections.Counter()
        self.by_ip: collections.Counter[str] = collections.Counter()

    def admit(self, limits: ConnectionLimits, listener: str, address: str) -> str | None:
        """Count a new connection, or say which limit refuses it (nothing counted)."""
        if self.by_ip[address] >= limits.for_ip(address):
            return f"too many connections from {address} (max.connections.per.ip)"
        listener_limit = (limits.listeners or {}).get(listener, _INT_MAX)
        if self.by_listener[listener] >= listener_limit:
            return f"too many connections on listener {listener} (its max.connections)"
        if listener != limits.protected_listener and self.total >= limits.broker:
            return "too many connections to this broker (max.connections)"
        self.total += 1
        self.by_listener[listener] += 1
        self.by_ip[address] += 1
        return None

    def release(self, listener: str, address: str) -> None:
        self.total -= 1
        self.by_listener[listener] -= 1
        self.by_ip[address] -= 1
        if not self.by_ip[address]:
            del self.by_ip[address]


class LimitsOfConfig:
    """The limits a broker config sets, worked out again only when the config changes
    (a dynamic update makes a new config object)."""

    def __init__(self) -> None:
        self._config: object = None
        self._limits = ConnectionLimits()

    def __call__(self, config) -> ConnectionLimits:
        if config is not self._config:
            self._limits = _limits_of(config)
            self._config = config
        return self._limits


def _limits_of(config) -> ConnectionLimits:
    listeners = {}
    for spec in listener_specs(config):
        own = listener_settings(config, spec.name, ["max.connections"])["max.connections"]
        if own is not None and own != config["max.connections"]:
            listeners[spec.name] = own
    return ConnectionLimits(
        broker=config["max.connections"],
        listeners=listeners,
        per_ip=config["max.connections.per.ip"],
        ip_overrides=_resolved(parse_ip_overrides(config["max.connections.per.ip.overrides"])),
        protected_listener=inter_broker_listener(config),
    )
