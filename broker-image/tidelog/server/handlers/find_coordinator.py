"""FindCoordinator: no group or transaction coordinator runs yet, so every key gets
COORDINATOR_NOT_AVAILABLE, which clients retry. The API is advertised all the same:
librdkafka enables LZ4 compression only on a broker that lists FindCoordinator."""

from __future__ import annotations

from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode

__all__ = ["handle_find_coordinator"]

FindCoordinatorResponse = response_class(ApiKey.FIND_COORDINATOR)

_MESSAGE = "this broker runs no coordinator yet"


async def handle_find_coordinator(broker, header, request, context):
    keys = request.coordinator_keys if header.request_api_version >= 4 else [request.key]
    return FindCoordinatorResponse(
        error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
        error_message=_MESSAGE,
        node_id=-1,
        host="",
        port=-1,
        coordinators=[
            FindCoordinatorResponse.Coordinator(
                key=key,
                node_id=-1,
                host="",
                port=-1,
                error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
                error_message=_MESSAGE,
            )
            for key in keys
        ],
    )
