"""The ZooKeeper ensemble a Cluster runs (unless ``spec.zookeeper.connect`` names an
existing one): a StatefulSet of ``tidelog-zookeeper`` servers from the broker image,
each server ``<ordinal + 1>`` of the ensemble with a volume of its own, and the headless
Service through which they find each other and the brokers find them.
"""

from __future__ import annotations

from typing import Any

from tidelog_operator import names
from tidelog_operator.builders.common import spread_over_nodes
from tidelog_operator.spec import ClusterSpec

__all__ = ["connect_string", "zookeeper_service", "zookeeper_statefulset"]

DATA_DIR = "/var/lib/tidelog/zookeeper"
# How long a server waits at start for the others, which may take a while to be
# scheduled, and the brokers for the ensemble (``brokers.default_keys``).
START_TIMEOUT_S = 600


def _host(spec: ClusterSpec, ordinal: int) -> str:
    return (
        f"{names.zookeeper_statefulset(spec.name)}-{ordinal}."
        f"{names.zookeeper_service(spec.name)}.{spec.namespace}.svc"
    )


def connect_string(spec: ClusterSpec) -> str:
    """The brokers' ``zookeeper.connect``: the external one, or every server of ours."""
    if spec.zookeeper.external:
        return spec.zookeeper.connect
    return ",".join(
        f"{_host(spec, i)}:{names.ZOOKEEPER_CLIENT_PORT}" for i in range(spec.zookeeper.replicas)
    )


def zookeeper_service(spec: ClusterSpec) -> dict[str, Any]:
    """Headless, naming servers that are not ready yet: they elect a leader before any
    of them serves."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": names.zookeeper_service(spec.name),
            "namespace": spec.namespace,
            "labels": names.zookeeper_labels(spec.name),
        },
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": names.zookeeper_labels(spec.name),
            "ports": [
                {"name": "client", "port": names.ZOOKEEPER_CLIENT_PORT},
                {"name": "peer", "port": names.ZOOKEEPER_PEER_PORT},
                {"name": "election", "port": names.ZOOKEEPER_ELECTION_PORT},
            ],
        },
    }


def _command(spec: ClusterSpec) -> list[str]:
    servers = " ".join(
        f"--server {i + 1}={_host(spec, i)}:{names.ZOOKEEPER_PEER_PORT}:"
        f"{names.ZOOKEEPER_ELECTION_PORT}"
        for i in range(spec.zookeeper.replicas)
    )
    ensemble = (
        f" {servers} --my-id $(( ${{HOSTNAME##*-}} + 1 ))" if spec.zookeeper.replicas > 1 else ""
    )
    return [
        "sh",
        "-c",
        f"exec tidelog-entrypoint tidelog-zookeeper --start-timeout {START_TIMEOUT_S}{ensemble}",
    ]


def zookeeper_statefulset(spec: ClusterSpec, image: str) -> dict[str, Any] | None:
    """The ensemble's servers; None when the Cluster uses an external ensemble."""
    if spec.zookeeper.external:
        return None
    labels = names.zookeeper_labels(spec.name)
    claim: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": spec.zookeeper.size}},
    }
    if spec.zookeeper.storage_class:
        claim["storageClassName"] = spec.zookeeper.storage_class
    built = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {
            "name": names.zookeeper_statefulset(spec.name),
            "namespace": spec.namespace,
            "labels": labels,
        },
        "spec": {
            "serviceName": names.zookeeper_service(spec.name),
            "replicas": spec.zookeeper.replicas,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "securityContext": {"runAsNonRoot": True, "fsGroup": 1001},
                    "affinity": spread_over_nodes(labels),
                    "containers": [
                        {
                            "name": "zookeeper",
                            "image": image,
                            "imagePullPolicy": "IfNotPresent",
                            "command": _command(spec),
                            "ports": [
                                {"name": "client", "containerPort": names.ZOOKEEPER_CLIENT_PORT},
                                {"name": "peer", "containerPort": names.ZOOKEEPER_PEER_PORT},
                                {
                                    "name": "election",
                                    "containerPort": names.ZOOKEEPER_ELECTION_PORT,
                                },
                            ],
                            "readinessProbe": {
                                "exec": {
                                    "command": [
                                        "tidelog-healthcheck",
                                        "--zookeeper",
                                        f"127.0.0.1:{names.ZOOKEEPER_CLIENT_PORT}",
                                    ]
                                },
                                "periodSeconds": 5,
                                # the check is a Python process: Kubernetes' default of
                                # a second is not enough on a busy node, and servers
                                # flapping NotReady turn the Cluster not Ready
                                # (ZooKeeperNotReady) while the ensemble serves
                                "timeoutSeconds": 5,
                            },
                            "volumeMounts": [{"name": "data", "mountPath": DATA_DIR}],
                        }
                    ],
                },
            },
            "volumeClaimTemplates": [
                {"metadata": {"name": "data", "labels": labels}, "spec": claim}
            ],
        },
    }
    if spec.zookeeper.ephemeral:
        del built["spec"]["volumeClaimTemplates"]
        built["spec"]["template"]["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}]
    return built
