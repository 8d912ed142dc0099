"""Produce under the authorizer, through the dispatcher: a refused topic is answered
TOPIC_AUTHORIZATION_FAILED beside the topics served; with acks=0 (no answer to carry the
error) the connection is closed, as Kafka closes it."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from tidelog.protocol import ApiKey, RequestHeader, decode_response, encode_request, response_class
from tidelog.protocol.errors import ErrorCode
from tidelog.records import build_batch
from tidelog.security.acls import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    ResourcePattern,
    ResourceType,
)
from tidelog.security.authorizer import AclAuthorizer
from tidelog.server.dispatch import RequestDispatcher
from tidelog.server.network import CloseConnection, ConnectionContext

CONTEXT = ConnectionContext("PLAINTEXT", "127.0.0.1", 40000)
ProduceResponse = response_class(ApiKey.PRODUCE)


def produce_frame(acks: int, topics: list[str]) -> bytes:
    header = RequestHeader(
        request_api_key=ApiKey.PRODUCE, request_api_version=8, correlation_id=3, client_id="p"
    )
    body = {
        "acks": acks,
        "timeout_ms": 1000,
        "topic_data": [
            {"name": t, "partition_data": [{"index": 0, "records": build_batch([(None, b"x")])}]}
            for t in topics
        ],
    }
    return encode_request(header, body)


async def served_topics(broker, header, request, context):
    """The handler's part: every topic it is given is stored."""
    if request.acks == 0:
        return None
    return ProduceResponse(
        responses=[
            ProduceResponse.TopicProduceResponse(
                name=t.name,
                partition_responses=[
                    ProduceResponse.PartitionProduceResponse(index=0, error_code=ErrorCode.NONE)
                ],
            )
            for t in request.topic_data
        ]
    )


def dispatcher() -> RequestDispatcher:
    ready = asyncio.Event()
    ready.set()
    authorizer = AclAuthorizer()
    authorizer.set_acls(
        ResourcePattern(ResourceType.TOPIC, "open"),
        [AccessControlEntry("User:ANONYMOUS", "*", AclOperation.WRITE, AclPermissionType.ALLOW)],
    )
    broker = SimpleNamespace(ready=ready, authorizer=authorizer)
    return RequestDispatcher(broker, handlers={ApiKey.PRODUCE: served_topics})


def test_refused_topics_are_answered_beside_the_served_ones():
    async def run():
        parts = await dispatcher()(produce_frame(1, ["open", "closed"]), CONTEXT)
        frame = b"".join(bytes(p) for p in parts)
        _, body = decode_response(frame[4:], ApiKey.PRODUCE, 8)
        return {t.name: t.partition_responses[0].error_code for t in body.responses}

    assert asyncio.run(run()) == {
        "open": ErrorCode.NONE,
        "closed": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    }


def test_acks_0_refused_closes_the_connection():
    async def run(topics):
        return await dispatcher()(produce_frame(0, topics), CONTEXT)

    assert asyncio.run(run(["open"])) is None
    with pytest.raises(CloseConnection, match="PRODUCE refused by the authorizer"):
        asyncio.run(run(["open", "closed"]))
