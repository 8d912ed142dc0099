"""The controller's requests to this broker (seed 003): LeaderAndIsr, UpdateMetadata
and StopReplica, whether they come over the network or from this broker's own
controller (:class:`tidelog.controller.channel.LocalBroker`).

The controller tells every broker what to host and what the cluster looks like; a
request of an older controller epoch comes from a deposed controller and is refused
(STALE_CONTROLLER_EPOCH). LeaderAndIsr and StopReplica run one at a time (Kafka's
replicaStateChangeLock): one waits in a worker thread for file work that another must
not interleave with. The group coordinator follows the leadership of the offsets
topic's partitions.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from tidelog.controller.requests import PartitionLeadership, ReplicaToStop
from tidelog.controller.zk_data import BrokerRegistration
from tidelog.coordinator.group_coordinator import OFFSETS_TOPIC, GroupCoordinator
from tidelog.protocol.errors import ErrorCode
from tidelog.replication.replica_manager import ReplicaManager
from tidelog.server.dynamic_config import DynamicConfig
from tidelog.server.metadata_cache import MetadataCache, PartitionMetadata
from tidelog.storage.errors import KafkaStorageError
from tidelog.storage.log import Log

__all__ = ["ControllerRequests"]

logger = logging.getLogger(__name__)


class ControllerRequests:
    """Answers the controller's requests by changing the replicas (``replica_manager``),
    the metadata cache (``metadata``), the groups coordinated here
    (``group_coordinator``) and, for topics new to this broker, reading their configs
    first (``dynamic_config``)."""

    def __init__(
        self,
        replica_manager: ReplicaManager,
        group_coordinator: GroupCoordinator,
        metadata: MetadataCache,
        dynamic_config: DynamicConfig,
    ):
        self._replica_manager = replica_manager
        self._log_manager = replica_manager.log_manager
        self._group_coordinator = group_coordinator
        self._metadata = metadata
        self._dynamic_config = dynamic_config
        self._controller_epoch = 0
        self._replica_state_change = asyncio.Lock()

    def _fenced(self, controller_epoch: int) -> bool:
        """A request of an older controller epoch comes from a deposed controller."""
        if controller_epoch < self._controller_epoch:
            logger.warning(
                "ignoring a request of controller epoch %d < %d",
                controller_epoch,
                self._controller_epoch,
            )
            return True
        self._controller_epoch = controller_epoch
        return False

    async def handle_leader_and_isr(
        self, controller_id: int, controller_epoch: int, states: list[PartitionLeadership]
    ) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
        """Become leader or follower of each partition; the error of the request and of
        each partition (a partition at a newer leader epoch refuses an older one). The
        file work (new logs; new leaders' epoch checkpoints, two fsyncs each) runs in a
        worker thread, so a broker taking the lead of many partitions keeps answering;
        the request is answered once it is done."""
        async with self._replica_state_change:
            if self._fenced(controller_epoch):
                return ErrorCode.STALE_CONTROLLER_EPOCH, {}
            for topic in sorted({s.topic for s in states}):
                if not self._dynamic_config.knows(topic):
                    # A topic new to this broker: its logs start with its configs.
                    await self._dynamic_config.apply_topic_change(topic, announced=False)
            hosted = self._replica_manager.partitions
            new = [s for s in states if (s.topic, s.partition) not in hosted]
            if new:
                await asyncio.to_thread(self._create_logs, new)
            errors = {}
            unwritten_epochs: dict[tuple[str, int], Log] = {}
            for state in states:
                key = (state.topic, state.partition)
                errors[key] = self._replica_manager.become_leader_or_follower(
                    state.topic,
                    state.topic_id,
                    state.partition,
                    leader=state.leader,
                    leader_epoch=state.leader_epoch,
                    replicas=list(state.replicas),
                    isr=list(state.isr),
                    zk_version=state.zk_version,
                    controller_epoch=state.controller_epoch,
                    unwritten_epochs=unwritten_epochs,
                )
                if state.topic == OFFSETS_TOPIC and errors[key] == ErrorCode.NONE:
                    self._coordinate(state.partition)
            if unwritten_epochs:
                write = self._replica_manager.write_leader_epochs
                for key in await asyncio.to_thread(write, unwritten_epochs):
                    errors[key] = ErrorCode.KAFKA_STORAGE_ERROR
            return ErrorCode.NONE, errors

    def _create_logs(self, states: list[PartitionLeadership]) -> None:
        """Create the logs of partitions new to this broker (in a worker thread: a
        directory, index files and checkpoints each). A log that cannot be created is
        left for become_leader_or_follower to report."""
        for state in states:
            with contextlib.suppress(KafkaStorageError):
                self._log_manager.get_or_create_log(
                    state.topic, state.partition, topic_id=state.topic_id
                )

    def _coordinate(self, partition: int) -> None:
        """Coordinate the groups of an offsets partition this broker leads, and only those."""
        replica = self._replica_manager.partitions.get((OFFSETS_TOPIC, partition))
        if replica is not None and replica.is_leader:
            self._group_coordinator.elected(partition, replica.log)
        else:
            self._group_coordinator.resigned(partition)

    async def handle_update_metadata(
        self,
        controller_id: int,
        controller_epoch: int,
        brokers: dict[int, BrokerRegistration],
        states: list[PartitionLeadership],
    ) -> ErrorCode:
        """The controller's view: live brokers, the controller, partition states; the
        committed offsets of partitions it deletes go from the groups coordinated here."""
        if self._fenced(controller_epoch):
            return ErrorCode.STALE_CONTROLLER_EPOCH
        metadata = self._metadata
        metadata.update_brokers(brokers)
        metadata.controller_id = controller_id
        deleted: set[tuple[str, int]] = set()
        for state in states:
            if state.deleted:
                metadata.remove_partition(state.topic, state.partition)
                deleted.add((state.topic, state.partition))
                continue
            metadata.update_partition(
                state.topic,
                state.topic_id,
                PartitionMetadata(
                    state.partition,
                    state.leader,
                    state.leader_epoch,
                    list(state.replicas),
                    list(state.isr),
                    list(state.offline_replicas),
                ),
            )
        if deleted:
            self._group_coordinator.partitions_deleted(deleted)
        return ErrorCode.NONE

    async def handle_stop_replica(
        self, controller_id: int, controller_epoch: int, replicas: list[ReplicaToStop]
    ) -> ErrorCode:
        """Stop hosting the partitions, deleting their logs where asked."""
        async with self._replica_state_change:
            if self._fenced(controller_epoch):
                return ErrorCode.STALE_CONTROLLER_EPOCH
            for replica in replicas:
                # On the event loop, which owns the partitions and their waiting fetches.
                self._replica_manager.stop_replica(replica.topic, replica.partition, replica.delete)
                if replica.topic == OFFSETS_TOPIC:
                    self._group_coordinator.resigned(replica.partition)
            # A topic of that name made later reads its configs afresh.
            hosted = {topic for topic, _ in self._log_manager.logs}
            for topic in {r.topic for r in replicas if r.delete} - hosted:
                self._dynamic_config.forget(topic)
            return ErrorCode.NONE

    def replica_log_end(
        self, topic: str, partition: int, leader_epoch: int
    ) -> tuple[ErrorCode, int, int]:
        """Where this broker's replica stands, for its own controller's recovery (the other
        brokers answer it as OffsetForLeaderEpoch from the debugging replica id)."""
        return self._replica_manager.replica_log_end(topic, partition, leader_epoch)
