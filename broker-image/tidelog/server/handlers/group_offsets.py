"""OffsetCommit, OffsetFetch and OffsetDelete: committed offsets in ``__consumer_offsets``,
answered by the group coordinator."""

from __future__ import annotations

import functools

from tidelog.coordinator.committed_offsets import CommitRequest, OffsetCommit
from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode

__all__ = [
    "handle_offset_commit",
    "handle_offset_commits",
    "handle_offset_delete",
    "handle_offset_fetch",
]

OffsetCommitResponse = response_class(ApiKey.OFFSET_COMMIT)
OffsetFetchResponse = response_class(ApiKey.OFFSET_FETCH)
OffsetDeleteResponse = response_class(ApiKey.OFFSET_DELETE)

NO_OFFSET = -1


def _by_topic(results: dict[tuple[str, int], object]) -> dict[str, list[tuple[int, object]]]:
    topics: dict[str, list[tuple[int, object]]] = {}
    for (topic, partition), result in results.items():
        topics.setdefault(topic, []).append((partition, result))
    return topics


def _error_topics(topic_class, partition_class, results: dict) -> list:
    """A response's topics with each partition's error code."""
    return [
        topic_class(
            name=topic,
            partitions=[
                partition_class(partition_index=partition, error_code=code)
                for partition, code in partitions
            ],
        )
        for topic, partitions in _by_topic(results).items()
    ]


async def handle_offset_commit(broker, header, request, context):
    (response,) = await handle_offset_commits(broker, [(header, request)], context)
    return response


async def handle_offset_commits(broker, requests, context) -> list:
    """OffsetCommit requests of one connection, read together: their responses, in order.

    Commits to partitions the cluster does not have (a topic unknown, or deleted, a
    partition past its count) are answered UNKNOWN_TOPIC_OR_PARTITION, each, and stored
    nowhere, as Kafka does; the others go to the coordinator, all the requests' at once
    (it appends them together)."""
    commits, unknowns = [], []
    for header, request in requests:
        commit, unknown = _commit_request(broker, header.request_api_version, request)
        commits.append(commit)
        unknowns.append(unknown)
    stored = iter(await broker.group_coordinator.commit_offsets(list(filter(None, commits))))
    answers = []
    for commit, unknown in zip(commits, unknowns, strict=True):
        results = (next(stored) if commit else {}) | unknown
        answers.append(_offset_commit_response(tuple(results.items())))
    return answers


def _commit_request(broker, version: int, request) -> tuple[CommitRequest | None, dict]:
    """The coordinator's part of a request (None if no partition of it exists) and the
    errors of the partitions that do not exist."""
    offsets, unknown = {}, {}
    for topic in request.topics:
        entry = broker.metadata.topics.get(topic.name)
        known = entry.partitions if entry else {}
        for p in topic.partitions:
            key = (topic.name, p.partition_index)
            if p.partition_index in known:
                offsets[key] = OffsetCommit(
                    p.committed_offset, p.committed_leader_epoch, p.committed_metadata
                )
            else:
                unknown[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if not offsets:
        return None, unknown
    commit = CommitRequest(
        request.group_id,
        # v0 commits carry no generation: they are a plain store of offsets.
        request.generation_id_or_member_epoch if version >= 1 else -1,
        request.member_id if version >= 1 else "",
        request.group_instance_id,
        offsets,
        retention_ms=request.retention_time_ms if 2 <= version <= 4 else -1,
    )
    return commit, unknown


@functools.lru_cache(maxsize=256)
def _offset_commit_response(results: tuple[tuple[tuple[str, int], ErrorCode], ...]) -> object:
    """The response for ``results`` (the items of a partition -> error dict). A member
    commits the same partitions with the same outcome over and over, so equal results
    share one response object, made once; the dispatcher encodes a shared response once
    too (``RequestDispatcher``). Shared responses are never changed."""
    return OffsetCommitResponse(
        throttle_time_ms=0,
        topics=_error_topics(
            OffsetCommitResponse.OffsetCommitResponseTopic,
            OffsetCommitResponse.OffsetCommitResponsePartition,
            dict(results),
        ),
    )


def _fetch_group(broker, group_id: str, topics) -> tuple[ErrorCode, dict]:
    partitions = (
        None
        if topics is None
        else [(t.name, index) for t in topics for index in t.partition_indexes]
    )
    return broker.group_coordinator.fetch_offsets(group_id, partitions)


def _partition_fields(partition: int, value, error: ErrorCode) -> dict:
    return {
        "partition_index": partition,
        "committed_offset": value.offset if value else NO_OFFSET,
        "committed_leader_epoch": value.leader_epoch if value else -1,
        "metadata": value.metadata if value else "",
        "error_code": error,
    }


async def handle_offset_fetch(broker, header, request, context):
    version = header.request_api_version
    if version >= 8:
        groups = []
        for group in request.groups:
            error, offsets = _fetch_group(broker, group.group_id, group.topics)
            groups.append(
                OffsetFetchResponse.OffsetFetchResponseGroup(
                    group_id=group.group_id,
                    error_code=error,
                    topics=[
                        OffsetFetchResponse.OffsetFetchResponseTopics(
                            name=topic,
                            partitions=[
                                OffsetFetchResponse.OffsetFetchResponsePartitions(
                                    **_partition_fields(partition, value, ErrorCode.NONE)
                                )
                                for partition, value in partitions
                            ],
                        )
                        for topic, partitions in _by_topic(offsets).items()
                    ],
                )
            )
        return OffsetFetchResponse(throttle_time_ms=0, groups=groups)
    error, offsets = _fetch_group(broker, request.group_id, request.topics)
    # Before v2 the error of the group goes in every partition.
    partition_error = error if version < 2 else ErrorCode.NONE
    if error and version < 2:
        offsets = {(t.name, i): None for t in request.topics or [] for i in t.partition_indexes}
    return OffsetFetchResponse(
        throttle_time_ms=0,
        error_code=error,
        topics=[
            OffsetFetchResponse.OffsetFetchResponseTopic(
                name=topic,
                partitions=[
                    OffsetFetchResponse.OffsetFetchResponsePartition(
                        **_partition_fields(partition, value, partition_error)
                    )
                    for partition, value in partitions
                ],
            )
            for topic, partitions in _by_topic(offsets).items()
        ],
    )


async def handle_offset_delete(broker, header, request, context):
    partitions = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    error, results = await broker.group_coordinator.delete_offsets(request.group_id, partitions)
    return OffsetDeleteResponse(
        error_code=error,
        throttle_time_ms=0,
        topics=_error_topics(
            OffsetDeleteResponse.OffsetDeleteResponseTopic,
            OffsetDeleteResponse.OffsetDeleteResponsePartition,
            results,
        ),
    )
