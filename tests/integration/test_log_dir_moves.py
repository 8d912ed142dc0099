"""Moves of replicas between the log dirs of one broker (AlterReplicaLogDirs) and the
draining of a log dir (``log.dirs.draining``), on real brokers with two log dirs each
while an acks=all producer writes: during a move, across a restart and a kill -9 in the
middle of one, the replica ends up in the target dir only, holding the leader's bytes."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

from integration.acked_writes import ContinuousProducer, assert_acknowledged_records_kept
from integration.cluster import Cluster
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from waiting import wait_until

TOPIC = "moving"
# The replaced replica's files go after file.delete.delay.ms (a minute by default).
OVERRIDES = {"log.segment.delete.delay.ms": "500"}


def alter_log_dir(cluster: Cluster, broker_id: int, partition: int, target: Path) -> int:
    body = {"dirs": [{"path": str(target), "topics": [{"name": TOPIC, "partitions": [partition]}]}]}
    with cluster.connect(broker_id) as connection:
        response = connection.request(ApiKey.ALTER_REPLICA_LOG_DIRS, None, body)
    return response.results[0].partitions[0].error_code


def placement(cluster: Cluster, broker_id: int, topic: str = TOPIC) -> dict[tuple, str]:
    """(partition, is_future) → the log dir that holds it, from DescribeLogDirs."""
    body = {"topics": None}
    with cluster.connect(broker_id) as connection:
        response = connection.request(ApiKey.DESCRIBE_LOG_DIRS, None, body)
    found = {}
    for result in response.results:
        assert result.error_code == ErrorCode.NONE
        for entry in result.topics:
            if entry.name == topic:
                for p in entry.partitions:
                    found[(p.partition_index, p.is_future_key)] = result.log_dir
    return found


def lives_only_in(cluster: Cluster, broker_id: int, target: Path, partitions=(0,)) -> bool:
    where = placement(cluster, broker_id)
    wanted = {(p, False): str(target.resolve()) for p in partitions}
    on_disk = [d for d in target.parent.glob(f"*/{TOPIC}-*") if d.is_dir()]
    return where == wanted and all(d.parent == target for d in on_disk)


def other_dir(broker, partition: int = 0) -> Path:
    (current,) = [d for d in broker.log_dirs if (d / f"{TOPIC}-{partition}").is_dir()]
    (other,) = [d for d in broker.log_dirs if d != current]
    return other


def replica_bytes(broker, partition: int = 0) -> bytes:
    (directory,) = [
        d / f"{TOPIC}-{partition}" for d in broker.log_dirs if (d / f"{TOPIC}-{partition}").is_dir()
    ]
    return b"".join(path.read_bytes() for path in sorted(directory.glob("*.log")))


def test_moves_while_producing_across_a_kill_and_a_restart(tmp_path, zk_chroot):
    with Cluster(tmp_path, zk_chroot, size=2, overrides=OVERRIDES) as cluster:
        cluster.create_topic(TOPIC, assignment={0: [2, 1]}, configs={"segment.bytes": "65536"})
        leader, follower = cluster.brokers[2], cluster.brokers[1]
        with ContinuousProducer(cluster.bootstrap, TOPIC, 1) as producer:
            producer.wait_for_more(3000, "records before the first move")
            # the leader's replica moves while it takes appends
            target = other_dir(leader)
            assert alter_log_dir(cluster, 2, 0, target) == ErrorCode.NONE
            wait_until(lambda: lives_only_in(cluster, 2, target), "the leader's replica moved")
            producer.wait_for_more(2000, "records after the leader's move")

            # kill -9 in the middle of the follower's move: it resumes after the restart
            target = other_dir(follower)
            assert alter_log_dir(cluster, 1, 0, target) == ErrorCode.NONE
            follower.kill()
            producer.wait_for_more(1000, "records while the follower is down")
            follower.start()
            wait_until(
                lambda: lives_only_in(cluster, 1, target), "the follower's move done", timeout=60
            )

            # a restart in the middle of a move: the broker stopped while the future
            # replica had only the first segment of the current one
            follower.stop()
            source, target = target, other_dir(follower)
            future = target / f"{TOPIC}-0.{uuid.uuid4().hex}-future"
            future.mkdir()
            first = min((source / f"{TOPIC}-0").glob("*.log"))
            shutil.copy(first, future / first.name)
            follower.start()
            wait_until(
                lambda: lives_only_in(cluster, 1, target), "the resumed move done", timeout=60
            )
            producer.wait_for_more(2000, "records after the moves")
        assert_acknowledged_records_kept(cluster.bootstrap, producer, "after the moves")
        wait_until(
            lambda: replica_bytes(follower) == replica_bytes(leader),
            "the moved follower holds the leader's bytes",
        )


def test_a_draining_dir_takes_no_partition_and_empties_while_producing(tmp_path, zk_chroot):
    with Cluster(tmp_path, zk_chroot, size=1, overrides=OVERRIDES) as cluster:
        broker = cluster.brokers[1]
        draining, staying = broker.log_dirs
        cluster.create_topic(TOPIC, partitions=6, replication_factor=1)
        assert any(p == str(draining.resolve()) for p in placement(cluster, 1).values())
        with ContinuousProducer(cluster.bootstrap, TOPIC, 6) as producer:
            producer.wait_for_more(3000, "records before draining")
            assert set_draining(cluster, "/nowhere") == ErrorCode.INVALID_REQUEST  # as Kafka
            assert set_draining(cluster, str(draining)) == ErrorCode.NONE
            wait_until(
                lambda: lives_only_in(cluster, 1, staying, range(6)),
                "the draining dir emptied",
                timeout=60,
            )
            producer.wait_for_more(2000, "records after draining")
        assert_acknowledged_records_kept(cluster.bootstrap, producer, "after draining")
        cluster.create_topic("later", partitions=4, replication_factor=1)
        assert set(placement(cluster, 1, "later").values()) == {str(staying.resolve())}


def test_a_dir_removed_after_draining_leaves_the_other_dynamic_configs_in_force(
    tmp_path, zk_chroot
):
    """A drained dir is then taken out of log.dirs and the broker restarted (what a disk
    removal does): the ``log.dirs.draining`` entry that names it is stale. The broker
    drops it with a warning and keeps its other dynamic configs; before, the entry failed
    validation and the broker ignored every dynamic config it had. The next change of
    its configs is accepted and takes the entry out of ZooKeeper; before, the entry
    failed that change (the e2e scale-up after a disk removal could not set its
    throttle)."""
    with Cluster(tmp_path, zk_chroot, size=1, overrides=OVERRIDES) as cluster:
        broker = cluster.brokers[1]
        removed, staying = broker.log_dirs
        rate = "1048576"
        assert set_draining(cluster, str(removed), {THROTTLE_RATE: rate}) == ErrorCode.NONE
        broker.stop()
        properties = broker.config_path.read_text()
        assert f"{removed},{staying}" in properties
        broker.config_path.write_text(properties.replace(f"{removed},", ""))
        broker.start()
        assert broker_config(cluster, THROTTLE_RATE) == (rate, DYNAMIC_BROKER_CONFIG)
        assert broker_config(cluster, "log.dirs.draining") == ("", DYNAMIC_BROKER_CONFIG)
        assert f"log.dirs.draining: ['{removed}'] not among log.dirs any more" in broker.log()
        # another change (the operator's throttle of a scale-up) is accepted, and the
        # stale entry goes from ZooKeeper with it; the dir cannot be set again
        faster = str(2 * int(rate))
        assert alter_broker(cluster, {THROTTLE_RATE: faster}) == ErrorCode.NONE
        stored = json.loads(cluster.zk.get("/config/brokers/1")[0])["config"]
        assert stored == {THROTTLE_RATE: faster, "log.dirs.draining": ""}
        assert set_draining(cluster, str(removed)) == ErrorCode.INVALID_REQUEST


THROTTLE_RATE = "leader.replication.throttled.rate"
DYNAMIC_BROKER_CONFIG = 2  # DescribeConfigs' config_source


def set_draining(cluster: Cluster, value: str, others: dict[str, str] | None = None) -> int:
    """IncrementalAlterConfigs (SET) of broker 1's ``log.dirs.draining``, and ``others``."""
    return alter_broker(cluster, {"log.dirs.draining": value, **(others or {})})


def alter_broker(cluster: Cluster, changes: dict[str, str]) -> int:
    """IncrementalAlterConfigs (SET) of broker 1's ``changes``; the error code."""
    body = {
        "resources": [
            {
                "resource_type": 4,
                "resource_name": "1",
                "configs": [
                    {"name": k, "config_operation": 0, "value": v} for k, v in changes.items()
                ],
            }
        ],
        "validate_only": False,
    }
    with cluster.connect(1) as connection:
        response = connection.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)
    return response.responses[0].error_code


def broker_config(cluster: Cluster, name: str) -> tuple[str, int]:
    """Broker 1's value in force for ``name`` and its source (DescribeConfigs)."""
    body = {"resources": [{"resource_type": 4, "resource_name": "1", "configuration_keys": [name]}]}
    with cluster.connect(1) as connection:
        (result,) = connection.request(ApiKey.DESCRIBE_CONFIGS, 1, body).results
    (entry,) = result.configs
    return entry.value, entry.config_source
