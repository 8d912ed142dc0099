"""The Cluster's status from one pass's snapshot and outcome (pure): what the brokers tell
is reported only when they answered, so a client waiting for
``underReplicatedPartitions == 0`` never takes an unreachable cluster for a healthy
one; each broker's replicas are counted off the assignment; and every reason of the
Cluster's four conditions comes from some row of one table."""

from __future__ import annotations

import pytest

from kube_operator.cluster_values import (
    HEALTHY_BROKERS,
    READY,
    SPEC,
    answer,
    outcome,
    partition,
    snapshot,
)
from tidelog_operator.broker_config import CheckedConfig
from tidelog_operator.cluster.disks import VolumeAction, VolumeDecision
from tidelog_operator.cluster.roll_step import RollStep
from tidelog_operator.cluster.rolling import RollAction, RollDecision
from tidelog_operator.cluster.scale_step import ScaleStep
from tidelog_operator.cluster.scaling import ScaleAction, ScaleDecision
from tidelog_operator.cluster.status import cluster_status
from tidelog_operator.cluster.volume_step import VolumeStep
from tidelog_operator.conditions import Reason


def condition(status: dict, type_: str) -> tuple[str, str, str]:
    (found,) = [c for c in status["conditions"] if c["type"] == type_]
    return found["status"], found["reason"], found["message"]


def test_a_failed_dir_is_named_then_an_unreachable_cluster_reports_no_counts():
    short = [partition(p, isr=(0,)) for p in range(3)]
    failed = snapshot(answer(short, failed={1: "KAFKA_STORAGE_ERROR"}))
    status = cluster_status({"spreadBrokers": 3}, failed, SPEC, outcome(), generation=1, now="t1")
    assert status["underReplicatedPartitions"] == 3 and status["offlinePartitions"] == 0
    assert condition(status, "Degraded") == (
        "True",
        "LogDirOffline",
        "offline log dirs: broker 1: /var/lib/tidelog/data-0",
    )
    assert condition(status, "Ready")[0] == "True"
    assert [(b["id"], b["replicas"]) for b in status["brokers"]] == [(0, 3), (1, 3)]
    assert status["brokers"][1]["logDirs"][0]["error"] == "KAFKA_STORAGE_ERROR"
    assert "spreadBrokers" not in status  # counted off the assignment now

    unreachable = snapshot(None)
    status = cluster_status(status, unreachable, SPEC, outcome(), generation=1, now="t2")
    assert "underReplicatedPartitions" not in status and "offlinePartitions" not in status
    assert "controller" not in status
    assert all("replicas" not in b for b in status["brokers"])
    assert condition(status, "Degraded")[:2] == ("True", "LogDirOffline")  # as last seen
    assert condition(status, "Ready")[:2] == ("False", "BrokersNotReady")

    healthy = snapshot(answer([partition(0), partition(1, (1, 0), leader=1)], controller=1))
    status = cluster_status(status, healthy, SPEC, outcome(), generation=1, now="t3")
    assert status["underReplicatedPartitions"] == 0 and status["controller"] == 1
    assert condition(status, "Degraded")[:2] == ("False", "Healthy")
    assert [(b["id"], b["replicas"]) for b in status["brokers"]] == [(0, 2), (1, 2)]


def scaled(action: ScaleAction, brokers=(), reason="", progressing=False) -> ScaleStep:
    return ScaleStep(ScaleDecision(action, tuple(brokers), reason, progressing))


def row(type_, holds, reason, seen=None, current=None, **steps):
    """One pass (``seen`` defaults to two healthy brokers, ``current`` to a Cluster that
    was Ready before, the steps to nothing to do) and the condition it should leave."""
    return pytest.param(
        type_,
        "True" if holds else "False",
        reason,
        seen or snapshot(HEALTHY_BROKERS),
        READY if current is None else current,
        outcome(**steps),
        id=f"{type_} {reason}",
    )


ROWS = [
    row("Ready", False, Reason.BROKERS_NOT_READY, snapshot(HEALTHY_BROKERS, unready=(1,))),
    row(
        "Ready", False, Reason.ZOOKEEPER_NOT_READY, snapshot(HEALTHY_BROKERS, zookeeper_ready=False)
    ),
    row(
        "Ready",
        False,
        Reason.PARTITIONS_OFFLINE,
        snapshot(answer([partition(0, isr=(), leader=None)])),
    ),
    row("Ready", True, Reason.ALL_BROKERS_READY),
    row("Progressing", True, Reason.CREATING, snapshot(None), current={}),
    row(
        "Progressing",
        True,
        Reason.ROLLING_RESTART,
        roll=RollStep(RollDecision(RollAction.RESTART, 1, "broker 1 runs an old revision")),
    ),
    row(
        "Progressing",
        False,
        Reason.ROLLING_RESTART_STUCK,
        roll=RollStep(RollDecision(RollAction.GIVE_UP, 1, "broker 1 restarted 3 times")),
    ),
    row(
        "Progressing",
        True,
        Reason.DRAINING_VOLUMES,
        volumes=VolumeStep(
            VolumeDecision(VolumeAction.DRAIN, frozenset({0, 1}), (1,), (0, 1), "draining data-1")
        ),
    ),
    row(
        "Progressing",
        True,
        Reason.SCALING,
        scale=scaled(ScaleAction.ADD_BROKERS, (2,), "spreading replicas onto brokers 2", True),
    ),
    row(
        "Progressing",
        False,
        Reason.SCALE_DOWN_REFUSED,
        scale=scaled(ScaleAction.REFUSE_SCALE_DOWN, (1,), "topic orders has replication factor 2"),
    ),
    row(
        "Progressing",
        False,
        Reason.DRAIN_REFUSED,
        scale=scaled(ScaleAction.REFUSE_DRAIN, (1,), "1 partitions ... add a broker"),
    ),
    row("Progressing", False, Reason.IDLE),
    row("Degraded", True, Reason.UNDER_REPLICATED, snapshot(answer([partition(0, isr=(0,))]))),
    row(
        "Degraded",
        True,
        Reason.LOG_DIR_OFFLINE,
        snapshot(answer([partition(0)], failed={1: "KAFKA_STORAGE_ERROR"})),
    ),
    row("Degraded", False, Reason.HEALTHY),
    row("ConfigValid", True, Reason.CONFIG_APPLIED),
    row(
        "ConfigValid",
        False,
        Reason.INVALID_CONFIG,
        config=CheckedConfig({}, {"log.flush.everything": "not a broker config"}),
    ),
]


@pytest.mark.parametrize(("type_", "holds", "reason", "seen", "current", "done"), ROWS)
def test_each_condition_reason_of_the_cluster(type_, holds, reason, seen, current, done):
    status = cluster_status(current, seen, SPEC, done, generation=2, now="t")
    assert condition(status, type_)[:2] == (holds, reason), condition(status, type_)


def test_the_table_gives_every_reason_of_the_clusters_conditions():
    cluster_conditions = {
        Reason.BROKERS_NOT_READY,
        Reason.ZOOKEEPER_NOT_READY,
        Reason.PARTITIONS_OFFLINE,
        Reason.ALL_BROKERS_READY,
        Reason.CREATING,
        Reason.ROLLING_RESTART,
        Reason.ROLLING_RESTART_STUCK,
        Reason.DRAINING_VOLUMES,
        Reason.SCALING,
        Reason.SCALE_DOWN_REFUSED,
        Reason.DRAIN_REFUSED,
        Reason.IDLE,
        Reason.UNDER_REPLICATED,
        Reason.LOG_DIR_OFFLINE,
        Reason.HEALTHY,
        Reason.CONFIG_APPLIED,
        Reason.INVALID_CONFIG,
    }
    assert {row.values[2] for row in ROWS} == cluster_conditions
