"""A broker that comes back on new, empty disks is not elected from an ISR that still
lists it: it leaves the ISRs before it registers, and a partition whose last in-sync
replica it was is recovered from the replica with the most recent log, so the other
replicas do not truncate away what they hold.

The state is the one a lost Kubernetes node left in the operator's e2e run: broker 1 was
the last member of the ISR (the others had lost their ZooKeeper sessions), then went with
its node, and the operator started it on a spare node with new volumes."""

from __future__ import annotations

import shutil

from confluent_kafka import Consumer, Producer, TopicPartition

from integration.cluster import Cluster, wait_until
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode

TOPIC = "orders"
RECORDS = 500
OVERRIDES = {"zookeeper.session.timeout.ms": "6000", "replica.lag.time.max.ms": "3000"}


def produce_acknowledged(bootstrap: str) -> list[bytes]:
    """RECORDS values sent with acks=all, each acknowledged."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    acknowledged: list[bytes] = []

    def delivered(error, message) -> None:
        assert error is None, error
        acknowledged.append(message.value())

    for number in range(RECORDS):
        producer.produce(TOPIC, b"%06d" % number, partition=0, on_delivery=delivered)
    assert producer.flush(30) == 0
    return acknowledged


def read_all(bootstrap: str) -> list[bytes]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    found: list[bytes] = []

    def caught_up() -> bool:
        found.extend(m.value() for m in consumer.consume(1000, 0.5) if not m.error())
        return len(found) >= RECORDS

    try:
        wait_until(caught_up, f"{RECORDS} records read", timeout=60)
    finally:
        consumer.close()
    return found


def test_a_broker_back_on_empty_disks_leaves_the_isr_and_nothing_acknowledged_is_lost(
    tmp_path, zk_chroot
):
    with Cluster(tmp_path, zk_chroot, size=3, overrides=OVERRIDES) as cluster:
        cluster.create_topic(TOPIC, assignment={0: [1, 2, 3]}, configs={"min.insync.replicas": "2"})
        acknowledged = produce_acknowledged(cluster.bootstrap)
        # Brokers 2 and 3 go: broker 1 stays the only member of the ISR, then goes too.
        for broker_id in (2, 3):
            cluster.brokers[broker_id].kill()
        wait_until(
            lambda: cluster.partition_state(TOPIC, 0)["isr"] == [1], "broker 1 alone in the ISR"
        )
        cluster.brokers[1].kill()
        wait_until(lambda: not cluster.registered(), "every session ended")
        for broker_id in (2, 3):
            cluster.brokers[broker_id].start()
        wait_until(
            lambda: cluster.partition_state(TOPIC, 0)["leader"] == -1,
            "the partition offline: its one in-sync replica is down",
        )
        # Broker 1 returns on new disks.
        for directory in cluster.brokers[1].log_dirs:
            shutil.rmtree(directory)
        cluster.brokers[1].start()

        state = wait_until(
            lambda: (s := cluster.partition_state(TOPIC, 0))["leader"] >= 0 and s,
            "a leader again",
        )
        assert state["leader"] in (2, 3), state
        assert read_all(cluster.bootstrap) == acknowledged
        wait_until(
            lambda: sorted(cluster.partition_state(TOPIC, 0)["isr"]) == [1, 2, 3],
            "broker 1 copied the partition back and rejoined the ISR",
        )


def log_end(cluster: Cluster, broker_id: int, version: int, replica_id: int) -> tuple:
    """A broker's OffsetForLeaderEpoch answer for partition 0 at a far-off epoch."""
    wanted = {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 1000}
    body = {"replica_id": replica_id, "topics": [{"topic": TOPIC, "partitions": [wanted]}]}
    with cluster.connect(broker_id) as connection:
        response = connection.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, version, body)
    (answer,) = response.topics[0].partitions
    return answer.error_code, answer.leader_epoch, answer.end_offset


def test_a_follower_tells_the_debugging_replica_id_where_its_log_stands(tmp_path, zk_chroot):
    """What the controller's recovery asks; a consumer (-1), and any request before v3
    (whose replica id is not on the wire), still gets Kafka's NOT_LEADER_OR_FOLLOWER."""
    with Cluster(tmp_path, zk_chroot, size=2) as cluster:
        cluster.create_topic(TOPIC, assignment={0: [1, 2]})
        acknowledged = produce_acknowledged(cluster.bootstrap)
        wait_until(lambda: sorted(cluster.partition_state(TOPIC, 0)["isr"]) == [1, 2], "ISR")
        assert log_end(cluster, 2, 4, replica_id=-2) == (ErrorCode.NONE, 0, len(acknowledged))
        assert log_end(cluster, 1, 4, replica_id=-2) == (ErrorCode.NONE, 0, len(acknowledged))
        for version, replica_id in ((4, -1), (2, -2)):
            error, _, _ = log_end(cluster, 2, version, replica_id)
            assert error == ErrorCode.NOT_LEADER_OR_FOLLOWER, (version, replica_id)
