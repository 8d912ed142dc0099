"""Fetch, long-polled: consumers get whole batches below the high watermark, followers
(a replica id >= 0) up to the log end offset, which records how far they are.

The broker answers at once when the data gathered reaches ``min_bytes`` or a partition
has an error; otherwise it waits in purgatory until the high watermark (consumers) or
the log end (followers) of a fetched partition moves, or ``max_wait_ms``, then reads
again. Records go out as file slices, sent with sendfile; a consumer fetching below v4
gets them converted to the message format of its version (magic 1, or 0 below v2), read
into memory.

A partition answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH names its current
leader from v16 (KIP-951, :mod:`tidelog.server.leader_hints`).

Fetch sessions (KIP-227, :mod:`tidelog.server.fetch_sessions`): a fetch of v7+ may open
a session; an incremental fetch reads every partition of its session and answers only
the partitions with news. The session's cache learns what was sent only from the final
response, never from a read that ends in purgatory. Most partitions of a follower's
session have nothing new either way; they cost a few attribute checks
(``ReplicaManager.read_idle_for_follower``), and those whose offsets the session already
sent are left out without touching it (``NO_NEWS``).

Replication throttles (seed 003 修改主题限速, Kafka's ``shouldLeaderThrottle``): a
follower's fetch of a partition that ``leader.replication.throttled.replicas`` throttles
on this broker gets no records while the broker's leader quota is exceeded, unless that
follower is in the ISR or being added to it (the high watermark waits for it from then
on); the fetch still records the follower's position, and such a partition's bytes do
not count towards ``min_bytes``. The bytes sent for throttled partitions, in sync or
not, are recorded in the leader quota when the response goes.
Consumers are never throttled here.

A follower that owes a new leader epoch its first fetch of a partition
(:mod:`tidelog.replication.first_fetches`) waits here at most ``OWED_POLL_S``, and its
waiting fetch comes back when a LeaderAndIsr makes it owe one: it is to come back with
that partition in its next fetch.
"""

from __future__ import annotations

import functools
import time

from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode
from tidelog.records.legacy import down_convert
from tidelog.replication.first_fetches import OWED_POLL_S, wake_key
from tidelog.replication.quota import ReplicationQuota
from tidelog.server.fetch_sessions import (
    Answer,
    FetchContext,
    FetchSessionError,
    SessionPartition,
    new_context,
)
from tidelog.server.leader_hints import LeaderHints

__all__ = ["handle_fetch"]

FetchResponse = response_class(ApiKey.FETCH)
_NO_RECORDS = b""


def _asked(broker, version: int, request) -> tuple[list[SessionPartition], list]:
    """The partitions the request names, and the keys of those it forgets (topic ids
    from v13, names before)."""
    by_id = version >= 13
    asked = []
    for topic in request.topics:
        if by_id:
            name, topic_id = _topic_name(broker, topic.topic_id), topic.topic_id
        else:
            name, topic_id = topic.topic, None
        asked.extend(
            SessionPartition(
                name,
                topic_id,
                wanted.partition,
                wanted.fetch_offset,
                wanted.partition_max_bytes,
                wanted.current_leader_epoch,
                wanted.log_start_offset,
            )
            for wanted in topic.partitions
        )
    forgotten = [
        (topic.topic_id if by_id else topic.topic, index)
        for topic in request.forgotten_topics_data or ()
        for index in topic.partitions
    ]
    return asked, forgotten


def _topic_name(broker, topic_id) -> str | None:
    entry = broker.metadata.topic_by_id(topic_id)
    return entry.name if entry else None


def _context(broker, version: int, request, replica_id: int) -> FetchContext:
    asked, forgotten = _asked(broker, version, request)
    return new_context(
        broker.fetch_sessions,
        request.session_id,
        request.session_epoch,
        asked,
        forgotten,
        uses_topic_ids=version >= 13,
        privileged=replica_id >= 0,
        resolve=functools.partial(_topic_name, broker),
    )


def _leader_throttles(
    replicas, quota: ReplicationQuota, replica_id: int, topic: str, partition: int
) -> bool:
    """Whether this follower's fetch of the partition gets no records now: throttled
    here, the follower out of the maximal ISR, and the leader quota exceeded. A follower
    being added to the ISR is in sync already: the high watermark waits for it, so its
    fetches must not go empty until ZooKeeper has the change."""
    if not quota.is_throttled(topic, partition):
        return False
    leader = replicas.partitions.get((topic, partition))
    in_sync = leader is not None and replica_id in leader.maximal_isr
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


def _read_all(broker, wanted, max_bytes: int, replica_id: int, version: int):
    """One pass over the partitions ``wanted`` (SessionPartitions, in order); returns
    (each one's Answer, bytes gathered, any error, bytes of the partitions the leader
    quota throttles)."""
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
    answers = []
    now_ms = replicas.clock_ms()
    for fetch in wanted:
        name = fetch.topic
        if replica_id >= 0 and name is not None:
            idle = replicas.read_idle_for_follower(
                replica_id,
                name,
                fetch.partition,
                fetch.fetch_offset,
                fetch.current_leader_epoch,
                now_ms,
            )
            if idle is not None:  # most of a follower's session: a few attribute checks
                answers.append(fetch.answer_without_records(*idle))
                continue
        if name is None:
            code, result = ErrorCode.UNKNOWN_TOPIC_ID, None
        else:
            result = read(
                name,
                fetch.partition,
                fetch.fetch_offset,
                min(fetch.partition_max_bytes, remaining),
                min_one_message=gathered == 0,
                current_leader_epoch=fetch.current_leader_epoch,
            )
            code = result.error
            if (
                replica_id >= 0
                and result.records is not None
                and _leader_throttles(replicas, quota, replica_id, name, fetch.partition)
            ):
                result.records = None  # read (the position counted), not sent
        records = result.records.records if result and result.records else _NO_RECORDS
        if version < 4 and records and replica_id < 0:
            code, records = _old_format(broker, name, records, version, fetch.fetch_offset)
        failed |= code != ErrorCode.NONE
        size = result.size if result else 0
        gathered += size
        if replica_id >= 0 and size and quota.is_throttled(name, fetch.partition):
            throttled_bytes += size
        remaining = max(0, remaining - size)
        if result is None:
            answers.append(Answer(code, -1, -1, records))
        else:
            answers.append(Answer(code, result.high_watermark, result.log_start_offset, records))
    return answers, gathered, failed, throttled_bytes


def _by_topic(pairs, isolation_level: int, hints: LeaderHints) -> list:
    """The response's topics, of each (partition, answer) sent: runs of consecutive
    partitions of one topic, as Kafka groups them; a partition sent away names its
    current leader (``hints``)."""
    aborted = None if isolation_level == 0 else []
    topics = []
    previous = None
    for fetch, answer in pairs:
        if previous is None or (fetch.topic, fetch.topic_id) != previous:
            previous = (fetch.topic, fetch.topic_id)
            topics.append(
                FetchResponse.FetchableTopicResponse(
                    topic=fetch.topic or "", topic_id=fetch.topic_id, partitions=[]
                )
            )
        partition = FetchResponse.PartitionData(
            partition_index=fetch.partition,
            error_code=answer.error_code,
            high_watermark=answer.high_watermark,
            last_stable_offset=answer.high_watermark,
            log_start_offset=answer.log_start_offset,
            aborted_transactions=aborted,
            records=answer.records,
        )
        hints.name_leader(partition, fetch.topic, fetch.partition)
        topics[-1].partitions.append(partition)
    return topics


def _replica_id(request) -> int:
    """The fetching follower's broker id (-1 for a consumer): in the body's replica_id up
    to v14, in ReplicaState from v15."""
    if request.replica_state is not None and request.replica_state.replica_id >= 0:
        return request.replica_state.replica_id
    return request.replica_id


async def handle_fetch(broker, header, request, context):
    replica_id = _replica_id(request)
    version = header.request_api_version
    try:
        session = _context(broker, version, request, replica_id)
    except FetchSessionError as error:
        return FetchResponse(error_code=error.code, session_id=0, responses=[])
    replicas = broker.replica_manager
    purgatory = replicas.purgatory if replica_id < 0 else replicas.appended
    wanted = session.partitions
    max_bytes = request.max_bytes if version >= 3 else 2**31 - 1
    started = time.monotonic()
    deadline = started + request.max_wait_ms / 1000
    watched = [(p.topic, p.partition) for p in wanted if p.topic]
    nothing_to_wait_for = not watched
    if replica_id >= 0:  # a follower's fetch also wakes for a first fetch it comes to owe
        watched.append(wake_key(replica_id))
    while True:
        answers, gathered, failed, throttled_bytes = _read_all(
            broker, wanted, max_bytes, replica_id, version
        )
        if replica_id >= 0 and replicas.first_fetches.owes(replica_id):
            deadline = min(deadline, started + OWED_POLL_S)
        left = deadline - time.monotonic()
        if gathered >= request.min_bytes or failed or left <= 0 or nothing_to_wait_for:
            if throttled_bytes:
                broker.leader_quota.record(throttled_bytes)
            session_id, pairs = session.respond(answers)
            hints = LeaderHints(broker.metadata, context.listener, ApiKey.FETCH, version)
            return FetchResponse(
                error_code=ErrorCode.NONE,
                session_id=session_id,
                responses=_by_topic(pairs, request.isolation_level, hints),
                node_endpoints=hints.node_endpoints(),
            )
        # Watched only now: nothing ran since the read (no await), so nothing was missed.
        await purgatory.wait(watched, left)
