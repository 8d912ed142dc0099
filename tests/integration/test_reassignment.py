"""Partition reassignment on real brokers (seed 003 分区重分配): AlterPartitionReassignments
and ``/admin/reassign_partitions`` move replicas while an idempotent acks=all producer
writes, through a controller killed -9 and a receiving broker restarted mid-copy; a
cancellation restores the original replicas; a replication-factor change is a
reassignment; removed replicas leave no directory behind. Each test runs on a PLAINTEXT
cluster and on one whose only listeners are SASL_SSL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from confluent_kafka import Producer

from integration.acked_writes import ContinuousProducer, assert_acknowledged_records_kept
from integration.cluster import Cluster
from integration.secure_cluster import SECURITY_MODES
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from waiting import wait_until

pytestmark = [pytest.mark.timeout(300), pytest.mark.parametrize("security", SECURITY_MODES)]

# A copy that a test interrupts must still be running when it does, however fast the
# machine: small fetch sizes alone do not make it slow (a follower fetch takes at least
# one whole batch, and a filler's batches reach 1 MB), a follower throttle of 300 kB/s
# does (2 MiB: about 7 s, 6 MiB: about 20 s). A short lag time lets a stopped follower
# leave the ISR quickly.
THROTTLED_COPY = {
    "replica.fetch.max.bytes": "4096",
    "replica.fetch.response.max.bytes": "4096",
    "replica.lag.time.max.ms": "4000",
    "follower.replication.throttled.rate": "300000",
}
THROTTLED = {"follower.replication.throttled.replicas": "*"}


@pytest.fixture
def cluster(tmp_path, zk_chroot, security):
    """The conftest's three running brokers, secured as the test's parameter says."""
    with Cluster(tmp_path, zk_chroot, size=3, security=security) as running:
        yield running


def alter(cluster: Cluster, targets: dict[tuple[str, int], list[int] | None]) -> dict:
    """AlterPartitionReassignments to the controller: partition → error code."""
    by_topic: dict[str, list] = {}
    for (topic, partition), replicas in sorted(targets.items()):
        by_topic.setdefault(topic, []).append({"partition_index": partition, "replicas": replicas})
    body = {
        "timeout_ms": 30000,
        "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()],
    }
    controller = wait_until(cluster.controller_id, "a controller")
    with cluster.connect(controller) as connection:
        response = connection.request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, None, body)
    assert response.error_code == ErrorCode.NONE, response.error_message
    return {
        (topic.name, p.partition_index): ErrorCode(p.error_code)
        for topic in response.responses
        for p in topic.partitions
    }


def ongoing(cluster: Cluster) -> dict[tuple[str, int], tuple[list, list, list]]:
    """ListPartitionReassignments: partition → (replicas, adding, removing)."""
    controller = wait_until(cluster.controller_id, "a controller")
    with cluster.connect(controller) as connection:
        response = connection.request(
            ApiKey.LIST_PARTITION_REASSIGNMENTS, None, {"timeout_ms": 30000, "topics": None}
        )
    assert response.error_code == ErrorCode.NONE, response.error_message
    return {
        (topic.name, p.partition_index): (p.replicas, p.adding_replicas, p.removing_replicas)
        for topic in response.topics
        for p in topic.partitions
    }


def topic_znode(cluster: Cluster, topic: str) -> dict:
    data, _ = cluster.zk.get(f"/brokers/topics/{topic}")
    return json.loads(data)


def done(cluster: Cluster, topic: str) -> bool:
    """Nothing moving, according to the controller and to ZooKeeper."""
    znode = topic_znode(cluster, topic)
    return not ongoing(cluster) and not znode["adding_replicas"] and not znode["removing_replicas"]


def replica_dirs(cluster: Cluster, broker_id: int, topic: str) -> list[Path]:
    """The partition directories (current, future or being deleted) a broker keeps of
    ``topic`` in its log dirs."""
    return sorted(
        path
        for log_dir in cluster.brokers[broker_id].log_dirs
        if log_dir.exists()
        for path in log_dir.iterdir()
        if path.is_dir() and path.name.startswith(f"{topic}-")
    )


def fill(cluster: Cluster, topic: str, partition: int, megabytes: int) -> None:
    """Ballast of 1 KiB records numbered -N .. -1, so that the numbers a
    ContinuousProducer adds after them (0, 1, ...) still ascend."""
    producer = Producer({**cluster.client_config(), "acks": "all", "linger.ms": 20})
    for number in range(megabytes * 1024, 0, -1):
        value = b"-%01023d" % number
        while True:
            try:
                producer.produce(topic, value, partition=partition)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(60) == 0


def test_removing_a_broker_from_every_partition_while_producing(tmp_path, zk_chroot, security):
    topic = "moving"
    with Cluster(tmp_path, zk_chroot, size=4, security=security) as cluster:
        cluster.create_topic(
            topic, partitions=6, replication_factor=3, configs={"min.insync.replicas": "2"}
        )
        with ContinuousProducer(
            cluster.bootstrap, topic, 6, command_config=cluster.client_properties_file()
        ) as producer:
            producer.wait_for_more(300, "records acknowledged before the move")
            targets = {}
            for partition, replicas in cluster.assignment(topic).items():
                if 1 in replicas:
                    (spare,) = {1, 2, 3, 4} - set(replicas)
                    targets[(topic, partition)] = [spare if b == 1 else b for b in replicas]
            assert targets, "broker 1 holds no replica to move"
            assert set(alter(cluster, targets).values()) == {ErrorCode.NONE}
            wait_until(lambda: done(cluster, topic), "the reassignment completes", timeout=90)
            producer.wait_for_more(300, "records acknowledged after the move")
        assignment = cluster.assignment(topic)
        assert all(1 not in replicas for replicas in assignment.values()), assignment
        for (_, partition), target in targets.items():
            assert assignment[partition] == target
        for broker_id in cluster.running:
            for index, (leader, _, isr) in cluster.leaders(broker_id, topic).items():
                assert leader in assignment[index] and set(isr) <= set(assignment[index])
        wait_until(lambda: not replica_dirs(cluster, 1, topic), "broker 1's copies deleted")
        assert_acknowledged_records_kept(
            cluster.bootstrap, producer, "after the move", client_config=cluster.client_config()
        )


def test_reassignment_survives_a_controller_kill_and_a_receiver_restart(
    tmp_path, zk_chroot, security
):
    topic = "resilient"
    # The copy must still be running when it is first looked at (THROTTLED_COPY).
    with Cluster(
        tmp_path, zk_chroot, size=4, overrides=THROTTLED_COPY, security=security
    ) as cluster:
        cluster.create_topic(
            topic,
            assignment={0: [2, 3], 1: [3, 2]},
            configs={"min.insync.replicas": "1"} | THROTTLED,
        )
        fill(cluster, topic, 0, megabytes=2)
        with ContinuousProducer(
            cluster.bootstrap, topic, 2, command_config=cluster.client_properties_file()
        ) as producer:
            producer.wait_for_more(200, "records acknowledged before the move")
            controller = wait_until(cluster.controller_id, "a controller")
            receiver = 4 if controller != 4 else 1
            source = next(b for b in (2, 3) if b != controller)
            target = [receiver, source]
            assert alter(cluster, {(topic, 0): target}) == {(topic, 0): ErrorCode.NONE}
            cluster.brokers[controller].kill()
            wait_until(lambda: replica_dirs(cluster, receiver, topic), "the copy started")
            assert topic_znode(cluster, topic)["adding_replicas"], "the copy ended already"
            cluster.brokers[receiver].kill()
            wait_until(lambda: receiver not in cluster.registered(), "its session ended")
            cluster.brokers[receiver].start()
            wait_until(lambda: controller not in cluster.registered(), "the old controller gone")
            cluster.brokers[controller].start()
            wait_until(lambda: done(cluster, topic), "the reassignment completes", timeout=120)
            producer.wait_for_more(200, "records acknowledged after the move")
        assert cluster.assignment(topic)[0] == target
        removed = ({2, 3} - set(target)).pop()
        wait_until(
            lambda: not [d for d in replica_dirs(cluster, removed, topic) if d.name.endswith("-0")],
            "the removed replica deleted",
        )
        assert_acknowledged_records_kept(
            cluster.bootstrap, producer, "after the move", client_config=cluster.client_config()
        )


def test_cancelling_restores_the_original_replicas_and_deletes_the_copies(
    tmp_path, zk_chroot, security
):
    topic = "cancelled"
    with Cluster(
        tmp_path, zk_chroot, size=3, overrides=THROTTLED_COPY, security=security
    ) as cluster:
        cluster.create_topic(topic, assignment={0: [1]}, configs=THROTTLED)
        fill(cluster, topic, 0, megabytes=6)
        assert alter(cluster, {(topic, 0): [2, 3]}) == {(topic, 0): ErrorCode.NONE}
        assert ongoing(cluster) == {(topic, 0): ([2, 3, 1], [2, 3], [1])}
        wait_until(lambda: replica_dirs(cluster, 2, topic), "the copy started")
        assert alter(cluster, {(topic, 0): None}) == {(topic, 0): ErrorCode.NONE}
        wait_until(lambda: done(cluster, topic), "the cancellation completes")
        assert cluster.assignment(topic) == {0: [1]}
        for broker_id in (2, 3):
            wait_until(
                lambda b=broker_id: not replica_dirs(cluster, b, topic),
                f"broker {broker_id}'s copy deleted",
            )
        assert cluster.leaders(1, topic)[0][0] == 1
        assert alter(cluster, {(topic, 0): None}) == {
            (topic, 0): ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
        }


def test_replication_factor_changes_through_reassignment(tmp_path, zk_chroot, security):
    topic = "factor"
    with Cluster(tmp_path, zk_chroot, size=3, security=security) as cluster:
        cluster.create_topic(topic, assignment={0: [1], 1: [2]})
        fill(cluster, topic, 0, megabytes=1)
        up = {(topic, 0): [1, 2, 3], (topic, 1): [2, 3, 1]}
        assert set(alter(cluster, up).values()) == {ErrorCode.NONE}
        wait_until(lambda: done(cluster, topic), "RF 1 → 3 completes")
        assert cluster.assignment(topic) == {0: [1, 2, 3], 1: [2, 3, 1]}
        wait_until(
            lambda: all(isr == [1, 2, 3] for _, _, isr in cluster.leaders(1, topic).values()),
            "every replica in sync",
        )
        down = {(topic, 0): [2, 3], (topic, 1): [2, 3]}
        assert set(alter(cluster, down).values()) == {ErrorCode.NONE}
        wait_until(lambda: done(cluster, topic), "RF 3 → 2 completes")
        assert cluster.assignment(topic) == {0: [2, 3], 1: [2, 3]}

        def broker_2_knows_the_new_replicas() -> bool:
            # The controller's UpdateMetadata reaches broker 2 a moment after the
            # reassignment is listed as done (in Kafka too).
            leader, _, isr = cluster.leaders(2, topic)[0]
            return leader in (2, 3) and isr == [2, 3]

        wait_until(broker_2_knows_the_new_replicas, "broker 2's metadata has the new replicas")
        wait_until(lambda: not replica_dirs(cluster, 1, topic), "broker 1's replicas deleted")


def test_invalid_targets_are_refused_with_kafka_errors(cluster):
    cluster.create_topic("checked", assignment={0: [1, 2]})
    results = alter(
        cluster,
        {
            ("checked", 0): [1, 1],
            ("checked", 7): [1, 2],
            ("missing", 0): [1],
        },
    )
    assert results == {
        ("checked", 0): ErrorCode.INVALID_REPLICA_ASSIGNMENT,
        ("checked", 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert alter(cluster, {("checked", 0): [1, 9]}) == {
        ("checked", 0): ErrorCode.INVALID_REPLICA_ASSIGNMENT
    }
    assert not ongoing(cluster)


def test_the_reassign_partitions_znode_is_followed_and_removed(cluster):
    cluster.create_topic("zkmoved", assignment={0: [1], 1: [2]})
    document = {"version": 1, "partitions": [{"topic": "zkmoved", "partition": 0, "replicas": [3]}]}
    cluster.zk.create("/admin/reassign_partitions", json.dumps(document).encode(), makepath=True)
    wait_until(lambda: cluster.assignment("zkmoved") == {0: [3], 1: [2]}, "the move done")
    wait_until(lambda: cluster.zk.exists("/admin/reassign_partitions") is None, "the znode removed")
    wait_until(lambda: cluster.leaders(2, "zkmoved")[0][0] == 3, "broker 3 leads")
