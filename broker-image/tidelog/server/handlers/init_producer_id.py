"""InitProducerId for idempotent producers (transactions are not supported yet).

When no producer id can be had (the broker's block is used up and ZooKeeper does not
answer the reservation of the next), the answer is COORDINATOR_LOAD_IN_PROGRESS, as
Kafka's producer-id manager answers while it has no block: every client retries it as it
is. Not COORDINATOR_NOT_AVAILABLE: clients read that as "look the transaction
coordinator up again", and an idempotent producer has no transactional id to look up
(kafka-python then sends FindCoordinator with a null key, which no broker can parse, and
never produces).
"""

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
            error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, producer_id=-1, producer_epoch=-1
        )
    return InitProducerIdResponse(
        error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=0
    )
