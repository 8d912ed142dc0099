"""Apache Kafka's own admin tools against three tidelog brokers: each succeeds and prints
what it prints against Kafka. One section per tool; each test starts its own cluster."""

from __future__ import annotations

import pytest

from integration.cluster import Cluster, wait_until
from kafka_reference.tools import run_kafka_tool


def ok(result) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


# -- kafka-leader-election.sh ---------------------------------------------------------------


@pytest.fixture
def static_cluster(tmp_path, zk_chroot):
    """Three brokers that never move leaderships back on their own."""
    overrides = {"auto.leader.rebalance.enable": "false"}
    with Cluster(tmp_path, zk_chroot, size=3, overrides=overrides) as cluster:
        yield cluster


def test_kafka_leader_election_brings_preferred_leaders_back(static_cluster):
    cluster = static_cluster
    assignment = {0: [1, 2], 1: [2, 3], 2: [3, 1]}
    cluster.create_topic("elect", assignment=assignment)

    def leaders() -> dict[int, int]:
        return {p: leader for p, (leader, _, _) in cluster.leaders(2, "elect").items()}

    def in_sync() -> bool:
        return all(
            sorted(isr) == sorted(assignment[p])
            for p, (_, _, isr) in cluster.leaders(2, "elect").items()
        )

    wait_until(in_sync, "every replica of elect is in sync")
    assert cluster.brokers[1].stop() == 0
    wait_until(lambda: leaders()[0] == 2, "broker 2 leads elect-0")
    cluster.brokers[1].start()
    wait_until(in_sync, "broker 1 is back in sync")
    assert leaders() == {0: 2, 1: 2, 2: 3}

    def elect(*args: str) -> str:
        return ok(
            run_kafka_tool(
                "kafka-leader-election",
                "--bootstrap-server",
                cluster.bootstrap,
                "--election-type",
                "preferred",
                *args,
            )
        )

    assert elect("--all-topic-partitions") == (
        "Successfully completed leader election (PREFERRED) for partitions elect-0\n"
    )
    wait_until(lambda: leaders() == {0: 1, 1: 2, 2: 3}, "every partition led by its first replica")
    assert elect("--all-topic-partitions") == ""
    assert elect("--topic", "elect", "--partition", "1") == (
        "Valid replica already elected for partitions elect-1\n"
    )
