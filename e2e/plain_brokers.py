"""Brokers on the kind cluster from the plain manifests of ``e2e/manifests/`` (no operator):
ZooKeeper, a StatefulSet of three brokers on local persistent volumes, a toolbox pod with
the e2e client, all in one namespace.

Local volumes are cluster objects that keep their data when released (Retain), so
:meth:`PlainBrokers.remove` deletes the namespace, then the volumes, then wipes the
disks, leaving them as the next user of the cluster expects: empty.
"""

from __future__ import annotations

import json

from e2e.kind_cluster import KindCluster
from e2e.paths import MANIFESTS

__all__ = ["BROKER_PODS", "PlainBrokers"]

BROKER_PODS = ["broker-0", "broker-1", "broker-2"]
BOOTSTRAP = "bootstrap:9092"
_CLIENT = ["python", "/opt/e2e/e2e_client.py"]


class PlainBrokers:
    """The deployment in ``namespace`` of ``cluster``."""

    def __init__(self, cluster: KindCluster, namespace: str):
        self.cluster = cluster
        self.namespace = namespace

    def kubectl(self, *args: str, **options) -> str:
        return self.cluster.kubectl("--namespace", self.namespace, *args, **options)

    def apply(self, manifest: str) -> None:
        self.kubectl("apply", "--filename", str(MANIFESTS / manifest))

    def deploy(self) -> None:
        """Everything, then wait until ZooKeeper, the brokers and the toolbox are ready."""
        self.cluster.kubectl("apply", "--filename", str(MANIFESTS / "storage.yaml"))
        self.kubectl("create", "namespace", self.namespace)
        for manifest in ("zookeeper.yaml", "brokers.yaml", "toolbox.yaml"):
            self.apply(manifest)
        for workload in ("statefulset/zookeeper", "statefulset/broker"):
            self.kubectl("rollout", "status", workload, "--timeout=300s", timeout=310)
        self.kubectl("wait", "--for=condition=Ready", "pod/toolbox", "--timeout=120s", timeout=130)

    def remove(self) -> None:
        self.cluster.kubectl("delete", "namespace", self.namespace, "--wait=true", timeout=300)
        self.cluster.kubectl(
            "delete",
            "--filename",
            str(MANIFESTS / "storage.yaml"),
            "--ignore-not-found",
            "--wait=true",
            timeout=120,
        )
        self.cluster.wipe_disks()

    # -- what the cluster says -------------------------------------------------------------

    def pod(self, name: str) -> dict:
        return json.loads(self.kubectl("get", "pod", name, "--output", "json"))

    def ready(self, name: str) -> bool:
        conditions = self.pod(name).get("status", {}).get("conditions", [])
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    def node_of(self, pod: str) -> str:
        return self.pod(pod)["spec"]["nodeName"]

    def pod_exec(self, pod: str, *command: str, check: bool = True) -> str:
        return self.kubectl("exec", pod, "--", *command, timeout=180, check=check)

    def client(self, command: str, *args: str, check: bool = True) -> dict:
        """Run an e2e client command (e2e/client/e2e_client.py) in the toolbox pod."""
        output = self.pod_exec(
            "toolbox", *_CLIENT, command, "--bootstrap", BOOTSTRAP, *args, check=check
        )
        return json.loads(output.strip().splitlines()[-1])
