"""DeleteRecords: move a partition's log start offset forward (on its leader).

Offset -1 means the high watermark; an offset above the high watermark, or negative,
is OFFSET_OUT_OF_RANGE; a topic whose cleanup.policy lacks ``delete`` refuses with
POLICY_VIOLATION, as Kafka's does. Segments wholly below the new start are deleted; the
response carries the new low watermark (the log start offset).
"""

from __future__ import annotations

from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode
from tidelog.storage.errors import KafkaStorageError, OffsetOutOfRangeError

__all__ = ["handle_delete_records"]

DeleteRecordsResponse = response_class(ApiKey.DELETE_RECORDS)

HIGH_WATERMARK = -1
INVALID_LOW_WATERMARK = -1


def delete_records(broker, topic: str, index: int, offset: int) -> tuple[ErrorCode, int]:
    """(error, low watermark) for one partition."""
    if broker.metadata.partition(topic, index) is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, INVALID_LOW_WATERMARK
    partition, error = broker.replica_manager.leader_partition(topic, index)
    if partition is None:
        return error, INVALID_LOW_WATERMARK
    log = partition.log
    if not log.config.delete:
        return ErrorCode.POLICY_VIOLATION, INVALID_LOW_WATERMARK
    high_watermark = partition.high_watermark
    if offset == HIGH_WATERMARK:
        offset = high_watermark
    if offset < 0 or offset > high_watermark:
        return ErrorCode.OFFSET_OUT_OF_RANGE, INVALID_LOW_WATERMARK
    try:
        start = broker.log_manager.guarded(
            log, lambda: log.maybe_increment_log_start_offset(offset)
        )
    except OffsetOutOfRangeError:
        return ErrorCode.OFFSET_OUT_OF_RANGE, INVALID_LOW_WATERMARK
    except KafkaStorageError:
        return ErrorCode.KAFKA_STORAGE_ERROR, INVALID_LOW_WATERMARK
    return ErrorCode.NONE, start


async def handle_delete_records(broker, header, request, context):
    topics = []
    for topic in request.topics:
        partitions = []
        for wanted in topic.partitions:
            code, low = delete_records(broker, topic.name, wanted.partition_index, wanted.offset)
            partitions.append(
                DeleteRecordsResponse.DeleteRecordsPartitionResult(
                    partition_index=wanted.partition_index, low_watermark=low, error_code=code
                )
            )
        topics.append(
            DeleteRecordsResponse.DeleteRecordsTopicResult(name=topic.name, partitions=partitions)
        )
    return DeleteRecordsResponse(topics=topics)
