"""Per-log configuration: Kafka's topic-level keys, their defaults, and their parsing.

A LogConfig holds values already checked where they came in: a topic's overrides by
:meth:`LogConfig.from_properties` (Kafka's topic validation), the broker's defaults by
:class:`tidelog.server.config.BrokerConfig` (Kafka's broker validation, which lets
through some values a topic may not have, such as ``log.flush.interval.ms=-1``).
Constructing one directly checks nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from tidelog.storage.config_values import (
    LogConfigError,
    Validator,
    at_least,
    each_one_of,
    invalid,
    one_of,
    parse_value,
)
from tidelog.storage.metadata_version import parse_metadata_version

__all__ = [
    "INDEX_BYTES_MIN",
    "TOPIC_VALIDATION",
    "LogConfig",
    "LogConfigError",
    "gzip_level",
    "message_format_version",
]

_WEEK_MS = 7 * 24 * 60 * 60 * 1000
_LONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class LogConfig:
    """Settings of one log, named as Kafka's topic configs with dots turned to underscores."""

    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = _WEEK_MS
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    max_message_bytes: int = 1024 * 1024 + 12
    retention_ms: int = _WEEK_MS
    retention_bytes: int = -1
    cleanup_policy: tuple[str, ...] = ("delete",)
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = _LONG_MAX
    delete_retention_ms: int = 24 * 60 * 60 * 1000
    file_delete_delay_ms: int = 60_000
    message_timestamp_type: str = "CreateTime"
    # Topic configs the storage engine does not act on itself but that a topic carries
    # (Kafka accepts them on every topic; replication and produce paths read them).
    compression_type: str = "producer"
    # Levels a broker uses where it compresses a batch itself (a cleaned batch, an old
    # format converted on append); Kafka 3.8's KIP-390 defaults (-1: zlib's default).
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    flush_messages: int = _LONG_MAX
    flush_ms: int = _LONG_MAX
    follower_replication_throttled_replicas: str = ""
    leader_replication_throttled_replicas: str = ""
    message_downconversion_enable: bool = True
    message_timestamp_difference_max_ms: int = _LONG_MAX
    message_timestamp_before_max_ms: int = _LONG_MAX
    message_timestamp_after_max_ms: int = _LONG_MAX
    min_insync_replicas: int = 1
    preallocate: bool = False
    unclean_leader_election_enable: bool = False
    # Tiered storage (KIP-405): accepted with its defaults, as a broker without a remote
    # storage system accepts them; remote.storage.enable=true is refused.
    local_retention_ms: int = -2
    local_retention_bytes: int = -2
    remote_storage_enable: bool = False
    remote_log_copy_disable: bool = False
    remote_log_delete_on_disable: bool = False
    # Deprecated (KIP-724): checked as Kafka 3.9 checks it (any version its MetadataVersion
    # parses, see metadata_version.py) and ignored, every log being record batch v2.
    message_format_version: str = "3.0-IV1"

    def compression_level(self, codec: str) -> int | None:
        """The level this log compresses ``codec`` (a Kafka codec name) with, or None
        for a codec without levels."""
        return getattr(self, f"compression_{codec}_level", None)

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @classmethod
    def from_properties(cls, properties: Mapping[str, str], base: LogConfig | None = None):
        """Build from Kafka-named keys (``segment.bytes``...) over ``base``, checked as
        Kafka 3.9's ``LogConfig.validate`` checks them: each value parsed by its key's type
        and passed through its key's validator (see :data:`TOPIC_VALIDATION`), then the
        set as a whole; an unknown key or a refused value raises LogConfigError."""
        values = {}
        for key, raw in properties.items():
            spec = TOPIC_VALIDATION.get(key)
            if spec is None:
                raise LogConfigError(f"unknown topic config {key!r}")
            kind, validator = spec
            value = parse_value(key, kind, raw)
            if validator is not None:
                validator(key, value)
            values[key.replace(".", "_")] = tuple(value) if kind == "list" else value
        config = dataclasses.replace(base or cls(), **values)
        if config.min_compaction_lag_ms > config.max_compaction_lag_ms:
            raise LogConfigError(
                f"Invalid value {config.min_compaction_lag_ms} for configuration "
                f"min.compaction.lag.ms: conflicts with max.compaction.lag.ms "
                f"{config.max_compaction_lag_ms}"
            )
        return config


def gzip_level(key: str, value) -> None:
    """Kafka's validator of compression.gzip.level: -1 (zlib's default) or 1 to 9."""
    if value != -1 and not 1 <= value <= 9:
        raise invalid(key, value, "Value must be -1 or between 1 and 9")


def message_format_version(key: str, value) -> None:
    """Kafka's MetadataVersionValidator."""
    try:
        parse_metadata_version(value)
    except ValueError as error:
        raise invalid(key, value, str(error)) from None


def _remote_storage_disabled(key: str, value) -> None:
    if value:
        raise invalid(
            key,
            value,
            "tiered storage is not available on these brokers "
            "(remote.log.storage.system.enable is false)",
        )


def _not_under_zookeeper(key: str, value) -> None:
    if value:
        raise invalid(key, value, "it cannot be set on brokers run with ZooKeeper")


# Kafka's validator takes segment.index.bytes from 4, but its log then cannot open a
# segment below 12 (one time-index entry); refused here when it is set.
INDEX_BYTES_MIN = 12

_LONG = ("long", None)
_BOOLEAN = ("boolean", None)

# Kafka 3.9's LogConfig ConfigDef: each topic key's type and validator. The
# throttled-replicas lists are strings here; their entries are checked by the server
# (tidelog.server.handlers.config_resources.validate_topic_config), beside the quotas.
TOPIC_VALIDATION: dict[str, tuple[str, Validator | None]] = {
    "cleanup.policy": ("list", each_one_of("compact", "delete")),
    "compression.gzip.level": ("int", gzip_level),
    "compression.lz4.level": ("int", at_least(1, 17)),
    "compression.type": (
        "string",
        one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
    ),
    "compression.zstd.level": ("int", at_least(-131072, 22)),
    "delete.retention.ms": ("long", at_least(0)),
    "file.delete.delay.ms": ("long", at_least(0)),
    "flush.messages": ("long", at_least(1)),
    "flush.ms": ("long", at_least(0)),
    "follower.replication.throttled.replicas": ("string", None),
    "index.interval.bytes": ("int", at_least(0)),
    "leader.replication.throttled.replicas": ("string", None),
    "local.retention.bytes": ("long", at_least(-2)),
    "local.retention.ms": ("long", at_least(-2)),
    "max.compaction.lag.ms": ("long", at_least(1)),
    "max.message.bytes": ("int", at_least(0)),
    "message.downconversion.enable": _BOOLEAN,
    "message.format.version": ("string", message_format_version),
    "message.timestamp.after.max.ms": ("long", at_least(0)),
    "message.timestamp.before.max.ms": ("long", at_least(0)),
    "message.timestamp.difference.max.ms": ("long", at_least(0)),
    "message.timestamp.type": ("string", one_of("CreateTime", "LogAppendTime")),
    "min.cleanable.dirty.ratio": ("double", at_least(0, 1)),
    "min.compaction.lag.ms": ("long", at_least(0)),
    "min.insync.replicas": ("int", at_least(1)),
    "preallocate": _BOOLEAN,
    "remote.log.copy.disable": ("boolean", _not_under_zookeeper),
    "remote.log.delete.on.disable": ("boolean", _not_under_zookeeper),
    "remote.storage.enable": ("boolean", _remote_storage_disabled),
    "retention.bytes": _LONG,
    "retention.ms": ("long", at_least(-1)),
    "segment.bytes": ("int", at_least(14)),
    "segment.index.bytes": ("int", at_least(INDEX_BYTES_MIN)),
    "segment.jitter.ms": ("long", at_least(0)),
    "segment.ms": ("long", at_least(1)),
    "unclean.leader.election.enable": _BOOLEAN,
}
