"""FindCoordinator: the broker that coordinates a group is the leader of the group's
``__consumer_offsets`` partition. The topic is created on the first request (from any
broker), and until its partition has a leader the answer is COORDINATOR_NOT_AVAILABLE,
which clients retry. Transaction coordinators do not exist yet.

The API is advertised from v0: librdkafka enables LZ4 only on a broker that lists it."""

from __future__ import annotations

from tidelog.coordinator.group_coordinator import OFFSETS_TOPIC
from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode

__all__ = ["handle_find_coordinator"]

FindCoordinatorResponse = response_class(ApiKey.FIND_COORDINATOR)

GROUP_KEY = 0


async def _find(broker, key: str, key_type: int, listener: str) -> tuple:
    """(error, message, node id, host, port) for one key."""
    if key_type != GROUP_KEY:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, "transactions are not supported yet", -1, "", -1
    if OFFSETS_TOPIC not in broker.metadata.topics:
        await broker.create_offsets_topic()
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, "creating the offsets topic", -1, "", -1
    partition = broker.metadata.partition(
        OFFSETS_TOPIC, broker.group_coordinator.partition_for(key)
    )
    endpoint = broker.metadata.endpoint(partition.leader, listener) if partition else None
    if endpoint is None:
        return (
            ErrorCode.COORDINATOR_NOT_AVAILABLE,
            "the group's partition has no leader",
            -1,
            "",
            -1,
        )
    return ErrorCode.NONE, None, partition.leader, *endpoint


async def handle_find_coordinator(broker, header, request, context):
    keys = list(request.coordinator_keys) if header.request_api_version >= 4 else [request.key]
    found = [await _find(broker, key, request.key_type, context.listener) for key in keys]
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
