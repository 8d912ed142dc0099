"""A Cluster's local PersistentVolumes (``spec.storage.local``): made for every node the
node selector picks, and recycled as sig-storage's local static provisioner does: a
volume Released by its deleted claim is wiped by a pod on its node, then made Available
again. The volumes are cluster-scoped, so the Cluster cannot own them: they stay when it
goes (``claimRetention`` decides about the claims and their data)."""

from __future__ import annotations

import logging

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tidelog_operator import kube
from tidelog_operator.builders.storage import local_volumes, wipe_pod
from tidelog_operator.spec import ClusterSpec, local_volume_labels

__all__ = ["recycle_released_volumes", "sync_local_volumes"]

logger = logging.getLogger(__name__)


def _selector(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def sync_local_volumes(api: client.ApiClient, spec: ClusterSpec) -> list[str]:
    """Apply the volumes of the selected nodes; their names."""
    if spec.local is None:
        return []
    nodes = client.CoreV1Api(api).list_node(
        label_selector=_selector(dict(spec.local.node_selector))
    )
    volumes = local_volumes(spec, [n.metadata.name for n in nodes.items])
    for volume in volumes:
        kube.apply(api, volume)
    return [v["metadata"]["name"] for v in volumes]


def recycle_released_volumes(api: client.ApiClient, spec: ClusterSpec, image: str) -> list[str]:
    """Advance the recycling of every Released volume of the Cluster: start its wipe
    pod, or, once that succeeded, free the volume; the names of those freed."""
    if spec.local is None:
        return []
    core = client.CoreV1Api(api)
    labels = local_volume_labels(spec.name, spec.namespace, 0)
    labels.pop("tidelog.dev/disk")
    freed = []
    for volume in core.list_persistent_volume(label_selector=_selector(labels)).items:
        if volume.status.phase != "Released":
            continue
        built = wipe_pod(api.sanitize_for_serialization(volume), spec.namespace, image)
        name = built["metadata"]["name"]
        try:
            pod = core.read_namespaced_pod(name, spec.namespace)
        except ApiException as error:
            if error.status != 404:
                raise
            logger.info("wiping the released volume %s", volume.metadata.name)
            core.create_namespaced_pod(spec.namespace, built)
            continue
        if pod.status.phase == "Succeeded":
            core.patch_persistent_volume(volume.metadata.name, {"spec": {"claimRef": None}})
            freed.append(volume.metadata.name)
        if pod.status.phase in ("Succeeded", "Failed"):
            core.delete_namespaced_pod(name, spec.namespace)
    return freed
