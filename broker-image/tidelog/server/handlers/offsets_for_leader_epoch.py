"""OffsetForLeaderEpoch: where a leader epoch ends in the leader's log.

A follower back from a restart or a leader change asks for the epoch of its last batch
and truncates to the answer (seed 004); a consumer asks for the epoch of its position to
find out whether the log it read was truncated since. Answered by the partition's leader
from its leader epoch cache: (epoch, end offset), or (-1, -1) when the epoch is unknown.

Errors, checked in Kafka's order: KAFKA_STORAGE_ERROR for a partition whose directory
failed; for a hosted partition first the client's ``current_leader_epoch`` (-1: none
given) - FENCED_LEADER_EPOCH when older than the partition's, UNKNOWN_LEADER_EPOCH when
newer - then NOT_LEADER_OR_FOLLOWER on a follower; for one not hosted here
NOT_LEADER_OR_FOLLOWER when the cluster knows it, else UNKNOWN_TOPIC_OR_PARTITION.

tidelog's one addition: from the debugging replica id (-2, in v3 and later; no Kafka
client or broker sends it, the field's default is for the versions before it) a follower
answers too, and an epoch at or above the replica's latest gets the latest epoch and the
log end offset (``ReplicaManager.replica_log_end``). The controller asks every replica
so when it recovers a partition whose ISR emptied (``Controller._recover_leader``).
"""

from __future__ import annotations

from tidelog.controller.requests import DEBUGGING_REPLICA_ID
from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode
from tidelog.storage.leader_epoch import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET

__all__ = ["handle_offsets_for_leader_epoch"]

OffsetForLeaderEpochResponse = response_class(ApiKey.OFFSET_FOR_LEADER_EPOCH)
FIRST_VERSION_WITH_REPLICA_ID = 3


def _end_offset(broker, topic: str, wanted, any_replica: bool) -> tuple[ErrorCode, int, int]:
    """(error, epoch, end offset) for one partition."""
    if any_replica:
        return broker.replica_manager.replica_log_end(topic, wanted.partition, wanted.leader_epoch)
    partition, code = broker.replica_manager.leader_partition(
        topic, wanted.partition, wanted.current_leader_epoch
    )
    if partition is None:
        return code, UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
    return ErrorCode.NONE, *partition.log.end_offset_for_epoch(wanted.leader_epoch)


async def handle_offsets_for_leader_epoch(broker, header, request, context):
    any_replica = (
        header.request_api_version >= FIRST_VERSION_WITH_REPLICA_ID
        and request.replica_id == DEBUGGING_REPLICA_ID
    )
    topics = []
    for topic in request.topics:
        partitions = []
        for wanted in topic.partitions:
            code, epoch, end_offset = _end_offset(broker, topic.topic, wanted, any_replica)
            partitions.append(
                OffsetForLeaderEpochResponse.EpochEndOffset(
                    error_code=code,
                    partition=wanted.partition,
                    leader_epoch=epoch,
                    end_offset=end_offset,
                )
            )
        topics.append(
            OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult(
                topic=topic.topic, partitions=partitions
            )
        )
    return OffsetForLeaderEpochResponse(topics=topics)
