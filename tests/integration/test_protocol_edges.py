"""Protocol corners a careful client relies on, sent as raw requests."""

from __future__ import annotations

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic
from kafka.errors import InvalidConfigurationError

from tidelog.admin.connection import BrokerConnection
from tidelog.protocol import ApiKey, encode_request
from tidelog.protocol.errors import ErrorCode
from tidelog.protocol.headers import RequestHeader
from tidelog.records import build_batch


def connect(broker) -> BrokerConnection:
    return BrokerConnection("127.0.0.1", broker.port)


def test_metadata_v0_empty_list_means_every_topic(broker):
    KafkaProducer(bootstrap_servers=broker.bootstrap).send("edge-a", b"x").get(timeout=30)
    with connect(broker) as connection:
        v0 = connection.request(ApiKey.METADATA, 0, {"topics": []})
        v1 = connection.request(ApiKey.METADATA, 1, {"topics": []})
    assert [t.name for t in v0.topics] == ["edge-a"]
    assert v1.topics == []


def test_list_offsets_earliest_local_and_latest_tiered(broker):
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for _ in range(3):
        producer.send("edge-b", b"x").get(timeout=30)
    with connect(broker) as connection:
        response = connection.request(
            ApiKey.LIST_OFFSETS,
            9,
            {
                "replica_id": -1,
                "isolation_level": 0,
                "topics": [
                    {
                        "name": "edge-b",
                        "partitions": [
                            {"partition_index": 0, "current_leader_epoch": -1, "timestamp": ts}
                            for ts in (-4, -5, 10**15)
                        ],
                    }
                ],
            },
        )
    earliest_local, latest_tiered, future = response.topics[0].partitions
    assert (earliest_local.error_code, earliest_local.offset) == (0, 0)
    assert (latest_tiered.error_code, latest_tiered.offset, latest_tiered.leader_epoch) == (
        0,
        -1,
        -1,
    )
    assert (future.offset, future.leader_epoch) == (-1, -1)


def test_acks_0_produce_that_fails_closes_the_connection(broker):
    with connect(broker) as connection:
        frame_body = {
            "transactional_id": None,
            "acks": 0,
            "timeout_ms": 1000,
            "topic_data": [
                {
                    "name": "no-such-topic",
                    "partition_data": [{"index": 0, "records": build_batch([(b"k", b"v")])}],
                }
            ],
        }
        header = RequestHeader(
            request_api_key=0, request_api_version=9, correlation_id=99, client_id="edge"
        )
        frame = encode_request(header, frame_body)
        connection._socket.sendall(len(frame).to_bytes(4, "big") + frame)
        connection._socket.settimeout(10)
        assert connection._socket.recv(10) == b""  # closed: the producer must refresh
    assert "acks=0 produce failed" in broker.log()


def test_out_of_range_topic_configs_are_refused_and_the_broker_survives(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    for config in (
        {"segment.ms": "0"},
        {"segment.index.bytes": str(2**62)},
        {"retention.ms": "-7"},
    ):
        with pytest.raises(InvalidConfigurationError):
            admin.create_topics([NewTopic("edge-bad", 1, 1, topic_configs=config)])
    admin.close()
    with connect(broker) as connection:
        metadata = connection.request(
            ApiKey.METADATA,
            None,
            {"topics": [{"name": "edge-bad"}], "allow_auto_topic_creation": False},
        )
    assert metadata.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert broker.restart().process.poll() is None
