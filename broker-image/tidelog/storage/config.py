"""Per-log configuration: Kafka's topic-level keys, their defaults, and their parsing."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from tidelog.storage.metadata_version import parse_metadata_version

__all__ = ["LogConfig", "LogConfigError"]

_WEEK_MS = 7 * 24 * 60 * 60 * 1000
_LONG_MAX = 2**63 - 1
_INT_MAX = 2**31 - 1


class LogConfigError(ValueError):
    """A topic or broker setting that cannot be used (Kafka: INVALID_CONFIG)."""

    error_code = 40


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
    # Deprecated (KIP-724): checked as Kafka 3.9 checks it (any version its MetadataVersion
    # parses, see metadata_version.py) and ignored, every log being record batch v2.
    message_format_version: str = "3.0-IV1"

    def __post_init__(self) -> None:
        if not 14 <= self.segment_bytes <= _INT_MAX:
            raise LogConfigError(
                f"segment.bytes must be between 14 and {_INT_MAX}, got {self.segment_bytes}"
            )
        for key, value, low, high in (
            # Kafka's ConfigDef bounds: a value outside them must never reach a log.
            ("segment.index.bytes", self.segment_index_bytes, 12, _INT_MAX),
            ("index.interval.bytes", self.index_interval_bytes, 0, _INT_MAX),
            ("segment.ms", self.segment_ms, 1, _LONG_MAX),
            ("segment.jitter.ms", self.segment_jitter_ms, 0, _LONG_MAX),
            ("max.message.bytes", self.max_message_bytes, 0, _INT_MAX),
            ("retention.ms", self.retention_ms, -1, _LONG_MAX),
            ("retention.bytes", self.retention_bytes, -1, _LONG_MAX),
            ("min.compaction.lag.ms", self.min_compaction_lag_ms, 0, _LONG_MAX),
            ("max.compaction.lag.ms", self.max_compaction_lag_ms, 1, _LONG_MAX),
            ("delete.retention.ms", self.delete_retention_ms, 0, _LONG_MAX),
            ("file.delete.delay.ms", self.file_delete_delay_ms, 0, _LONG_MAX),
            ("flush.messages", self.flush_messages, 1, _LONG_MAX),
            ("flush.ms", self.flush_ms, 0, _LONG_MAX),
            ("min.insync.replicas", self.min_insync_replicas, 1, _INT_MAX),
            ("compression.lz4.level", self.compression_lz4_level, 1, 17),
            ("compression.zstd.level", self.compression_zstd_level, -131072, 22),
            ("local.retention.ms", self.local_retention_ms, -2, _LONG_MAX),
            ("local.retention.bytes", self.local_retention_bytes, -2, _LONG_MAX),
        ):
            if not low <= value <= high:
                raise LogConfigError(f"{key} must be between {low} and {high}, got {value}")
        unknown = set(self.cleanup_policy) - {"delete", "compact"}
        if unknown or not self.cleanup_policy:
            raise LogConfigError(f"cleanup.policy must be delete and/or compact, got {unknown}")
        if not 0.0 <= self.min_cleanable_dirty_ratio <= 1.0:
            raise LogConfigError("min.cleanable.dirty.ratio must be between 0 and 1")
        if self.message_timestamp_type not in ("CreateTime", "LogAppendTime"):
            raise LogConfigError("message.timestamp.type must be CreateTime or LogAppendTime")
        if self.compression_gzip_level != -1 and not 1 <= self.compression_gzip_level <= 9:
            raise LogConfigError(
                f"compression.gzip.level must be -1 or between 1 and 9, "
                f"got {self.compression_gzip_level}"
            )
        if self.remote_storage_enable:
            raise LogConfigError(
                "remote.storage.enable: tiered storage is not available on these brokers "
                "(remote.log.storage.system.enable is false)"
            )
        try:
            parse_metadata_version(self.message_format_version)
        except ValueError as error:
            raise LogConfigError(
                f"Invalid value {self.message_format_version} for configuration "
                f"message.format.version: {error}"
            ) from None
        codecs = ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")
        if self.compression_type not in codecs:
            raise LogConfigError(f"compression.type must be one of {', '.join(codecs)}")

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
        """Build from Kafka-named keys (``segment.bytes``...) over ``base``; unknown keys fail."""
        fields = {field.name: field for field in dataclasses.fields(cls)}
        values = {}
        for key, raw in properties.items():
            name = key.replace(".", "_")
            if name not in fields:
                raise LogConfigError(f"unknown topic config {key!r}")
            values[name] = _parse(key, fields[name].type, raw)
        return dataclasses.replace(base or cls(), **values)


def _parse(key: str, kind: str, raw: str):
    text = str(raw).strip()
    if kind == "bool":
        if text.lower() not in ("true", "false"):
            raise LogConfigError(f"{key}: {raw!r} is not true or false")
        return text.lower() == "true"
    try:
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
    except ValueError:
        raise LogConfigError(f"{key}: {raw!r} is not a {kind}") from None
    if kind.startswith("tuple"):
        return tuple(part.strip() for part in text.split(",") if part.strip())
    return text
