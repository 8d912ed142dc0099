"""StopReplica (from the controller): stop hosting partitions, deleting their logs when
asked. A request of an older controller epoch gets STALE_CONTROLLER_EPOCH."""

from __future__ import annotations

from tidelog.controller.requests import stop_replica_partitions
from tidelog.protocol import ApiKey, response_class

__all__ = ["handle_stop_replica"]

StopReplicaResponse = response_class(ApiKey.STOP_REPLICA)


async def handle_stop_replica(broker, header, request, context):
    replicas = stop_replica_partitions(request, header.request_api_version)
    error = await broker.handle_stop_replica(
        request.controller_id, request.controller_epoch, replicas
    )
    return StopReplicaResponse(
        error_code=error,
        partition_errors=[
            StopReplicaResponse.StopReplicaPartitionError(
                topic_name=r.topic, partition_index=r.partition, error_code=error
            )
            for r in replicas
        ],
    )
