"""ListOffsets: earliest, latest, max timestamp, or the first offset at a timestamp."""

from __future__ import annotations

from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode

__all__ = ["handle_list_offsets"]

ListOffsetsResponse = response_class(ApiKey.LIST_OFFSETS)

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5


def _lookup(broker, topic: str, wanted) -> tuple[ErrorCode, int, int, int]:
    """(error, timestamp, offset, leader epoch) for one partition."""
    partition, code = broker.replica_manager.leader_partition(topic, wanted.partition_index)
    if partition is None:
        return code, -1, -1, -1
    log, hw, epoch = partition.log, partition.high_watermark, partition.leader_epoch
    if wanted.timestamp in (EARLIEST, EARLIEST_LOCAL):  # every segment is local here
        return ErrorCode.NONE, -1, log.log_start_offset, epoch
    if wanted.timestamp == LATEST_TIERED:  # no tiered storage: nothing is tiered
        return ErrorCode.NONE, -1, -1, -1
    if wanted.timestamp == LATEST:
        return ErrorCode.NONE, -1, hw, epoch
    if wanted.timestamp == MAX_TIMESTAMP:
        best = max((s for s in log.segments), key=lambda s: s.max_timestamp_so_far, default=None)
        if best is None or best.max_timestamp_so_far < 0:
            return ErrorCode.NONE, -1, -1, epoch
        return ErrorCode.NONE, best.max_timestamp_so_far, best.offset_of_max_timestamp_so_far, epoch
    if wanted.timestamp < 0:
        return ErrorCode.INVALID_REQUEST, -1, -1, -1
    found = log.offset_for_timestamp(wanted.timestamp)
    if found is None or found.offset >= hw:
        return ErrorCode.NONE, -1, -1, -1
    return ErrorCode.NONE, found.timestamp, found.offset, epoch


async def handle_list_offsets(broker, header, request, context):
    topics = []
    for topic in request.topics:
        partitions = []
        for wanted in topic.partitions:
            code, timestamp, offset, epoch = _lookup(broker, topic.name, wanted)
            partitions.append(
                ListOffsetsResponse.ListOffsetsPartitionResponse(
                    partition_index=wanted.partition_index,
                    error_code=code,
                    old_style_offsets=[offset] if offset >= 0 else [],
                    timestamp=timestamp,
                    offset=offset,
                    leader_epoch=epoch,
                )
            )
        topics.append(
            ListOffsetsResponse.ListOffsetsTopicResponse(name=topic.name, partitions=partitions)
        )
    return ListOffsetsResponse(topics=topics)
