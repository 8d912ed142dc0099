"""``tidelog-topics`` and ``tidelog-leader-election`` against three real brokers: topics
created, listed, described (the same lines as Kafka's ``kafka-topics.sh`` prints for
them), altered and deleted; the describe filters while a broker is stopped; a preferred
election bringing leaderships back to a restarted broker (seed 000: 首选首领), and an
unclean election of a partition whose in-sync replica is gone."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from integration.cluster import Cluster
from kafka_reference.tools import run_kafka_tool
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from waiting import wait_until

STATIC = {"auto.leader.rebalance.enable": "false"}


@pytest.fixture
def static_cluster(tmp_path, zk_chroot):
    """Three brokers that never move leaderships back on their own."""
    with Cluster(tmp_path, zk_chroot, size=3, overrides=STATIC) as cluster:
        yield cluster


def tool(module: str, bootstrap: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", f"tidelog.cli.{module}", "--bootstrap-server", bootstrap, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def topics(cluster: Cluster, *args: str) -> subprocess.CompletedProcess:
    return tool("topics", cluster.running_bootstrap, *args)


def election(cluster: Cluster, *args: str) -> subprocess.CompletedProcess:
    return tool("leader_election", cluster.running_bootstrap, *args)


def kafka_topics(cluster: Cluster, *args: str) -> subprocess.CompletedProcess:
    return run_kafka_tool("kafka-topics", "--bootstrap-server", cluster.running_bootstrap, *args)


def ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def failed(result: subprocess.CompletedProcess) -> str:
    """The one error line of a failed run."""
    assert result.returncode == 1, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


def leaders(cluster: Cluster, topic: str) -> dict[int, int]:
    broker = cluster.running[0]
    return {p: leader for p, (leader, _, _) in cluster.leaders(broker, topic).items()}


def in_sync(cluster: Cluster, topic: str) -> bool:
    """Every running broker reports every replica of the topic in sync."""
    assignment = cluster.assignment(topic)
    return all(
        cluster.leaders(b, topic)[p][2] == sorted(r)
        for b in cluster.running
        for p, r in assignment.items()
    )


def test_create_list_describe_alter_delete(cluster):
    created = topics(
        cluster,
        "--create",
        "--topic",
        "orders",
        "--partitions",
        "3",
        "--replication-factor",
        "3",
        "--config",
        "min.insync.replicas=2",
    )
    assert ok(created) == "Created topic orders.\n"
    assert "already exists" in failed(topics(cluster, "--create", "--topic", "orders"))
    assert ok(topics(cluster, "--create", "--topic", "orders", "--if-not-exists")) == ""
    dotted = topics(cluster, "--create", "--topic", "a.b", "--replica-assignment", "1:2,2:3")
    assert ok(dotted) == "Created topic a.b.\n"
    assert dotted.stderr.startswith("WARNING: Due to limitations in metric names")
    assert cluster.assignment("a.b") == {0: [1, 2], 1: [2, 3]}
    assert "Partition replica lists may not contain duplicate entries: 1" in failed(
        topics(cluster, "--create", "--topic", "dup", "--replica-assignment", "1:1")
    )

    assert ok(topics(cluster, "--list")) == "a.b\norders\n"
    assert ok(topics(cluster, "--list", "--topic", "ord.*")) == "orders\n"
    assert ok(topics(cluster, "--list", "--topic", "a.b,nothing")) == "a.b\n"

    wait_until(lambda: in_sync(cluster, "orders"), "every replica of orders is in sync")
    described = ok(topics(cluster, "--describe", "--topic", "orders"))
    lines = described.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("Topic: orders\tTopicId: ")
    assert lines[0].endswith(
        "\tPartitionCount: 3\tReplicationFactor: 3\tConfigs: min.insync.replicas=2"
    )
    for partition, line in enumerate(lines[1:]):
        replicas = ",".join(map(str, cluster.assignment("orders")[partition]))
        assert line.startswith(f"\tTopic: orders\tPartition: {partition}\tLeader: ")
        assert f"\tReplicas: {replicas}\tIsr: " in line
        assert line.endswith("\tElr: N/A\tLastKnownElr: N/A")
    assert described == ok(kafka_topics(cluster, "--describe", "--topic", "orders"))

    assert ok(topics(cluster, "--alter", "--topic", "orders", "--partitions", "4")) == ""
    wait_until(lambda: len(leaders(cluster, "orders")) == 4, "orders has 4 partitions")
    assert "Topic currently has 4 partitions" in failed(
        topics(cluster, "--alter", "--topic", "orders", "--partitions", "2")
    )
    altered = topics(cluster, "--alter", "--topic", "orders", "--config", "retention.ms=60000")
    assert ok(altered) == "Completed updating config for topic orders.\n"
    head = ok(topics(cluster, "--describe", "--topic", "orders")).splitlines()[0]
    assert "\tPartitionCount: 4\t" in head
    assert head.endswith("Configs: min.insync.replicas=2,retention.ms=60000")
    ok(topics(cluster, "--alter", "--topic", "orders", "--delete-config", "min.insync.replicas"))
    head = ok(topics(cluster, "--describe", "--topic", "orders")).splitlines()[0]
    assert head.endswith("Configs: retention.ms=60000")
    assert ok(topics(cluster, "--describe", "--topics-with-overrides")).startswith(
        "Topic: orders\t"
    )
    assert failed(topics(cluster, "--alter", "--topic", "nope", "--partitions", "2")) == (
        "Error: Topic 'nope' does not exist as expected"
    )
    assert (
        ok(topics(cluster, "--alter", "--topic", "nope", "--partitions", "2", "--if-exists")) == ""
    )

    assert ok(topics(cluster, "--delete", "--topic", "orders")) == ""
    assert ok(topics(cluster, "--list")) == "a.b\n"
    assert failed(topics(cluster, "--describe", "--topic", "orders")) == (
        "Error: Topic 'orders' does not exist as expected"
    )
    assert ok(topics(cluster, "--delete", "--topic", "orders", "--if-exists")) == ""


def test_describe_filters_then_a_preferred_election_after_a_restart(static_cluster):
    cluster = static_cluster
    ok(
        topics(
            cluster,
            "--create",
            "--topic",
            "filtered",
            "--replica-assignment",
            "1:2,2:3,3:1",
            "--config",
            "min.insync.replicas=2",
        )
    )
    ok(topics(cluster, "--create", "--topic", "solo", "--replica-assignment", "3"))
    wait_until(lambda: in_sync(cluster, "filtered"), "every replica of filtered is in sync")
    for report in (
        "--under-replicated-partitions",
        "--unavailable-partitions",
        "--under-min-isr-partitions",
    ):
        assert ok(topics(cluster, "--describe", report)) == ""

    assert cluster.brokers[3].stop() == 0
    wait_until(lambda: leaders(cluster, "solo") == {0: -1}, "solo has no leader")
    wait_until(
        lambda: all(3 not in isr for _, _, isr in cluster.leaders(1, "filtered").values()),
        "broker 3 left every ISR of filtered",
    )
    under = ok(
        topics(cluster, "--describe", "--under-replicated-partitions", "--topic", "filtered")
    )
    assert [line.split("\t")[2] for line in under.splitlines()] == ["Partition: 1", "Partition: 2"]
    assert under == ok(
        kafka_topics(cluster, "--describe", "--under-replicated-partitions", "--topic", "filtered")
    )
    unavailable = ok(topics(cluster, "--describe", "--unavailable-partitions"))
    assert (
        unavailable == "\tTopic: solo\tPartition: 0\tLeader: none\tReplicas: 3\tIsr: 3"
        "\tElr: N/A\tLastKnownElr: N/A\n"
    )
    assert unavailable == ok(kafka_topics(cluster, "--describe", "--unavailable-partitions"))
    under_min = ok(topics(cluster, "--describe", "--under-min-isr-partitions"))
    assert [tuple(line.split("\t")[1:3]) for line in under_min.splitlines()] == [
        ("Topic: filtered", "Partition: 1"),
        ("Topic: filtered", "Partition: 2"),
        ("Topic: solo", "Partition: 0"),
    ]
    at_min = ok(topics(cluster, "--describe", "--at-min-isr-partitions", "--topic", "filtered"))
    assert [line.split("\t")[2] for line in at_min.splitlines()] == ["Partition: 0"]

    cluster.brokers[3].start()
    wait_until(lambda: in_sync(cluster, "filtered"), "broker 3 is back in every ISR")
    wait_until(lambda: leaders(cluster, "solo") == {0: 3}, "solo is led by broker 3 again")
    assert leaders(cluster, "filtered") == {0: 1, 1: 2, 2: 1}
    elected = election(cluster, "--election-type", "preferred", "--all-topic-partitions")
    assert (
        ok(elected)
        == "Successfully completed leader election (PREFERRED) for partitions filtered-2\n"
    )
    wait_until(lambda: leaders(cluster, "filtered") == {0: 1, 1: 2, 2: 3}, "preferred leaders")
    assert ok(election(cluster, "--election-type", "preferred", "--all-topic-partitions")) == ""
    one = election(
        cluster, "--election-type", "PREFERRED", "--topic", "filtered", "--partition", "0"
    )
    assert ok(one) == "Valid replica already elected for partitions filtered-0\n"


def test_elections_from_a_json_file_and_unclean(static_cluster, tmp_path):
    cluster = static_cluster
    ok(topics(cluster, "--create", "--topic", "fragile", "--replica-assignment", "1:2"))
    wait_until(lambda: in_sync(cluster, "fragile"), "both replicas of fragile are in sync")
    plan = tmp_path / "election.json"
    plan.write_text(
        json.dumps(
            {
                "partitions": [
                    {"topic": "fragile", "partition": 0},
                    {"topic": "gone", "partition": 0},
                ]
            }
        )
    )
    result = election(cluster, "--election-type", "preferred", "--path-to-json-file", str(plan))
    assert result.stdout.splitlines() == [
        "Valid replica already elected for partitions fragile-0",
        "Error completing leader election (PREFERRED) for partition: gone-0: "
        "UNKNOWN_TOPIC_OR_PARTITION: The partition does not exist.",
    ]
    assert failed(result) == "Error: 1 replica(s) could not be elected"

    # Broker 2 leaves the ISR, then broker 1, the last in-sync replica, stops too: with
    # unclean elections disabled, broker 2 coming back does not lead.
    assert cluster.brokers[2].stop() == 0
    wait_until(lambda: cluster.partition_state("fragile", 0)["isr"] == [1], "ISR [1]")
    assert cluster.brokers[1].stop() == 0
    cluster.brokers[2].start()
    wait_until(lambda: 2 in cluster.registered(), "broker 2 is registered again")
    wait_until(lambda: leaders(cluster, "fragile") == {0: -1}, "fragile has no leader")
    refused = election(
        cluster, "--election-type", "preferred", "--topic", "fragile", "--partition", "0"
    )
    assert refused.stdout.startswith(
        "Error completing leader election (PREFERRED) for partition: fragile-0: "
        "PREFERRED_LEADER_NOT_AVAILABLE"
    )
    assert failed(refused) == "Error: 1 replica(s) could not be elected"

    unclean = election(
        cluster, "--election-type", "unclean", "--topic", "fragile", "--partition", "0"
    )
    assert (
        ok(unclean) == "Successfully completed leader election (UNCLEAN) for partitions fragile-0\n"
    )
    wait_until(lambda: leaders(cluster, "fragile") == {0: 2}, "broker 2 leads fragile")
    assert ok(election(cluster, "--election-type", "unclean", "--all-topic-partitions")) == ""


def test_describe_shows_a_reassignment_in_progress(cluster):
    """A replica is added on a paused broker (SIGSTOP right before the request, well
    within its ZooKeeper session), so the reassignment stays in progress until it
    resumes."""
    controller = wait_until(cluster.controller_id, "a controller")
    kept, added = [b for b in cluster.brokers if b != controller][:2]
    ok(topics(cluster, "--create", "--topic", "moving", "--replica-assignment", str(kept)))
    paused = cluster.brokers[added].process
    paused.send_signal(signal.SIGSTOP)
    try:
        with cluster.connect(controller) as connection:
            response = connection.request(
                ApiKey.ALTER_PARTITION_REASSIGNMENTS,
                None,
                {
                    "timeout_ms": 10000,
                    "topics": [
                        {
                            "name": "moving",
                            "partitions": [{"partition_index": 0, "replicas": [kept, added]}],
                        }
                    ],
                },
            )
        assert response.error_code == ErrorCode.NONE
        assert [p.error_code for t in response.responses for p in t.partitions] == [0]
        others = ",".join(cluster.brokers[b].bootstrap for b in cluster.brokers if b != added)
        described = ok(tool("topics", others, "--describe", "--topic", "moving"))
        lines = described.splitlines()
        assert "\tReplicationFactor: 1\t" in lines[0]
        assert lines[1].startswith(
            f"\tTopic: moving\tPartition: 0\tLeader: {kept}\tReplicas: {kept},{added}\tIsr: {kept}"
            f"\tAdding Replicas: {added}\tRemoving Replicas: \t"
        )
        assert ok(tool("topics", others, "--describe", "--under-replicated-partitions")) == ""
        assert described == ok(
            run_kafka_tool(
                "kafka-topics", "--bootstrap-server", others, "--describe", "--topic", "moving"
            )
        )
    finally:
        paused.send_signal(signal.SIGCONT)
    wait_until(lambda: in_sync(cluster, "moving"), "the added replica is in sync")
    wait_until(
        lambda: "Adding" not in ok(topics(cluster, "--describe", "--topic", "moving")),
        "the reassignment is done",
    )
