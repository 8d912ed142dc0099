"""ElectLeaders (``kafka-leader-election.sh``): preferred or unclean leader election, on
the controller. Asked for every partition (a null list), the partitions that need no
election are left out of the answer, as Kafka does."""

from __future__ import annotations

from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.admin_enums import ElectionType
from tidelog.protocol.errors import ErrorCode

__all__ = ["handle_elect_leaders"]

ElectLeadersResponse = response_class(ApiKey.ELECT_LEADERS)

MESSAGES = {
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "The preferred leader is not live or not in sync.",
    ErrorCode.ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: "No live replica can lead the partition.",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "The partition does not exist.",
}


def _asked(request) -> list[tuple[str, int]] | None:
    if request.topic_partitions is None:
        return None
    return [(t.topic, p) for t in request.topic_partitions for p in t.partitions]


def _response(results: dict[tuple[str, int], ErrorCode], error=ErrorCode.NONE):
    by_topic: dict[str, list] = {}
    for (topic, index), code in sorted(results.items()):
        by_topic.setdefault(topic, []).append(
            ElectLeadersResponse.PartitionResult(
                partition_id=index,
                error_code=code,
                error_message=MESSAGES.get(code, None if code == ErrorCode.NONE else code.message),
            )
        )
    return ElectLeadersResponse(
        error_code=error,
        replica_election_results=[
            ElectLeadersResponse.ReplicaElectionResult(topic=topic, partition_result=partitions)
            for topic, partitions in by_topic.items()
        ],
    )


async def handle_elect_leaders(broker, header, request, context):
    asked = _asked(request)
    election_type = (
        request.election_type if header.request_api_version >= 1 else ElectionType.PREFERRED
    )
    if election_type not in (ElectionType.PREFERRED, ElectionType.UNCLEAN):
        return _response(
            dict.fromkeys(asked or (), ErrorCode.INVALID_REQUEST), ErrorCode.INVALID_REQUEST
        )
    if not broker.controller.is_active:
        return _response(
            dict.fromkeys(asked or (), ErrorCode.NOT_CONTROLLER), ErrorCode.NOT_CONTROLLER
        )
    if election_type == ElectionType.PREFERRED:
        results = await broker.controller.elect_preferred_leaders(asked)
    else:
        results = await broker.controller.elect_unclean_leaders(asked)
    if asked is None:
        results = {k: c for k, c in results.items() if c != ErrorCode.ELECTION_NOT_NEEDED}
    return _response(results)
