"""The kind cluster's workers: each has three real disks of its own, and a worker restarted
(its container, as a machine reboots) under the example deployment gets its broker back
on the pod network, in every ISR, before and after clients write."""

from __future__ import annotations

import json

from e2e.kind_cluster import KindCluster
from e2e.operator_deployment import OperatorDeployment

RESTARTED_PREFIX = "rejoin"


def test_every_worker_has_three_real_disks(kind_cluster: KindCluster) -> None:
    sources = set()
    for node in kind_cluster.workers():
        for disk in ("/mnt/disks/0", "/mnt/disks/1", "/mnt/disks/2"):
            fstype, source, size = kind_cluster.node_exec(
                node,
                "findmnt",
                "--noheadings",
                "--bytes",
                "--output",
                "FSTYPE,SOURCE,SIZE",
                "--mountpoint",
                disk,
            ).split()
            assert fstype == "ext4", f"{node}:{disk}"
            # A fixed capacity of its own (1 GiB by default, less ext4's metadata), not the
            # host's disk.
            assert 0.8 * 2**30 < int(size) < 2**30, f"{node}:{disk} has {size} bytes"
            sources.add(source)
    expected = 3 * len(kind_cluster.workers())
    assert len(sources) == expected, f"the disks are not distinct devices: {sources}"


def _pods(deployment: OperatorDeployment, namespace: str, *selector: str) -> dict[str, dict]:
    """The pods of ``namespace`` (those of a label ``selector`` if given), by name."""
    listed = deployment.cluster.kubectl(
        "get", "pods", "--namespace", namespace, *selector, "--output", "json"
    )
    return {p["metadata"]["name"]: p for p in json.loads(listed)["items"]}


def _ready(pod: dict | None) -> bool:
    conditions = (pod or {}).get("status", {}).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def _fully_replicated(deployment: OperatorDeployment, topic: str) -> bool:
    partitions = deployment.client("describe-topic", "--topic", topic)["partitions"]
    return bool(partitions) and all(len(p["isr"]) == 3 for p in partitions.values())


def test_a_restarted_worker_rejoins_and_its_broker_gets_the_network_back(
    deployment: OperatorDeployment,
) -> None:
    """The kubelet of a restarted worker starts its pods' containers again in fresh
    sandboxes (new network namespaces): the broker there must reach ZooKeeper and the
    other brokers, and they it, across nodes and through the Cluster's NetworkPolicies.
    The worker is one that runs neither the operator nor the clients' toolbox: this test
    is about the broker's pod (it may run a ZooKeeper server too, as a rebooted machine
    would)."""
    selector = ("--selector", "app.kubernetes.io/component=broker")
    others = {
        p["spec"]["nodeName"] for p in _pods(deployment, deployment.operator_namespace).values()
    }
    others.add(deployment.get("pod", "toolbox")["spec"]["nodeName"])
    brokers = _pods(deployment, deployment.namespace, *selector)
    pod, node = next(
        (name, p["spec"]["nodeName"])
        for name, p in sorted(brokers.items(), reverse=True)
        if p["spec"]["nodeName"] not in others
    )
    restarts = brokers[pod]["status"]["containerStatuses"][0]["restartCount"]

    deployment.cluster.restart_node(node)

    def running_again() -> bool:
        now = _pods(deployment, deployment.namespace, *selector).get(pod)
        return (
            now is not None
            and now["status"]["containerStatuses"][0]["restartCount"] > restarts
            and _ready(now)
        )

    deployment.wait_for(running_again, f"{pod} running again on the restarted {node}", 300)
    deployment.cluster.kubectl(
        "wait", "--for=condition=Ready", f"node/{node}", "--timeout=120s", timeout=130
    )

    def back_in_every_isr(moment: str) -> None:
        deployment.wait_for(
            lambda: _fully_replicated(deployment, "orders"),
            f"the broker on {node} back in every ISR {moment}",
            timeout=180,
        )

    # Its pod reaches the other nodes' brokers, and they it, before clients write; then
    # it copies what they wrote.
    back_in_every_isr("before the writes")
    produced = deployment.client(
        "produce", "--topic", "orders", "--count", "500", "--prefix", RESTARTED_PREFIX
    )
    assert produced["acknowledged"] == 500, produced
    back_in_every_isr("after the writes")
    consumed = deployment.client(
        "consume", "--topic", "orders", "--expect", "500", "--prefix", RESTARTED_PREFIX
    )
    assert consumed["missing_count"] == 0, consumed
