"""Broker configuration: ``server.properties`` keys with Kafka's names, types and defaults.

One table (``BROKER_CONFIGS``) says, for every key, its type, default, whether it is
sensitive, and how it may change at run time (seed 003, 动态配置): ``read-only`` keys
need a restart, ``per-broker`` and ``cluster-wide`` keys may be set dynamically in
ZooKeeper (``/config/brokers/<id>`` and ``/config/brokers/<default>``). The value in
force follows Kafka's precedence: per-broker > cluster-wide > static (the file and
``--override``) > default. DescribeConfigs reports each value with its source.

``log.dirs.draining`` (tidelog's own, per-broker): the directories of ``log.dirs`` to
empty. A draining directory takes no new partition, and the broker moves every replica
off it to its other directories (AlterReplicaLogDirs moves, a few at a time); each entry
set must be one of ``log.dirs``. An entry read from ZooKeeper that names a directory the
broker no longer has (removed after it was drained) is ignored with a warning.

``socket.idle.poll.us`` (tidelog's own, read-only): how long the event loop polls for
more work before it sleeps (:mod:`tidelog.server.idle_poll`); 0 turns polling off.

Values are read and checked as Kafka 3.9's KafkaConfig reads and checks them: each key by
its ConfigDef type and validator (``ConfigKey.parse``), then Kafka's rules between keys
(``_check_as_kafka_config``); tests/compat/test_config_parity.py holds it to Kafka's own
answers. The module is a little over 500 lines because the table of every key is one
piece, and its validators sit beside each key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from pathlib import Path

from tidelog.protocol.admin_enums import ConfigSource
from tidelog.security.authorizer_configs import AUTHORIZER_KEYS
from tidelog.security.connection_limits import CONNECTION_LIMIT_KEYS, parse_ip_overrides
from tidelog.security.listener_configs import LISTENER_KEYS
from tidelog.security.listeners import check_listeners, parse_listener, prefixed_key_base
from tidelog.security.quota_configs import QUOTA_KEYS
from tidelog.security.sasl_configs import SASL_KEYS
from tidelog.security.zookeeper_configs import ZOOKEEPER_SECURITY_KEYS
from tidelog.server.config_key import ConfigError, ConfigKey, Scope, keys_by_name
from tidelog.server.properties import parse_properties
from tidelog.storage.config import (
    INDEX_BYTES_MIN,
    LogConfig,
    gzip_level,
    message_format_version,
)
from tidelog.storage.config_values import at_least, each_one_of, one_of

__all__ = [
    "BROKER_CONFIGS",
    "BrokerConfig",
    "ConfigError",
    "ConfigKey",
    "Scope",
    "config_key_of",
    "read_properties_file",
]

_HOUR_MS = 60 * 60 * 1000
_LONG_MAX = 2**63 - 1


_P, _C = Scope.PER_BROKER, Scope.CLUSTER_WIDE

BROKER_CONFIGS: dict[str, ConfigKey] = keys_by_name(
    ConfigKey("broker.id", "int", -1, doc="The broker's id; -1 lets ZooKeeper assign one."),
    ConfigKey("broker.rack", "string", None, doc="Rack of the broker, for rack-aware placement."),
    ConfigKey("listeners", "list", ["PLAINTEXT://:9092"]),
    ConfigKey("advertised.listeners", "list", None, _P),
    ConfigKey(
        "listener.security.protocol.map",
        "string",
        "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        _P,
    ),
    ConfigKey("inter.broker.listener.name", "string", None),
    ConfigKey("zookeeper.connect", "string", None, doc="host:port[,host:port][/chroot]"),
    ConfigKey("zookeeper.session.timeout.ms", "int", 18000),
    ConfigKey("zookeeper.connection.timeout.ms", "int", None),
    ConfigKey("log.dirs", "list", None, doc="One directory per disk (JBOD)."),
    ConfigKey("log.dir", "string", "/tmp/kafka-logs"),
    ConfigKey(
        "log.dirs.draining",
        "list",
        [],
        _P,
        doc="Log directories (of log.dirs) to empty: they take no new partition and the "
        "broker moves their replicas to its other directories.",
    ),
    ConfigKey("num.partitions", "int", 1, validator=at_least(1)),
    ConfigKey("default.replication.factor", "int", 1),
    ConfigKey("auto.create.topics.enable", "boolean", True),
    ConfigKey("delete.topic.enable", "boolean", True),
    ConfigKey("message.max.bytes", "int", 1048588, _C, validator=at_least(0)),
    ConfigKey("socket.request.max.bytes", "int", 104857600, validator=at_least(1)),
    ConfigKey("socket.send.buffer.bytes", "int", 102400),
    ConfigKey("socket.receive.buffer.bytes", "int", 102400),
    ConfigKey("socket.connection.setup.timeout.ms", "long", 10000),
    ConfigKey("connections.max.idle.ms", "long", 600000),
    ConfigKey(
        "socket.idle.poll.us",
        "int",
        500,
        doc="How long the network loop polls for more work before it sleeps; 0: never.",
        validator=at_least(0),
    ),
    ConfigKey("num.network.threads", "int", 3, _C, validator=at_least(1)),
    ConfigKey("num.io.threads", "int", 8, _C, validator=at_least(1)),
    ConfigKey("num.recovery.threads.per.data.dir", "int", 1, _C, validator=at_least(1)),
    ConfigKey("queued.max.requests", "int", 500, validator=at_least(1)),
    ConfigKey("request.timeout.ms", "int", 30000),
    ConfigKey("fetch.max.bytes", "int", 57671680, validator=at_least(1024)),
    ConfigKey(
        "max.incremental.fetch.session.cache.slots",
        "int",
        1000,
        doc="How many incremental fetch sessions (KIP-227) the broker keeps; 0: none.",
        validator=at_least(0),
    ),
    ConfigKey("log.segment.bytes", "int", 1024 * 1024 * 1024, _C, validator=at_least(14)),
    ConfigKey("log.roll.ms", "long", None, _C),
    ConfigKey("log.roll.hours", "int", 168, validator=at_least(1)),
    ConfigKey("log.roll.jitter.ms", "long", None, _C),
    ConfigKey("log.roll.jitter.hours", "int", 0, validator=at_least(0)),
    ConfigKey(
        "log.index.size.max.bytes", "int", 10 * 1024 * 1024, _C, validator=at_least(INDEX_BYTES_MIN)
    ),
    ConfigKey("log.index.interval.bytes", "int", 4096, _C, validator=at_least(0)),
    ConfigKey("log.retention.ms", "long", None, _C),
    ConfigKey("log.retention.minutes", "int", None),
    ConfigKey("log.retention.hours", "int", 168),
    ConfigKey("log.retention.bytes", "long", -1, _C),
    ConfigKey("log.retention.check.interval.ms", "long", 300000, validator=at_least(1)),
    ConfigKey(
        "log.cleanup.policy", "list", ["delete"], _C, validator=each_one_of("compact", "delete")
    ),
    ConfigKey("log.segment.delete.delay.ms", "long", 60000, _C, validator=at_least(0)),
    ConfigKey("log.flush.interval.messages", "long", _LONG_MAX, _C, validator=at_least(1)),
    ConfigKey("log.flush.interval.ms", "long", None, _C),
    ConfigKey("log.flush.scheduler.interval.ms", "long", _LONG_MAX),
    ConfigKey("log.flush.offset.checkpoint.interval.ms", "int", 60000, validator=at_least(0)),
    ConfigKey("log.flush.start.offset.checkpoint.interval.ms", "int", 60000, validator=at_least(0)),
    ConfigKey("log.preallocate", "boolean", False, _C),
    ConfigKey(
        "log.message.timestamp.type",
        "string",
        "CreateTime",
        _C,
        validator=one_of("CreateTime", "LogAppendTime"),
    ),
    ConfigKey(
        "log.message.timestamp.difference.max.ms", "long", _LONG_MAX, _C, validator=at_least(0)
    ),
    ConfigKey("log.message.downconversion.enable", "boolean", True, _C),
    ConfigKey("log.cleaner.enable", "boolean", True),
    ConfigKey("log.cleaner.threads", "int", 1, _C, validator=at_least(0)),
    ConfigKey("log.cleaner.dedupe.buffer.size", "long", 128 * 1024 * 1024, _C),
    ConfigKey("log.cleaner.io.buffer.size", "int", 512 * 1024, _C, validator=at_least(0)),
    ConfigKey("log.cleaner.io.buffer.load.factor", "double", 0.9, _C),
    ConfigKey("log.cleaner.backoff.ms", "long", 15000, _C, validator=at_least(0)),
    ConfigKey("log.cleaner.min.cleanable.ratio", "double", 0.5, _C, validator=at_least(0, 1)),
    ConfigKey("log.cleaner.min.compaction.lag.ms", "long", 0, _C, validator=at_least(0)),
    ConfigKey("log.cleaner.max.compaction.lag.ms", "long", _LONG_MAX, _C, validator=at_least(1)),
    ConfigKey("log.cleaner.delete.retention.ms", "long", 24 * _HOUR_MS, _C, validator=at_least(0)),
    ConfigKey(
        "compression.type",
        "string",
        "producer",
        _C,
        validator=one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
    ),
    ConfigKey("compression.gzip.level", "int", -1, _C, validator=gzip_level),
    ConfigKey("compression.lz4.level", "int", 9, _C, validator=at_least(1, 17)),
    ConfigKey("compression.zstd.level", "int", 3, _C, validator=at_least(-131072, 22)),
    ConfigKey("log.local.retention.ms", "long", -2, _C, validator=at_least(-2)),
    ConfigKey("log.local.retention.bytes", "long", -2, _C, validator=at_least(-2)),
    ConfigKey("remote.log.storage.system.enable", "boolean", False),
    ConfigKey(
        "log.message.format.version",
        "string",
        "3.0-IV1",
        doc="Deprecated (KIP-724): ignored, every log is record batch v2.",
        validator=message_format_version,
    ),
    ConfigKey("min.insync.replicas", "int", 1, _C, validator=at_least(1)),
    ConfigKey("unclean.leader.election.enable", "boolean", False, _C),
    ConfigKey("offsets.topic.num.partitions", "int", 50, validator=at_least(1)),
    ConfigKey("offsets.topic.replication.factor", "short", 3, validator=at_least(1)),
    ConfigKey("offsets.topic.segment.bytes", "int", 100 * 1024 * 1024, validator=at_least(1)),
    ConfigKey("offsets.retention.minutes", "int", 7 * 24 * 60, validator=at_least(1)),
    ConfigKey("offsets.retention.check.interval.ms", "long", 600000, validator=at_least(1)),
    ConfigKey("offsets.commit.timeout.ms", "int", 5000, validator=at_least(1)),
    ConfigKey("offset.metadata.max.bytes", "int", 4096),
    ConfigKey("group.max.size", "int", 2**31 - 1, validator=at_least(1)),
    ConfigKey("group.initial.rebalance.delay.ms", "int", 3000),
    ConfigKey("group.min.session.timeout.ms", "int", 6000),
    ConfigKey("group.max.session.timeout.ms", "int", 1800000),
    ConfigKey("transaction.state.log.num.partitions", "int", 50, validator=at_least(1)),
    ConfigKey("transaction.state.log.replication.factor", "short", 3, validator=at_least(1)),
    ConfigKey("transaction.state.log.min.isr", "int", 2, validator=at_least(1)),
    ConfigKey("producer.id.expiration.ms", "int", 86400000, _C, validator=at_least(1)),
    ConfigKey("controlled.shutdown.enable", "boolean", True),
    ConfigKey("controlled.shutdown.max.retries", "int", 3),
    ConfigKey("controlled.shutdown.retry.backoff.ms", "long", 5000),
    ConfigKey("controller.socket.timeout.ms", "int", 30000),
    ConfigKey("replica.lag.time.max.ms", "long", 30000),
    ConfigKey("num.replica.fetchers", "int", 1, _C),
    ConfigKey("replica.fetch.max.bytes", "int", 1048576, validator=at_least(0)),
    ConfigKey("replica.fetch.wait.max.ms", "int", 500),
    ConfigKey("replica.fetch.min.bytes", "int", 1),
    ConfigKey("replica.fetch.response.max.bytes", "int", 10485760, validator=at_least(0)),
    ConfigKey("replica.fetch.backoff.ms", "int", 1000, validator=at_least(0)),
    ConfigKey("replica.socket.timeout.ms", "int", 30000),
    ConfigKey("replica.high.watermark.checkpoint.interval.ms", "long", 5000),
    ConfigKey("auto.leader.rebalance.enable", "boolean", True),
    ConfigKey("leader.imbalance.check.interval.seconds", "long", 300, validator=at_least(1)),
    ConfigKey("leader.imbalance.per.broker.percentage", "int", 10),
    ConfigKey("leader.replication.throttled.rate", "long", _LONG_MAX, _P, validator=at_least(0)),
    ConfigKey("follower.replication.throttled.rate", "long", _LONG_MAX, _P, validator=at_least(0)),
    ConfigKey(
        "replica.alter.log.dirs.io.max.bytes.per.second",
        "long",
        _LONG_MAX,
        _P,
        validator=at_least(0),
    ),
    ConfigKey("replication.quota.window.num", "int", 11, validator=at_least(1)),
    ConfigKey("replication.quota.window.size.seconds", "int", 1, validator=at_least(1)),
    *LISTENER_KEYS,
    *SASL_KEYS,
    *AUTHORIZER_KEYS,
    *QUOTA_KEYS,
    *ZOOKEEPER_SECURITY_KEYS,
    *CONNECTION_LIMIT_KEYS,
)

# Broker-wide log.* keys → the topic config each one is the default of (Kafka's mapping).
_LOG_CONFIG_SOURCES = {
    "segment_bytes": "log.segment.bytes",
    "segment_index_bytes": "log.index.size.max.bytes",
    "index_interval_bytes": "log.index.interval.bytes",
    "max_message_bytes": "message.max.bytes",
    "retention_bytes": "log.retention.bytes",
    "cleanup_policy": "log.cleanup.policy",
    "min_cleanable_dirty_ratio": "log.cleaner.min.cleanable.ratio",
    "min_compaction_lag_ms": "log.cleaner.min.compaction.lag.ms",
    "max_compaction_lag_ms": "log.cleaner.max.compaction.lag.ms",
    "delete_retention_ms": "log.cleaner.delete.retention.ms",
    "file_delete_delay_ms": "log.segment.delete.delay.ms",
    "message_timestamp_type": "log.message.timestamp.type",
    "message_timestamp_difference_max_ms": "log.message.timestamp.difference.max.ms",
    "message_downconversion_enable": "log.message.downconversion.enable",
    "compression_type": "compression.type",
    "compression_gzip_level": "compression.gzip.level",
    "compression_lz4_level": "compression.lz4.level",
    "compression_zstd_level": "compression.zstd.level",
    "local_retention_ms": "log.local.retention.ms",
    "local_retention_bytes": "log.local.retention.bytes",
    "message_format_version": "log.message.format.version",
    "min_insync_replicas": "min.insync.replicas",
    "unclean_leader_election_enable": "unclean.leader.election.enable",
    "flush_messages": "log.flush.interval.messages",
    "preallocate": "log.preallocate",
}

# Kafka's value of a key tidelog does not have, which KafkaConfig checks another against.
_RESERVED_BROKER_MAX_ID = 1000  # reserved.broker.max.id
_MIB = 1024 * 1024


def read_properties_file(path: Path | str) -> dict[str, str]:
    try:
        return parse_properties(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error.strerror}") from None


class BrokerConfig:
    """Static settings (file + overrides) layered with dynamic ones from ZooKeeper."""

    def __init__(self, static: Mapping[str, str]):
        self.unknown = sorted(k for k in static if config_key_of(k) is None)
        self._static = {
            k: config_key_of(k).parse(v) for k, v in static.items() if config_key_of(k) is not None
        }
        self._cluster: dict[str, object] = {}
        self._broker: dict[str, object] = {}
        self._validate()

    @staticmethod
    def _dynamic(values: Mapping[str, str]) -> dict[str, object]:
        parsed = {}
        for key, raw in values.items():
            definition = config_key_of(key)
            if definition is None or definition.scope is Scope.READ_ONLY:
                continue  # ignored like Kafka ignores stale dynamic entries
            parsed[key] = definition.parse(raw)
        return parsed

    @classmethod
    def load(cls, path: Path | str, overrides: Iterable[str] = ()) -> BrokerConfig:
        static = read_properties_file(path)
        for item in overrides:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise ConfigError(f"--override expects key=value, got {item!r}")
            static[key.strip()] = value.strip()
        return cls(static)

    def with_dynamic(self, cluster: Mapping[str, str], broker: Mapping[str, str]) -> BrokerConfig:
        config = BrokerConfig.__new__(BrokerConfig)
        config.unknown = self.unknown
        config._static = self._static
        config._cluster = self._dynamic(cluster)
        config._broker = self._dynamic(broker)
        config._validate()
        return config

    def without_stale_draining(self, broker: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
        """This broker's dynamic configs without the ``log.dirs.draining`` entries that
        name no directory of ``log.dirs`` (a directory removed from the broker since it
        was drained), and those entries. Such an entry drains nothing; left in, it would
        fail validation and void every dynamic config of the broker. Setting one is still
        refused (IncrementalAlterConfigs validates through :meth:`with_dynamic`)."""
        raw = broker.get("log.dirs.draining")
        if not raw:
            return dict(broker), []
        known = {d.resolve() for d in self.log_dirs}
        entries = BROKER_CONFIGS["log.dirs.draining"].parse(raw)
        stale = [d for d in entries if Path(d).resolve() not in known]
        kept = ",".join(d for d in entries if d not in stale)
        return {**broker, "log.dirs.draining": kept}, stale

    # -- lookup ----------------------------------------------------------------------

    def layers(self, key: str) -> list[tuple[ConfigSource, object]]:
        """Every value set for ``key``, highest precedence first (DescribeConfigs
        synonyms), ending with the default."""
        found = []
        for source, layer in (
            (ConfigSource.DYNAMIC_BROKER_CONFIG, self._broker),
            (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, self._cluster),
            (ConfigSource.STATIC_BROKER_CONFIG, self._static),
        ):
            if key in layer:
                found.append((source, layer[key]))
        found.append((ConfigSource.DEFAULT_CONFIG, config_key_of(key).default))
        return found

    def __getitem__(self, key: str):
        return self.layers(key)[0][1]

    def listener_keys(self) -> list[str]:
        """The keys with a ``listener.name.<name>.`` prefix set in any layer."""
        layers = (self._broker, self._cluster, self._static)
        return sorted({k for layer in layers for k in layer if k not in BROKER_CONFIGS})

    # -- derived values ------------------------------------------------------------------

    @property
    def broker_id(self) -> int:
        return self["broker.id"]

    @property
    def log_dirs(self) -> list[Path]:
        dirs = self["log.dirs"] or [self["log.dir"]]
        return [Path(d) for d in dirs]

    @property
    def listeners(self) -> list[tuple[str, str, int]]:
        return [parse_listener(item) for item in self["listeners"]]

    @property
    def advertised_listeners(self) -> list[tuple[str, str, int]]:
        advertised = self["advertised.listeners"]
        return [parse_listener(item) for item in advertised] if advertised else self.listeners

    def _first_set_ms(self, *candidates: tuple[str, int]) -> int:
        for key, factor in candidates:
            value = self[key]
            if value is not None:
                return int(value) * factor
        raise AssertionError("the last candidate has a default")

    @property
    def log_retention_ms(self) -> int:
        """As Kafka reads it: the first of the three keys set; any negative is -1."""
        retention = self._first_set_ms(
            ("log.retention.ms", 1),
            ("log.retention.minutes", 60_000),
            ("log.retention.hours", _HOUR_MS),
        )
        return max(retention, -1)

    @property
    def log_roll_ms(self) -> int:
        return self._first_set_ms(("log.roll.ms", 1), ("log.roll.hours", _HOUR_MS))

    @property
    def log_roll_jitter_ms(self) -> int:
        return self._first_set_ms(("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", _HOUR_MS))

    def log_config(self) -> LogConfig:
        """The topic-config defaults that the broker's log.* keys set."""
        values = {field: self[key] for field, key in _LOG_CONFIG_SOURCES.items()}
        values["cleanup_policy"] = tuple(values["cleanup_policy"])
        values["retention_ms"] = self.log_retention_ms
        values["segment_ms"] = self.log_roll_ms
        values["segment_jitter_ms"] = self.log_roll_jitter_ms
        flush_ms = self["log.flush.interval.ms"]  # unset: the flusher's interval, as in Kafka
        values["flush_ms"] = (
            flush_ms if flush_ms is not None else self["log.flush.scheduler.interval.ms"]
        )
        return LogConfig(**values)

    def _validate(self) -> None:
        if self["zookeeper.connect"] is None:
            raise ConfigError("zookeeper.connect is required")
        if not self["listeners"]:
            raise ConfigError("listeners must name at least one listener")
        check_listeners(self)
        # Without advertised.listeners the listeners are advertised: as in Kafka, a
        # meta-address is refused there too (an empty host advertises the machine's name).
        for name, host, _ in self.advertised_listeners:
            if host in ("0.0.0.0", "::"):
                raise ConfigError(
                    f"advertised.listeners cannot use the meta-address {host} ({name}); "
                    "set advertised.listeners, or leave the listener's host empty"
                )
        self._check_as_kafka_config()
        known = {d.resolve() for d in self.log_dirs}
        for directory in self["log.dirs.draining"]:
            if Path(directory).resolve() not in known:
                raise ConfigError(f"log.dirs.draining: {directory} is not one of log.dirs")

    def _retention_key(self) -> str:
        """The one of the three retention keys that sets log_retention_ms."""
        for key in ("log.retention.ms", "log.retention.minutes"):
            if self[key] is not None:
                return key
        return "log.retention.hours"

    def _check_as_kafka_config(self) -> None:
        """The checks of Kafka 3.9's KafkaConfig between keys (each key's own type and
        range are checked as it is parsed): each problem names the key and its value."""
        ip_overrides = parse_ip_overrides(self["max.connections.per.ip.overrides"])
        for key, value, problem in (
            (
                "broker.id",
                self.broker_id,
                not -1 <= self.broker_id <= _RESERVED_BROKER_MAX_ID,
            ),
            ("log.roll.ms", self.log_roll_ms, self.log_roll_ms < 1),
            ("log.roll.jitter.ms", self.log_roll_jitter_ms, self.log_roll_jitter_ms < 0),
            (self._retention_key(), self.log_retention_ms, self.log_retention_ms == 0),
            (
                "log.cleaner.dedupe.buffer.size",
                self["log.cleaner.dedupe.buffer.size"],
                self["log.cleaner.threads"] == 0
                or self["log.cleaner.dedupe.buffer.size"] // self["log.cleaner.threads"] <= _MIB,
            ),
            (
                "replica.socket.timeout.ms",
                self["replica.socket.timeout.ms"],
                self["replica.socket.timeout.ms"] < self["replica.fetch.wait.max.ms"],
            ),
            (
                "replica.fetch.wait.max.ms",
                self["replica.fetch.wait.max.ms"],
                self["replica.fetch.wait.max.ms"] > self["replica.lag.time.max.ms"],
            ),
            (
                "connections.max.idle.ms",
                self["connections.max.idle.ms"],
                0
                <= self["connections.max.idle.ms"]
                <= self["connection.failed.authentication.delay.ms"],
            ),
            (
                "max.connections.per.ip",
                self["max.connections.per.ip"],
                self["max.connections.per.ip"] == 0 and not ip_overrides,
            ),
        ):
            if problem:
                rule = _KAFKA_RULES[key].format(
                    delay=self["connection.failed.authentication.delay.ms"]
                )
                raise ConfigError(f"Invalid value {value} for configuration {key}: {rule}")


_KAFKA_RULES = {
    "broker.id": f"must be at least -1 and at most {_RESERVED_BROKER_MAX_ID} "
    "(reserved.broker.max.id)",
    "log.roll.ms": "must be at least 1",
    "log.roll.jitter.ms": "must be at least 0",
    "log.retention.ms": "must be unlimited (-1) or at least 1",
    "log.retention.minutes": "must be unlimited (-1) or at least 1 ms",
    "log.retention.hours": "must be unlimited (-1) or at least 1 ms",
    "log.cleaner.dedupe.buffer.size": "must be more than 1MB per cleaner thread "
    "(log.cleaner.threads, at least 1)",
    "replica.socket.timeout.ms": "must be at least replica.fetch.wait.max.ms",
    "replica.fetch.wait.max.ms": "must be at most replica.lag.time.max.ms",
    "connections.max.idle.ms": "must be negative (no limit) or more than "
    "connection.failed.authentication.delay.ms={delay}",
    "max.connections.per.ip": "can be set to zero only if max.connections.per.ip.overrides "
    "is set",
}


def config_key_of(key: str) -> ConfigKey | None:
    """A key's definition; a ``listener.name.<name>.`` key has its base key's."""
    found = BROKER_CONFIGS.get(key)
    if found is None and (base := prefixed_key_base(key, BROKER_CONFIGS)) is not None:
        found = dataclasses.replace(BROKER_CONFIGS[base], name=key)
    return found
