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

from integration.cluster import Cluster
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from waiting import wait_until

TOPIC = "orders"
RECORDS = 500
OVERRIDES = {"zookeeper.session.timeout.ms": "6000", "replica.lag.time.max.ms": "3000"}


def produce_acknowledged(bootstrap: str, partitions: int = 1) -> list[tuple[int, int, bytes]]:
    """RECORDS values sent with acks=all over the partitions, each acknowledged: the
    (partition, offset, value) of each, in partition and offset order."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    acknowledged: list[tuple[int, int, bytes]] = []

    def delivered(error, message) -> None:
        assert error is None, error
        acknowledged.append((message.partition(), message.offset(), message.value()))

    for number in range(RECORDS):
        value = b"%06d" % number
        producer.produce(TOPIC, value, partition=number % partitions, on_delivery=delivered)
    assert producer.flush(30) == 0
    return sorted(acknowledged)


def read_all(bootstrap: str, partitions: int = 1) -> list[tuple[int, int, bytes]]:
    """Every record of the topic's partitions as (partition, offset, value), in partition
    and offset order."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(partitions)])
    found: list[tuple[int, int, bytes]] = []

    def caught_up() -> bool:
        found.extend(
            (m.partition(), m.offset(), m.value())
            for m in consumer.consume(1000, 0.5)
            if not m.error()
        )
        return len(found) >= RECORDS

    try:
        wait_until(caught_up, f"{RECORDS} records read", timeout=60)
    finally:
        consumer.close()
    return sorted(found)


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


def test_a_broker_back_at_once_on_empty_disks_rejoins_every_isr(tmp_path, zk_chroot):
    """Killed and started again on empty disks within its session: it leaves the ISRs as
    a follower and as a leader, the leaders and followers hear of it (a new leader epoch,
    LeaderAndIsr), and it copies the partitions back into every ISR. Kafka's 30 s
    replica.lag.time.max.ms: the leaders do not notice the gap by themselves."""
    session = {"zookeeper.session.timeout.ms": OVERRIDES["zookeeper.session.timeout.ms"]}
    with Cluster(tmp_path, zk_chroot, size=3, overrides=session) as cluster:
        cluster.create_topic(TOPIC, assignment={0: [1, 2, 3], 1: [3, 1, 2]})
        acknowledged = produce_acknowledged(cluster.bootstrap, partitions=2)
        cluster.brokers[3].kill()
        for directory in cluster.brokers[3].log_dirs:
            shutil.rmtree(directory)
        cluster.brokers[3].start()
        for partition in (0, 1):
            wait_until(
                lambda p=partition: sorted(cluster.partition_state(TOPIC, p)["isr"]) == [1, 2, 3],
                f"broker 3 back in the ISR of partition {partition}",
                timeout=60,
            )
        assert read_all(cluster.bootstrap, partitions=2) == acknowledged


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
