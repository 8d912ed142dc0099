"""ControlledShutdown (from a broker about to stop): the controller moves its leaderships
away and answers with the partitions it still leads. A broker that is not the
controller answers NOT_CONTROLLER; the asking broker looks the controller up again."""

from __future__ import annotations

from tidelog.protocol import ApiKey, response_class

__all__ = ["handle_controlled_shutdown"]

ControlledShutdownResponse = response_class(ApiKey.CONTROLLED_SHUTDOWN)
UNKNOWN_BROKER_EPOCH = -1


async def handle_controlled_shutdown(broker, header, request, context):
    epoch = request.broker_epoch if header.request_api_version >= 2 else UNKNOWN_BROKER_EPOCH
    error, remaining = await broker.controller.controlled_shutdown(request.broker_id, epoch)
    return ControlledShutdownResponse(
        error_code=error,
        remaining_partitions=[
            ControlledShutdownResponse.RemainingPartition(topic_name=topic, partition_index=index)
            for topic, index in remaining
        ],
    )
