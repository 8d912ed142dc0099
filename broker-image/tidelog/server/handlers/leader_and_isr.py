"""LeaderAndIsr (from the controller): become leader or follower of partitions. A request
of an older controller epoch is refused with STALE_CONTROLLER_EPOCH, for the request and
each of its partitions, as Kafka answers it."""

from __future__ import annotations

from tidelog.controller.requests import leader_and_isr_states
from tidelog.protocol import ApiKey, response_class

__all__ = ["handle_leader_and_isr"]

LeaderAndIsrResponse = response_class(ApiKey.LEADER_AND_ISR)


async def handle_leader_and_isr(broker, header, request, context):
    version = header.request_api_version
    states = leader_and_isr_states(request, version)
    error, partition_errors = await broker.handle_leader_and_isr(
        request.controller_id, request.controller_epoch, states
    )

    def partition_error(state) -> object:
        return LeaderAndIsrResponse.LeaderAndIsrPartitionError(
            topic_name=state.topic,
            partition_index=state.partition,
            error_code=partition_errors.get((state.topic, state.partition), error),
        )

    if version < 5:
        return LeaderAndIsrResponse(
            error_code=error, partition_errors=[partition_error(s) for s in states]
        )
    by_topic: dict = {}
    for state in states:
        by_topic.setdefault(state.topic_id, []).append(partition_error(state))
    return LeaderAndIsrResponse(
        error_code=error,
        topics=[
            LeaderAndIsrResponse.LeaderAndIsrTopicError(topic_id=topic_id, partition_errors=errors)
            for topic_id, errors in by_topic.items()
        ],
    )
