"""The partitions this broker hosts, and the produce and fetch paths through them.

Appends and reads run on the event loop thread: a segment append or read is a page
cache operation, and doing it in place keeps a partition's appends in request order.
Errors come back as Kafka error codes for the response, never as exceptions.

Leaders serve producers, consumers (below the high watermark) and their followers'
fetches (up to the log end offset), which move the high watermark and the ISR. Followers
copy from their leaders through replica fetchers (``fetcher.py``). Two purgatories hold
waiting requests: ``purgatory`` wakes on high-watermark moves (consumer fetches, acks=all
produces), ``appended`` on appends (followers' long-polled fetches) and on a first fetch
a new leader epoch awaits from a follower (:mod:`.first_fetches`).

Leadership changes (LeaderAndIsr, StopReplica) are in :mod:`.leadership`, the replica
fetchers and what they call back in :mod:`.following`.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from tidelog.protocol.errors import ErrorCode
from tidelog.records.errors import RecordsError
from tidelog.replication.fetcher import FetcherConfig, ReplicaFetcher
from tidelog.replication.first_fetches import FirstFetches
from tidelog.replication.following import Following
from tidelog.replication.leadership import LeadershipChanges
from tidelog.replication.partition import Partition
from tidelog.replication.purgatory import Purgatory
from tidelog.replication.quota import ReplicationQuota
from tidelog.storage.errors import (
    KafkaStorageError,
    LogDirNotFoundError,
    OffsetOutOfRangeError,
    StorageError,
)
from tidelog.storage.leader_epoch import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
from tidelog.storage.log import AppendInfo
from tidelog.storage.log_manager import LogManager
from tidelog.storage.segment import FetchSlice

__all__ = ["AppendResult", "IsrWriter", "ReadResult", "ReplicaManager"]

logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
# Writes a leader's new ISR to the partition state in ZooKeeper, conditional on the
# znode version each partition holds; returns each new version, or None where the
# state changed meanwhile (the controller's LeaderAndIsr will tell the truth).
IsrWriter = Callable[[list[tuple[Partition, list[int]]]], Awaitable[list[int | None]]]


@dataclass
class AppendResult:
    error: ErrorCode
    info: AppendInfo | None = None
    log_start_offset: int = -1
    message: str | None = None


@dataclass
class ReadResult:
    error: ErrorCode
    high_watermark: int = -1
    log_start_offset: int = -1
    records: FetchSlice | None = None

    @property
    def size(self) -> int:
        return self.records.records.size if self.records else 0


def _now_ms() -> int:
    return int(time.time() * 1000)


class ReplicaManager(LeadershipChanges, Following):
    def __init__(
        self,
        broker_id: int,
        log_manager: LogManager,
        *,
        fetcher_config: FetcherConfig | None = None,
        num_fetchers: int = 1,
        endpoint_of: Callable[[int], tuple[str, int] | None] = lambda _broker: None,
        isr_writer: IsrWriter | None = None,
        clock_ms: Callable[[], int] = _now_ms,
        follower_quota: ReplicationQuota | None = None,
        known_to_cluster: Callable[[str, int], bool] = lambda _topic, _index: False,
    ):
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.partitions: dict[TopicPartition, Partition] = {}
        self.topic_ids: dict[str, uuid.UUID] = {}
        self.purgatory = Purgatory()
        self.appended = Purgatory()
        self.first_fetches = FirstFetches()
        self._fetcher_config = fetcher_config
        self._num_fetchers = num_fetchers
        self._endpoint_of = endpoint_of
        self._isr_writer = isr_writer
        # The partitions with an ISR proposal to write, each with its leader epoch then.
        self._isr_changes: dict[TopicPartition, tuple[Partition, int]] = {}
        self._isr_writes: asyncio.Task | None = None
        self.clock_ms = clock_ms  # the broker's wall clock, in ms (injected in tests)
        self._follower_quota = follower_quota  # for the fetchers (None: unthrottled)
        self._known_to_cluster = known_to_cluster  # the metadata has the partition
        self._fetchers: dict[tuple[int, int], ReplicaFetcher] = {}
        self._stopping: set[asyncio.Task] = set()  # fetchers left without partitions
        self._checkpointed_hw = log_manager.high_watermark_checkpoints()

    # -- moves between log directories (AlterReplicaLogDirs) -----------------------------------

    def alter_replica_log_dir(self, topic: str, index: int, directory: str) -> ErrorCode:
        """Move a replica to another log directory of this broker, as Kafka's
        alterReplicaLogDirs: an unknown directory is LOG_DIR_NOT_FOUND, an offline one (or
        an offline partition) KAFKA_STORAGE_ERROR; a new destination replaces a move in
        flight; a partition not hosted yet gets the directory for when its log is created
        and REPLICA_NOT_AVAILABLE; its current directory means nothing to do. Otherwise
        the future log exists once this returns and the log-dir mover fills it."""
        key = (topic, index)
        try:
            target = self.log_manager.online_dir(directory)
        except LogDirNotFoundError:
            return ErrorCode.LOG_DIR_NOT_FOUND
        except KafkaStorageError:
            return ErrorCode.KAFKA_STORAGE_ERROR
        if key in self.log_manager.offline_partitions:
            return ErrorCode.KAFKA_STORAGE_ERROR
        future = self.log_manager.future_log(topic, index)
        if future is not None and future.directory.parent != target:
            self.log_manager.delete_future_log(topic, index)
        self.log_manager.maybe_update_preferred_dir(topic, index, target)
        partition = self.partitions.get(key)
        if partition is None:
            return ErrorCode.REPLICA_NOT_AVAILABLE
        if partition.log.directory.parent == target:
            return ErrorCode.NONE
        try:
            self.log_manager.create_future_log(
                topic, index, target, topic_id=self.topic_ids.get(topic)
            )
        except KafkaStorageError as error:
            logger.error("cannot move %s-%d to %s: %s", topic, index, target, error)
            return ErrorCode.KAFKA_STORAGE_ERROR
        return ErrorCode.NONE

    def replace_current_with_future(self, topic: str, index: int) -> None:
        """The swap of a move: the partition's future log, caught up with its current
        log, replaces it. Runs on the event loop, so no append comes in between."""
        partition = self.partitions[(topic, index)]
        partition.log = self.log_manager.replace_current_with_future(topic, index)

    def leader_partition(
        self, topic: str, index: int, current_leader_epoch: int = -1
    ) -> tuple[Partition | None, ErrorCode]:
        """The partition if this broker leads it at the client's leader epoch (-1: any),
        else the error to answer with. One not hosted here is NOT_LEADER_OR_FOLLOWER when
        the cluster knows it (say a reassignment took it away while a request was on its
        way: the client must look up the leader again), else UNKNOWN_TOPIC_OR_PARTITION,
        as Kafka's ``getPartitionOrError``."""
        partition = self.partitions.get((topic, index))
        if partition is None:
            if (topic, index) in self.log_manager.offline_partitions:
                return None, ErrorCode.KAFKA_STORAGE_ERROR
            if self._known_to_cluster(topic, index):
                return None, ErrorCode.NOT_LEADER_OR_FOLLOWER
            return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        fenced = partition.check_leader_epoch(current_leader_epoch)
        if fenced != ErrorCode.NONE:
            return None, fenced
        if not partition.is_leader:
            return None, ErrorCode.NOT_LEADER_OR_FOLLOWER
        return partition, ErrorCode.NONE

    def replica_log_end(
        self, topic: str, index: int, leader_epoch: int
    ) -> tuple[ErrorCode, int, int]:
        """(error, epoch, end offset) of this broker's replica of the partition, leader or
        follower: where ``leader_epoch`` ends in its log as OffsetForLeaderEpoch answers,
        except that an epoch at or above the log's latest gets the latest and the log end
        offset (where the replica stands, what the controller's recovery compares).
        KAFKA_STORAGE_ERROR on a failed directory, UNKNOWN_TOPIC_OR_PARTITION when the
        partition is not hosted here."""
        partition = self.partitions.get((topic, index))
        if partition is not None:
            log = partition.log
            latest = log.latest_epoch
            if leader_epoch >= latest:
                return ErrorCode.NONE, latest, log.log_end_offset
            return ErrorCode.NONE, *log.end_offset_for_epoch(leader_epoch)
        if (topic, index) in self.log_manager.offline_partitions:
            code = ErrorCode.KAFKA_STORAGE_ERROR
        else:
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return code, UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET

    # -- produce ------------------------------------------------------------------------------

    def append(
        self, topic: str, index: int, records, *, acks: int, validate: bool = True
    ) -> AppendResult:
        """Append as the partition's leader; ``validate=False`` for batches the broker
        built itself (:meth:`Log.append_as_leader`)."""
        partition, error = self.leader_partition(topic, index)
        if partition is None:
            return AppendResult(error)
        log = partition.log
        if acks == -1 and len(partition.isr) < log.config.min_insync_replicas:
            return AppendResult(
                ErrorCode.NOT_ENOUGH_REPLICAS,
                message=f"the ISR has {len(partition.isr)} replicas, min.insync.replicas is "
                f"{log.config.min_insync_replicas}",
            )
        try:
            info = self.log_manager.guarded(
                log,
                lambda: log.append_as_leader(records, partition.leader_epoch, validate=validate),
            )
        except RecordsError as error:
            return AppendResult(ErrorCode(error.error_code), message=str(error))
        except KafkaStorageError as error:
            self.partitions.pop((topic, index), None)
            return AppendResult(ErrorCode.KAFKA_STORAGE_ERROR, message=str(error))
        except StorageError as error:
            code = error.error_code if error.error_code >= 0 else ErrorCode.UNKNOWN_SERVER_ERROR
            return AppendResult(ErrorCode(code), message=str(error))
        self.appended.notify((topic, index))
        if partition.maybe_advance_high_watermark():
            self.purgatory.notify((topic, index))
        return AppendResult(ErrorCode.NONE, info, log.log_start_offset)

    async def wait_for_isr(
        self, topic: str, index: int, required_offset: int, deadline: float
    ) -> ErrorCode:
        """acks=all: wait until the high watermark reaches ``required_offset`` (the ISR
        has the batch) or the loop time ``deadline``; the error to answer with."""
        key = (topic, index)
        loop = asyncio.get_running_loop()
        while True:
            partition = self.partitions.get(key)
            if partition is None or not partition.is_leader:
                return ErrorCode.NOT_LEADER_OR_FOLLOWER
            if partition.high_watermark >= required_offset:
                if len(partition.isr) < partition.log.config.min_insync_replicas:
                    return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
                return ErrorCode.NONE
            left = deadline - loop.time()
            if left <= 0:
                return ErrorCode.REQUEST_TIMED_OUT
            await self.purgatory.wait([key], left)

    # -- fetch --------------------------------------------------------------------------------

    def read(
        self,
        topic: str,
        index: int,
        offset: int,
        max_bytes: int,
        *,
        min_one_message: bool,
        current_leader_epoch: int = -1,
    ) -> ReadResult:
        """A consumer's read: whole batches below the high watermark."""
        partition, error = self.leader_partition(topic, index, current_leader_epoch)
        if partition is None:
            return ReadResult(error)
        return self._read(partition, offset, max_bytes, partition.high_watermark, min_one_message)

    def read_for_follower(
        self,
        replica: int,
        topic: str,
        index: int,
        offset: int,
        max_bytes: int,
        *,
        min_one_message: bool,
        current_leader_epoch: int = -1,
    ) -> ReadResult:
        """A follower's read up to the log end offset. Its fetch offset is its log end
        offset: it moves the follower's state, the high watermark and maybe the ISR."""
        partition, error = self.leader_partition(topic, index, current_leader_epoch)
        if partition is None:
            return ReadResult(error)
        if replica not in partition.replicas:
            return ReadResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        end = partition.log.log_end_offset
        if offset <= end:
            partition.record_follower_fetch(replica, offset, self.clock_ms())
            self.first_fetches.fetched(replica, (topic, index))
            self._maybe_expand_isr(partition, replica)
            if partition.maybe_advance_high_watermark():
                self.purgatory.notify((topic, index))
        return self._read(partition, offset, max_bytes, end, min_one_message)

    def read_idle_for_follower(
        self,
        replica: int,
        topic: str,
        index: int,
        offset: int,
        current_leader_epoch: int,
        now_ms: int,
    ) -> tuple[int, int] | None:
        """:meth:`read_for_follower` of most partitions of a session's fetch, where
        nothing is new either way (:meth:`Partition.record_idle_follower_fetch`): records
        the fetch and returns the (high watermark, log start offset) to answer, or None,
        recording nothing, when :meth:`read_for_follower` must answer. ``now_ms``:
        :attr:`clock_ms`, read once for the whole fetch."""
        partition = self.partitions.get((topic, index))
        if partition is None or not partition.record_idle_follower_fetch(
            replica, offset, current_leader_epoch, now_ms
        ):
            return None
        return partition.high_watermark, partition.log.log_start_offset

    def _read(
        self, partition: Partition, offset: int, max_bytes: int, bound: int, first: bool
    ) -> ReadResult:
        log, hw = partition.log, partition.high_watermark
        if offset == bound and offset >= log.log_start_offset:
            # Nothing new: what the log would answer, without asking it (a session's
            # fetch reads every partition, most of them at their end).
            return ReadResult(ErrorCode.NONE, hw, log.log_start_offset)
        try:
            found = self.log_manager.guarded(log, lambda: log.read(offset, max_bytes, bound, first))
        except OffsetOutOfRangeError:
            return ReadResult(ErrorCode.OFFSET_OUT_OF_RANGE, hw, log.log_start_offset)
        except KafkaStorageError:
            self.partitions.pop((partition.topic, partition.index), None)
            return ReadResult(ErrorCode.KAFKA_STORAGE_ERROR)
        return ReadResult(ErrorCode.NONE, hw, log.log_start_offset, found)

    def high_watermarks(self) -> dict[TopicPartition, int]:
        return {tp: p.high_watermark for tp, p in self.partitions.items()}

    # -- the ISR (leader) ---------------------------------------------------------------------

    def _maybe_expand_isr(self, partition: Partition, replica: int) -> None:
        isr = partition.expanded_isr(replica)
        if isr is not None:
            self._change_isr(partition, isr)

    def shrink_isrs(self, max_lag_ms: int) -> None:
        """Drop followers not caught up for ``max_lag_ms`` (replica.lag.time.max.ms)
        from the ISR of every partition this broker leads."""
        now = self.clock_ms()
        for partition in list(self.partitions.values()):
            isr = partition.shrunk_isr(now, max_lag_ms)
            if isr is not None:
                logger.info(
                    "%s-%d: shrinking the ISR from %s to %s",
                    partition.topic,
                    partition.index,
                    partition.isr,
                    isr,
                )
                self._change_isr(partition, isr)

    def _change_isr(self, partition: Partition, isr: list[int]) -> None:
        if self._isr_writer is None:
            return
        partition.propose_isr(isr)
        key = (partition.topic, partition.index)
        self._isr_changes[key] = (partition, partition.leader_epoch)
        if self._isr_writes is None or self._isr_writes.done():
            self._isr_writes = asyncio.get_running_loop().create_task(self._write_isrs())

    async def _write_isrs(self) -> None:
        """Write the pending ISR changes, all in one write, until none are left: changes
        made while a write is out go in the next one (a broker that catches up on a
        thousand partitions makes a few writes, not a thousand)."""
        while self._isr_changes:
            changes = [c for c in self._isr_changes.values() if self._proposal_stands(*c)]
            self._isr_changes = {}
            if not changes:
                continue
            try:
                versions = await self._isr_writer([(p, p.proposed_isr) for p, _ in changes])
            except Exception:
                logger.exception("writing the ISRs of %d partitions failed", len(changes))
                versions = [None] * len(changes)
            for (partition, epoch), version in zip(changes, versions, strict=True):
                if self._proposal_stands(partition, epoch):
                    self._isr_written(partition, version)

    def _proposal_stands(self, partition: Partition, epoch: int) -> bool:
        """Whether the partition's ISR proposal made at ``epoch`` is still to be written
        or applied: no LeaderAndIsr or StopReplica came since."""
        key = (partition.topic, partition.index)
        return (
            self.partitions.get(key) is partition
            and partition.leader_epoch == epoch
            and partition.proposed_isr is not None
        )

    def _isr_written(self, partition: Partition, version: int | None) -> None:
        """ZooKeeper's answer to the partition's proposal: its new version, or None when
        not written. Either way the high watermark may move (a follower being added no
        longer holds it once its proposal is dropped)."""
        key = (partition.topic, partition.index)
        if version is None:
            partition.drop_isr_proposal()
        else:
            logger.info("%s-%d: ISR now %s", *key, partition.proposed_isr)
            partition.apply_isr(partition.proposed_isr, version)
        partition.maybe_advance_high_watermark()
        self.purgatory.notify(key)  # acks=all waiters re-check, min.insync.replicas too
