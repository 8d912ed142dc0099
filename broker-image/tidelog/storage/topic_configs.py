"""Kafka's topic configs as DescribeConfigs lists them: each key's type, the broker key
its default comes from, and its documentation.

Beside :mod:`tidelog.storage.config`, whose :class:`~tidelog.storage.config.LogConfig`
holds the values: this table is the catalogue of the same keys (a topic config named
``retention.ms`` is ``LogConfig.retention_ms``). The broker keys named as synonyms are
those of ``tidelog.server.config.BROKER_CONFIGS``.
"""

from __future__ import annotations

from dataclasses import dataclass

from tidelog.protocol.admin_enums import ConfigType

__all__ = ["TOPIC_CONFIGS", "TopicKey"]


@dataclass(frozen=True)
class TopicKey:
    """One topic config: its DescribeConfigs type, the broker key whose value is its
    default (None: none), and its documentation."""

    type: ConfigType
    synonym: str | None  # the broker key whose value is the topic's default
    doc: str


_T = ConfigType
TOPIC_CONFIGS: dict[str, TopicKey] = {
    "cleanup.policy": TopicKey(
        _T.LIST, "log.cleanup.policy", "delete and/or compact: how old segments are retired."
    ),
    "compression.type": TopicKey(
        _T.STRING, "compression.type", "Codec of stored batches; producer keeps the producer's."
    ),
    "compression.gzip.level": TopicKey(
        _T.INT, "compression.gzip.level", "gzip level where the broker compresses (-1: zlib's)."
    ),
    "compression.lz4.level": TopicKey(
        _T.INT, "compression.lz4.level", "lz4 level where the broker compresses (1-17)."
    ),
    "compression.zstd.level": TopicKey(
        _T.INT, "compression.zstd.level", "zstd level where the broker compresses."
    ),
    "local.retention.bytes": TopicKey(
        _T.LONG,
        "log.local.retention.bytes",
        "Tiered storage's local retention in bytes (-2: retention.bytes); no remote tier here.",
    ),
    "local.retention.ms": TopicKey(
        _T.LONG,
        "log.local.retention.ms",
        "Tiered storage's local retention in ms (-2: retention.ms); no remote tier here.",
    ),
    "message.format.version": TopicKey(
        _T.STRING,
        "log.message.format.version",
        "Deprecated: ignored, every log is record batch v2 (old formats are converted).",
    ),
    "remote.log.copy.disable": TopicKey(
        _T.BOOLEAN, None, "Tiered storage: stop copying to the remote tier; no remote tier here."
    ),
    "remote.log.delete.on.disable": TopicKey(
        _T.BOOLEAN,
        None,
        "Tiered storage: delete remote data when it is turned off; no remote tier here.",
    ),
    "remote.storage.enable": TopicKey(
        _T.BOOLEAN, None, "Tiered storage for the topic: not available on these brokers."
    ),
    "delete.retention.ms": TopicKey(
        _T.LONG, "log.cleaner.delete.retention.ms", "How long tombstones survive compaction."
    ),
    "file.delete.delay.ms": TopicKey(
        _T.LONG, "log.segment.delete.delay.ms", "Delay before a retired segment file is removed."
    ),
    "flush.messages": TopicKey(
        _T.LONG, "log.flush.interval.messages", "Records appended between forced fsyncs."
    ),
    "flush.ms": TopicKey(_T.LONG, "log.flush.interval.ms", "Time between forced fsyncs."),
    "follower.replication.throttled.replicas": TopicKey(
        _T.LIST, None, "Replicas throttled on the follower side (partition:broker,...)."
    ),
    "index.interval.bytes": TopicKey(
        _T.INT, "log.index.interval.bytes", "Bytes between two offset index entries."
    ),
    "leader.replication.throttled.replicas": TopicKey(
        _T.LIST, None, "Replicas throttled on the leader side (partition:broker,...)."
    ),
    "max.compaction.lag.ms": TopicKey(
        _T.LONG, "log.cleaner.max.compaction.lag.ms", "Longest a record stays uncompacted."
    ),
    "max.message.bytes": TopicKey(
        _T.INT, "message.max.bytes", "Largest record batch the topic accepts."
    ),
    "message.downconversion.enable": TopicKey(
        _T.BOOLEAN,
        "log.message.downconversion.enable",
        "Whether old consumers get down-converted batches.",
    ),
    "message.timestamp.after.max.ms": TopicKey(
        _T.LONG,
        "log.message.timestamp.after.max.ms",
        "How far a record's timestamp may lie ahead of the broker's clock.",
    ),
    "message.timestamp.before.max.ms": TopicKey(
        _T.LONG,
        "log.message.timestamp.before.max.ms",
        "How far a record's timestamp may lie behind the broker's clock.",
    ),
    "message.timestamp.difference.max.ms": TopicKey(
        _T.LONG,
        "log.message.timestamp.difference.max.ms",
        "Largest difference between a record's timestamp and the broker's clock.",
    ),
    "message.timestamp.type": TopicKey(
        _T.STRING, "log.message.timestamp.type", "CreateTime or LogAppendTime."
    ),
    "min.cleanable.dirty.ratio": TopicKey(
        _T.DOUBLE,
        "log.cleaner.min.cleanable.ratio",
        "Dirty share of the log above which it is compacted.",
    ),
    "min.compaction.lag.ms": TopicKey(
        _T.LONG, "log.cleaner.min.compaction.lag.ms", "Shortest a record stays uncompacted."
    ),
    "min.insync.replicas": TopicKey(
        _T.INT, "min.insync.replicas", "In-sync replicas an acks=all write needs."
    ),
    "preallocate": TopicKey(
        _T.BOOLEAN, "log.preallocate", "Whether new segment files are preallocated."
    ),
    "retention.bytes": TopicKey(
        _T.LONG, "log.retention.bytes", "Largest size of a partition before old segments go."
    ),
    "retention.ms": TopicKey(
        _T.LONG, "log.retention.ms", "Longest a segment is kept before it is deleted."
    ),
    "segment.bytes": TopicKey(_T.INT, "log.segment.bytes", "Size at which a segment rolls."),
    "segment.index.bytes": TopicKey(
        _T.INT, "log.index.size.max.bytes", "Size of a segment's preallocated index files."
    ),
    "segment.jitter.ms": TopicKey(
        _T.LONG, "log.roll.jitter.ms", "Random jitter subtracted from segment.ms."
    ),
    "segment.ms": TopicKey(_T.LONG, "log.roll.ms", "Age at which a segment rolls."),
    "unclean.leader.election.enable": TopicKey(
        _T.BOOLEAN,
        "unclean.leader.election.enable",
        "Whether an out-of-sync replica may become leader.",
    ),
}
