"""Leadership changes of :class:`~tidelog.replication.replica_manager.ReplicaManager`:
LeaderAndIsr makes this broker a partition's leader (its epoch starts at the log end) or
a follower (a replica fetcher copies from the leader); StopReplica takes a replica's role
away and maybe deletes it; a failed log directory drops the partitions it held.
"""

from __future__ import annotations

import logging
import uuid
from concurrent.futures import ThreadPoolExecutor

from tidelog.protocol.errors import ErrorCode
from tidelog.replication.first_fetches import FirstFetches, wake_key
from tidelog.replication.partition import UNKNOWN_OFFSET, Partition
from tidelog.replication.purgatory import Purgatory
from tidelog.storage.errors import KafkaStorageError
from tidelog.storage.log import Log
from tidelog.storage.log_manager import LogManager

__all__ = ["EPOCH_CHECKPOINT_WRITERS", "LeadershipChanges"]

logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
# How many leader-epoch checkpoints one LeaderAndIsr writes at once. Concurrent fsyncs
# share the file system's journal commits: 500 checkpoint writes (file and directory
# fsynced) took 0.18 s one after another and 0.085 s on 8 threads on ext4 here.
EPOCH_CHECKPOINT_WRITERS = 8


class LeadershipChanges:
    """Mixed into :class:`~tidelog.replication.replica_manager.ReplicaManager`, whose
    ``broker_id``, ``log_manager``, ``partitions``, ``topic_ids``, ``purgatory``,
    ``appended``, ``first_fetches``, ``clock_ms``, ``_fetcher_config``,
    ``_checkpointed_hw``, ``_fetcher_for`` and ``_stop_fetching`` it uses."""

    broker_id: int
    log_manager: LogManager
    partitions: dict[TopicPartition, Partition]
    topic_ids: dict[str, uuid.UUID]
    purgatory: Purgatory
    appended: Purgatory
    first_fetches: FirstFetches

    def become_leader_or_follower(
        self,
        topic: str,
        topic_id: uuid.UUID,
        index: int,
        *,
        leader: int,
        leader_epoch: int,
        replicas: list[int],
        isr: list[int],
        zk_version: int = 0,
        controller_epoch: int = 0,
        unwritten_epochs: dict[TopicPartition, Log] | None = None,
    ) -> ErrorCode:
        """Make this broker the partition's leader or a follower of ``leader``, as
        Kafka's makeLeader / makeFollower. A new leader records its epoch from its log
        end (see start_leader_epoch); given ``unwritten_epochs``, the checkpoint file is
        not written here but the log goes into it, for write_leader_epochs to write
        (in a worker thread) before the LeaderAndIsr is answered."""
        current = self.partitions.get((topic, index))
        if current is not None and leader_epoch <= current.leader_epoch:
            # The same epoch again (a new controller repeats it) changes nothing; an
            # older one comes from a stale controller.
            stale = leader_epoch < current.leader_epoch
            return ErrorCode.STALE_CONTROLLER_EPOCH if stale else ErrorCode.NONE
        try:
            log = self.log_manager.get_or_create_log(topic, index, topic_id=topic_id)
        except KafkaStorageError as error:
            logger.error("cannot host %s-%d: %s", topic, index, error)
            return ErrorCode.KAFKA_STORAGE_ERROR
        key = (topic, index)
        partition = self.partitions.get(key)
        if partition is not None and partition.log is not log:  # a stale log was replaced
            partition = None
        if partition is None:
            partition = Partition(
                topic, index, log, leader, leader_epoch, replicas, isr, self.broker_id
            )
            partition.high_watermark = self._checkpointed_hw.pop(key, 0)
            self.partitions[key] = partition
        partition.become(
            leader=leader,
            leader_epoch=leader_epoch,
            replicas=replicas,
            isr=isr,
            zk_version=zk_version,
            controller_epoch=controller_epoch,
            now_ms=self.clock_ms(),
        )
        self.topic_ids[topic] = topic_id
        self._stop_fetching(key)
        if partition.is_leader:
            write = unwritten_epochs is None
            try:
                started = self.start_leader_epoch(log, leader_epoch, write=write)
            except KafkaStorageError as error:
                logger.error("cannot lead %s-%d: %s", topic, index, error)
                return ErrorCode.KAFKA_STORAGE_ERROR
            if started and not write:
                unwritten_epochs[key] = log
            partition.maybe_advance_high_watermark()
            self._await_first_fetches(partition)
        elif leader >= 0 and self._fetcher_config is not None:
            in_sync = self.broker_id in isr
            self._fetcher_for(leader, key).add(topic, index, leader_epoch, in_sync)
        # Waiters re-check: a producer waiting for acks=all learns it is no longer leader.
        self.purgatory.notify(key)
        self.appended.notify(key)
        return ErrorCode.NONE

    def _await_first_fetches(self, partition: Partition) -> None:
        """The followers not heard from in this epoch owe it a first fetch: their
        fetches wait here briefly until they make it, and a fetch of theirs waiting now
        comes back (:mod:`.first_fetches`)."""
        unknown = [r for r, f in partition.followers.items() if f.log_end_offset == UNKNOWN_OFFSET]
        self.first_fetches.expect((partition.topic, partition.index), unknown)
        for replica in unknown:
            self.appended.notify(wake_key(replica))

    def start_leader_epoch(self, log: Log, leader_epoch: int, *, write: bool = True) -> bool:
        """As Kafka's makeLeader: a new leader's epoch starts at the log end before any
        write, so OffsetForLeaderEpoch answers for it at once; True when the epoch is new
        here. A new epoch rewrites the epoch checkpoint (two fsyncs) unless ``write`` is
        False (then write_leader_epochs must follow); the same epoch again changes
        nothing. On the event loop, which owns the appends: the log end it reads is
        where the epoch starts. KafkaStorageError (and the log's directory offline) when
        the write fails."""
        return self.log_manager.guarded(
            log,
            lambda: log.assign_epoch_start_offset(leader_epoch, log.log_end_offset, write=write),
        )

    def write_leader_epochs(self, logs: dict[TopicPartition, Log]) -> list[TopicPartition]:
        """Write the epoch checkpoints that become_leader_or_follower left unwritten, in
        a worker thread: two fsyncs per partition would otherwise stall the event loop
        while a broker takes the lead of many partitions (failover, controlled shutdown,
        preferred leaders handed back). Up to :data:`EPOCH_CHECKPOINT_WRITERS` at once;
        appends to the partitions go on meanwhile (``Log.write_leader_epochs``). The
        partitions whose write failed (their directory is offline now)."""

        def write(key: TopicPartition, log: Log) -> TopicPartition | None:
            try:
                self.log_manager.guarded(log, log.write_leader_epochs)
            except KafkaStorageError as error:
                logger.error("cannot lead %s-%d: %s", *key, error)
                return key
            return None

        with ThreadPoolExecutor(min(EPOCH_CHECKPOINT_WRITERS, len(logs) or 1)) as writers:
            return [key for key in writers.map(write, logs, logs.values()) if key is not None]

    def stop_replica(self, topic: str, index: int, delete: bool) -> None:
        """StopReplica: no more fetching, leading or following. Without ``delete`` the
        replica stays, role-less, with its log and high watermark (checkpointed as
        usual) until the controller gives it a role again."""
        key = (topic, index)
        self._stop_fetching(key)
        partition = self.partitions.get(key)
        if partition is not None:
            partition.resign()
            self.purgatory.notify(key)
            self.appended.notify(key)
        if delete:
            self.partitions.pop(key, None)
            self.log_manager.delete_log(topic, index)
            if not any(t == topic for t, _ in self.partitions):
                self.topic_ids.pop(topic, None)

    def drop_offline_partitions(self) -> list[TopicPartition]:
        """After a log directory failed (Kafka's handleLogDirFailure): the partitions it
        held stop leading and following and are no longer hosted, so that clients, the
        followers and the controller's next LeaderAndIsr get KAFKA_STORAGE_ERROR for
        them; producers waiting for their acks learn it at once. The partitions dropped."""
        dropped = sorted(k for k in self.partitions if k in self.log_manager.offline_partitions)
        for key in dropped:
            self.stop_replica(*key, delete=False)
            del self.partitions[key]
        return dropped
