"""Preferred leader election with real broker processes (seed 000 首选首领): the first
replica of each assignment gets its leadership back, automatically
(``auto.leader.rebalance.enable``) or through ElectLeaders."""

from __future__ import annotations

import json

import pytest

from integration.cluster import Cluster
from kafka_reference.tools import run_kafka_tool
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from waiting import wait_until

TOPIC = "orders"
REBALANCE_EVERY_SECOND = {
    "auto.leader.rebalance.enable": "true",
    "leader.imbalance.check.interval.seconds": "1",
    "leader.imbalance.per.broker.percentage": "0",
}


def preferred(cluster: Cluster) -> dict[int, int]:
    return {p: replicas[0] for p, replicas in cluster.assignment(TOPIC).items()}


def leaders_of(cluster: Cluster, broker_id: int) -> dict[int, int]:
    return {p: leader for p, (leader, _, _) in cluster.leaders(broker_id, TOPIC).items()}


def move_leaders_off_preferred(cluster: Cluster) -> dict[int, tuple[int, int]]:
    """The three brokers that are not the controller host the topic, each partition with
    all of them in sync; the partition states are rewritten to have the second replica
    lead (as an earlier failover whose replica caught up since would leave them), then
    the controller, hosting nothing, hands over to a broker that reads them. Partition →
    (leader, leader epoch) written."""
    controller = wait_until(cluster.controller_id, "a controller")
    a, b, c = [broker for broker in cluster.brokers if broker != controller]
    cluster.create_topic(TOPIC, assignment={0: [a, b, c], 1: [b, c, a], 2: [c, a, b], 3: [a, c, b]})
    written = {}
    for partition, replicas in cluster.assignment(TOPIC).items():
        path = f"/brokers/topics/{TOPIC}/partitions/{partition}/state"
        state = cluster.partition_state(TOPIC, partition)
        state.update(leader=replicas[1], leader_epoch=state["leader_epoch"] + 1)
        cluster.zk.set(path, json.dumps(state).encode())
        written[partition] = (replicas[1], state["leader_epoch"])
    assert cluster.brokers[controller].stop() == 0
    cluster.brokers[controller].start()
    return written


@pytest.fixture
def rebalancing_cluster(tmp_path, zk_chroot):
    with Cluster(tmp_path, zk_chroot, size=4, overrides=REBALANCE_EVERY_SECOND) as cluster:
        yield cluster


@pytest.fixture
def static_cluster(tmp_path, zk_chroot):
    overrides = {"auto.leader.rebalance.enable": "false"}
    with Cluster(tmp_path, zk_chroot, size=4, overrides=overrides) as cluster:
        yield cluster


def test_the_controller_moves_leadership_back_to_the_preferred_replicas(rebalancing_cluster):
    cluster = rebalancing_cluster
    written = move_leaders_off_preferred(cluster)
    for broker_id in cluster.brokers:
        wait_until(
            lambda b=broker_id: leaders_of(cluster, b) == preferred(cluster),
            f"broker {broker_id} reports every partition led by its preferred replica",
        )
    for partition, (_, epoch) in written.items():
        state = cluster.partition_state(TOPIC, partition)
        assert state["leader_epoch"] == epoch + 1
        assert len(state["isr"]) == 3


def test_elect_leaders_moves_leadership_to_the_preferred_replicas(static_cluster):
    cluster = static_cluster
    written = move_leaders_off_preferred(cluster)
    controller = wait_until(cluster.controller_id, "a controller")
    wait_until(
        lambda: leaders_of(cluster, controller) == {p: lead for p, (lead, _) in written.items()},
        "the new controller serves the rewritten leaders",
    )
    every_partition = {"election_type": 0, "topic_partitions": None, "timeout_ms": 10000}
    bystander = next(b for b in cluster.brokers if b != controller)
    with cluster.connect(bystander) as connection:
        refused = connection.request(ApiKey.ELECT_LEADERS, None, every_partition)
    assert refused.error_code == ErrorCode.NOT_CONTROLLER

    with cluster.connect(controller) as connection:
        elected = connection.request(ApiKey.ELECT_LEADERS, None, every_partition)
        again = connection.request(
            ApiKey.ELECT_LEADERS,
            None,
            {
                "election_type": 0,
                "topic_partitions": [{"topic": TOPIC, "partitions": [0, 9]}],
                "timeout_ms": 10000,
            },
        )
    assert elected.error_code == ErrorCode.NONE
    ((topic, results),) = [(r.topic, r.partition_result) for r in elected.replica_election_results]
    assert topic == TOPIC
    assert {r.partition_id: r.error_code for r in results} == dict.fromkeys(range(4), 0)
    ((results,),) = [[r.partition_result for r in again.replica_election_results]]
    assert {r.partition_id: r.error_code for r in results} == {
        0: ErrorCode.ELECTION_NOT_NEEDED,
        9: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    for broker_id in cluster.brokers:
        wait_until(
            lambda b=broker_id: leaders_of(cluster, b) == preferred(cluster),
            f"broker {broker_id} reports every partition led by its preferred replica",
        )


def test_kafka_leader_election_tool_elects_the_preferred_replicas(static_cluster):
    cluster = static_cluster
    move_leaders_off_preferred(cluster)
    bootstrap = cluster.bootstrap
    result = run_kafka_tool(
        "kafka-leader-election",
        "--bootstrap-server",
        bootstrap,
        "--election-type",
        "preferred",
        "--all-topic-partitions",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    elected = ", ".join(f"{TOPIC}-{p}" for p in range(4))
    assert "Successfully completed leader election (PREFERRED) for partitions" in result.stdout
    assert sorted(result.stdout.split("partitions", 1)[1].strip().split(", ")) == sorted(
        elected.split(", ")
    )
    for broker_id in cluster.brokers:
        wait_until(
            lambda b=broker_id: leaders_of(cluster, b) == preferred(cluster),
            f"broker {broker_id} reports every partition led by its preferred replica",
        )


def test_a_restarted_broker_gets_its_preferred_leaderships_back(tmp_path, zk_chroot):
    """The real cycle: the broker stops (its partitions move away), restarts, catches up
    and rejoins the ISR (follower replication), then the rebalance hands its partitions
    back."""
    with Cluster(tmp_path, zk_chroot, size=3, overrides=REBALANCE_EVERY_SECOND) as cluster:
        cluster.create_topic(TOPIC, partitions=6, replication_factor=3)
        victim = next(b for b in cluster.brokers if b != cluster.controller_id())
        others = [b for b in cluster.brokers if b != victim]
        assert cluster.brokers[victim].stop() == 0
        wait_until(
            lambda: victim not in leaders_of(cluster, others[0]).values(),
            f"broker {victim} leads nothing",
        )
        cluster.brokers[victim].start()
        wait_until(
            lambda: all(victim in isr for _, _, isr in cluster.leaders(others[0], TOPIC).values()),
            f"broker {victim} is back in the ISR of every partition (needs replication)",
        )
        for broker_id in cluster.brokers:
            wait_until(
                lambda b=broker_id: leaders_of(cluster, b) == preferred(cluster),
                f"broker {broker_id} reports every partition led by its preferred replica",
            )
