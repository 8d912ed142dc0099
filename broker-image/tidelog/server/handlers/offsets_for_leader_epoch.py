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
"""

from __future__ import annotations

from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode
from tidelog.storage.leader_epoch import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET

__all__ = ["handle_offsets_for_leader_epoch"]

OffsetForLeaderEpochResponse = response_class(ApiKey.OFFSET_FOR_LEADER_EPOCH)


def _end_offset(broker, topic: str, wanted) -> tuple[ErrorCode, int, int]:
    """(error, epoch, end offset) for one partition."""
    partition, code = broker.replica_manager.leader_partition(
        topic, wanted.partition, wanted.current_leader_epoch
    )
    if partition is None:
        return code, UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
    return ErrorCode.NONE, *partition.log.end_offset_for_epoch(wanted.leader_epoch)


async def handle_offsets_for_leader_epoch(broker, header, request, context):
    topics = []
    for topic in request.topics:
        partitions = []
        for wanted in topic.partitions:
            code, epoch, end_offset = _end_offset(broker, topic.topic, wanted)
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
