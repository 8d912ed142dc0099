"""InitProducerId for idempotent producers (transactions are not supported yet)."""

from __future__ import annotations

import logging

from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode

__all__ = ["handle_init_producer_id"]

logger = logging.getLogger(__name__)

InitProducerIdResponse = response_class(ApiKey.INIT_PRODUCER_ID)


async def handle_init_producer_id(broker, header, request, context):
    if request.transactional_id is not None:
        return InitProducerIdResponse(
            error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            producer_id=-1,
            producer_epoch=-1,
        )
    try:
        producer_id = await broker.producer_ids.next_id()
    except Exception:
        logger.exception("could not reserve a block of producer ids")
        return InitProducerIdResponse(
            error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE, producer_id=-1, producer_epoch=-1
        )
    return InitProducerIdResponse(
        error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=0
    )
