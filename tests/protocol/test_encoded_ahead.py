"""Structs written ahead (``encode_ahead``): the bytes stand for the struct in a message
of the same version, byte for byte, and are refused by another version's writer."""

from __future__ import annotations

import uuid

import pytest

from tidelog.protocol import (
    ApiKey,
    LocalProtocolError,
    encode_ahead,
    encode_response_chunks,
    response_class,
    response_codec,
)

MetadataResponse = response_class(ApiKey.METADATA)
TOPIC_ID = uuid.UUID(int=42)


def topic(partitions: int) -> object:
    return MetadataResponse.MetadataResponseTopic(
        error_code=0,
        name=f"topic-of-{partitions}",
        topic_id=TOPIC_ID,
        is_internal=False,
        partitions=[
            MetadataResponse.MetadataResponsePartition(
                partition_index=p,
                leader_id=p % 3,
                leader_epoch=4,
                replica_nodes=[0, 1, 2],
                isr_nodes=[p % 3],
                offline_replicas=[],
            )
            for p in range(partitions)
        ],
    )


def written(version: int, topics: list) -> bytes:
    """The response frame as the broker's dispatcher writes it (the lenient codec)."""
    body = MetadataResponse(brokers=[], cluster_id="c", controller_id=0, topics=topics)
    return b"".join(encode_response_chunks(7, ApiKey.METADATA, version, body, strict=False))


@pytest.mark.parametrize("version", [1, 9, 12])
def test_a_struct_written_ahead_writes_the_same_bytes(version):
    wide = topic(50)
    ahead = encode_ahead(response_codec(ApiKey.METADATA, version, strict=False), wide)
    assert written(version, [ahead, topic(1)]) == written(version, [wide, topic(1)])


def test_another_versions_writer_refuses_it():
    ahead = encode_ahead(response_codec(ApiKey.METADATA, 9, strict=False), topic(2))
    with pytest.raises(LocalProtocolError, match="another version"):
        written(12, [ahead])
