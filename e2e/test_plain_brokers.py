"""The kind cluster carries real brokers before any operator exists: plain manifests
(e2e/manifests/) give ZooKeeper and a StatefulSet of three brokers, one per worker, each
on two local persistent volumes; clients inside the cluster produce with acks=all and
consume through the bootstrap Service; pods and nodes fail the way they do."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import PurePosixPath

import pytest

from e2e.kind_cluster import ClusterError, KindCluster
from e2e.paths import LOGS
from e2e.plain_brokers import BROKER_PODS, PlainBrokers

TOPIC_RF3 = ["--partitions", "6", "--replication-factor", "3"]


@pytest.fixture(scope="module")
def brokers(kind_cluster: KindCluster) -> Iterator[PlainBrokers]:
    deployment = PlainBrokers(kind_cluster, "e2e-plain-brokers")
    try:
        deployment.deploy()
    except ClusterError:
        kind_cluster.save_state(LOGS / "plain-brokers-deploy", [deployment.namespace])
        deployment.remove()
        raise
    yield deployment
    deployment.remove()


def fully_replicated(brokers: PlainBrokers, topic: str) -> bool:
    partitions = brokers.client("describe-topic", "--topic", topic)["partitions"]
    return bool(partitions) and all(p["isr"] == [1, 2, 3] for p in partitions.values())


def partition_dirs(brokers: PlainBrokers, pod: str) -> set[PurePosixPath]:
    """The partition directories in the pod's log dirs."""
    listing = brokers.pod_exec(
        pod,
        "find",
        "/var/lib/tidelog/data-0",
        "/var/lib/tidelog/data-1",
        "-mindepth",
        "1",
        "-maxdepth",
        "1",
        "-type",
        "d",
        "-name",
        "*-[0-9]*",
    )
    return {PurePosixPath(line) for line in listing.split()}


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


def test_one_broker_per_worker_each_on_the_local_volumes_of_its_node(
    brokers: PlainBrokers,
) -> None:
    nodes = {pod: brokers.node_of(pod) for pod in BROKER_PODS}
    assert len(set(nodes.values())) == len(BROKER_PODS), nodes
    assert set(nodes.values()) <= set(brokers.cluster.workers())
    claims = brokers.cluster.get("pvc", "--namespace", brokers.namespace)["items"]
    volumes = {v["metadata"]["name"]: v for v in brokers.cluster.get("pv")["items"]}
    for pod, node in nodes.items():
        disks_used = set()
        for log_dir in ("data-0", "data-1"):
            (claim,) = [c for c in claims if c["metadata"]["name"] == f"{log_dir}-{pod}"]
            labels = volumes[claim["spec"]["volumeName"]]["metadata"]["labels"]
            assert labels["tidelog.dev/node"] == node
            disk = labels["tidelog.dev/disk"]
            disks_used.add(disk)
            # The log dir in the pod is that disk's own file system.
            in_pod = brokers.pod_exec(
                pod,
                "findmnt",
                "--noheadings",
                "--output",
                "SOURCE,FSTYPE",
                f"/var/lib/tidelog/{log_dir}",
            )
            on_node = brokers.cluster.node_exec(
                node,
                "findmnt",
                "--noheadings",
                "--output",
                "SOURCE,FSTYPE",
                "--mountpoint",
                f"/mnt/disks/{disk}",
            )
            assert in_pod.split() == on_node.split() and in_pod.split()[1] == "ext4", pod
        assert disks_used == {"0", "1"}, f"{pod} does not use both disks of {node}"


def test_coredns_resolves_the_brokers_stable_names(
    brokers: PlainBrokers,
) -> None:
    """Each broker's name resolves to its pod's address from another pod. CoreDNS serves
    what the EndpointSlices say and caches answers for their TTL (5 s), so a name asked
    for in the instant a pod got its address may still be unknown: the test waits for
    the right answer, not for the first one."""
    expected = {
        f"{pod}.brokers.{brokers.namespace}.svc.cluster.local": brokers.pod(pod)["status"]["podIP"]
        for pod in BROKER_PODS
    }

    def resolved() -> dict[str, str]:
        answers = {}
        for name in expected:
            answer = brokers.pod_exec("toolbox", "getent", "hosts", name, check=False).split()
            answers[name] = answer[0] if answer else "(not found)"
        return answers

    try:
        brokers.cluster.wait_for(lambda: resolved() == expected, "the brokers' names", 60)
    except ClusterError:
        assert resolved() == expected  # which name answered what


def test_a_job_produces_with_acks_all_and_consumes_through_the_bootstrap_service(
    brokers: PlainBrokers,
) -> None:
    brokers.apply("produce-consume-job.yaml")
    brokers.kubectl(
        "wait", "--for=condition=complete", "job/produce-consume", "--timeout=300s", timeout=310
    )
    results = [
        json.loads(line)
        for line in brokers.kubectl("logs", "job/produce-consume").splitlines()
        if line.startswith("{")
    ]
    assert results[1] == {"sent": 2000, "acknowledged": 2000, "failures": []}
    assert results[2]["consumed"] == 2000 and results[2]["missing_count"] == 0
    # Every partition has a replica on each of the three brokers, on three nodes, and
    # all are in sync: replication crosses the pod network between nodes.
    assert fully_replicated(brokers, "orders")


def test_a_deleted_broker_pod_comes_back_on_its_node_with_its_data(
    brokers: PlainBrokers,
) -> None:
    brokers.client("create-topic", "--topic", "survivors", *TOPIC_RF3)
    produced = brokers.client("produce", "--topic", "survivors", "--count", "500")
    assert produced["acknowledged"] == 500
    pod = "broker-1"
    node = brokers.node_of(pod)
    uid = brokers.pod(pod)["metadata"]["uid"]
    partitions_before = partition_dirs(brokers, pod)
    assert any(d.name.startswith("survivors-") for d in partitions_before)

    brokers.kubectl("delete", "pod", pod, "--wait=true", timeout=120)
    brokers.cluster.wait_for(
        lambda: brokers.pod(pod)["metadata"]["uid"] != uid and brokers.ready(pod),
        f"{pod} recreated and ready",
        timeout=180,
    )
    assert brokers.node_of(pod) == node
    assert partition_dirs(brokers, pod) == partitions_before
    brokers.cluster.wait_for(
        lambda: fully_replicated(brokers, "survivors"), f"{pod} back in every ISR", timeout=120
    )
    consumed = brokers.client("consume", "--topic", "survivors", "--expect", "500")
    assert consumed["missing_count"] == 0


def test_a_restarted_worker_rejoins_and_its_pods_get_the_network_back(
    brokers: PlainBrokers,
) -> None:
    brokers.client("create-topic", "--topic", "rejoin", *TOPIC_RF3)
    # A broker's worker that runs neither ZooKeeper nor the clients' toolbox: this test
    # is about the broker's pod; ZooKeeper restarting under a live controller is a
    # scenario of its own.
    others = {brokers.node_of("zookeeper-0"), brokers.node_of("toolbox")}
    pod = next(p for p in reversed(BROKER_PODS) if brokers.node_of(p) not in others)
    node = brokers.node_of(pod)
    restarts = brokers.pod(pod)["status"]["containerStatuses"][0]["restartCount"]

    brokers.cluster.restart_node(node)
    # The node's kubelet starts the pod's containers again in fresh sandboxes (new
    # network namespaces): the broker must reach ZooKeeper and the other brokers, and
    # they it, across nodes.
    brokers.cluster.wait_for(
        lambda: brokers.pod(pod)["status"]["containerStatuses"][0]["restartCount"] > restarts
        and brokers.ready(pod),
        f"{pod} running again on the restarted {node}",
        timeout=300,
    )
    brokers.cluster.kubectl(
        "wait", "--for=condition=Ready", f"node/{node}", "--timeout=120s", timeout=130
    )
    brokers.kubectl("wait", "--for=condition=Ready", "pod/toolbox", "--timeout=120s", timeout=130)

    def back_in_every_isr(moment: str) -> None:
        brokers.cluster.wait_for(
            lambda: fully_replicated(brokers, "rejoin"),
            f"the broker on {node} back in every ISR {moment}",
            timeout=120,
        )

    # Its pod reaches the other nodes' brokers, and they it, before clients write; then
    # it copies what they wrote.
    back_in_every_isr("before the writes")
    produced = brokers.client("produce", "--topic", "rejoin", "--count", "500")
    assert produced["acknowledged"] == 500, produced
    back_in_every_isr("after the writes")
    consumed = brokers.client("consume", "--topic", "rejoin", "--expect", "500")
    assert consumed["missing_count"] == 0
