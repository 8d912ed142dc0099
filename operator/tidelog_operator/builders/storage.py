"""Local PersistentVolumes on the nodes' disks (``spec.storage.local``), and the pod that
wipes one whose claim was deleted, as sig-storage's local static provisioner does.

One volume per node and disk path, named after the Cluster, node and disk, with node
affinity to that node, the stated capacity, and labels that the brokers' claims select
(claim ``data-<i>`` binds to disk ``i``); the StorageClass binds when a broker is
scheduled (``WaitForFirstConsumer``), so all of a broker's claims bind on one node.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from tidelog_operator.spec import ClusterSpec, local_volume_labels

__all__ = ["NODE_LABEL", "local_volume_name", "local_volumes", "wipe_pod"]

NODE_LABEL = "tidelog.dev/node"
_NOT_DNS = re.compile(r"[^a-z0-9.-]+")


def local_volume_name(spec: ClusterSpec, node: str, disk: int) -> str:
    """``tidelog-<namespace>-<cluster>-<node>-<disk>``, lower case and at most 253
    characters (a hash stands in for what does not fit)."""
    name = _NOT_DNS.sub("-", f"tidelog-{spec.namespace}-{spec.name}-{node}-{disk}".lower())
    if len(name) <= 253:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:16]
    return f"{name[:236]}-{digest}"


def local_volumes(spec: ClusterSpec, nodes: list[str]) -> list[dict[str, Any]]:
    """The volumes of ``nodes`` (those matching ``spec.storage.local.nodeSelector``)."""
    local = spec.local
    if local is None:
        return []
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {
                "name": local_volume_name(spec, node, disk),
                "labels": {
                    **local_volume_labels(spec.name, spec.namespace, disk),
                    NODE_LABEL: node,
                },
            },
            "spec": {
                "capacity": {"storage": local.size},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": local.storage_class,
                "volumeMode": "Filesystem",
                "local": {"path": path},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "kubernetes.io/hostname",
                                        "operator": "In",
                                        "values": [node],
                                    }
                                ]
                            }
                        ]
                    }
                },
            },
        }
        for node in sorted(nodes)
        for disk, path in enumerate(local.disks)
    ]


def wipe_pod(volume: dict[str, Any], namespace: str, image: str) -> dict[str, Any]:
    """A pod on the volume's node that deletes everything on its disk but lost+found,
    as root (the brokers' files are theirs); the operator frees the volume once it
    has succeeded."""
    name = volume["metadata"]["name"]
    node = volume["metadata"]["labels"][NODE_LABEL]
    path = volume["spec"]["local"]["path"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"wipe-{name}"[:253],
            "namespace": namespace,
            "labels": {
                "app.kubernetes.io/component": "volume-wipe",
                "tidelog.dev/volume": name[:63],
            },
        },
        "spec": {
            "nodeName": node,
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "wipe",
                    "image": image,
                    "imagePullPolicy": "IfNotPresent",
                    "command": [
                        "find",
                        "/disk",
                        "-mindepth",
                        "1",
                        "-maxdepth",
                        "1",
                        "!",
                        "-name",
                        "lost+found",
                        "-exec",
                        "rm",
                        "-rf",
                        "{}",
                        "+",
                    ],
                    "securityContext": {"runAsUser": 0, "runAsNonRoot": False},
                    "volumeMounts": [{"name": "disk", "mountPath": "/disk"}],
                }
            ],
            "volumes": [{"name": "disk", "hostPath": {"path": path, "type": "Directory"}}],
        },
    }
