"""UpdateMetadata (from the controller): the live brokers, the controller and partition
states, into this broker's metadata cache, so that any broker answers Metadata and
DescribeCluster alike. A request of an older controller epoch gets
STALE_CONTROLLER_EPOCH."""

from __future__ import annotations

from tidelog.controller.requests import update_metadata_brokers, update_metadata_states
from tidelog.protocol import ApiKey, response_class

__all__ = ["handle_update_metadata"]

UpdateMetadataResponse = response_class(ApiKey.UPDATE_METADATA)


async def handle_update_metadata(broker, header, request, context):
    version = header.request_api_version
    error = await broker.handle_update_metadata(
        request.controller_id,
        request.controller_epoch,
        update_metadata_brokers(request, version),
        update_metadata_states(request, version),
    )
    return UpdateMetadataResponse(error_code=error)
