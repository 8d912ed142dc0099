"""DescribeLogDirs and AlterReplicaLogDirs: the log directories of this broker, the
partitions they hold, and moves of replicas between them.

DescribeLogDirs: an offline directory answers KAFKA_STORAGE_ERROR and nothing else; an
online one lists each wanted partition with its size in bytes and offset lag, plus the
volume's total and usable bytes (v4+). A current log's lag is how far its high
watermark is past its end (0 on a leader); a future log (a move in flight,
``is_future_key`` true) lags its current log by the difference of their log end offsets,
as in Kafka.

AlterReplicaLogDirs: each partition's error as ``ReplicaManager.alter_replica_log_dir``
answers it (NONE, REPLICA_NOT_AVAILABLE, LOG_DIR_NOT_FOUND, KAFKA_STORAGE_ERROR); the
log-dir mover copies and swaps afterwards.
"""

from __future__ import annotations

import logging
import shutil

from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode

__all__ = ["handle_alter_replica_log_dirs", "handle_describe_log_dirs"]

logger = logging.getLogger(__name__)

DescribeLogDirsResponse = response_class(ApiKey.DESCRIBE_LOG_DIRS)
AlterReplicaLogDirsResponse = response_class(ApiKey.ALTER_REPLICA_LOG_DIRS)


def _wanted(request) -> set[tuple[str, int]] | None:
    if request.topics is None:
        return None
    return {(t.topic, p) for t in request.topics for p in t.partitions}


def _describe_dir(broker, directory, logs, futures, wanted):
    result = DescribeLogDirsResponse.DescribeLogDirsResult(
        error_code=ErrorCode.NONE, log_dir=str(directory), topics=[]
    )
    if directory in broker.log_manager.offline_dirs:
        result.error_code = ErrorCode.KAFKA_STORAGE_ERROR
        return result
    try:
        usage = shutil.disk_usage(directory)
    except OSError as error:
        logger.warning("cannot describe log directory %s: %s", directory, error)
        result.error_code = ErrorCode.KAFKA_STORAGE_ERROR
        return result
    result.total_bytes, result.usable_bytes = usage.total, usage.free
    high_watermarks = broker.replica_manager.high_watermarks()
    by_topic: dict[str, list] = {}
    entries = [(tp, log, False) for tp, log in logs.items()]
    entries += [(tp, log, True) for tp, log in futures.items()]
    for (topic, index), log, future in sorted(entries, key=lambda entry: entry[0]):
        if log.directory.parent != directory or (
            wanted is not None and (topic, index) not in wanted
        ):
            continue
        end = log.log_end_offset
        if future:
            current = logs.get((topic, index))
            lag = current.log_end_offset - end if current is not None else -1
        else:
            lag = max(high_watermarks.get((topic, index), end) - end, 0)
        by_topic.setdefault(topic, []).append(
            DescribeLogDirsResponse.DescribeLogDirsPartition(
                partition_index=index, partition_size=log.size, offset_lag=lag, is_future_key=future
            )
        )
    result.topics = [
        DescribeLogDirsResponse.DescribeLogDirsTopic(name=topic, partitions=partitions)
        for topic, partitions in by_topic.items()
    ]
    return result


async def handle_describe_log_dirs(broker, header, request, context):
    wanted = _wanted(request)
    logs, futures = broker.log_manager.logs, broker.log_manager.future_logs
    return DescribeLogDirsResponse(
        error_code=ErrorCode.NONE,
        results=[
            _describe_dir(broker, directory, logs, futures, wanted)
            for directory in broker.log_manager.log_dirs
        ],
    )


async def handle_alter_replica_log_dirs(broker, header, request, context):
    by_topic: dict[str, list] = {}
    for wanted_dir in request.dirs:
        for topic in wanted_dir.topics:
            for index in topic.partitions:
                error = broker.replica_manager.alter_replica_log_dir(
                    topic.name, index, wanted_dir.path
                )
                by_topic.setdefault(topic.name, []).append(
                    AlterReplicaLogDirsResponse.AlterReplicaLogDirPartitionResult(
                        partition_index=index, error_code=error
                    )
                )
    broker.log_dir_mover.wake()
    return AlterReplicaLogDirsResponse(
        throttle_time_ms=0,
        results=[
            AlterReplicaLogDirsResponse.AlterReplicaLogDirTopicResult(
                topic_name=topic, partitions=partitions
            )
            for topic, partitions in by_topic.items()
        ],
    )
