"""A Cluster's local PersistentVolumes (``spec.storage.local``): made for every node the
node selector picks, and recycled as sig-storage's local static provisioner does: a
volume Released by its deleted claim is wiped by a pod on its node, then made Available
again. With ``spec.storage.replaceLostVolumes``, the volumes of a node that is gone are
let go with their claims (``lost_volumes.py``). The volumes are cluster-scoped, so the
Cluster cannot own them: they stay when it goes (``claimRetention`` decides about the
claims and their data)."""

from __future__ import annotations

import logging

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tidelog_operator import kube, names
from tidelog_operator.builders.storage import NODE_LABEL, local_volumes, wipe_pod
from tidelog_operator.cluster.lost_volumes import LostVolumes, lost_volumes
from tidelog_operator.spec import ClusterSpec, local_volume_labels

__all__ = ["recycle_released_volumes", "replace_lost_volumes", "sync_local_volumes"]

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


def _cluster_volumes(core: client.CoreV1Api, spec: ClusterSpec) -> list:
    labels = local_volume_labels(spec.name, spec.namespace, 0)
    labels.pop("tidelog.dev/disk")
    return core.list_persistent_volume(label_selector=_selector(labels)).items


def recycle_released_volumes(api: client.ApiClient, spec: ClusterSpec, image: str) -> list[str]:
    """Advance the recycling of every Released volume of the Cluster on a node that
    exists: start its wipe pod, or, once that succeeded, free the volume; the names of
    those freed."""
    if spec.local is None:
        return []
    core = client.CoreV1Api(api)
    released = [v for v in _cluster_volumes(core, spec) if v.status.phase == "Released"]
    if not released:
        return []
    nodes = {n.metadata.name for n in core.list_node().items}
    freed = []
    for volume in released:
        if volume.metadata.labels.get(NODE_LABEL) not in nodes:
            continue  # nothing can run there: replace_lost_volumes deletes it, if allowed
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


def replace_lost_volumes(api: client.ApiClient, spec: ClusterSpec) -> LostVolumes:
    """Delete what ``lost_volumes`` names for the Cluster's brokers: claims first (they
    go once their pods do), then pods, then volumes; what was deleted."""
    if spec.local is None or not spec.replace_lost_volumes:
        return LostVolumes()
    core = client.CoreV1Api(api)
    selector = _selector(names.broker_labels(spec.name))
    # Pods before claims: a claim listed after its pod is never missing by a race. What
    # is being deleted already counts as gone (so each loss is acted on, and told, once).
    pods = _staying(core.list_namespaced_pod(spec.namespace, label_selector=selector).items)
    claims = _staying(core.list_namespaced_persistent_volume_claim(spec.namespace).items)
    lost = lost_volumes(
        nodes={n.metadata.name for n in core.list_node().items},
        volumes=[api.sanitize_for_serialization(v) for v in _staying(_cluster_volumes(core, spec))],
        claims={c.metadata.name for c in claims},
        pods=[api.sanitize_for_serialization(p) for p in pods],
        namespace=spec.namespace,
        templates=[v.claim for v in spec.volumes],
    )
    for claim in lost.claims:
        logger.warning("%s/%s: its disk went with its node", spec.namespace, claim)
        _ignore_gone(core.delete_namespaced_persistent_volume_claim, claim, spec.namespace)
    for pod in lost.pods:
        _ignore_gone(core.delete_namespaced_pod, pod, spec.namespace)
    for volume in lost.volumes:
        _ignore_gone(core.delete_persistent_volume, volume)
    return lost


def _staying(objects: list) -> list:
    """Those not being deleted."""
    return [o for o in objects if o.metadata.deletion_timestamp is None]


def _ignore_gone(delete, *args) -> None:
    try:
        delete(*args)
    except ApiException as error:
        if error.status != 404:
            raise
