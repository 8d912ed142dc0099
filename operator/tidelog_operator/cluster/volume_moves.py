"""What a change of the Cluster's JBOD volumes observes and does (``disks.decide_volumes``
decides): the volumes the brokers mount, the brokers' draining entries and the replicas
left in the dirs being removed, the StatefulSet made anew when its claim templates
change, and the removal's record on the status.

The status key it owns, ``volumes``: the last removal of volumes, ``removed`` (their
ids), ``state`` (``Draining``, ``Unmounted``: the StatefulSet no longer has them and the
roll takes them off the brokers, ``Done``), ``replicasLeft`` (in their dirs, over every
broker), ``startedAt``, ``finishedAt``, ``message``.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kubernetes import client

from tidelog.admin import AdminClient
from tidelog_operator import kube, names
from tidelog_operator.cluster.disks import (
    VolumeDecision,
    VolumeObservation,
    decide_volumes,
    volume_of,
)
from tidelog_operator.cluster.scaling_moves import statefulset_replicas
from tidelog_operator.spec import ClusterSpec, Volume

__all__ = [
    "GENERATION_ANNOTATION",
    "VOLUMES",
    "VolumeStep",
    "apply_statefulset",
    "mounted_volumes",
    "removal_step",
    "running_brokers",
    "volumes_once",
    "volumes_to_mount",
]

VOLUMES = "volumes"
# On the brokers' StatefulSet: the Cluster generation it was applied for.
GENERATION_ANNOTATION = "tidelog.dev/cluster-generation"
_CLAIM = re.compile(r"data-(\d+)")


@dataclass(frozen=True)
class Mounted:
    """The volume ids the StatefulSet's claim templates or a broker pod name, each as a
    volume (from its template, or a pod's claim of it); the ids of the templates (None:
    no StatefulSet, being made anew) and those the pods mount."""

    ids: frozenset[int]
    volumes: Mapping[int, Volume]
    templates: frozenset[int] | None
    in_pods: frozenset[int]


@dataclass(frozen=True)
class VolumeStep:
    decision: VolumeDecision
    status: dict[str, Any] = field(default_factory=dict)


def _as_volume(name: str, claim: client.V1PersistentVolumeClaimSpec) -> Volume | None:
    """A claim template ``data-<id>``, or a pod's claim ``data-<id>-<pod>``, as a volume."""
    match = _CLAIM.match(name)
    if match is None:
        return None
    selector = claim.selector.match_labels if claim.selector else None
    return Volume(
        int(match.group(1)),
        claim.resources.requests["storage"],
        claim.storage_class_name,
        dict(selector) if selector else None,
    )


def _live_statefulset(
    api: client.ApiClient, name: str, namespace: str
) -> client.V1StatefulSet | None:
    return kube.found(client.AppsV1Api(api).read_namespaced_stateful_set, name, namespace)


def _claim(
    core: client.CoreV1Api, name: str, namespace: str
) -> client.V1PersistentVolumeClaim | None:
    return kube.found(core.read_namespaced_persistent_volume_claim, name, namespace)


def _broker_pods(api: client.ApiClient, spec: ClusterSpec) -> list[client.V1Pod]:
    selector = ",".join(f"{k}={v}" for k, v in names.broker_labels(spec.name).items())
    return client.CoreV1Api(api).list_namespaced_pod(spec.namespace, label_selector=selector).items


def running_brokers(api: client.ApiClient, spec: ClusterSpec) -> int | None:
    """How many brokers run: the StatefulSet's replicas, or, while it is being made
    anew, as many as its pods' highest ordinal needs; None when there is neither."""
    replicas = statefulset_replicas(api, spec)
    if replicas is not None:
        return replicas
    ordinals = [int(p.metadata.name.rsplit("-", 1)[1]) for p in _broker_pods(api, spec)]
    return max(ordinals) + 1 if ordinals else None


def _statefulset_view(
    api: client.ApiClient, spec: ClusterSpec
) -> tuple[frozenset[int] | None, int]:
    """The StatefulSet's volume ids (None while it is being made anew) and the Cluster
    generation it was applied for (0: not known)."""
    statefulset = _live_statefulset(api, names.brokers_statefulset(spec.name), spec.namespace)
    if statefulset is None or statefulset.metadata.deletion_timestamp is not None:
        return None, 0
    made_for = int((statefulset.metadata.annotations or {}).get(GENERATION_ANNOTATION, 0))
    templates = statefulset.spec.volume_claim_templates or []
    ids = frozenset(v.id for t in templates if (v := _as_volume(t.metadata.name, t.spec)))
    return ids, made_for


def mounted_volumes(api: client.ApiClient, spec: ClusterSpec) -> Mounted:
    """What the StatefulSet and the broker pods mount (a pod keeps its volumes until it
    is restarted onto a new template)."""
    volumes: dict[int, Volume] = {}
    templates = None
    statefulset = _live_statefulset(api, names.brokers_statefulset(spec.name), spec.namespace)
    if statefulset is not None and statefulset.metadata.deletion_timestamp is None:
        for template in statefulset.spec.volume_claim_templates or []:
            if volume := _as_volume(template.metadata.name, template.spec):
                volumes[volume.id] = volume
        templates = frozenset(volumes)
    core = client.CoreV1Api(api)
    in_pods: set[int] = set()
    for pod in _broker_pods(api, spec):
        for mount in pod.spec.volumes or []:
            match = _CLAIM.fullmatch(mount.name)
            if match is None or mount.persistent_volume_claim is None:
                continue
            in_pods.add(int(match.group(1)))
            if int(match.group(1)) not in volumes:
                claim = _claim(core, mount.persistent_volume_claim.claim_name, spec.namespace)
                if claim is not None:
                    volumes[int(match.group(1))] = _as_volume(claim.metadata.name, claim.spec)
    return Mounted(frozenset(in_pods | set(volumes)), volumes, templates, frozenset(in_pods))


def volumes_to_mount(
    spec: ClusterSpec, ids: frozenset[int], mounted: Mapping[int, Volume]
) -> tuple[Volume, ...]:
    """The volumes ``ids``: the spec's, or, for one the spec no longer has (being
    drained), as it is mounted."""
    found = {**mounted, **{v.id: v for v in spec.volumes}}
    return tuple(found[i] for i in sorted(ids) if i in found)


def apply_statefulset(api: client.ApiClient, statefulset: dict[str, Any]) -> bool:
    """Apply the brokers' StatefulSet; False while it is being made anew. Its claim
    templates cannot change in place: when the live one's differ, it is deleted orphaning
    its pods (they run on, and the roller restarts them onto the new template), and a
    later call creates it, once it is gone."""
    meta = statefulset["metadata"]
    live = _live_statefulset(api, meta["name"], meta["namespace"])
    if live is not None:
        if live.metadata.deletion_timestamp is not None:
            return False
        claims = sorted(t.metadata.name for t in live.spec.volume_claim_templates or [])
        wanted = sorted(t["metadata"]["name"] for t in statefulset["spec"]["volumeClaimTemplates"])
        if claims != wanted:
            kube.delete(
                api, "apps/v1", "StatefulSet", meta["name"], meta["namespace"], propagation="Orphan"
            )
            return False
    kube.apply(api, statefulset)
    return True


@dataclass(frozen=True)
class _Brokers:
    """Per live broker: its draining dirs as they are set, and its log dir of each volume."""

    draining: Mapping[int, frozenset[str]]
    dirs: Mapping[int, Mapping[int, str]]


def _observe(
    admin: AdminClient, spec: ClusterSpec, mounted: Mounted, brokers: int
) -> tuple[VolumeObservation, _Brokers]:
    held: dict[int, int] = {}
    dirs: dict[int, dict[int, str]] = {}
    for broker, directories in admin.describe_log_dirs().items():
        dirs[broker] = {}
        for directory in directories:
            volume = volume_of(directory.path)
            if volume is not None:
                held[volume] = held.get(volume, 0) + len(directory.replicas)
                dirs[broker][volume] = directory.path
    draining = {b: frozenset(admin.draining_dirs(b)) for b in sorted(dirs)}
    seen = VolumeObservation(
        desired=frozenset(v.id for v in spec.volumes),
        statefulset=mounted.templates,
        pods=mounted.in_pods,
        brokers=frozenset(range(brokers)),
        holding={b: frozenset(volumes) for b, volumes in dirs.items()},
        draining={
            b: frozenset(v for d in paths if (v := volume_of(d)) is not None)
            for b, paths in draining.items()
        },
        replicas_in=held,
    )
    return seen, _Brokers(draining, dirs)


def _draining_after(decision: VolumeDecision, broker: int, live: _Brokers) -> list[str]:
    """The broker's draining dirs once the decision's volumes are added or withdrawn."""
    current = live.draining[broker]
    if decision.action == "clear":
        return sorted(d for d in current if volume_of(d) not in decision.volumes)
    mine = live.dirs.get(broker, {})
    return sorted(current | {mine[v] for v in decision.volumes if v in mine})


def _delete_claims(api: client.ApiClient, spec: ClusterSpec, volumes: list[int], brokers: int):
    """The removed volumes' claims of every broker, when ``claimRetention`` is Delete."""
    if spec.claim_retention != "Delete":
        return
    for volume in volumes:
        for broker in range(brokers):
            claim = f"data-{volume}-{names.broker_pod(spec.name, broker)}"
            kube.delete(api, "v1", "PersistentVolumeClaim", claim, spec.namespace)


def volumes_once(
    admin: AdminClient,
    api: client.ApiClient,
    spec: ClusterSpec,
    status: Mapping[str, Any],
    *,
    brokers: int,
    generation: int,
    now: datetime.datetime,
    apply: Callable[[tuple[Volume, ...]], object],
) -> VolumeStep:
    """Observe, decide, act. ``brokers``: how many the StatefulSet runs; ``generation``:
    the Cluster's, as this pass sees it (a StatefulSet applied for a newer one means the
    spec changed meanwhile: nothing is done); ``apply(v)`` applies the children with
    volumes ``v``. The brokers are asked only while a volume
    is to be removed or a removal is not done."""
    record = dict(status.get(VOLUMES) or {})
    desired = frozenset(v.id for v in spec.volumes)
    templates, made_for = _statefulset_view(api, spec)
    if made_for > generation:  # this pass began before the spec changed
        return VolumeStep(VolumeDecision("wait", desired, reason="a newer spec is applied"))
    settled = record.get("state") in (None, "Done")
    if settled and templates == desired:  # no pod mounts another then
        return VolumeStep(VolumeDecision("none", desired))
    mounted = mounted_volumes(api, spec)
    if settled and mounted.ids == desired:
        return VolumeStep(VolumeDecision("none", desired))
    seen, live = _observe(admin, spec, mounted, brokers)
    step = removal_step(seen, record, now)
    decision = step.decision
    if decision.action in ("drain", "clear"):
        for broker in decision.brokers:
            admin.set_draining_dirs(broker, _draining_after(decision, broker, live))
    if mounted.templates != decision.mount:
        apply(volumes_to_mount(spec, decision.mount, mounted.volumes))
    if decision.action == "clear":
        _delete_claims(api, spec, list(decision.volumes), brokers)
    return step


def removal_step(
    seen: VolumeObservation, record: Mapping[str, Any], now: datetime.datetime
) -> VolumeStep:
    """The decision on ``seen`` (its ``unmounted``: the record's ``removed`` while its
    state is ``Unmounted``) and the record it leaves; pure."""
    unmounted = record.get("removed", []) if record.get("state") == "Unmounted" else []
    decision = decide_volumes(replace(seen, unmounted=frozenset(unmounted)))
    left = sum(seen.replicas_in.get(v, 0) for v in decision.volumes)
    return VolumeStep(decision, {VOLUMES: _record(dict(record), decision, left, now)})


def _record(
    record: dict[str, Any], decision: VolumeDecision, left: int, now: datetime.datetime
) -> dict[str, Any] | None:
    """The record after ``decision``. A drain or an unmount of other volumes than the
    record's, or after a removal that is done, starts a record of its own: an unmount
    may come first (a volume removed before any pod mounted it has no dir to drain),
    and the passes after it clear the volumes its ``removed`` names."""
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    removed = list(decision.volumes)
    if decision.action in ("drain", "wait") and removed:
        if record.get("state") != "Draining" or record.get("removed") != removed:
            record = {"removed": removed, "state": "Draining", "startedAt": stamp}
        return record | {"replicasLeft": left, "message": decision.reason}
    if decision.action == "unmount":
        ongoing = record.get("state") in ("Draining", "Unmounted")
        if not ongoing or record.get("removed") != removed:
            record = {"removed": removed, "startedAt": stamp}
        return record | {"state": "Unmounted", "replicasLeft": 0, "message": decision.reason}
    if decision.action == "clear":
        return record | {"state": "Done", "finishedAt": stamp, "message": decision.reason}
    return record or None
