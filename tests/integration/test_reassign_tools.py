"""``tidelog-reassign-partitions`` and ``tidelog-log-dirs`` against real brokers, as a
user types them (seed 003: 分区重分配, 修改主题限速; seed 000: JBOD): a broker emptied by a
generated plan executed with ``--wait`` while an idempotent acks=all producer writes;
throttles that stay until ``--verify`` removes them, on exactly the moving replicas;
a cancellation; a log dir drained and a replica moved back while producing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from integration.acked_writes import ContinuousProducer, assert_acknowledged_records_kept
from integration.cluster import Cluster
from integration.test_reassignment import fill, replica_dirs
from waiting import wait_until

pytestmark = pytest.mark.timeout(300)

THROTTLE_KEYS = {
    "broker": {"leader.replication.throttled.rate", "follower.replication.throttled.rate"},
    "topic": {"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"},
}
# Replaced replicas' files go after file.delete.delay.ms (a minute by default).
QUICK_DELETES = {"log.segment.delete.delay.ms": "500"}


def tool(module: str, cluster: Cluster, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            f"tidelog.cli.{module}",
            "--bootstrap-server",
            cluster.running_bootstrap,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def reassign(cluster: Cluster, *args: str) -> str:
    return ok(tool("reassign_partitions", cluster, *args))


def proposed_plan(output: str, path: Path) -> dict:
    """The JSON after "Proposed partition reassignment configuration", saved to ``path``."""
    lines = output.splitlines()
    plan = lines[lines.index("Proposed partition reassignment configuration") + 1]
    path.write_text(plan)
    return json.loads(plan)


def dynamic_config(cluster: Cluster, entity: str) -> dict[str, str]:
    """What ZooKeeper holds for ``brokers/<id>`` or ``topics/<name>``."""
    node = cluster.zk.exists(f"/config/{entity}")
    if node is None:
        return {}
    data, _ = cluster.zk.get(f"/config/{entity}")
    return json.loads(data).get("config", {})


def throttles(cluster: Cluster, topic: str) -> dict[str, dict[str, str]]:
    """The throttle configs set: per broker and for the topic."""
    found = {}
    for broker in cluster.brokers:
        config = dynamic_config(cluster, f"brokers/{broker}")
        found[f"broker {broker}"] = {
            k: v for k, v in config.items() if k in THROTTLE_KEYS["broker"]
        }
    config = dynamic_config(cluster, f"topics/{topic}")
    found[topic] = {k: v for k, v in config.items() if k in THROTTLE_KEYS["topic"]}
    return {k: v for k, v in found.items() if v}


def test_a_generated_plan_empties_a_broker_while_producing(tmp_path, zk_chroot):
    topic = "moving"
    with Cluster(tmp_path, zk_chroot, size=4, overrides=QUICK_DELETES) as cluster:
        cluster.create_topic(
            topic, partitions=6, replication_factor=3, configs={"min.insync.replicas": "2"}
        )
        on_broker_1 = sum(1 in r for r in cluster.assignment(topic).values())
        generated = tool("reassign_partitions", cluster, "--generate", "--remove-brokers", "1")
        plan = proposed_plan(ok(generated), tmp_path / "plan.json")
        # the planner moves each replica of broker 1, balancing what it moves
        assert "lower bound" in generated.stderr
        moved = {(p["topic"], p["partition"]) for p in plan["partitions"]}
        assert len(moved) >= on_broker_1 > 0
        with ContinuousProducer(cluster.bootstrap, topic, 6) as producer:
            producer.wait_for_more(300, "records acknowledged before the move")
            result = tool(
                "reassign_partitions",
                cluster,
                "--execute",
                "--reassignment-json-file",
                str(tmp_path / "plan.json"),
                "--throttle",
                "50000000",
                "--wait",
            )
            out = ok(result)
            producer.wait_for_more(300, "records acknowledged after the move")
        assert "Successfully started partition reassignments for" in out
        for name, partition in moved:
            assert f"Reassignment of partition {name}-{partition} is completed." in out
        assert "Clearing broker-level throttles on brokers 1,2,3,4" in out
        assert "100%" in result.stderr.splitlines()[-1]
        assignment = cluster.assignment(topic)
        assert all(1 not in replicas for replicas in assignment.values()), assignment
        wait_until(lambda: not replica_dirs(cluster, 1, topic), "broker 1's replicas deleted")
        assert throttles(cluster, topic) == {}
        assert_acknowledged_records_kept(cluster.bootstrap, producer, "after the move")


def test_throttles_stay_until_verify_and_a_cancel_restores_the_replicas(tmp_path, zk_chroot):
    topic = "throttled"
    with Cluster(tmp_path, zk_chroot, size=3, overrides=QUICK_DELETES) as cluster:
        cluster.create_topic(topic, assignment={0: [1], 1: [2]})
        fill(cluster, topic, 0, megabytes=4)
        plan = tmp_path / "plan.json"
        plan.write_text(
            json.dumps(
                {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [1, 3]}]}
            )
        )
        out = reassign(
            cluster, "--execute", "--reassignment-json-file", str(plan), "--throttle", "100000"
        )
        assert "The inter-broker throttle limit was set to 100000 B/s" in out
        # exactly the moving partition's replicas are throttled: the current one on the
        # leader side, the added one on the follower side; partition 1 is not
        assert throttles(cluster, topic) == {
            "broker 1": dict.fromkeys(THROTTLE_KEYS["broker"], "100000"),
            "broker 3": dict.fromkeys(THROTTLE_KEYS["broker"], "100000"),
            topic: {
                "leader.replication.throttled.replicas": "0:1",
                "follower.replication.throttled.replicas": "0:3",
            },
        }
        out = reassign(cluster, "--verify", "--reassignment-json-file", str(plan))
        assert f"Reassignment of partition {topic}-0 is still in progress." in out
        assert "Clearing" not in out and throttles(cluster, topic)
        assert reassign(cluster, "--list") == (
            f"Current partition reassignments:\n{topic}-0: replicas: 1,3. adding: 3.\n"
        )
        # raising the throttle of a reassignment in flight, as Kafka's --additional does
        reassign(
            cluster,
            "--execute",
            "--additional",
            "--reassignment-json-file",
            str(plan),
            "--throttle",
            "100000000",
        )
        wait_until(
            lambda: reassign(cluster, "--list") == "No partition reassignments found.\n",
            "the move done",
            timeout=60,
        )
        assert throttles(cluster, topic), "the throttles went before --verify"
        out = reassign(cluster, "--verify", "--reassignment-json-file", str(plan))
        assert f"Reassignment of partition {topic}-0 is completed." in out
        assert "Clearing broker-level throttles on brokers 1,2,3" in out
        assert f"Clearing topic-level throttles on topic {topic}" in out
        assert throttles(cluster, topic) == {}

        # a cancelled move: the original replicas come back, the copy goes, so do the throttles
        back = tmp_path / "back.json"
        back.write_text(
            json.dumps(
                {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [2]}]}
            )
        )
        reassign(
            cluster, "--execute", "--reassignment-json-file", str(back), "--throttle", "100000"
        )
        wait_until(lambda: replica_dirs(cluster, 2, topic) != [], "the copy started")
        out = reassign(cluster, "--cancel", "--reassignment-json-file", str(back))
        assert f"Successfully cancelled partition reassignment for: {topic}-0" in out
        assert cluster.assignment(topic) == {0: [1, 3], 1: [2]}
        assert throttles(cluster, topic) == {}
        wait_until(
            lambda: [d.name for d in replica_dirs(cluster, 2, topic)] == [f"{topic}-1"],
            "broker 2's copy of partition 0 deleted",
        )
        out = reassign(cluster, "--verify", "--reassignment-json-file", str(back))
        assert (
            f"There is no active reassignment of partition {topic}-0, but replica set is 1,3 "
            "rather than 2." in out
        )


def test_bad_input_is_one_line_and_exit_1(cluster, tmp_path):
    cluster.create_topic("checked", assignment={0: [1, 2]})
    plan = tmp_path / "plan.json"
    cases = {
        '{"version":1,"partitions":[{"topic":"checked","partition":0,"replicas":[1,9]}]}': (
            "Error: Unknown broker id 9"
        ),
        '{"version":1,"partitions":[{"topic":"checked","partition":0,"replicas":[1,1]}]}': (
            "Error: Duplicate replica assignment found: checked-0 -> 1,1"
        ),
        '{"version":1,"partitions":[{"topic":"checked","partition":5,"replicas":[1]}]}': (
            "Error: Unable to find partition: checked-5"
        ),
        "not json": "Error: the reassignment file is not valid JSON",
    }
    for text, error in cases.items():
        plan.write_text(text)
        result = tool(
            "reassign_partitions", cluster, "--execute", "--reassignment-json-file", str(plan)
        )
        assert result.returncode == 1, result
        assert result.stderr.startswith(error) and result.stderr.count("\n") == 1, result.stderr
    result = tool("reassign_partitions", cluster, "--generate", "--remove-brokers", "1,2,3")
    assert result.returncode == 1
    assert result.stderr == "Error: no broker would be left to hold the replicas\n"
    assert cluster.assignment("checked") == {0: [1, 2]}


def test_a_log_dir_drained_and_a_replica_moved_back_while_producing(tmp_path, zk_chroot):
    topic = "held"
    with Cluster(tmp_path, zk_chroot, size=2, overrides=QUICK_DELETES) as cluster:
        cluster.create_topic(topic, partitions=4, replication_factor=2)
        broker = cluster.brokers[2]
        draining, staying = (str(d.resolve()) for d in broker.log_dirs)

        def held_in(directory: str) -> set[str]:
            return {p.name for p in Path(directory).iterdir() if p.name.startswith(f"{topic}-")}

        assert held_in(draining), "the placement put nothing in the first dir"
        with ContinuousProducer(cluster.bootstrap, topic, 4) as producer:
            producer.wait_for_more(2000, "records before the drain")
            drained = tool(
                "log_dirs", cluster, "--drain", "--broker", "2", "--log-dir", draining, "--wait"
            )
            out = ok(drained)
            assert f"Log dir {draining} of broker 2 is draining" in out and out.endswith("Done\n")
            assert "100%" in drained.stderr
            wait_until(lambda: not held_in(draining), "the replaced replicas deleted")
            summary = ok(tool("log_dirs", cluster, "--describe", "--summary", "--broker-list", "2"))
            rows = {line.split()[1]: line.split() for line in summary.splitlines()[3:]}
            assert rows[draining][2:4] == ["draining", "0"]
            assert rows[staying][2:4] == ["online", "4"]
            cluster.create_topic("later", partitions=3, replication_factor=2)
            assert not any(p.name.startswith("later-") for p in Path(draining).iterdir())

            ok(tool("log_dirs", cluster, "--undrain", "--broker", "2", "--log-dir", draining))
            moved = f"{topic}-0"
            out = ok(
                tool(
                    "log_dirs",
                    cluster,
                    "--move",
                    "--broker",
                    "2",
                    "--partitions",
                    moved,
                    "--log-dir",
                    draining,
                    "--wait",
                )
            )
            assert f"Started moving replica {moved}-2 to {draining}" in out
            wait_until(lambda: held_in(draining) == {moved}, "the replica moved back")
            producer.wait_for_more(2000, "records after the moves")
        assert_acknowledged_records_kept(cluster.bootstrap, producer, "after the moves")
