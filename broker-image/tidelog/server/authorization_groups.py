"""The groups' rules of the authorization table (:mod:`.authorization`): Read on the
group for membership and offsets (and Read on each topic whose offsets are committed,
fetched or deleted), Describe to find its coordinator, list or describe it, Delete to
delete it. OffsetCommit's responses are shared (``dispatch.BURST_HANDLERS``), so its
rule builds a new one rather than extend the handler's.
"""

from __future__ import annotations

from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode
from tidelog.security.acls import AclOperation, ResourceType
from tidelog.server.authorization_filters import per_item, split
from tidelog.server.authorization_refusals import refusal

__all__ = [
    "delete_groups",
    "describe_groups",
    "find_coordinator",
    "list_groups",
    "offset_commit",
    "offset_commits_allowed",
    "offset_delete",
    "offset_fetch",
    "on_group",
]

OP = AclOperation
TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
TRANSACTION_DENIED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def on_group(operation: AclOperation):
    """The request's one group (``group_id``) needs ``operation``."""

    async def rule(access, handler, broker, header, request, context):
        if access.allows(operation, GROUP, request.group_id):
            return await handler(broker, header, request, context)
        return refusal(header, request, GROUP_DENIED)

    return rule


def offset_commits_allowed(access, requests) -> bool:
    """Whether every OffsetCommit of a burst is wholly allowed (Read on its group and
    on each of its topics): then the burst is served as it is."""
    return all(
        access.allows(OP.READ, GROUP, request.group_id)
        and all(access.allows(OP.READ, TOPIC, topic.name) for topic in request.topics)
        for _, request in requests
    )


async def offset_commit(access, handler, broker, header, request, context):
    cls = response_class(ApiKey.OFFSET_COMMIT)
    if not access.allows(OP.READ, GROUP, request.group_id):
        kept, refused, code = [], request.topics, GROUP_DENIED
    else:
        code = TOPIC_DENIED
        kept, refused = split(request.topics, lambda t: access.allows(OP.READ, TOPIC, t.name))
    if not refused:
        return await handler(broker, header, request, context)
    errors = [
        cls.OffsetCommitResponseTopic(
            name=topic.name,
            partitions=[
                cls.OffsetCommitResponsePartition(
                    partition_index=p.partition_index, error_code=code
                )
                for p in topic.partitions
            ],
        )
        for topic in refused
    ]
    served = []
    if kept:
        request.topics = kept
        served = (await handler(broker, header, request, context)).topics
    return cls(topics=[*served, *errors])  # a new one: the handler's may be shared


def _fetch_topic_errors(topic_class, partition_class, topics, code):
    return [
        topic_class(
            name=topic.name,
            partitions=[
                partition_class(
                    partition_index=index,
                    committed_offset=-1,
                    committed_leader_epoch=-1,
                    metadata="",
                    error_code=code,
                )
                for index in topic.partition_indexes
            ],
        )
        for topic in topics
    ]


async def offset_fetch(access, handler, broker, header, request, context):
    """Read on each group (refused: GROUP_AUTHORIZATION_FAILED) and on each topic asked
    for (refused: TOPIC_AUTHORIZATION_FAILED); asked for all, only readable topics."""
    cls = response_class(ApiKey.OFFSET_FETCH)
    readable = lambda name: access.allows(OP.READ, TOPIC, name)  # noqa: E731
    if header.request_api_version >= 8:
        refused_groups, topic_errors = [], {}
        kept_groups = []
        for group in request.groups:
            if not access.allows(OP.READ, GROUP, group.group_id):
                refused_groups.append(group.group_id)
                continue
            kept, refused = split(group.topics, lambda t: readable(t.name))
            if group.topics is not None:
                group.topics = kept
            topic_errors[group.group_id] = _fetch_topic_errors(
                cls.OffsetFetchResponseTopics,
                cls.OffsetFetchResponsePartitions,
                refused,
                TOPIC_DENIED,
            )
            kept_groups.append(group)
        request.groups = kept_groups
        response = await handler(broker, header, request, context)
        for group in response.groups:
            shown = [t for t in group.topics if readable(t.name)]
            group.topics = [*shown, *topic_errors.get(group.group_id, [])]
        response.groups = [
            *response.groups,
            *(
                cls.OffsetFetchResponseGroup(group_id=g, error_code=GROUP_DENIED, topics=[])
                for g in refused_groups
            ),
        ]
        return response
    topic_class, partition_class = cls.OffsetFetchResponseTopic, cls.OffsetFetchResponsePartition
    if not access.allows(OP.READ, GROUP, request.group_id):
        if header.request_api_version >= 2:
            return refusal(header, request, GROUP_DENIED)
        errors = _fetch_topic_errors(topic_class, partition_class, request.topics, GROUP_DENIED)
        return cls(topics=errors)
    kept, refused = split(request.topics, lambda t: readable(t.name))
    if request.topics is not None:
        request.topics = kept
    response = await handler(broker, header, request, context)
    shown = [t for t in response.topics if readable(t.name)]
    errors = _fetch_topic_errors(topic_class, partition_class, refused, TOPIC_DENIED)
    response.topics = [*shown, *errors]
    return response


async def offset_delete(access, handler, broker, header, request, context):
    if not access.allows(OP.READ, GROUP, request.group_id):
        return refusal(header, request, GROUP_DENIED)
    cls = response_class(ApiKey.OFFSET_DELETE)
    return await per_item(
        handler,
        broker,
        header,
        request,
        context,
        items="topics",
        results="topics",
        allowed=lambda topic: access.allows(OP.READ, TOPIC, topic.name),
        error=lambda topic: cls.OffsetDeleteResponseTopic(
            name=topic.name,
            partitions=[
                cls.OffsetDeleteResponsePartition(
                    partition_index=p.partition_index, error_code=TOPIC_DENIED
                )
                for p in topic.partitions
            ],
        ),
    )


async def list_groups(access, handler, broker, header, request, context):
    """Every group to whom may Describe the cluster; else those it may Describe."""
    response = await handler(broker, header, request, context)
    if not access.on_cluster(OP.DESCRIBE):
        response.groups = [
            g for g in response.groups if access.allows(OP.DESCRIBE, GROUP, g.group_id)
        ]
    return response


async def describe_groups(access, handler, broker, header, request, context):
    cls = response_class(ApiKey.DESCRIBE_GROUPS)
    return await per_item(
        handler,
        broker,
        header,
        request,
        context,
        items="groups",
        results="groups",
        allowed=lambda group: access.allows(OP.DESCRIBE, GROUP, group),
        error=lambda group: cls.DescribedGroup(
            group_id=group,
            error_code=GROUP_DENIED,
            group_state="",
            protocol_type="",
            protocol_data="",
            members=[],
        ),
    )


async def delete_groups(access, handler, broker, header, request, context):
    cls = response_class(ApiKey.DELETE_GROUPS)
    return await per_item(
        handler,
        broker,
        header,
        request,
        context,
        items="groups_names",
        results="results",
        allowed=lambda group: access.allows(OP.DELETE, GROUP, group),
        error=lambda group: cls.DeletableGroupResult(group_id=group, error_code=GROUP_DENIED),
    )


async def find_coordinator(access, handler, broker, header, request, context):
    """Describe on the group, or on the transactional id, each key names."""
    cls = response_class(ApiKey.FIND_COORDINATOR)
    if request.key_type == 1:
        resource_type, code = ResourceType.TRANSACTIONAL_ID, TRANSACTION_DENIED
    else:
        resource_type, code = GROUP, GROUP_DENIED
    if header.request_api_version < 4:
        if access.allows(OP.DESCRIBE, resource_type, request.key):
            return await handler(broker, header, request, context)
        return cls(error_code=code, error_message=code.message, node_id=-1, host="", port=-1)
    return await per_item(
        handler,
        broker,
        header,
        request,
        context,
        items="coordinator_keys",
        results="coordinators",
        allowed=lambda key: access.allows(OP.DESCRIBE, resource_type, key),
        error=lambda key: cls.Coordinator(
            key=key, node_id=-1, host="", port=-1, error_code=code, error_message=code.message
        ),
    )
