"""Fetch, long-polled: consumers get whole batches below the high watermark, followers
(a replica id >= 0) up to the log end offset, which records how far they are.

The broker answers at once when the data gathered reaches ``min_bytes`` or a partition
has an error; otherwise it waits in purgatory until the high watermark (consumers) or
the log end (followers) of a fetched partition moves, or ``max_wait_ms``, then reads
again. Records go out as file slices, sent with sendfile; a consumer fetching below v4
gets them converted to the message format of its version (magic 1, or 0 below v2), read
into memory. Fetch sessions are not kept:
session id 0 tells clients to send full fetches, which every client supports.

Replication throttles (seed 003 修改主题限速, Kafka's ``shouldLeaderThrottle``): a
follower's fetch of a partition that ``leader.replication.throttled.replicas`` throttles
on this broker gets no records while the broker's leader quota is exceeded, unless that
follower is in the ISR; the fetch still records the follower's position, and such a
partition's bytes do not count towards ``min_bytes``. The bytes sent for throttled
partitions, in sync or not, are recorded in the leader quota when the response goes.
Consumers are never throttled here.
"""

from __future__ import annotations

import asyncio
import functools
import time

from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode
from tidelog.records.legacy import down_convert
from tidelog.replication.quota import ReplicationQuota

__all__ = ["handle_fetch"]

FetchResponse = response_class(ApiKey.FETCH)
_NO_RECORDS = b""


def _resolve_topics(broker, header, request):
    """(name, topic id, fetch topic) per topic; names from ids for v13+."""
    resolved = []
    for topic in request.topics:
        if header.request_api_version >= 13:
            entry = broker.metadata.topic_by_id(topic.topic_id)
            resolved.append((entry.name if entry else None, topic.topic_id, topic))
        else:
            resolved.append((topic.topic, None, topic))
    return resolved


def _leader_throttles(
    replicas, quota: ReplicationQuota, replica_id: int, topic: str, partition: int
) -> bool:
    """Whether this follower's fetch of the partition gets no records now: throttled
    here, the follower out of the ISR, and the leader quota exceeded."""
    if not quota.is_throttled(topic, partition):
        return False
    leader = replicas.partitions.get((topic, partition))
    in_sync = leader is not None and replica_id in leader.isr
    return not in_sync and quota.is_exceeded()


def _old_format(broker, topic: str, records, version: int, fetch_offset: int):
    """For a Fetch below v4 (a consumer of Kafka 0.10 or older): the records as
    messages of magic 1 (Fetch v2, v3) or 0 (v0, v1), and the error; a topic with
    ``message.downconversion.enable=false`` answers UNSUPPORTED_VERSION, as Kafka."""
    config = broker.log_manager.config_for(topic)
    if not config.message_downconversion_enable:
        return ErrorCode.UNSUPPORTED_VERSION, _NO_RECORDS
    to_magic = 1 if version >= 2 else 0
    converted = down_convert(
        records.to_bytes(), to_magic, fetch_offset, levels=config.compression_level
    )
    return ErrorCode.NONE, converted


def _read_all(broker, topics, max_bytes: int, isolation_level: int, replica_id: int, version: int):
    """One pass over every partition; returns (responses, bytes gathered, any error,
    bytes of the partitions the leader quota throttles)."""
    replicas = broker.replica_manager
    quota = broker.leader_quota
    read = (
        replicas.read
        if replica_id < 0
        else functools.partial(replicas.read_for_follower, replica_id)
    )
    remaining = max_bytes
    gathered = 0
    throttled_bytes = 0
    failed = False
    responses = []
    for name, topic_id, topic in topics:
        partitions = []
        for wanted in topic.partitions:
            if name is None:
                code, result = ErrorCode.UNKNOWN_TOPIC_ID, None
            else:
                result = read(
                    name,
                    wanted.partition,
                    wanted.fetch_offset,
                    min(wanted.partition_max_bytes, remaining),
                    min_one_message=gathered == 0,
                    current_leader_epoch=wanted.current_leader_epoch,
                )
                code = result.error
                if (
                    replica_id >= 0
                    and result.records is not None
                    and _leader_throttles(replicas, quota, replica_id, name, wanted.partition)
                ):
                    result.records = None  # read (the position counted), not sent
            records = result.records.records if result and result.records else _NO_RECORDS
            if version < 4 and records and replica_id < 0:
                code, records = _old_format(broker, name, records, version, wanted.fetch_offset)
            failed |= code != ErrorCode.NONE
            size = result.size if result else 0
            gathered += size
            if replica_id >= 0 and size and quota.is_throttled(name, wanted.partition):
                throttled_bytes += size
            remaining = max(0, remaining - size)
            hw = result.high_watermark if result else -1
            partitions.append(
                FetchResponse.PartitionData(
                    partition_index=wanted.partition,
                    error_code=code,
                    high_watermark=hw,
                    last_stable_offset=hw,
                    log_start_offset=result.log_start_offset if result else -1,
                    aborted_transactions=None if isolation_level == 0 else [],
                    records=records,
                )
            )
        responses.append(
            FetchResponse.FetchableTopicResponse(
                topic=name or "", topic_id=topic_id, partitions=partitions
            )
        )
    return responses, gathered, failed, throttled_bytes


def _replica_id(request) -> int:
    """The fetching follower's broker id (-1 for a consumer): in the body's replica_id up
    to v14, in ReplicaState from v15."""
    if request.replica_state is not None and request.replica_state.replica_id >= 0:
        return request.replica_state.replica_id
    return request.replica_id


async def handle_fetch(broker, header, request, context):
    replica_id = _replica_id(request)
    replicas = broker.replica_manager
    purgatory = replicas.purgatory if replica_id < 0 else replicas.appended
    topics = _resolve_topics(broker, header, request)
    max_bytes = request.max_bytes if header.request_api_version >= 3 else 2**31 - 1
    deadline = time.monotonic() + request.max_wait_ms / 1000
    watched = [(name, p.partition) for name, _, t in topics if name for p in t.partitions]
    while True:
        wake = purgatory.watch(watched)
        responses, gathered, failed, throttled_bytes = _read_all(
            broker,
            topics,
            max_bytes,
            request.isolation_level,
            replica_id,
            header.request_api_version,
        )
        left = deadline - time.monotonic()
        if gathered >= request.min_bytes or failed or left <= 0 or not watched:
            wake.cancel()
            if throttled_bytes:
                broker.leader_quota.record(throttled_bytes)
            return FetchResponse(error_code=ErrorCode.NONE, session_id=0, responses=responses)
        await asyncio.wait([wake], timeout=left)
        wake.cancel()  # no-op when it fired; forgets the watch when the wait timed out
