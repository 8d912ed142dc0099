"""AlterPartitionReassignments and ListPartitionReassignments
(``kafka-reassign-partitions.sh --bootstrap-server``), answered by the controller; any
other broker answers NOT_CONTROLLER and the client finds the controller again, as
against Kafka. A duplicate partition in one request is refused for all its entries
(INVALID_REQUEST)."""

from __future__ import annotations

from collections import Counter

from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode

__all__ = ["handle_alter_partition_reassignments", "handle_list_partition_reassignments"]

AlterResponse = response_class(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
ListResponse = response_class(ApiKey.LIST_PARTITION_REASSIGNMENTS)


def _alter_response(results: dict, error=ErrorCode.NONE, message=None):
    by_topic: dict[str, list] = {}
    for (topic, index), (code, text) in sorted(results.items()):
        by_topic.setdefault(topic, []).append(
            AlterResponse.ReassignablePartitionResponse(
                partition_index=index,
                error_code=code,
                error_message=text if text or code == ErrorCode.NONE else code.message,
            )
        )
    return AlterResponse(
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
        responses=[
            AlterResponse.ReassignableTopicResponse(name=topic, partitions=partitions)
            for topic, partitions in by_topic.items()
        ],
    )


async def handle_alter_partition_reassignments(broker, header, request, context):
    asked = [
        ((topic.name, p.partition_index), p.replicas)
        for topic in request.topics
        for p in topic.partitions
    ]
    if not broker.controller.is_active:
        code = ErrorCode.NOT_CONTROLLER
        return _alter_response({k: (code, None) for k, _ in asked}, code, code.message)
    counts = Counter(key for key, _ in asked)
    duplicated = {k for k, n in counts.items() if n > 1}
    results = {
        key: (ErrorCode.INVALID_REQUEST, "The partition is listed more than once.")
        for key in duplicated
    }
    wanted = {key: replicas for key, replicas in asked if key not in duplicated}
    results.update(await broker.controller.alter_reassignments(wanted))
    return _alter_response(results)


async def handle_list_partition_reassignments(broker, header, request, context):
    if not broker.controller.is_active:
        code = ErrorCode.NOT_CONTROLLER
        return ListResponse(
            throttle_time_ms=0, error_code=code, error_message=code.message, topics=[]
        )
    keys = None
    if request.topics is not None:
        keys = {(t.name, p) for t in request.topics for p in t.partition_indexes}
    by_topic: dict[str, list] = {}
    for (topic, index), moving in broker.controller.ongoing_reassignments(keys).items():
        by_topic.setdefault(topic, []).append(
            ListResponse.OngoingPartitionReassignment(
                partition_index=index,
                replicas=list(moving.replicas),
                adding_replicas=list(moving.adding),
                removing_replicas=list(moving.removing),
            )
        )
    return ListResponse(
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        topics=[
            ListResponse.OngoingTopicReassignment(name=topic, partitions=partitions)
            for topic, partitions in by_topic.items()
        ],
    )
