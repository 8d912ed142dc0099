"""Follower replication between real broker processes: followers copy their leaders byte
for byte, the ISR shrinks and expands, acks=all waits for the ISR, and a leader that
wrote records nobody copied truncates them by leader epoch when it comes back. Each test
runs on a PLAINTEXT cluster and on one whose only listeners are SASL_SSL."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from integration.cluster import Cluster
from integration.secure_cluster import SECURITY_MODES
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from waiting import wait_until

pytestmark = [pytest.mark.timeout(240), pytest.mark.parametrize("security", SECURITY_MODES)]


def segment_bytes(cluster: Cluster, broker_id: int, topic: str, partition: int) -> bytes:
    """The concatenated .log files of one replica, oldest segment first."""
    for log_dir in cluster.brokers[broker_id].log_dirs:
        directory = Path(log_dir) / f"{topic}-{partition}"
        if directory.is_dir():
            return b"".join(p.read_bytes() for p in sorted(directory.glob("*.log")))
    raise AssertionError(f"broker {broker_id} has no replica of {topic}-{partition}")


def produce(client: dict, topic: str, values: list[bytes], partition: int, acks: str) -> None:
    """``client``: the settings of :meth:`Cluster.client_config`."""
    producer = Producer(
        {
            **client,
            "acks": acks,
            "enable.idempotence": acks == "all",
            "linger.ms": 5,
            "message.timeout.ms": 60000,
        }
    )
    failures = []
    for value in values:
        producer.produce(
            topic, value, partition=partition, on_delivery=lambda e, _m: e and failures.append(e)
        )
    assert producer.flush(90) == 0, "records left unacknowledged"
    assert not failures, failures


def consume(client: dict, topic: str, partition: int, count: int) -> list[bytes]:
    consumer = Consumer({**client, "group.id": "unused", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, partition, 0)])
    values: list[bytes] = []
    try:
        wait_until(
            lambda: values.extend(m.value() for m in consumer.consume(500, 0.5) if not m.error())
            or len(values) >= count,
            f"{count} records consumed from {topic}-{partition}",
            timeout=60,
        )
    finally:
        consumer.close()
    return values


def isr_of(cluster: Cluster, broker_id: int, topic: str, partition: int) -> list[int]:
    return cluster.leaders(broker_id, topic)[partition][2]


def test_followers_copy_their_leaders_byte_for_byte(tmp_path, zk_chroot, security):
    with Cluster(tmp_path, zk_chroot, size=3, security=security) as cluster:
        cluster.create_topic(
            "copied", partitions=3, replication_factor=3, configs={"min.insync.replicas": "2"}
        )
        client = cluster.client_config()
        for partition in range(3):
            values = [f"p{partition}-{i}".encode() for i in range(500)]
            produce(client, "copied", values, partition, acks="all")
            assert consume(client, "copied", partition, 500) == values

        def identical() -> bool:
            return all(
                len({segment_bytes(cluster, b, "copied", p) for b in cluster.brokers}) == 1
                for p in range(3)
            )

        wait_until(identical, "every replica holds the same bytes")
        for partition in range(3):
            assert isr_of(cluster, 1, "copied", partition) == [1, 2, 3]


def test_a_stopped_follower_leaves_the_isr_and_rejoins_after_catching_up(
    tmp_path, zk_chroot, security
):
    overrides = {"replica.lag.time.max.ms": "2000"}
    with Cluster(tmp_path, zk_chroot, size=3, overrides=overrides, security=security) as cluster:
        cluster.create_topic(
            "lagging", partitions=1, replication_factor=3, configs={"min.insync.replicas": "2"}
        )
        leader, _, isr = cluster.leaders(1, "lagging")[0]
        # Not the controller: a stopped controller would spread no ISR change.
        follower = next(b for b in isr if b not in (leader, cluster.controller_id()))
        client = cluster.client_config(cluster.brokers[leader].bootstrap)
        produce(client, "lagging", [b"before"], 0, acks="all")

        os.kill(cluster.brokers[follower].process.pid, signal.SIGSTOP)
        try:
            # acks=all is answered once the ISR no longer waits for the stopped follower.
            produce(client, "lagging", [f"during-{i}".encode() for i in range(100)], 0, "all")
            assert follower not in cluster.partition_state("lagging", 0)["isr"]
            wait_until(
                lambda: follower not in isr_of(cluster, leader, "lagging", 0),
                "the leader's metadata has the follower out of the ISR",
            )
        finally:
            os.kill(cluster.brokers[follower].process.pid, signal.SIGCONT)

        wait_until(
            lambda: follower in cluster.partition_state("lagging", 0)["isr"],
            "the follower is back in the ISR in ZooKeeper",
        )
        wait_until(
            lambda: all(follower in isr_of(cluster, b, "lagging", 0) for b in cluster.brokers),
            "every broker's metadata has the follower back in the ISR",
        )
        assert segment_bytes(cluster, follower, "lagging", 0) == segment_bytes(
            cluster, leader, "lagging", 0
        )


def test_acks_all_is_refused_below_min_insync_replicas(tmp_path, zk_chroot, security):
    with Cluster(tmp_path, zk_chroot, size=3, security=security) as cluster:
        cluster.create_topic(
            "strict", partitions=1, replication_factor=3, configs={"min.insync.replicas": "3"}
        )
        leader, _, isr = cluster.leaders(1, "strict")[0]
        follower = next(b for b in isr if b != leader)
        cluster.brokers[follower].kill()
        wait_until(
            lambda: follower not in isr_of(cluster, leader, "strict", 0),
            "the killed follower left the ISR",
        )
        producer = Producer(
            {
                **cluster.client_config(cluster.brokers[leader].bootstrap),
                "acks": "all",
                "retries": 0,
            }
        )
        errors = []
        producer.produce("strict", b"x", partition=0, on_delivery=lambda e, _m: errors.append(e))
        producer.flush(30)
        assert [e.name() for e in errors] == ["NOT_ENOUGH_REPLICAS"]


def test_a_returning_leader_truncates_what_only_it_had(tmp_path, zk_chroot, security):
    """Seed 004's divergence: the old leader's unreplicated tail goes, committed data
    stays, and the replicas converge on the new leader's log."""
    with Cluster(tmp_path, zk_chroot, size=3, security=security) as cluster:
        cluster.create_topic("diverging", partitions=1, replication_factor=3)
        old_leader, _, isr = cluster.leaders(1, "diverging")[0]
        followers = [b for b in isr if b != old_leader]
        committed = [f"committed-{i}".encode() for i in range(100)]
        old_leader_client = cluster.client_config(cluster.brokers[old_leader].bootstrap)
        produce(old_leader_client, "diverging", committed, 0, acks="all")
        wait_until(
            lambda: all(
                segment_bytes(cluster, f, "diverging", 0)
                == segment_bytes(cluster, old_leader, "diverging", 0)
                for f in followers
            ),
            "the followers copied the committed records",
        )

        for follower in followers:
            os.kill(cluster.brokers[follower].process.pid, signal.SIGSTOP)
        # A deliberate pause, for a timeout to run out: a fetch the followers sent before
        # they stopped is held up to replica.fetch.wait.max.ms (500 ms), and records
        # appended meanwhile would reach them in its answer. Nothing outside the leader
        # shows when it was answered. Too short a pause cannot pass unnoticed: the lost
        # records would then be on the new leader, and the last assertion fails.
        time.sleep(1.5)
        try:
            lost = [f"only-on-the-old-leader-{i}".encode() for i in range(50)]
            produce(old_leader_client, "diverging", lost, 0, acks="1")
            cluster.brokers[old_leader].kill()
        finally:
            for follower in followers:
                os.kill(cluster.brokers[follower].process.pid, signal.SIGCONT)

        survivor = followers[0]
        new_leader = wait_until(
            lambda: (lambda s: s[0] in followers and s[0])(
                cluster.leaders(survivor, "diverging")[0]
            ),
            "a follower leads",
        )
        fresh = [f"new-leader-{i}".encode() for i in range(30)]
        new_leader_client = cluster.client_config(cluster.brokers[new_leader].bootstrap)
        produce(new_leader_client, "diverging", fresh, 0, acks="all")

        cluster.brokers[old_leader].start()
        wait_until(
            lambda: segment_bytes(cluster, old_leader, "diverging", 0)
            == segment_bytes(cluster, new_leader, "diverging", 0),
            "the old leader converged on the new leader's log",
        )
        wait_until(
            lambda: old_leader in isr_of(cluster, new_leader, "diverging", 0),
            "the old leader is back in the ISR",
        )
        assert consume(new_leader_client, "diverging", 0, 130) == committed + fresh


def test_consumers_see_only_what_the_isr_has(tmp_path, zk_chroot, security):
    """While a follower in the ISR lags, the leader's new records stay invisible."""
    # Neither the lag limit nor the stopped follower's ZooKeeper session may run out
    # while it is stopped: either would take it out of the ISR and let the HW move.
    overrides = {"replica.lag.time.max.ms": "30000", "zookeeper.session.timeout.ms": "30000"}
    with Cluster(tmp_path, zk_chroot, size=2, overrides=overrides, security=security) as cluster:
        cluster.create_topic("visible", partitions=1, replication_factor=2)
        leader, _, isr = cluster.leaders(1, "visible")[0]
        (follower,) = (b for b in isr if b != leader)  # the ISR keeps it for 30 s
        client = cluster.client_config(cluster.brokers[leader].bootstrap)
        produce(client, "visible", [b"replicated"], 0, acks="all")
        os.kill(cluster.brokers[follower].process.pid, signal.SIGSTOP)
        try:
            produce(client, "visible", [b"leader only"], 0, acks="1")
            consumer = Consumer({**client, "group.id": "unused", "enable.auto.commit": False})
            consumer.assign([TopicPartition("visible", 0, 0)])
            seen = [m.value() for m in consumer.consume(10, 3) if not m.error()]
            _, high = consumer.get_watermark_offsets(TopicPartition("visible", 0), timeout=10)
            consumer.close()
        finally:
            os.kill(cluster.brokers[follower].process.pid, signal.SIGCONT)
        assert seen == [b"replicated"]
        assert high == 1
        assert consume(client, "visible", 0, 2) == [b"replicated", b"leader only"]


def test_a_broker_back_after_a_deletion_drops_the_deleted_topics_data(
    tmp_path, zk_chroot, security
):
    """A topic deleted while a replica's broker was down, then created again under the
    same name: that broker's old directories must not come back as the new topic's."""
    with Cluster(tmp_path, zk_chroot, size=3, security=security) as cluster:
        cluster.create_topic("reused", partitions=3, replication_factor=3)
        client = cluster.client_config()
        for partition in range(3):
            produce(client, "reused", [b"old"] * 20, partition, acks="all")
        cluster.brokers[3].kill()
        wait_until(lambda: 3 not in cluster.registered(), "broker 3's session ended")
        with cluster.connect(wait_until(cluster.controller_id, "a controller")) as connection:
            body = {"topic_names": ["reused"], "timeout_ms": 10000}
            (result,) = connection.request(ApiKey.DELETE_TOPICS, 4, body).responses
        assert result.error_code == ErrorCode.NONE
        wait_until(lambda: "reused" not in cluster.zk.get_children("/brokers/topics"), "deleted")

        cluster.brokers[3].start()
        wait_until(cluster.all_known, "broker 3 is back")
        cluster.create_topic("reused", partitions=3, replication_factor=3)
        live = cluster.client_config()
        for partition in range(3):
            fresh = [f"new-{partition}-{i}".encode() for i in range(5)]
            produce(live, "reused", fresh, partition, acks="all")
            assert consume(live, "reused", partition, 5) == fresh
            wait_until(
                lambda p=partition: len(
                    {segment_bytes(cluster, b, "reused", p) for b in cluster.brokers}
                )
                == 1,
                f"every replica of reused-{partition} holds the new topic's records only",
            )
