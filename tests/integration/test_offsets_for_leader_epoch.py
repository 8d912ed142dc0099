"""OffsetForLeaderEpoch against a real broker: end offsets by epoch across a leader epoch
change and a restart, current-leader-epoch fencing, and a librdkafka consumer that
validates its position with it when the epoch changes under it."""

from __future__ import annotations

import json

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from kazoo.client import KazooClient

from tidelog.admin.connection import BrokerConnection
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from tidelog.storage.leader_epoch import LEADER_EPOCH_CHECKPOINT
from waiting import wait_until

TOPIC = "epochs"
BUMPED_EPOCH = 3


def end_offsets(broker, queries, *, topic: str = TOPIC, version: int = 4) -> list[tuple]:
    """(error, epoch, end offset) for each (partition, current leader epoch, epoch)."""
    with BrokerConnection("127.0.0.1", broker.port) as connection:
        response = connection.request(
            ApiKey.OFFSET_FOR_LEADER_EPOCH,
            version,
            {
                "replica_id": -1,
                "topics": [
                    {
                        "topic": topic,
                        "partitions": [
                            {"partition": p, "current_leader_epoch": c, "leader_epoch": e}
                            for p, c, e in queries
                        ],
                    }
                ],
            },
        )
    (answer,) = response.topics
    return [(p.error_code, p.leader_epoch, p.end_offset) for p in answer.partitions]


def leader_epoch(broker) -> int:
    with BrokerConnection("127.0.0.1", broker.port) as connection:
        response = connection.request(
            ApiKey.METADATA,
            9,
            {
                "topics": [{"name": TOPIC}],
                "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False,
            },
        )
    (partition,) = response.topics[0].partitions
    return partition.leader_epoch


def produce(broker, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    for value in values:
        producer.produce(TOPIC, value=value, partition=0)
    assert producer.flush(30) == 0


def consume(consumer: Consumer, count: int) -> list[bytes]:
    values = []

    def polled_enough() -> bool:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
        return len(values) >= count

    wait_until(polled_enough, f"{count} records consumed", 60, interval=0)
    return values


def bump_leader_epoch_while_stopped(broker, zk_chroot: str, epoch: int) -> None:
    """A leader change the controller records in ZooKeeper, as a later election would."""
    broker.stop()
    zk = KazooClient(hosts=zk_chroot)
    zk.start(timeout=10)
    try:
        path = f"/brokers/topics/{TOPIC}/partitions/0/state"
        state = json.loads(zk.get(path)[0])
        zk.set(path, json.dumps({**state, "leader_epoch": epoch}).encode())
    finally:
        zk.stop()
        zk.close()
    broker.start()
    wait_until(lambda: leader_epoch(broker) >= epoch, f"leader epoch {epoch} at the broker")


def test_end_offsets_by_epoch_fencing_and_a_consumer_across_an_epoch_change(broker, zk_chroot):
    produce(broker, [b"a%d" % i for i in range(5)])
    assert leader_epoch(broker) == 0
    assert end_offsets(broker, [(0, 0, 0), (0, -1, 1), (0, 1, 0), (7, -1, 0)]) == [
        (ErrorCode.NONE, 0, 5),  # the current epoch ends at the log end
        (ErrorCode.NONE, -1, -1),  # an epoch above every known one
        (ErrorCode.UNKNOWN_LEADER_EPOCH, -1, -1),  # the client knows a newer leader
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
    ]
    assert end_offsets(broker, [(0, -1, 0)], topic="no-such-topic") == [
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)
    ]

    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "epoch-validation",
            "enable.auto.commit": False,
            "topic.metadata.refresh.interval.ms": 500,
        }
    )
    try:
        consumer.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
        consumed = consume(consumer, 5)

        bump_leader_epoch_while_stopped(broker, zk_chroot, BUMPED_EPOCH)
        epoch = leader_epoch(broker)
        produce(broker, [b"b%d" % i for i in range(2)])
        # The consumer (position 5, fetched in epoch 0) sees the new epoch, validates its
        # position with OffsetForLeaderEpoch and reads on: nothing lost, nothing twice.
        consumed += consume(consumer, 2)
        assert consumer.poll(1) is None
    finally:
        consumer.close()
    assert consumed == [b"a%d" % i for i in range(5)] + [b"b0", b"b1"]

    assert end_offsets(broker, [(0, epoch, e) for e in (0, 1, epoch, epoch + 1)]) == [
        (ErrorCode.NONE, 0, 5),
        (ErrorCode.NONE, 0, 5),  # epochs without data: the one before, to the next start
        (ErrorCode.NONE, epoch, 7),
        (ErrorCode.NONE, -1, -1),
    ]
    assert end_offsets(broker, [(0, 0, 0), (0, epoch + 1, 0)]) == [
        (ErrorCode.FENCED_LEADER_EPOCH, -1, -1),  # the client's leader is gone
        (ErrorCode.UNKNOWN_LEADER_EPOCH, -1, -1),
    ]
    # v0 has neither current leader epoch nor epoch in the answer
    assert end_offsets(broker, [(0, -1, 0)], version=0) == [(ErrorCode.NONE, -1, 5)]
    (checkpoint,) = [
        d / f"{TOPIC}-0" / LEADER_EPOCH_CHECKPOINT
        for d in broker.log_dirs
        if (d / f"{TOPIC}-0").exists()
    ]
    assert checkpoint.read_text() == f"0\n2\n0 0\n{epoch} 5\n"
