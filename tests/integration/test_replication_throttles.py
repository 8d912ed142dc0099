"""Replication throttles on real brokers (seed 003 修改主题限速): the rates and the
throttled-replicas lists set with IncrementalAlterConfigs (confluent-kafka's
AdminClient), reported by DescribeConfigs, and their effect on a follower that comes
back far behind: the throttled partition stays out of the ISR while the unthrottled
one catches up and rejoins it, until the throttle is removed.

Each entry of a list throttles only on the broker it names: on the leader side the
leader (1), on the follower side the follower (2); the lists also name the other
broker for partition 1, which must therefore not be slowed. The rate is 1 byte/s and
a follower fetch carries at most one batch of a partition (``replica.fetch.max.bytes``
1 KiB), so the throttled partition gets one batch per quota window span (11 s) while
it needs dozens: which partition catches up first is decided by the throttle, not by
timing.
"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
)
from kafka import KafkaProducer

from integration.cluster import Cluster
from tidelog.protocol import ApiKey
from waiting import wait_until

TOPIC = "throttled"
RECORDS = 200  # per partition, each ~1 KB in batches of about two
SIDES = {
    # side: (throttling broker, rate key, replicas key, list)
    "leader": (
        1,
        "leader.replication.throttled.rate",
        "leader.replication.throttled.replicas",
        "0:1,1:2",
    ),
    "follower": (
        2,
        "follower.replication.throttled.rate",
        "follower.replication.throttled.replicas",
        "0:2,1:1",
    ),
}


def alter(admin: AdminClient, kind: str, name: str, *entries: ConfigEntry) -> None:
    futures = admin.incremental_alter_configs(
        [ConfigResource(kind, name, incremental_configs=list(entries))]
    )
    for future in futures.values():
        future.result(timeout=30)


def setting(name: str, value: str | None, operation=AlterConfigOpType.SET) -> ConfigEntry:
    return ConfigEntry(name, value, incremental_operation=operation)


def described(admin: AdminClient, kind: str, name: str, key: str) -> tuple[str, ConfigSource]:
    (future,) = admin.describe_configs([ConfigResource(kind, name)]).values()
    entry = future.result(timeout=30)[key]
    return entry.value, ConfigSource(entry.source)


def isr(cluster: Cluster, partition: int) -> list[int]:
    return sorted(cluster.partition_state(TOPIC, partition)["isr"])


def replica_sizes(cluster: Cluster, broker_id: int) -> dict[int, int]:
    """Partition → bytes of its replica on ``broker_id`` (DescribeLogDirs)."""
    with cluster.connect(broker_id) as connection:
        response = connection.request(
            ApiKey.DESCRIBE_LOG_DIRS, None, {"topics": [{"topic": TOPIC, "partitions": [0, 1]}]}
        )
    return {
        p.partition_index: p.partition_size
        for found in response.results
        for t in found.topics
        for p in t.partitions
    }


@pytest.mark.parametrize("side", sorted(SIDES))
def test_only_the_throttled_replica_is_held_back(tmp_path, zk_chroot, side):
    broker_id, rate_key, replicas_key, throttled = SIDES[side]
    with Cluster(
        tmp_path, zk_chroot, size=2, overrides={"replica.fetch.max.bytes": "1024"}
    ) as cluster:
        cluster.create_topic(TOPIC, assignment={0: [1, 2], 1: [1, 2]})
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})

        alter(admin, "BROKER", str(broker_id), setting(rate_key, "1"))
        alter(admin, "TOPIC", TOPIC, setting(replicas_key, throttled))
        assert described(admin, "BROKER", str(broker_id), rate_key) == (
            "1",
            ConfigSource.DYNAMIC_BROKER_CONFIG,
        )
        assert described(admin, "TOPIC", TOPIC, replicas_key) == (
            throttled,
            ConfigSource.DYNAMIC_TOPIC_CONFIG,
        )
        with pytest.raises(KafkaException) as refused:
            alter(admin, "TOPIC", TOPIC, setting(replicas_key, "0-1"))
        assert refused.value.args[0].code() == KafkaError.INVALID_CONFIG
        assert "must be the literal '*'" in refused.value.args[0].str()

        # Broker 2 goes away and comes back behind on both partitions.
        assert cluster.brokers[2].stop() == 0
        wait_until(lambda: isr(cluster, 0) == isr(cluster, 1) == [1], "the ISRs shrink to [1]")
        producer = KafkaProducer(
            bootstrap_servers=cluster.brokers[1].bootstrap, acks=1, batch_size=2048, linger_ms=5
        )
        for _ in range(RECORDS):
            for partition in (0, 1):
                producer.send(TOPIC, b"x" * 1000, partition=partition)
        producer.flush(timeout=30)
        producer.close()
        cluster.brokers[2].start()

        wait_until(lambda: isr(cluster, 1) == [1, 2], "the unthrottled partition rejoins")
        assert isr(cluster, 0) == [1]
        leader_sizes, follower_sizes = replica_sizes(cluster, 1), replica_sizes(cluster, 2)
        assert follower_sizes[1] == leader_sizes[1]
        # A batch or two per 11 s at most; unthrottled, it would have kept pace.
        assert follower_sizes[0] < leader_sizes[0] / 4

        alter(admin, "TOPIC", TOPIC, setting(replicas_key, None, AlterConfigOpType.DELETE))
        assert described(admin, "TOPIC", TOPIC, replicas_key) == (
            "",
            ConfigSource.DEFAULT_CONFIG,
        )
        wait_until(lambda: isr(cluster, 0) == [1, 2], "the partition rejoins once unthrottled")
