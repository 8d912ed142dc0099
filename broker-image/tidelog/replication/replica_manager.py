"""The partitions this broker hosts, and the produce and fetch paths through them.

Appends and reads run on the event loop thread: a segment append or read is a page
cache operation, and doing it in place keeps a partition's appends in request order.
Errors come back as Kafka error codes for the response, never as exceptions.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

from tidelog.protocol.errors import ErrorCode
from tidelog.records.errors import RecordsError
from tidelog.replication.partition import Partition
from tidelog.replication.purgatory import Purgatory
from tidelog.storage.errors import KafkaStorageError, OffsetOutOfRangeError, StorageError
from tidelog.storage.log import AppendInfo
from tidelog.storage.log_manager import LogManager
from tidelog.storage.segment import FetchSlice

__all__ = ["AppendResult", "ReadResult", "ReplicaManager"]

logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


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


class ReplicaManager:
    def __init__(self, broker_id: int, log_manager: LogManager):
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.partitions: dict[TopicPartition, Partition] = {}
        self.topic_ids: dict[str, uuid.UUID] = {}
        self.purgatory = Purgatory()

    # -- leadership (LeaderAndIsr / StopReplica) ------------------------------------------

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
    ) -> ErrorCode:
        try:
            log = self.log_manager.get_or_create_log(topic, index)
        except KafkaStorageError as error:
            logger.error("cannot host %s-%d: %s", topic, index, error)
            return ErrorCode.KAFKA_STORAGE_ERROR
        partition = self.partitions.get((topic, index))
        if partition is None:
            partition = Partition(
                topic, index, log, leader, leader_epoch, replicas, isr, self.broker_id
            )
            self.partitions[(topic, index)] = partition
        else:
            partition.leader, partition.leader_epoch = leader, leader_epoch
            partition.replicas, partition.isr = replicas, isr
        self.topic_ids[topic] = topic_id
        if partition.is_leader:
            # As Kafka's makeLeader: the epoch starts at the log end before any write, so
            # OffsetForLeaderEpoch answers for it at once.
            try:
                self.log_manager.guarded(
                    log, lambda: log.assign_epoch_start_offset(leader_epoch, log.log_end_offset)
                )
            except KafkaStorageError as error:
                logger.error("cannot lead %s-%d: %s", topic, index, error)
                return ErrorCode.KAFKA_STORAGE_ERROR
            partition.maybe_advance_high_watermark()
        return ErrorCode.NONE

    def stop_replica(self, topic: str, index: int, delete: bool) -> None:
        partition = self.partitions.pop((topic, index), None)
        if partition is not None:
            self.purgatory.notify((topic, index))
        if delete:
            self.log_manager.delete_log(topic, index)
        if not any(t == topic for t, _ in self.partitions):
            self.topic_ids.pop(topic, None)

    def _leader_partition(self, topic: str, index: int) -> tuple[Partition | None, ErrorCode]:
        partition = self.partitions.get((topic, index))
        if partition is None:
            if (topic, index) in self.log_manager.offline_partitions:
                return None, ErrorCode.KAFKA_STORAGE_ERROR
            return None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if not partition.is_leader:
            return None, ErrorCode.NOT_LEADER_OR_FOLLOWER
        return partition, ErrorCode.NONE

    # -- produce ------------------------------------------------------------------------------

    def append(self, topic: str, index: int, records, *, acks: int) -> AppendResult:
        partition, error = self._leader_partition(topic, index)
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
                log, lambda: log.append_as_leader(records, partition.leader_epoch)
            )
        except RecordsError as error:
            return AppendResult(ErrorCode(error.error_code), message=str(error))
        except KafkaStorageError as error:
            self.partitions.pop((topic, index), None)
            return AppendResult(ErrorCode.KAFKA_STORAGE_ERROR, message=str(error))
        except StorageError as error:
            code = error.error_code if error.error_code >= 0 else ErrorCode.UNKNOWN_SERVER_ERROR
            return AppendResult(ErrorCode(code), message=str(error))
        if partition.maybe_advance_high_watermark():
            self.purgatory.notify((topic, index))
        return AppendResult(ErrorCode.NONE, info, log.log_start_offset)

    # -- fetch --------------------------------------------------------------------------------

    def read(
        self, topic: str, index: int, offset: int, max_bytes: int, *, min_one_message: bool
    ) -> ReadResult:
        """A consumer's read: whole batches below the high watermark."""
        partition, error = self._leader_partition(topic, index)
        if partition is None:
            return ReadResult(error)
        log = partition.log
        hw = partition.high_watermark
        try:
            found = self.log_manager.guarded(
                log, lambda: log.read(offset, max_bytes, hw, min_one_message)
            )
        except OffsetOutOfRangeError:
            return ReadResult(ErrorCode.OFFSET_OUT_OF_RANGE, hw, log.log_start_offset)
        except KafkaStorageError:
            self.partitions.pop((topic, index), None)
            return ReadResult(ErrorCode.KAFKA_STORAGE_ERROR)
        return ReadResult(ErrorCode.NONE, hw, log.log_start_offset, found)

    def leader_partition(self, topic: str, index: int) -> tuple[Partition | None, ErrorCode]:
        return self._leader_partition(topic, index)

    def high_watermarks(self) -> dict[TopicPartition, int]:
        return {tp: p.high_watermark for tp, p in self.partitions.items()}
