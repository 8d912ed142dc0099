"""The per-resource rules of the authorization table (:mod:`.authorization`) for the
APIs that answer per topic or config resource: what KafkaApis checks on each one (the
groups' APIs are in :mod:`.authorization_groups`).

A rule is ``async (access, handler, broker, header, request, context) -> response``: it
takes out of the request the resources the principal may not act on, lets the handler
serve the rest, and answers the others with Kafka's error for them (TOPIC_-, GROUP_-,
CLUSTER_- or TRANSACTIONAL_ID_AUTHORIZATION_FAILED). Authorization comes before any
existence check, so a topic refused gets one answer whether it exists or not. The
handlers' responses are fresh objects, extended here.
"""

from __future__ import annotations

from collections.abc import Callable

from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.admin_enums import ConfigResourceType
from tidelog.protocol.errors import ErrorCode
from tidelog.security.acls import CLUSTER_NAME, AclOperation, ResourceType
from tidelog.server.authorization_refusals import refusal
from tidelog.server.network import CloseConnection

__all__ = [
    "alter_configs",
    "create_partitions",
    "create_topics",
    "delete_records",
    "delete_topics",
    "describe_cluster",
    "describe_configs",
    "fetch",
    "init_producer_id",
    "list_offsets",
    "metadata",
    "offsets_for_leader_epoch",
    "produce",
]

OP = AclOperation
TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
TRANSACTION_DENIED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def split(items, allowed: Callable[[object], bool]) -> tuple[list, list]:
    kept, refused = [], []
    for item in items or []:
        (kept if allowed(item) else refused).append(item)
    return kept, refused


async def per_item(
    handler, broker, header, request, context, *, items: str, results: str, allowed, error
):
    """Serve the items of ``request.<items>`` that ``allowed``; answer the others with
    ``error(item)`` appended to ``response.<results>``."""
    kept, refused = split(getattr(request, items), allowed)
    if not refused:
        return await handler(broker, header, request, context)
    setattr(request, items, kept)
    response = await handler(broker, header, request, context)
    if response is None:  # acks=0: Kafka closes a connection whose produce failed
        raise CloseConnection(
            f"{ApiKey(header.request_api_key).name} refused by the authorizer "
            f"(client {header.client_id!r} at {context.peer_host})"
        )
    setattr(response, results, [*getattr(response, results), *map(error, refused)])
    return response


def _topic_id_names(broker) -> Callable[[object, object], str | None]:
    """A fetch's topic, by name (to v12) or by id (v13+); None for an unknown id."""

    def name_of(name, topic_id):
        if name:
            return name
        entry = broker.metadata.topic_by_id(topic_id)
        return entry.name if entry is not None else None

    return name_of


# -- topics --------------------------------------------------------------------------------


async def produce(access, handler, broker, header, request, context):
    cls = response_class(ApiKey.PRODUCE)
    transactional_id = request.transactional_id
    if transactional_id is not None and not access.allows(
        OP.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
    ):
        code, allowed = TRANSACTION_DENIED, lambda topic: False
    else:
        code, allowed = TOPIC_DENIED, lambda topic: access.allows(OP.WRITE, TOPIC, topic.name)

    def error(topic):
        return cls.TopicProduceResponse(
            name=topic.name,
            partition_responses=[
                cls.PartitionProduceResponse(
                    index=p.index, error_code=code, base_offset=-1, log_start_offset=-1
                )
                for p in topic.partition_data
            ],
        )

    return await per_item(
        handler,
        broker,
        header,
        request,
        context,
        items="topic_data",
        results="responses",
        allowed=allowed,
        error=error,
    )


async def fetch(access, handler, broker, header, request, context):
    cls = response_class(ApiKey.FETCH)
    name_of = _topic_id_names(broker)
    follower = request.replica_id >= 0 or (
        request.replica_state is not None and request.replica_state.replica_id >= 0
    )
    if follower:
        cluster_action = access.on_cluster(OP.CLUSTER_ACTION)
        allowed = lambda topic: cluster_action  # noqa: E731
    else:

        def allowed(topic):
            name = name_of(topic.topic, topic.topic_id)
            return name is None or access.allows(OP.READ, TOPIC, name)

    def error(topic):
        return cls.FetchableTopicResponse(
            topic=topic.topic,
            topic_id=topic.topic_id,
            partitions=[
                cls.PartitionData(
                    partition_index=p.partition,
                    error_code=TOPIC_DENIED,
                    high_watermark=-1,
                    last_stable_offset=-1,
                    log_start_offset=-1,
                    records=None,
                )
                for p in topic.partitions
            ],
        )

    return await per_item(
        handler,
        broker,
        header,
        request,
        context,
        items="topics",
        results="responses",
        allowed=allowed,
        error=error,
    )


async def list_offsets(access, handler, broker, header, request, context):
    cls = response_class(ApiKey.LIST_OFFSETS)

    def error(topic):
        return cls.ListOffsetsTopicResponse(
            name=topic.name,
            partitions=[
                cls.ListOffsetsPartitionResponse(
                    partition_index=p.partition_index,
                    error_code=TOPIC_DENIED,
                    timestamp=-1,
                    offset=-1,
                    leader_epoch=-1,
                )
                for p in topic.partitions
            ],
        )

    return await per_item(
        handler,
        broker,
        header,
        request,
        context,
        items="topics",
        results="topics",
        allowed=lambda topic: access.allows(OP.DESCRIBE, TOPIC, topic.name),
        error=error,
    )


async def offsets_for_leader_epoch(access, handler, broker, header, request, context):
    """ClusterAction on the cluster (a follower's right) or Describe on each topic (a
    consumer's, since KIP-320), whoever asks, as Kafka checks it."""
    cls = response_class(ApiKey.OFFSET_FOR_LEADER_EPOCH)
    cluster_action = access.on_cluster(OP.CLUSTER_ACTION)

    def allowed(topic) -> bool:
        return cluster_action or access.allows(OP.DESCRIBE, TOPIC, topic.topic)

    def error(topic):
        return cls.OffsetForLeaderTopicResult(
            topic=topic.topic,
            partitions=[
                cls.EpochEndOffset(
                    partition=p.partition, error_code=TOPIC_DENIED, leader_epoch=-1, end_offset=-1
                )
                for p in topic.partitions
            ],
        )

    return await per_item(
        handler,
        broker,
        header,
        request,
        context,
        items="topics",
        results="topics",
        allowed=allowed,
        error=error,
    )


async def metadata(access, handler, broker, header, request, context):
    """Named topics the principal may not Describe, and absent ones it may not Create
    (neither on the cluster nor on the topic) where they would be auto-created, answer
    TOPIC_AUTHORIZATION_FAILED; a listing of every topic shows only those it may
    Describe (the handler asks :func:`~.authorization.describable_topics`)."""
    version = header.request_api_version
    if request.topics is None or (version == 0 and not request.topics):
        return await handler(broker, header, request, context)
    cls = response_class(ApiKey.METADATA)
    cache = broker.metadata
    auto_create = (version < 4 or request.allow_auto_topic_creation) and broker.config[
        "auto.create.topics.enable"
    ]
    may_create_all = None

    def allowed(wanted) -> bool:
        nonlocal may_create_all
        name = wanted.name
        if name is None:
            entry = cache.topic_by_id(wanted.topic_id)
            return entry is None or access.allows(OP.DESCRIBE, TOPIC, entry.name)
        if not access.allows(OP.DESCRIBE, TOPIC, name):
            return False
        if auto_create and name not in cache.topics:
            if may_create_all is None:
                may_create_all = access.on_cluster(OP.CREATE)
            return may_create_all or access.allows(OP.CREATE, TOPIC, name)
        return True

    def error(wanted):
        return cls.MetadataResponseTopic(
            error_code=TOPIC_DENIED,
            name=wanted.name,
            topic_id=wanted.topic_id,
            is_internal=False,
            partitions=[],
        )

    kept, refused = split(request.topics, allowed)
    if not refused:
        return await handler(broker, header, request, context)
    request.topics = kept
    response = await handler(broker, header, request, context)
    if version == 0 and not kept:  # an empty v0 list asked for every topic: none was
        response.topics = []
    response.topics = [*response.topics, *map(error, refused)]
    return response


async def create_topics(access, handler, broker, header, request, context):
    """Create on the cluster or on each topic; a created topic's configs (v5+) are shown
    to whom may DescribeConfigs it, else its topic_config_error_code says why not."""
    cls = response_class(ApiKey.CREATE_TOPICS)
    on_cluster = access.on_cluster(OP.CREATE)
    response = await per_item(
        handler,
        broker,
        header,
        request,
        context,
        items="topics",
        results="topics",
        allowed=lambda topic: on_cluster or access.allows(OP.CREATE, TOPIC, topic.name),
        error=lambda topic: cls.CreatableTopicResult(
            name=topic.name,
            error_code=TOPIC_DENIED,
            error_message="Authorization failed.",
            num_partitions=-1,
            replication_factor=-1,
            configs=None,
        ),
    )
    for result in response.topics:
        if result.error_code == ErrorCode.NONE and not access.allows(
            OP.DESCRIBE_CONFIGS, TOPIC, result.name
        ):
            result.topic_config_error_code = TOPIC_DENIED
            result.configs = []
    return response


async def delete_topics(access, handler, broker, header, request, context):
    cls = response_class(ApiKey.DELETE_TOPICS)
    if header.request_api_version < 6:
        return await per_item(
            handler,
            broker,
            header,
            request,
            context,
            items="topic_names",
            results="responses",
            allowed=lambda name: access.allows(OP.DELETE, TOPIC, name),
            error=lambda name: cls.DeletableTopicResult(name=name, error_code=TOPIC_DENIED),
        )
    name_of = _topic_id_names(broker)

    def allowed(topic) -> bool:
        name = name_of(topic.name, topic.topic_id)
        return name is None or access.allows(OP.DELETE, TOPIC, name)

    def error(topic):
        name = name_of(topic.name, topic.topic_id)
        # asked by id: the name only to whom may Describe the topic
        shown = topic.name or (name if access.allows(OP.DESCRIBE, TOPIC, name) else None)
        return cls.DeletableTopicResult(
            name=shown, topic_id=topic.topic_id, error_code=TOPIC_DENIED
        )

    return await per_item(
        handler,
        broker,
        header,
        request,
        context,
        items="topics",
        results="responses",
        allowed=allowed,
        error=error,
    )


async def create_partitions(access, handler, broker, header, request, context):
    cls = response_class(ApiKey.CREATE_PARTITIONS)
    return await per_item(
        handler,
        broker,
        header,
        request,
        context,
        items="topics",
        results="results",
        allowed=lambda topic: access.allows(OP.ALTER, TOPIC, topic.name),
        error=lambda topic: cls.CreatePartitionsTopicResult(
            name=topic.name, error_code=TOPIC_DENIED, error_message=None
        ),
    )


async def delete_records(access, handler, broker, header, request, context):
    cls = response_class(ApiKey.DELETE_RECORDS)
    return await per_item(
        handler,
        broker,
        header,
        request,
        context,
        items="topics",
        results="topics",
        allowed=lambda topic: access.allows(OP.DELETE, TOPIC, topic.name),
        error=lambda topic: cls.DeleteRecordsTopicResult(
            name=topic.name,
            partitions=[
                cls.DeleteRecordsPartitionResult(
                    partition_index=p.partition_index, low_watermark=-1, error_code=TOPIC_DENIED
                )
                for p in topic.partitions
            ],
        ),
    )


async def describe_cluster(access, handler, broker, header, request, context):
    """Served to everyone, as Kafka serves it; the operations asked for are those the
    principal may do on the cluster, none unless it may Describe it."""
    response = await handler(broker, header, request, context)
    if request.include_cluster_authorized_operations:
        response.cluster_authorized_operations = (
            access.operations(ResourceType.CLUSTER, CLUSTER_NAME)
            if access.on_cluster(OP.DESCRIBE)
            else 0
        )
    return response


async def init_producer_id(access, handler, broker, header, request, context):
    """A transactional producer needs Write on its transactional id; an idempotent one
    IdempotentWrite on the cluster or, as Kafka 3 allows, Write on some topic."""
    if request.transactional_id is not None:
        if access.allows(OP.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
            return await handler(broker, header, request, context)
        return refusal(header, request, TRANSACTION_DENIED)
    if access.on_cluster(OP.IDEMPOTENT_WRITE) or access.on_any(OP.WRITE, TOPIC):
        return await handler(broker, header, request, context)
    return refusal(header, request, CLUSTER_DENIED)


def _configs_rule(operation: AclOperation, results: str, result_class: str):
    async def rule(access, handler, broker, header, request, context):
        cls = response_class(ApiKey(header.request_api_key))

        def code(resource) -> ErrorCode:
            if resource.resource_type == ConfigResourceType.TOPIC:
                allowed = access.allows(operation, TOPIC, resource.resource_name)
                return ErrorCode.NONE if allowed else TOPIC_DENIED
            if resource.resource_type in (
                ConfigResourceType.BROKER,
                ConfigResourceType.BROKER_LOGGER,
            ):
                return ErrorCode.NONE if access.on_cluster(operation) else CLUSTER_DENIED
            return ErrorCode.NONE  # the handler answers a type it does not know

        def error(resource):
            refused = code(resource)
            fields = dict(
                error_code=refused,
                error_message=refused.message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
            )
            if results == "results":
                fields["configs"] = []
            return getattr(cls, result_class)(**fields)

        return await per_item(
            handler,
            broker,
            header,
            request,
            context,
            items="resources",
            results=results,
            allowed=lambda resource: code(resource) == ErrorCode.NONE,
            error=error,
        )

    return rule


describe_configs = _configs_rule(OP.DESCRIBE_CONFIGS, "results", "DescribeConfigsResult")
alter_configs = _configs_rule(OP.ALTER_CONFIGS, "responses", "AlterConfigsResourceResponse")
