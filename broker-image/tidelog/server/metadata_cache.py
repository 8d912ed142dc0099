"""Every broker's view of the cluster: live brokers, topics, partition leaders and ISR,
the controller. The controller keeps it current (UpdateMetadata), so any broker can
answer Metadata requests.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from tidelog.controller.zk_data import BrokerRegistration
from tidelog.protocol import Encoded

__all__ = ["MetadataCache", "PartitionMetadata", "TopicMetadata"]


@dataclass
class PartitionMetadata:
    partition: int
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    offline_replicas: list[int] = field(default_factory=list)


@dataclass
class TopicMetadata:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionMetadata] = field(default_factory=dict)
    # The Metadata response's view of this topic, written once per change and response
    # version: building and writing it for a thousand partitions on every request cost
    # milliseconds.
    encoded: dict[int, Encoded] = field(default_factory=dict)

    @property
    def is_internal(self) -> bool:
        return self.name in ("__consumer_offsets", "__transaction_state")


class MetadataCache:
    def __init__(self, cluster_id: str):
        self.cluster_id = cluster_id
        self.controller_id: int | None = None
        self.brokers: dict[int, BrokerRegistration] = {}
        self.topics: dict[str, TopicMetadata] = {}
        self._by_id: dict[uuid.UUID, TopicMetadata] = {}

    def update_brokers(self, brokers: dict[int, BrokerRegistration]) -> None:
        self.brokers = dict(brokers)

    def update_partition(self, topic: str, topic_id: uuid.UUID, state: PartitionMetadata) -> None:
        entry = self.topics.get(topic)
        if entry is None or entry.topic_id != topic_id:
            if entry is not None:
                self._by_id.pop(entry.topic_id, None)
            entry = self.topics[topic] = TopicMetadata(topic, topic_id)
            self._by_id[topic_id] = entry
        entry.partitions[state.partition] = state
        entry.encoded.clear()

    def remove_partition(self, topic: str, partition: int) -> None:
        """A partition of a topic being deleted; the topic goes with its last one."""
        entry = self.topics.get(topic)
        if entry is None:
            return
        entry.partitions.pop(partition, None)
        entry.encoded.clear()
        if not entry.partitions:
            self.remove_topic(topic)

    def remove_topic(self, topic: str) -> None:
        entry = self.topics.pop(topic, None)
        if entry is not None:
            self._by_id.pop(entry.topic_id, None)

    def partition(self, topic: str, partition: int) -> PartitionMetadata | None:
        entry = self.topics.get(topic)
        return entry.partitions.get(partition) if entry else None

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        return self._by_id.get(topic_id)

    def brokers_on(self, listener: str) -> list[tuple[int, str, int, str | None]]:
        """(id, host, port, rack) of every live broker reachable on ``listener``."""
        nodes = (self.node(broker_id, listener) for broker_id in sorted(self.brokers))
        return [node for node in nodes if node is not None]

    def node(self, broker_id: int, listener: str) -> tuple[int, str, int, str | None] | None:
        """(id, host, port, rack) of a live broker reachable on ``listener``, else None."""
        endpoint = self.endpoint(broker_id, listener)
        if endpoint is None:
            return None
        return (broker_id, *endpoint, self.brokers[broker_id].rack)

    def endpoint(self, broker_id: int, listener: str) -> tuple[str, int] | None:
        broker = self.brokers.get(broker_id)
        if broker is None:
            return None
        for name, host, port in broker.endpoints:
            if name == listener:
                return host, port
        return None
