"""Metadata: brokers, controller, cluster id, and each topic's partitions."""

from __future__ import annotations

import logging
import uuid

from tidelog.protocol import (
    OPERATIONS_NOT_REQUESTED,
    ApiKey,
    Encoded,
    encode_ahead,
    response_class,
    response_codec,
)
from tidelog.protocol.errors import ErrorCode
from tidelog.security.acls import CLUSTER_NAME, ResourceType
from tidelog.server.authorization import (
    authorized_operations,
    describable_cluster,
    describable_topics,
)
from tidelog.server.topic_names import topic_name_error

__all__ = ["handle_metadata"]

logger = logging.getLogger(__name__)

MetadataResponse = response_class(ApiKey.METADATA)
ZERO_UUID = uuid.UUID(int=0)


def _partition(state) -> object:
    return MetadataResponse.MetadataResponsePartition(
        error_code=ErrorCode.NONE if state.leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
        partition_index=state.partition,
        leader_id=state.leader,
        leader_epoch=state.leader_epoch,
        replica_nodes=list(state.replicas),
        isr_nodes=list(state.isr),
        offline_replicas=list(state.offline_replicas),
    )


def _topic_struct(entry, operations: int = OPERATIONS_NOT_REQUESTED) -> object:
    return MetadataResponse.MetadataResponseTopic(
        error_code=ErrorCode.NONE,
        name=entry.name,
        topic_id=entry.topic_id,
        is_internal=entry.is_internal,
        partitions=[_partition(s) for _, s in sorted(entry.partitions.items())],
        topic_authorized_operations=operations,
    )


def _written_ahead(entry, version: int) -> Encoded:
    """The topic as the response at ``version`` holds it, written ahead once per change
    of the topic (the dispatcher writes responses with the lenient codec)."""
    encoded = entry.encoded.get(version)
    if encoded is None:
        codec = response_codec(ApiKey.METADATA, version, strict=False)
        encoded = entry.encoded[version] = encode_ahead(codec, _topic_struct(entry))
    return encoded


def _error_topic(name, code, topic_id=ZERO_UUID) -> object:
    return MetadataResponse.MetadataResponseTopic(
        error_code=code, name=name, topic_id=topic_id, is_internal=False, partitions=[]
    )


async def handle_metadata(broker, header, request, context):
    """Asked for (v8+), each topic's and the cluster's authorized operations are the
    principal's (:func:`~tidelog.server.authorization.authorized_operations`); such
    topics are built for the request, not written ahead."""
    cache = broker.metadata
    version = header.request_api_version
    with_operations = version >= 8 and request.include_topic_authorized_operations

    def shown(entry):
        if not with_operations:
            return _written_ahead(entry, version)
        operations = authorized_operations(broker, context, ResourceType.TOPIC, entry.name)
        return _topic_struct(entry, operations)

    every = request.topics is None or (version == 0 and not request.topics)
    if every:  # null, or an empty list in v0, asks for every topic
        names = describable_topics(broker, context, sorted(cache.topics))
        topics = [shown(cache.topics[name]) for name in names]
    else:
        topics = []
        auto_create = version < 4 or request.allow_auto_topic_creation
        for wanted in request.topics:
            name = wanted.name
            if name is None:  # v10+: asked by id
                entry = cache.topic_by_id(wanted.topic_id)
                topics.append(
                    shown(entry)
                    if entry
                    else _error_topic(None, ErrorCode.UNKNOWN_TOPIC_ID, wanted.topic_id)
                )
                continue
            entry = cache.topics.get(name)
            if entry is not None:
                topics.append(shown(entry))
            elif topic_name_error(name):
                topics.append(_error_topic(name, ErrorCode.INVALID_TOPIC_EXCEPTION))
            elif auto_create and broker.config["auto.create.topics.enable"]:
                code = await broker.internal_topics.auto_create_topic(name)
                created = cache.topics.get(name)
                if code == ErrorCode.NONE and created is not None:
                    topics.append(shown(created))
                else:
                    topics.append(_error_topic(name, code or ErrorCode.LEADER_NOT_AVAILABLE))
            else:
                topics.append(_error_topic(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
    brokers = [
        MetadataResponse.MetadataResponseBroker(node_id=node, host=host, port=port, rack=rack)
        for node, host, port, rack in cache.brokers_on(context.listener)
    ]
    cluster_operations = OPERATIONS_NOT_REQUESTED
    if 8 <= version <= 10 and request.include_cluster_authorized_operations:
        cluster_operations = (
            authorized_operations(broker, context, ResourceType.CLUSTER, CLUSTER_NAME)
            if describable_cluster(broker, context)
            else 0
        )
    return MetadataResponse(
        brokers=brokers,
        cluster_id=cache.cluster_id,
        controller_id=cache.controller_id if cache.controller_id is not None else -1,
        topics=topics,
        cluster_authorized_operations=cluster_operations,
    )
