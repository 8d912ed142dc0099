"""DeleteTopics: by name (every version) or by topic id (v6+), carried out by the
controller's delete path (StopReplica with delete, then the znodes go). The response
leaves once the topic is gone from the metadata and its logs are deleted."""

from __future__ import annotations

import logging
import uuid

from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode

__all__ = ["handle_delete_topics"]

logger = logging.getLogger(__name__)

DeleteTopicsResponse = response_class(ApiKey.DELETE_TOPICS)
ZERO_UUID = uuid.UUID(int=0)


def _result(name, topic_id, code=ErrorCode.NONE, message=None):
    return DeleteTopicsResponse.DeletableTopicResult(
        name=name, topic_id=topic_id, error_code=code, error_message=message
    )


async def handle_delete_topics(broker, header, request, context):
    version = header.request_api_version
    if version >= 6:
        wanted = [(t.name, t.topic_id or ZERO_UUID) for t in request.topics]
    else:
        wanted = [(name, ZERO_UUID) for name in request.topic_names]
    controller = broker.controller
    if not controller.is_active:
        return DeleteTopicsResponse(
            responses=[_result(n, i, ErrorCode.NOT_CONTROLLER) for n, i in wanted]
        )
    if not broker.config["delete.topic.enable"]:
        code = ErrorCode.INVALID_REQUEST if version < 3 else ErrorCode.TOPIC_DELETION_DISABLED
        message = "Topic deletion is disabled (delete.topic.enable=false)."
        return DeleteTopicsResponse(responses=[_result(n, i, code, message) for n, i in wanted])
    by_id = {a.topic_id: name for name, a in controller.assignments.items()}
    results, doomed = [], []
    for name, topic_id in wanted:
        if name is not None and topic_id != ZERO_UUID:
            results.append(
                _result(
                    name,
                    topic_id,
                    ErrorCode.INVALID_REQUEST,
                    "Topic name and topic ID can not both be specified.",
                )
            )
            continue
        if topic_id != ZERO_UUID:
            name = by_id.get(topic_id)
            if name is None:
                results.append(_result(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID))
                continue
        elif name not in broker.metadata.topics:
            results.append(_result(name, topic_id, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            continue
        results.append(_result(name, topic_id))
        if name not in doomed:
            doomed.append(name)
    if doomed:
        logger.info("deleting topics %s", ", ".join(doomed))
        try:
            await controller.delete_topics(doomed)
        except Exception as error:  # the controller logged it
            for result in results:
                if result.name in doomed and result.error_code == ErrorCode.NONE:
                    result.error_code = ErrorCode.UNKNOWN_SERVER_ERROR
                    result.error_message = f"deleting the topic failed: {error}"
    return DeleteTopicsResponse(responses=results)
