"""The lines of ``tidelog-topics --describe``, laid out as Kafka's ``kafka-topics.sh``
(3.9) lays them out, and the tests behind its partition filters
(``--under-replicated-partitions``, ``--unavailable-partitions``,
``--under-min-isr-partitions``, ``--at-min-isr-partitions``). Pure: values in, text out.

A topic line::

    Topic: t<TAB>TopicId: <id><TAB>PartitionCount: 3<TAB>ReplicationFactor: 2<TAB>Configs: k=v,...

then a line per partition, each field after a tab; a partition being reassigned also
shows its adding and removing replicas, and ``Elr``/``LastKnownElr`` (KIP-966, KRaft
only) are ``N/A`` as Kafka's tool prints them for a ZooKeeper-mode cluster.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tidelog.admin.topics import ConfigEntry, PartitionInfo, Reassignment, TopicDescription

__all__ = [
    "DEFAULT_MIN_ISR",
    "PartitionRow",
    "format_partition",
    "format_topic",
    "kafka_uuid",
    "parse_kafka_uuid",
    "replication_factor",
]

# min.insync.replicas when the topic's configs do not say.
DEFAULT_MIN_ISR = 1


def kafka_uuid(value: uuid.UUID) -> str:
    """A topic id as Kafka prints it: URL-safe base64 of its 16 bytes, unpadded."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def parse_kafka_uuid(text: str) -> uuid.UUID:
    """The topic id Kafka prints as ``text``; ValueError if it is not one."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError):
        raise ValueError(f"Invalid topic id '{text}'") from None
    if len(raw) != 16 or kafka_uuid(uuid.UUID(bytes=raw)) != text:
        raise ValueError(f"Invalid topic id '{text}'")
    return uuid.UUID(bytes=raw)


def replication_factor(info: PartitionInfo, reassignment: Reassignment | None) -> int:
    """Kafka's replication factor of a partition: while replicas are being added or
    removed, the size of the set without the adding ones."""
    changing = set() if reassignment is None else {*reassignment.adding, *reassignment.removing}
    if reassignment is not None and changing.intersection(info.replicas):
        return len(reassignment.replicas) - len(reassignment.adding)
    return len(info.replicas)


def _ids(values: Iterable[int]) -> str:
    return ",".join(str(v) for v in values)


@dataclass(frozen=True)
class PartitionRow:
    topic: str
    info: PartitionInfo
    reassignment: Reassignment | None = None
    min_isr: int = DEFAULT_MIN_ISR

    @property
    def under_replicated(self) -> bool:
        return replication_factor(self.info, self.reassignment) > len(self.info.isr)

    def unavailable(self, live_brokers: Iterable[int]) -> bool:
        return self.info.leader is None or self.info.leader not in set(live_brokers)

    @property
    def under_min_isr(self) -> bool:
        return self.info.leader is None or len(self.info.isr) < self.min_isr

    @property
    def at_min_isr(self) -> bool:
        return len(self.info.isr) == self.min_isr


def format_topic(
    description: TopicDescription,
    replication: int,
    configs: Mapping[str, ConfigEntry],
) -> str:
    """The topic line: its id, partition count, replication factor and the configs that
    are not defaults (in the order the broker lists them)."""
    overrides = ",".join(f"{e.name}={e.value}" for e in configs.values() if not e.is_default)
    topic_id = (
        "" if description.topic_id is None else f"\tTopicId: {kafka_uuid(description.topic_id)}"
    )
    return (
        f"Topic: {description.name}{topic_id}\tPartitionCount: {len(description.partitions)}"
        f"\tReplicationFactor: {replication}\tConfigs: {overrides}\n"
    )


def format_partition(row: PartitionRow) -> str:
    info = row.info
    leader = "none" if info.leader is None else str(info.leader)
    line = (
        f"\tTopic: {row.topic}\tPartition: {info.partition}\tLeader: {leader}"
        f"\tReplicas: {_ids(info.replicas)}\tIsr: {_ids(info.isr)}"
    )
    if row.reassignment is not None:
        line += (
            f"\tAdding Replicas: {_ids(row.reassignment.adding)}"
            f"\tRemoving Replicas: {_ids(row.reassignment.removing)}"
        )
    return line + "\tElr: N/A\tLastKnownElr: N/A\n"
