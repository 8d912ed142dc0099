"""A log directory that fails on a running broker (KIP-112, Kafka's JBOD failure handling
in ZooKeeper mode), on real brokers with two log dirs each while an idempotent acks=all
producer writes: the broker takes that directory offline and keeps serving its other
one; it announces the failure under /log_dir_event_notification, the controller learns
from its LeaderAndIsr answer (KAFKA_STORAGE_ERROR) which replicas it lost, moves their
leaderships to in-sync replicas on other brokers and takes them out of the ISRs, and
Metadata lists them as offline replicas. Once the disk is back and the broker restarted,
its replicas rejoin every ISR. The failure is made as Kafka's own LogDirFailureTest
makes it: the directory is replaced by a file, so the next checkpoint write fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from integration.acked_writes import ContinuousProducer, assert_acknowledged_records_kept
from integration.cluster import Cluster
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from waiting import wait_until

pytestmark = pytest.mark.timeout(300)

TOPIC = "jbod"
PARTITIONS = 6
FAILING = 1  # the broker that loses a directory


def hosted_in(directory: Path) -> set[int]:
    return {int(d.name.rsplit("-", 1)[1]) for d in directory.glob(f"{TOPIC}-*") if d.is_dir()}


def dir_errors(cluster: Cluster, broker_id: int) -> dict[str, ErrorCode]:
    """Each log dir of the broker → its DescribeLogDirs error."""
    with cluster.connect(broker_id) as connection:
        response = connection.request(ApiKey.DESCRIBE_LOG_DIRS, None, {"topics": None})
    return {r.log_dir: ErrorCode(r.error_code) for r in response.results}


def offline_replicas(cluster: Cluster, broker_id: int) -> dict[int, list[int]]:
    """Partition → offline replicas in that broker's Metadata."""
    (found,) = cluster.metadata(broker_id, [TOPIC]).topics
    return {p.partition_index: sorted(p.offline_replicas) for p in found.partitions}


def states(cluster: Cluster) -> dict[int, tuple[int, list[int]]]:
    """Partition → (leader, ISR) as ZooKeeper holds them."""
    return {
        p: (s["leader"], sorted(s["isr"]))
        for p in range(PARTITIONS)
        for s in [cluster.partition_state(TOPIC, p)]
    }


def test_a_failed_log_dir_goes_offline_and_its_replicas_fail_over(tmp_path, zk_chroot):
    with Cluster(tmp_path, zk_chroot, size=3) as cluster:
        # Broker 1 leads every partition, so the failure takes leaderships with it.
        cluster.create_topic(
            TOPIC,
            assignment={p: [FAILING, 2 + p % 2, 3 - p % 2] for p in range(PARTITIONS)},
            configs={"min.insync.replicas": "2"},
        )
        broker = cluster.brokers[FAILING]
        failing, healthy = broker.log_dirs
        lost, kept = hosted_in(failing), hosted_in(healthy)
        assert lost and kept, "the partitions are spread over both directories"
        with ContinuousProducer(cluster.bootstrap, TOPIC, PARTITIONS, 3000) as producer:
            producer.wait_for_more(300, "records acknowledged before the failure")
            failing.rename(failing.with_name("failed-disk"))
            failing.touch()  # a file where the directory was: every write there fails

            def failed_over() -> bool:
                now = states(cluster)
                return all(now[p][0] != FAILING and FAILING not in now[p][1] for p in lost)

            wait_until(failed_over, "the lost replicas' partitions led elsewhere", 60)
            producer.wait_for_more(300, "records acknowledged after the failure")
        # The other directory serves on: its partitions keep broker 1 as leader, in sync.
        now = states(cluster)
        assert {p: now[p] for p in kept} == {p: (FAILING, sorted({FAILING, 2, 3})) for p in kept}
        assert dir_errors(cluster, FAILING) == {
            str(failing): ErrorCode.KAFKA_STORAGE_ERROR,
            str(healthy): ErrorCode.NONE,
        }
        for observer in cluster.brokers:
            offline = offline_replicas(cluster, observer)
            assert {p for p, r in offline.items() if r == [FAILING]} == lost, observer
        assert_acknowledged_records_kept(cluster.bootstrap, producer, "after the failure")

        # The disk comes back; restarted, the broker reads it again and catches up.
        broker.stop()
        failing.unlink()
        failing.with_name("failed-disk").rename(failing)
        broker.start()
        wait_until(
            lambda: all(FAILING in isr for _, isr in states(cluster).values()),
            "broker 1 back in every ISR",
            60,
        )
        wait_until(
            lambda: not any(offline_replicas(cluster, 2).values()), "no offline replica left"
        )
