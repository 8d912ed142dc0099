"""DescribeCluster: the live brokers (on the listener asked through), the controller and
the cluster id. Without an authorizer every operation on the cluster is allowed, so the
authorized operations are all those Kafka supports on a cluster resource."""

from __future__ import annotations

from tidelog.protocol import OPERATIONS_NOT_REQUESTED, ApiKey, response_class
from tidelog.protocol.errors import ErrorCode

__all__ = ["CLUSTER_AUTHORIZED_OPERATIONS", "handle_describe_cluster"]

DescribeClusterResponse = response_class(ApiKey.DESCRIBE_CLUSTER)

ENDPOINT_BROKERS, ENDPOINT_CONTROLLERS = 1, 2
# AclOperation codes: CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10,
# ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12: Kafka's supported operations on the cluster.
CLUSTER_AUTHORIZED_OPERATIONS = sum(1 << code for code in (5, 7, 8, 9, 10, 11, 12))


async def handle_describe_cluster(broker, header, request, context):
    version = header.request_api_version
    endpoint_type = request.endpoint_type if version >= 1 else ENDPOINT_BROKERS
    if endpoint_type not in (ENDPOINT_BROKERS, ENDPOINT_CONTROLLERS):
        return DescribeClusterResponse(
            error_code=ErrorCode.INVALID_REQUEST
            if version == 0
            else ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
            error_message=f"Unsupported endpoint type {endpoint_type}",
            cluster_id=broker.metadata.cluster_id,
        )
    if endpoint_type != ENDPOINT_BROKERS:
        return DescribeClusterResponse(
            error_code=ErrorCode.INVALID_REQUEST
            if version == 0
            else ErrorCode.MISMATCHED_ENDPOINT_TYPE,
            error_message="The request was sent to an endpoint of type BROKER, but we wanted an "
            "endpoint of type CONTROLLER",
            cluster_id=broker.metadata.cluster_id,
        )
    cache = broker.metadata
    brokers = [
        DescribeClusterResponse.DescribeClusterBroker(
            broker_id=node, host=host, port=port, rack=rack
        )
        for node, host, port, rack in cache.brokers_on(context.listener)
    ]
    return DescribeClusterResponse(
        error_code=ErrorCode.NONE,
        endpoint_type=ENDPOINT_BROKERS,
        cluster_id=cache.cluster_id,
        controller_id=cache.controller_id if cache.controller_id is not None else -1,
        brokers=brokers,
        cluster_authorized_operations=CLUSTER_AUTHORIZED_OPERATIONS
        if request.include_cluster_authorized_operations
        else OPERATIONS_NOT_REQUESTED,
    )
