"""The broker's ZooKeeper client: Kafka's znodes read and written through kazoo.

:class:`KafkaZkClient` is one session (:mod:`.zk_session`) with every area of znodes:
membership and the controller (:mod:`.zk_brokers`), configs (:mod:`.zk_configs`), the
notifications brokers leave the controller (:mod:`.zk_notifications`), producer-id
blocks (:mod:`.zk_producer_ids`), and, here, topics: their assignments, partition
states, deletions and the reassignments asked for through ``/admin``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, RolledBackError

from tidelog.controller.zk_brokers import BrokerZnodes
from tidelog.controller.zk_configs import ConfigZnodes, config_document
from tidelog.controller.zk_data import (
    DELETE_TOPICS,
    REASSIGN_PARTITIONS,
    TOPICS,
    PartitionState,
    TopicAssignment,
    config_path,
    decode_json,
    decode_reassignments,
    encode_reassignments,
    partition_state_path,
    topic_path,
)
from tidelog.controller.zk_notifications import NotificationZnodes
from tidelog.controller.zk_producer_ids import ProducerIdZnodes
from tidelog.controller.zk_session import ZkError

__all__ = [
    "KafkaZkClient",
    "PartitionsChangedError",
    "ReassignmentInProgressError",
    "StalePartitionStateError",
    "TopicExistsError",
]

logger = logging.getLogger(__name__)


class TopicExistsError(ZkError):
    error_code = 36  # TOPIC_ALREADY_EXISTS


class ReassignmentInProgressError(ZkError):
    error_code = 60  # REASSIGNMENT_IN_PROGRESS


class StalePartitionStateError(ZkError):
    """A partition state znode changed since it was read (conditional write failed)."""


class PartitionsChangedError(ZkError):
    """The topic's partitions changed between the check and the write (CreatePartitions)."""

    error_code = 37  # INVALID_PARTITIONS


class KafkaZkClient(BrokerZnodes, ConfigZnodes, NotificationZnodes, ProducerIdZnodes):
    """The broker's ZooKeeper client; the methods written here are the topics' znodes."""

    # -- topics ----------------------------------------------------------------------------

    def topics(self, watch: Callable | None = None) -> list[str]:
        return sorted(self.zk.get_children(TOPICS, watch=watch))

    def topic_assignment(self, topic: str) -> TopicAssignment | None:
        try:
            data, _ = self.zk.get(topic_path(topic))
        except NoNodeError:
            return None
        return TopicAssignment.decode(topic, data)

    def topic_assignments(self, topics: Iterable[str]) -> dict[str, TopicAssignment]:
        """Many topics' assignments, read in one pipelined round trip; a topic gone
        meanwhile is left out."""
        found = self._read_many({topic: topic_path(topic) for topic in topics})
        return {topic: TopicAssignment.decode(topic, data) for topic, (data, _) in found.items()}

    def create_topic(self, assignment: TopicAssignment, config: Mapping[str, str]) -> None:
        """Topic config first, then the assignment (as Kafka does), atomically."""
        transaction = self.zk.transaction()
        config_node = config_path("topics", assignment.topic)
        if self.zk.exists(config_node):
            transaction.set_data(config_node, config_document(config))
        else:
            transaction.create(config_node, config_document(config))
        transaction.create(topic_path(assignment.topic), assignment.encode())
        results = transaction.commit()
        # Operations before the failing one report RolledBackError; find the cause.
        failures = [r for r in results if isinstance(r, Exception)]
        failure = next((r for r in failures if not isinstance(r, RolledBackError)), None)
        if isinstance(failure, NodeExistsError):
            raise TopicExistsError(f"topic {assignment.topic!r} already exists")
        if failure is not None:
            raise ZkError(f"creating topic {assignment.topic!r} failed: {failure!r}")

    def set_topic_assignment(self, assignment: TopicAssignment) -> None:
        self.zk.set(topic_path(assignment.topic), assignment.encode())

    def add_topic_partitions(
        self, topic: str, new_partitions: Mapping[int, list[int]]
    ) -> TopicAssignment:
        """Extend a topic's assignment with new partitions (CreatePartitions), written
        conditionally on the version read, so a concurrent change fails instead of being
        overwritten. Refused while a reassignment of the topic is in progress."""
        try:
            data, stat = self.zk.get(topic_path(topic))
        except NoNodeError:
            raise ZkError(f"topic {topic!r} does not exist") from None
        document = decode_json(data)
        if document.get("adding_replicas") or document.get("removing_replicas"):
            raise ReassignmentInProgressError(
                f"A partition reassignment is in progress for the topic '{topic}'."
            )
        current = TopicAssignment.decode(topic, data)
        expected = range(len(current.partitions), len(current.partitions) + len(new_partitions))
        if sorted(current.partitions) != list(range(len(current.partitions))) or sorted(
            new_partitions
        ) != list(expected):
            raise PartitionsChangedError(
                f"the partitions of topic '{topic}' changed meanwhile; try again"
            )
        updated = TopicAssignment(
            topic, current.topic_id, {**current.partitions, **dict(new_partitions)}
        )
        try:
            self.zk.set(topic_path(topic), updated.encode(), version=stat.version)
        except (BadVersionError, NoNodeError):
            raise PartitionsChangedError(
                f"the assignment of topic '{topic}' changed meanwhile; try again"
            ) from None
        return updated

    # -- reassignments asked for through /admin/reassign_partitions ------------------------

    def zk_reassignments(self, watch: Callable | None = None) -> dict[tuple[str, int], list[int]]:
        """The reassignments in ``/admin/reassign_partitions`` (empty when the node is
        absent); ``watch`` fires when the node is created, changed or deleted. A document
        that is not Kafka's is deleted with an error logged, as Kafka does."""
        if self.zk.exists(REASSIGN_PARTITIONS, watch=watch) is None:
            return {}
        try:
            data, _ = self.zk.get(REASSIGN_PARTITIONS)
            return decode_reassignments(data)
        except NoNodeError:
            return {}
        except ValueError as error:
            logger.error("deleting %s: %s", REASSIGN_PARTITIONS, error)
            with contextlib.suppress(NoNodeError):
                self.zk.delete(REASSIGN_PARTITIONS)
            return {}

    def set_zk_reassignments(self, reassignments: dict[tuple[str, int], list[int]]) -> None:
        """Rewrite ``/admin/reassign_partitions`` with what is left of it; deleted when
        nothing is."""
        with contextlib.suppress(NoNodeError):
            if reassignments:
                self.zk.set(REASSIGN_PARTITIONS, encode_reassignments(reassignments))
            else:
                self.zk.delete(REASSIGN_PARTITIONS)

    def mark_topic_for_deletion(self, topic: str) -> None:
        with contextlib.suppress(NodeExistsError):
            self.zk.create(f"{DELETE_TOPICS}/{topic}", b"", makepath=True)

    def topics_marked_for_deletion(self, watch: Callable | None = None) -> list[str]:
        return sorted(self.zk.get_children(DELETE_TOPICS, watch=watch))

    def delete_topic_znodes(self, topic: str) -> None:
        """After its partitions are gone: assignment, config and the deletion marker."""
        for path in (topic_path(topic), config_path("topics", topic), f"{DELETE_TOPICS}/{topic}"):
            with contextlib.suppress(NoNodeError):
                self.zk.delete(path, recursive=True)

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        return self.partition_states([(topic, partition)]).get((topic, partition))

    def partition_states(
        self, keys: Iterable[tuple[str, int]]
    ) -> dict[tuple[str, int], PartitionState]:
        """The states of many partitions, read in one pipelined round trip; a partition
        without a state is left out."""
        found = self._read_many({key: partition_state_path(*key) for key in keys})
        return {
            key: PartitionState.decode(data, stat.version) for key, (data, stat) in found.items()
        }

    def create_partition_states(
        self, topic: str, states: Mapping[int, PartitionState]
    ) -> dict[int, PartitionState]:
        """Each partition's state as created (znode version 0), or the one already there
        (written by an earlier controller). The requests are pipelined: one round trip
        for the partitions' parent znodes and one for their states, however many there
        are (creating a 1,000-partition topic one znode at a time took seconds)."""
        partitions_path = f"{topic_path(topic)}/partitions"
        self.zk.ensure_path(partitions_path)
        parents = [self.zk.create_async(f"{partitions_path}/{partition}") for partition in states]
        for result in parents:
            with contextlib.suppress(NodeExistsError):
                result.get()
        pending = {
            partition: self.zk.create_async(partition_state_path(topic, partition), state.encode())
            for partition, state in states.items()
        }
        created = {}
        for partition, result in pending.items():
            try:
                result.get()
            except NodeExistsError:
                existing = self.partition_state(topic, partition)
                if existing is None:
                    raise
                created[partition] = existing
            else:
                created[partition] = replace(states[partition], zk_version=0)
        return created

    def update_partition_state(self, topic: str, partition: int, state: PartitionState) -> int:
        """Conditional on the version the state was read at; returns the new version.
        Raises StalePartitionStateError when the znode changed meanwhile, unless to this
        very state: a write made again after the connection lost its answer."""
        version = self.update_partition_states({(topic, partition): state})[(topic, partition)]
        if version is None:
            raise StalePartitionStateError(
                f"the state of {topic}-{partition} changed since version {state.zk_version}"
            )
        return version

    def update_partition_states(
        self, states: Mapping[tuple[str, int], PartitionState]
    ) -> dict[tuple[str, int], int | None]:
        """:meth:`update_partition_state` of many partitions, pipelined (one round trip
        for all): each partition's new version, None where its state changed meanwhile."""
        pending = {
            key: self.zk.set_async(
                partition_state_path(*key), state.encode(), version=state.zk_version
            )
            for key, state in states.items()
        }
        versions: dict[tuple[str, int], int | None] = {}
        for key, result in pending.items():
            try:
                versions[key] = result.get().version
            except (BadVersionError, NoNodeError):
                state = states[key]
                current = self.partition_state(*key)
                same = (
                    current is not None and replace(current, zk_version=state.zk_version) == state
                )
                versions[key] = current.zk_version if same else None
        return versions
