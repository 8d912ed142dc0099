"""The Cluster's status from an observation (pure): what the brokers tell is reported only
when they answered, so a client waiting for ``underReplicatedPartitions == 0`` never
takes an unreachable cluster for a healthy one."""

from __future__ import annotations

from tidelog_operator.cluster.observe import BrokerView, Observation, cluster_status
from tidelog_operator.spec import parse_cluster

SPEC = parse_cluster(
    "events", "ns", {"brokers": {"replicas": 2}, "storage": {"volumes": [{"id": 0, "size": "1Gi"}]}}
)
BROKERS = (
    BrokerView(0, "events-broker-0", "w1", True),
    BrokerView(1, "events-broker-1", "w2", True),
)


def condition(status: dict, type_: str) -> tuple[str, str, str]:
    (found,) = [c for c in status["conditions"] if c["type"] == type_]
    return found["status"], found["reason"], found["message"]


def test_a_failed_dir_is_named_then_an_unreachable_cluster_reports_no_counts():
    failed = Observation(
        2,
        BROKERS,
        zookeeper_ready=True,
        reachable=True,
        controller=0,
        under_replicated=3,
        offline_dirs=("broker 1: /var/lib/tidelog/data-0",),
    )
    status = cluster_status({}, failed, SPEC, generation=1, now="t1")
    assert status["underReplicatedPartitions"] == 3 and status["offlinePartitions"] == 0
    assert condition(status, "Degraded") == (
        "True",
        "LogDirOffline",
        "offline log dirs: broker 1: /var/lib/tidelog/data-0",
    )
    assert condition(status, "Ready")[0] == "True"

    unreachable = Observation(2, BROKERS, zookeeper_ready=True)
    status = cluster_status(status, unreachable, SPEC, generation=1, now="t2")
    assert "underReplicatedPartitions" not in status and "offlinePartitions" not in status
    assert "controller" not in status
    assert condition(status, "Degraded")[:2] == ("True", "LogDirOffline")  # as last seen
    assert condition(status, "Ready")[:2] == ("False", "BrokersNotReady")

    healthy = Observation(2, BROKERS, zookeeper_ready=True, reachable=True, controller=1)
    status = cluster_status(status, healthy, SPEC, generation=1, now="t3")
    assert status["underReplicatedPartitions"] == 0 and status["controller"] == 1
    assert condition(status, "Degraded")[:2] == ("False", "Healthy")
