"""OffsetCommit for partitions the cluster does not have: each is answered
UNKNOWN_TOPIC_OR_PARTITION and nothing is stored for it, while the existing partitions of
the same request are committed (Apache Kafka 3.9 answers so): through a consumer's commit
(confluent-kafka), the admin client's AlterConsumerGroupOffsets (confluent-kafka), and on the
wire."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from integration.clients import RawClient
from integration.test_admin_apis import wait_until_serving
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode

OFFSET_COMMIT_V = 8


@pytest.fixture
def admin(broker):
    wait_until_serving(broker)
    client = AdminClient({"bootstrap.servers": broker.bootstrap})
    client.create_topics([NewTopic("known", 2, 1)])["known"].result(30)
    return client


def committed(admin: AdminClient, group: str) -> dict[tuple[str, int], int]:
    request = ConsumerGroupTopicPartitions(group)
    (future,) = admin.list_consumer_group_offsets([request]).values()
    return {(tp.topic, tp.partition): tp.offset for tp in future.result(30).topic_partitions}


def test_on_the_wire_each_unknown_partition_gets_its_error(broker, admin):
    body = {
        "group_id": "wire",
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "topics": [
            {"name": "known", "partitions": [{"partition_index": 0, "committed_offset": 5}]},
            {"name": "known", "partitions": [{"partition_index": 7, "committed_offset": 5}]},
            {"name": "ghost", "partitions": [{"partition_index": 0, "committed_offset": 5}]},
        ],
    }
    assert committed(admin, "wire") == {}  # and the group's coordinator is loaded
    client = RawClient(int(broker.bootstrap.rsplit(":", 1)[1]))
    try:
        response = client.request(ApiKey.OFFSET_COMMIT, OFFSET_COMMIT_V, body)
    finally:
        client.close()
    codes = {
        (t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions
    }
    assert codes == {
        ("known", 0): ErrorCode.NONE,
        ("known", 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("ghost", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert committed(admin, "wire") == {("known", 0): 5}


def test_a_consumer_commit_names_the_unknown_partition(broker, admin):
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "consumer"})
    try:
        offsets = [CTopicPartition("known", 1, 3), CTopicPartition("ghost", 0, 3)]
        with pytest.raises(KafkaException) as failed:
            consumer.commit(offsets=offsets, asynchronous=False)
    finally:
        consumer.close()
    assert failed.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert committed(admin, "consumer") == {("known", 1): 3}


def test_the_admin_client_gets_the_error_per_partition(broker, admin):
    request = ConsumerGroupTopicPartitions(
        "altered", [CTopicPartition("known", 1, 9), CTopicPartition("ghost", 0, 9)]
    )
    (future,) = admin.alter_consumer_group_offsets([request]).values()
    altered = future.result(30).topic_partitions
    errors = {(tp.topic, tp.partition): tp.error and tp.error.code() for tp in altered}
    assert errors == {("known", 1): None, ("ghost", 0): KafkaError.UNKNOWN_TOPIC_OR_PART}
    assert committed(admin, "altered") == {("known", 1): 9}
