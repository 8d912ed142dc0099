"""SIGTERM to brokers whose ZooKeeper is gone (seed 000; Kubernetes deleting a namespace
stops every pod at once): each broker tries its controlled shutdown within its retries,
says why it cannot have one, closes its logs cleanly and exits 0 instead of waiting for
a ZooKeeper that does not come back. A restart does no log recovery and serves every
acknowledged record.

The tests stop ZooKeeper, so they run a server of their own, not the session's."""

from __future__ import annotations

import signal
import subprocess

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kazoo.client import KazooClient

from integration.cluster import Cluster
from tidelog.storage.log_manager import CLEAN_SHUTDOWN_MARKER
from tidelog.zookeeper import ZooKeeperServer
from waiting import wait_until

pytestmark = pytest.mark.timeout(180)

TOPIC = "orders"
PARTITIONS = 4
RECORDS = 400
OVERRIDES = {
    "controlled.shutdown.max.retries": "3",
    "controlled.shutdown.retry.backoff.ms": "100",
    # ZooKeeper's shortest session (two ticks): the restart waits for its expiry.
    "zookeeper.session.timeout.ms": "4000",
}


def produce(bootstrap: str) -> list[tuple[int, int, bytes]]:
    """``RECORDS`` records with acks=all; (partition, offset, value) of each."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    futures = [
        (producer.send(TOPIC, value=b"r%05d" % i, partition=i % PARTITIONS), b"r%05d" % i)
        for i in range(RECORDS)
    ]
    producer.flush()
    acknowledged = []
    for future, value in futures:
        metadata = future.get(timeout=30)
        acknowledged.append((metadata.partition, metadata.offset, value))
    producer.close()
    return acknowledged


def read_all(bootstrap: str) -> set[tuple[int, int, bytes]]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    partitions = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
    consumer.assign(partitions)
    consumer.seek_to_beginning()
    ends = consumer.end_offsets(partitions)
    records: set[tuple[int, int, bytes]] = set()

    def caught_up() -> bool:
        for messages in consumer.poll(timeout_ms=500).values():
            records.update((m.partition, m.offset, m.value) for m in messages)
        return all(consumer.position(tp) >= ends[tp] for tp in partitions)

    wait_until(caught_up, "the consumer read every partition to its end")
    consumer.close()
    return records


def registrations_gone(connect: str, broker_ids: list[int]) -> None:
    """The stopped brokers could not close their sessions: their registrations live on
    in the restarted ZooKeeper until it expires them."""
    zk = KazooClient(hosts=connect)
    zk.start(timeout=10)
    try:
        wait_until(
            lambda: not any(zk.exists(f"/brokers/ids/{b}") for b in broker_ids),
            "ZooKeeper expired the stopped brokers' sessions",
        )
    finally:
        zk.stop()
        zk.close()


@pytest.mark.parametrize("size", [1, 2])
def test_sigterm_without_zookeeper_shuts_down_cleanly(tmp_path, size):
    with (
        ZooKeeperServer(tmp_path / "zookeeper") as zookeeper,
        Cluster(tmp_path, zookeeper.connect_string, size=size, overrides=OVERRIDES) as cluster,
    ):
        cluster.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=size)
        acknowledged = produce(cluster.bootstrap)
        brokers = list(cluster.brokers.values())

        # ZooKeeper goes first, the brokers get SIGTERM right after, all at once.
        zookeeper.stop()
        for broker in brokers:
            broker.process.send_signal(signal.SIGTERM)
        codes = {}
        for broker in brokers:
            try:
                codes[broker.broker_id] = broker.process.wait(60)
            except subprocess.TimeoutExpired:
                broker.kill()
                codes[broker.broker_id] = f"still running after SIGTERM:\n{broker.log()[-3000:]}"
        assert codes == {b.broker_id: 0 for b in brokers}, codes

        for broker in brokers:
            log = broker.log()
            assert (
                f"controlled shutdown of broker {broker.broker_id} not possible without "
                f"ZooKeeper" in log
            ), log[-3000:]
            assert "all controlled shutdown attempts failed; shutting down anyway" in log
            assert f"broker {broker.broker_id} shut down cleanly" in log
            assert all((d / CLEAN_SHUTDOWN_MARKER).exists() for d in broker.log_dirs)

        # Back with ZooKeeper: no recovery, and every acknowledged record is there.
        zookeeper.start()
        registrations_gone(zookeeper.connect_string, [b.broker_id for b in brokers])
        before_restart = {b.broker_id: len(b.log()) for b in brokers}
        for broker in brokers:
            broker.start()
        wait_until(cluster.all_known, "every broker knows every other again")
        for broker in brokers:
            restarted = broker.log()[before_restart[broker.broker_id] :]
            assert "was not shut down cleanly" not in restarted, restarted
            assert "recovering" not in restarted, restarted
        for broker_id in cluster.brokers:
            wait_until(
                lambda b=broker_id: all(
                    leader >= 0 and len(isr) == size
                    for leader, _, isr in cluster.leaders(b, TOPIC).values()
                ),
                f"broker {broker_id} knows a leader and a full ISR of every partition",
            )
        assert set(acknowledged) <= read_all(cluster.bootstrap)
