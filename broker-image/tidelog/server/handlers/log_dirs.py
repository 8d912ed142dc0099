"""DescribeLogDirs: every log directory of this broker, with the partitions it holds.

An offline directory answers KAFKA_STORAGE_ERROR and nothing else; an online one lists
each wanted partition with its size in bytes, offset lag (0 for a current log: its high
watermark never passes its end) and ``is_future_key`` false (no AlterReplicaLogDirs move
in flight), plus the volume's total and usable bytes (v4+).
"""

from __future__ import annotations

import logging
import shutil

from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode

__all__ = ["handle_describe_log_dirs"]

logger = logging.getLogger(__name__)

DescribeLogDirsResponse = response_class(ApiKey.DESCRIBE_LOG_DIRS)


def _wanted(request) -> set[tuple[str, int]] | None:
    if request.topics is None:
        return None
    return {(t.topic, p) for t in request.topics for p in t.partitions}


def _describe_dir(broker, directory, logs, wanted):
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
    for (topic, index), log in sorted(logs.items()):
        if log.directory.parent != directory or (
            wanted is not None and (topic, index) not in wanted
        ):
            continue
        end = log.log_end_offset
        lag = max(high_watermarks.get((topic, index), end) - end, 0)
        by_topic.setdefault(topic, []).append(
            DescribeLogDirsResponse.DescribeLogDirsPartition(
                partition_index=index, partition_size=log.size, offset_lag=lag, is_future_key=False
            )
        )
    result.topics = [
        DescribeLogDirsResponse.DescribeLogDirsTopic(name=topic, partitions=partitions)
        for topic, partitions in by_topic.items()
    ]
    return result


async def handle_describe_log_dirs(broker, header, request, context):
    wanted = _wanted(request)
    logs = broker.log_manager.logs
    return DescribeLogDirsResponse(
        error_code=ErrorCode.NONE,
        results=[
            _describe_dir(broker, directory, logs, wanted)
            for directory in broker.log_manager.log_dirs
        ],
    )
