"""Apache Kafka's own data-movement tools against tidelog brokers, each printing what it
prints against Kafka: ``kafka-reassign-partitions.sh`` (generate, execute with a
throttle and a log-dir move, verify removing the throttles, cancel, list),
``kafka-topics.sh --describe`` during a reassignment and ``kafka-log-dirs.sh``, whose
JSON equals ``tidelog-log-dirs``'s. (``kafka-leader-election.sh`` is in
``test_preferred_leader.py``.)"""

from __future__ import annotations

import json

from integration.cluster import Cluster
from integration.test_reassign_tools import QUICK_DELETES, throttles, tool
from integration.test_reassignment import fill, replica_dirs
from kafka_reference.tools import run_kafka_tool
from waiting import wait_until

TOPIC = "kmoved"


def ok(result) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def kafka_reassign(cluster: Cluster, *args: str) -> str:
    return ok(
        run_kafka_tool(
            "kafka-reassign-partitions", "--bootstrap-server", cluster.running_bootstrap, *args
        )
    )


def test_kafka_reassign_partitions_moves_throttled_and_verifies(tmp_path, zk_chroot):
    with Cluster(tmp_path, zk_chroot, size=4, overrides=QUICK_DELETES) as cluster:
        cluster.create_topic(TOPIC, assignment={0: [1, 2], 1: [2, 1], 2: [3, 4]})
        fill(cluster, TOPIC, 0, megabytes=3)
        topics = tmp_path / "topics.json"
        topics.write_text(json.dumps({"version": 1, "topics": [{"topic": TOPIC}]}))
        generated = kafka_reassign(
            cluster,
            "--generate",
            "--topics-to-move-json-file",
            str(topics),
            "--broker-list",
            "2,3,4",
        )
        lines = generated.splitlines()
        proposed = json.loads(
            lines[lines.index("Proposed partition reassignment configuration") + 1]
        )
        assert all(1 not in p["replicas"] for p in proposed["partitions"]), proposed

        # move partition 0 off broker 1, throttled; partition 2's replica on broker 3
        # changes log dir in the same file
        (log_dir,) = [d for d in cluster.brokers[3].log_dirs if not (d / f"{TOPIC}-2").exists()]
        plan = tmp_path / "plan.json"
        plan.write_text(
            json.dumps(
                {
                    "version": 1,
                    "partitions": [
                        {
                            "topic": TOPIC,
                            "partition": 0,
                            "replicas": [3, 2],
                            "log_dirs": ["any", "any"],
                        },
                        {
                            "topic": TOPIC,
                            "partition": 2,
                            "replicas": [3, 4],
                            "log_dirs": [str(log_dir.resolve()), "any"],
                        },
                    ],
                }
            )
        )
        out = kafka_reassign(
            cluster, "--execute", "--reassignment-json-file", str(plan), "--throttle", "300000"
        )
        assert "The inter-broker throttle limit was set to 300000 B/s" in out
        assert f"Successfully started partition reassignments for {TOPIC}-0,{TOPIC}-2" in out
        assert f"Successfully started moving log directory to {log_dir.resolve()}" in out
        assert throttles(cluster, TOPIC)[TOPIC] == {
            "leader.replication.throttled.replicas": "0:1,0:2,2:3,2:4",
            "follower.replication.throttled.replicas": "0:3",
        }

        # kafka-topics.sh shows the reassignment in flight
        described = ok(
            run_kafka_tool(
                "kafka-topics",
                "--bootstrap-server",
                cluster.running_bootstrap,
                "--describe",
                "--topic",
                TOPIC,
            )
        )
        (row,) = [line for line in described.splitlines() if "Partition: 0\t" in line]
        assert "Replicas: 3,2,1\t" in row and "Adding Replicas: 3\t" in row, row
        assert "Removing Replicas: 1" in row, row
        listed = f"{TOPIC}-0: replicas: 3,2,1. adding: 3. removing: 1."
        assert kafka_reassign(cluster, "--list") == f"Current partition reassignments:\n{listed}\n"

        def verified() -> str | None:
            out = kafka_reassign(cluster, "--verify", "--reassignment-json-file", str(plan))
            return out if "in progress" not in out else None

        out = wait_until(verified, "kafka-reassign-partitions --verify says done", timeout=90)
        assert f"Reassignment of partition {TOPIC}-0 is completed." in out
        assert f"Reassignment of replica {TOPIC}-2-3 completed successfully." in out
        assert "Clearing broker-level throttles on brokers 1,2,3,4" in out
        assert throttles(cluster, TOPIC) == {}
        assert cluster.assignment(TOPIC)[0] == [3, 2]
        assert (log_dir / f"{TOPIC}-2").is_dir()
        wait_until(
            lambda: f"{TOPIC}-0" not in {d.name for d in replica_dirs(cluster, 1, TOPIC)},
            "broker 1's copy deleted",
        )

        # a throttled move cancelled by Kafka's tool: the replicas are as they were
        back = tmp_path / "back.json"
        back.write_text(
            json.dumps(
                {"version": 1, "partitions": [{"topic": TOPIC, "partition": 0, "replicas": [1, 4]}]}
            )
        )
        kafka_reassign(
            cluster, "--execute", "--reassignment-json-file", str(back), "--throttle", "100000"
        )
        out = kafka_reassign(cluster, "--cancel", "--reassignment-json-file", str(back))
        assert f"Successfully cancelled partition reassignment for: {TOPIC}-0" in out
        assert cluster.assignment(TOPIC)[0] == [3, 2]
        assert throttles(cluster, TOPIC) == {}
        assert kafka_reassign(cluster, "--list") == "No partition reassignments found.\n"


def test_kafka_log_dirs_prints_what_tidelog_log_dirs_prints(cluster):
    cluster.create_topic("dirs", partitions=3, replication_factor=2)
    fill(cluster, "dirs", 1, megabytes=1)

    def parsed(output: str) -> dict:
        lines = output.splitlines()
        assert lines[0] == "Querying brokers for log directories information"
        assert lines[1] == "Received log directory information from brokers 1,2,3"
        document = json.loads(lines[2])
        for broker in document["brokers"]:
            broker["logDirs"].sort(key=lambda d: d["logDir"])
            for log_dir in broker["logDirs"]:
                log_dir["partitions"].sort(key=lambda p: p["partition"])
        return document

    args = ("--describe", "--topic-list", "dirs")
    kafka = parsed(
        ok(run_kafka_tool("kafka-log-dirs", "--bootstrap-server", cluster.running_bootstrap, *args))
    )
    ours = parsed(ok(tool("log_dirs", cluster, *args)))
    assert ours == kafka
    sizes = [
        p["size"]
        for b in ours["brokers"]
        for d in b["logDirs"]
        for p in d["partitions"]
        if p["partition"] == "dirs-1"
    ]
    assert len(sizes) == 2 and min(sizes) > 1_000_000
