"""The controller mutation quota (KIP-599) around CreateTopics, CreatePartitions and
DeleteTopics, as Kafka's ``KafkaApis`` and ``ZkAdminManager`` apply it.

Each partition created or deleted takes a token of the client's
``controller_mutation_rate`` bucket (:class:`~tidelog.security.quotas.ClientQuotas`).
From CreateTopics v6, CreatePartitions v3 and DeleteTopics v5 the quota is strict: the
topics of a request are handled one after the other, and once the bucket is in debt the
rest are refused with THROTTLING_QUOTA_EXCEEDED, the response carrying the time until
the debt is paid. Older versions, whose clients know no such error, are permissive: every
topic is handled, and a request that leaves the bucket in debt is throttled for that time.
A validate-only request takes no token and is never refused.

The API's handler serves each topic alone (the entries naming one topic together, so
that it still answers a topic named twice as it does), and the answers are put back into
one response in the request's order.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode
from tidelog.security.quotas import ClientQuotas

__all__ = ["MUTATION_APIS", "handle_with_mutation_quota"]

ZERO_UUID = uuid.UUID(int=0)
THROTTLED_MESSAGE = "The throttling quota has been exceeded."


@dataclass(frozen=True)
class MutationApi:
    """Where an API's request lists its topics and its response their results, and
    from which version its quota is strict."""

    strict_since: int
    results_field: str
    # version -> the request's field listing the topics
    topics_field: Callable[[int], str]
    # a request entry -> the topic it names (a name, or an id)
    key: Callable[[Any], Any]
    # (entry) -> the result of a topic refused for the quota
    refused: Callable[[Any], Any]


CreateTopicsResponse = response_class(ApiKey.CREATE_TOPICS)
DeleteTopicsResponse = response_class(ApiKey.DELETE_TOPICS)
CreatePartitionsResponse = response_class(ApiKey.CREATE_PARTITIONS)


def _succeeded(results) -> list:
    return [r for r in results if r.error_code == ErrorCode.NONE]


def _topic_of_deletion(entry) -> Any:
    if isinstance(entry, str):
        return entry
    return entry.name if entry.topic_id in (None, ZERO_UUID) else entry.topic_id


def _partition_count(broker, topic) -> int:
    """Partitions of a topic (named, or by id) as this broker knows them; 0 unknown."""
    cache = broker.metadata
    entry = cache.topics.get(topic) if isinstance(topic, str) else cache.topic_by_id(topic)
    return len(entry.partitions) if entry is not None else 0


def _permits(api_key: int, entries: list, results: list, before: int) -> int:
    """Partitions a topic's handling created or deleted (``before``: the partitions the
    topic had): a created topic's, the ones added to it, or a deleted topic's."""
    done = _succeeded(results)
    if not done:
        return 0
    if api_key == ApiKey.CREATE_TOPICS:
        return sum(max(r.num_partitions, 0) for r in done)
    if api_key == ApiKey.CREATE_PARTITIONS:
        return max(entries[0].count - before, 0)
    return before


API_TABLE = {
    ApiKey.CREATE_TOPICS: MutationApi(
        strict_since=6,
        results_field="topics",
        topics_field=lambda version: "topics",
        key=lambda entry: entry.name,
        refused=lambda entry: CreateTopicsResponse.CreatableTopicResult(
            name=entry.name,
            error_code=ErrorCode.THROTTLING_QUOTA_EXCEEDED,
            error_message=THROTTLED_MESSAGE,
        ),
    ),
    ApiKey.DELETE_TOPICS: MutationApi(
        strict_since=5,
        results_field="responses",
        topics_field=lambda version: "topics" if version >= 6 else "topic_names",
        key=_topic_of_deletion,
        refused=lambda entry: DeleteTopicsResponse.DeletableTopicResult(
            name=entry if isinstance(entry, str) else entry.name,
            topic_id=ZERO_UUID if isinstance(entry, str) else (entry.topic_id or ZERO_UUID),
            error_code=ErrorCode.THROTTLING_QUOTA_EXCEEDED,
            error_message=THROTTLED_MESSAGE,
        ),
    ),
    ApiKey.CREATE_PARTITIONS: MutationApi(
        strict_since=3,
        results_field="results",
        topics_field=lambda version: "topics",
        key=lambda entry: entry.name,
        refused=lambda entry: CreatePartitionsResponse.CreatePartitionsTopicResult(
            name=entry.name,
            error_code=ErrorCode.THROTTLING_QUOTA_EXCEEDED,
            error_message=THROTTLED_MESSAGE,
        ),
    ),
}
MUTATION_APIS = frozenset(API_TABLE)


async def handle_with_mutation_quota(
    handler: Callable[..., Coroutine],
    quotas: ClientQuotas,
    broker,
    header,
    request,
    context,
) -> tuple[Any, int]:
    """The response to a CreateTopics, CreatePartitions or DeleteTopics request under the
    client's controller mutation quota, and the throttle time in ms it earns."""
    if getattr(request, "validate_only", False):
        return await handler(broker, header, request, context), 0
    api_key, version = header.request_api_key, header.request_api_version
    api = API_TABLE[api_key]
    strict = version >= api.strict_since
    user, client = context.principal.name, header.client_id or ""
    topics_field = api.topics_field(version)
    groups: dict[Any, list] = {}
    for entry in getattr(request, topics_field):
        groups.setdefault(api.key(entry), []).append(entry)
    results: list = []
    throttle_ms = 0
    response = None
    for topic, entries in groups.items():
        if strict:
            debt_ms = quotas.mutation_throttle_ms(user, client) or 0
            if debt_ms > 0:
                throttle_ms = max(throttle_ms, debt_ms)
                results += [api.refused(entry) for entry in entries]
                continue
        before = _partition_count(broker, topic)
        alone = copy.copy(request)
        setattr(alone, topics_field, entries)
        response = await handler(broker, header, alone, context)
        answered = getattr(response, api.results_field)
        results += answered
        permits = _permits(api_key, entries, answered, before)
        if permits:
            earned = quotas.record_mutation(user, client, permits)
            if not strict:
                throttle_ms = max(throttle_ms, earned)
    if response is None:
        response = response_class(api_key)()
    setattr(response, api.results_field, results)
    return response, throttle_ms
