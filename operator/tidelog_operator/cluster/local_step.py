"""A Cluster's local PersistentVolumes (``spec.storage.local``), one step of a pass,
pure: from the snapshot's nodes, volumes, claims and pods, the commands that make the
volumes of the selected nodes, recycle those Released as sig-storage's local static
provisioner does (a pod on the volume's node wipes it, then the volume is made
Available again), and, with ``spec.storage.replaceLostVolumes``, let go of those whose
node is gone with their claims and pods (``lost_volumes.py``). The volumes are
cluster-scoped, so the Cluster cannot own them: they stay when it goes
(``claimRetention`` decides about the claims and their data).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tidelog_operator.builders.storage import NODE_LABEL, local_volumes, wipe_pod
from tidelog_operator.cluster.commands import (
    ApplyObjects,
    Command,
    CreatePod,
    DeleteObjects,
    FreeVolume,
)
from tidelog_operator.cluster.lost_volumes import LostVolumes, lost_volumes
from tidelog_operator.spec import ClusterSpec

__all__ = ["LocalStep", "LocalStorage", "local_step"]


@dataclass(frozen=True)
class LocalStorage:
    """What a pass sees of the local disks: every node and its labels, the Cluster's
    volumes as the API serializes them, the namespace's claims and the Cluster's broker
    pods (both without those being deleted) and the wipe pods' phases by name."""

    nodes: Mapping[str, Mapping[str, str]]
    volumes: tuple[Mapping[str, Any], ...]
    claims: frozenset[str]
    broker_pods: tuple[Mapping[str, Any], ...]
    wipe_pods: Mapping[str, str]


@dataclass(frozen=True)
class LocalStep:
    commands: tuple[Command, ...] = ()
    recycled: tuple[str, ...] = ()  # volumes made Available again
    lost: LostVolumes = field(default_factory=LostVolumes)


def local_step(local: LocalStorage | None, spec: ClusterSpec) -> LocalStep:
    if local is None or spec.local is None:
        return LocalStep()
    selected = [
        node
        for node, labels in local.nodes.items()
        if all(labels.get(k) == v for k, v in spec.local.node_selector.items())
    ]
    existing = {v["metadata"]["name"] for v in local.volumes}
    missing = [v for v in local_volumes(spec, selected) if v["metadata"]["name"] not in existing]
    commands: list[Command] = [ApplyObjects(tuple(missing))] if missing else []
    recycled = []
    for volume in local.volumes:
        if volume.get("status", {}).get("phase") != "Released":
            continue
        if volume["metadata"]["labels"].get(NODE_LABEL) not in local.nodes:
            continue  # nothing can run there: let go below, if allowed
        wipe = wipe_pod(dict(volume), spec.namespace, spec.brokers.image)
        name = wipe["metadata"]["name"]
        phase = local.wipe_pods.get(name)
        if phase is None:
            commands.append(CreatePod(wipe))
            continue
        if phase == "Succeeded":
            commands.append(FreeVolume(volume["metadata"]["name"]))
            recycled.append(volume["metadata"]["name"])
        if phase in ("Succeeded", "Failed"):
            commands.append(DeleteObjects("v1", "Pod", (name,), spec.namespace))
    lost = LostVolumes()
    if spec.replace_lost_volumes:
        lost = lost_volumes(
            nodes=set(local.nodes),
            volumes=local.volumes,
            claims=local.claims,
            pods=local.broker_pods,
            namespace=spec.namespace,
            templates=[v.claim for v in spec.volumes],
        )
        # claims first (they go once their pods do), then pods, then volumes
        for kind, objects, namespace in (
            ("PersistentVolumeClaim", lost.claims, spec.namespace),
            ("Pod", lost.pods, spec.namespace),
            ("PersistentVolume", lost.volumes, None),
        ):
            if objects:
                commands.append(DeleteObjects("v1", kind, objects, namespace))
    return LocalStep(tuple(commands), tuple(recycled), lost)
