"""FindCoordinator: the broker that coordinates a group is the leader of the group's
``__consumer_offsets`` partition. The topic is created on the first request (from any
broker) once ``offsets.topic.replication.factor`` brokers are alive, and until its
partition has a leader the answer is COORDINATOR_NOT_AVAILABLE, which clients retry, with
a message that says what it waits for. Transaction coordinators do not exist yet.

The API is advertised from v0: librdkafka enables LZ4 only on a broker that lists it."""

from __future__ import annotations

from tidelog.coordinator.group_coordinator import OFFSETS_TOPIC
from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode

__all__ = ["handle_find_coordinator"]

FindCoordinatorResponse = response_class(ApiKey.FIND_COORDINATOR)

GROUP_KEY = 0


def _not_available(message: str) -> tuple:
    return ErrorCode.COORDINATOR_NOT_AVAILABLE, message, -1, "", -1


def _find(broker, key: str, key_type: int, listener: str, waiting: str | None) -> tuple:
    """(error, message, node id, host, port) for one key; ``waiting`` says why the
    offsets topic cannot be created yet."""
    if key_type != GROUP_KEY:
        return _not_available("transactions are not supported yet")
    if OFFSETS_TOPIC not in broker.metadata.topics:
        return _not_available(waiting or "creating the offsets topic")
    partition = broker.metadata.partition(
        OFFSETS_TOPIC, broker.group_coordinator.partition_for(key)
    )
    endpoint = broker.metadata.endpoint(partition.leader, listener) if partition else None
    if endpoint is None:
        return _not_available("the group's partition has no leader")
    return ErrorCode.NONE, None, partition.leader, *endpoint


async def handle_find_coordinator(broker, header, request, context):
    keys = list(request.coordinator_keys) if header.request_api_version >= 4 else [request.key]
    waiting = None
    if request.key_type == GROUP_KEY and OFFSETS_TOPIC not in broker.metadata.topics:
        waiting = (
            await broker.internal_topics.create_offsets_topic()
        )  # once per request, whatever the keys
    found = [_find(broker, key, request.key_type, context.listener, waiting) for key in keys]
    # Before v4 one key, answered at the top level; from v4 the top level is unused.
    error, message, node_id, host, port = found[0] if found else (ErrorCode.NONE, None, -1, "", -1)
    return FindCoordinatorResponse(
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
        node_id=node_id,
        host=host,
        port=port,
        coordinators=[
            FindCoordinatorResponse.Coordinator(
                key=key,
                node_id=node_id,
                host=host,
                port=port,
                error_code=error,
                error_message=message,
            )
            for key, (error, message, node_id, host, port) in zip(keys, found, strict=True)
        ],
    )
