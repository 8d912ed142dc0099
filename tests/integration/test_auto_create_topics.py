"""Topic auto-creation (``auto.create.topics.enable``, the default) from any broker: a
producer of each client library whose only bootstrap broker is not the controller gets
its topic made and its records delivered, as with Apache Kafka, whose every broker writes
the new topic to ZooKeeper for the controller to bring online."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaProducer
from confluent_kafka import Producer
from kafka import KafkaProducer

from integration.cluster import Cluster
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from waiting import wait_until


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, module_chroot):
    with Cluster(tmp_path_factory.mktemp("auto-create"), module_chroot, size=3) as running:
        yield running


@pytest.fixture(scope="module")
def non_controller_id(cluster) -> int:
    controller = cluster.wait_for_controller()
    return next(b for b in cluster.brokers if b != controller)


@pytest.fixture(scope="module")
def non_controller(cluster, non_controller_id) -> str:
    """The bootstrap address of a broker that is not the controller."""
    return cluster.brokers[non_controller_id].bootstrap


def test_on_the_wire_one_request_to_a_non_controller_creates_the_topic(cluster, non_controller_id):
    """One Metadata request, to that broker alone: LEADER_NOT_AVAILABLE (being made, as
    Kafka answers), and the topic then has leaders without anyone asking again."""
    with cluster.connect(non_controller_id) as connection:
        body = {"topics": [{"name": "auto-wire"}], "allow_auto_topic_creation": True}
        (asked,) = connection.request(ApiKey.METADATA, None, body).topics
    assert asked.error_code == ErrorCode.LEADER_NOT_AVAILABLE
    wait_until(lambda: cluster.leaders(non_controller_id, "auto-wire"), "auto-wire has a leader")


def partitions_of(cluster: Cluster, topic: str) -> int:
    (found,) = cluster.metadata(cluster.running[0], [topic]).topics
    assert found.error_code == 0, found
    return len(found.partitions)


def test_confluent_kafka(cluster, non_controller):
    producer = Producer({"bootstrap.servers": non_controller, "message.timeout.ms": 60000})
    delivered = []
    producer.produce(
        "auto-confluent", b"v", on_delivery=lambda error, message: delivered.append(error)
    )
    assert producer.flush(60) == 0
    assert delivered == [None]
    assert partitions_of(cluster, "auto-confluent") == 1  # num.partitions


def test_kafka_python(cluster, non_controller):
    producer = KafkaProducer(bootstrap_servers=non_controller, max_block_ms=60000)
    try:
        metadata = producer.send("auto-kafka-python", b"v").get(timeout=60)
    finally:
        producer.close()
    assert metadata.offset == 0
    assert partitions_of(cluster, "auto-kafka-python") == 1


def test_aiokafka(cluster, non_controller):
    async def produce() -> int:
        producer = AIOKafkaProducer(bootstrap_servers=non_controller, request_timeout_ms=60000)
        await producer.start()
        try:
            return (await producer.send_and_wait("auto-aiokafka", b"v")).offset
        finally:
            await producer.stop()

    assert asyncio.run(produce()) == 0
    assert partitions_of(cluster, "auto-aiokafka") == 1
