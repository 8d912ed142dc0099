"""A change of the Cluster's JBOD volumes, one step of a pass, pure: from the snapshot
(the volumes the StatefulSet and the pods mount, the brokers' dirs, the replicas in
them and the dirs they drain) the decision (``disks.decide_volumes``), the commands
that carry it out (draining entries set or cleared, the removed volumes' claims
deleted), the volumes the StatefulSet gets, and the removal's record on the status.

The status key it owns, ``volumes``: the last removal of volumes, ``removed`` (their
ids), ``state`` (``Draining``, ``Unmounted``: the StatefulSet no longer has them and the
roll takes them off the brokers, ``Done``), ``replicasLeft`` (in their dirs, over every
broker), ``startedAt``, ``finishedAt``, ``message``.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tidelog_operator import names
from tidelog_operator.cluster.commands import Command, DeleteObjects, SetDrainingDirs
from tidelog_operator.cluster.disks import (
    VolumeAction,
    VolumeDecision,
    VolumeObservation,
    decide_volumes,
)
from tidelog_operator.cluster.snapshot import ClusterSnapshot, volume_of
from tidelog_operator.spec import ClusterSpec, Volume

__all__ = ["VOLUMES", "VolumeStep", "needs_draining_dirs", "removal_step", "volume_step"]

VOLUMES = "volumes"


@dataclass(frozen=True)
class VolumeStep:
    decision: VolumeDecision
    status: dict[str, Any] = field(default_factory=dict)
    commands: tuple[Command, ...] = ()


def _settled(status: Mapping[str, Any]) -> bool:
    return (status.get(VOLUMES) or {}).get("state") in (None, "Done")


def needs_draining_dirs(
    spec: ClusterSpec, snapshot_templates: frozenset[int] | None, status
) -> bool:
    """Whether a pass must ask the brokers for their draining dirs: a removal is under
    way, or the StatefulSet's volumes are not the spec's."""
    desired = frozenset(v.id for v in spec.volumes)
    return not _settled(status) or snapshot_templates != desired


def volume_step(
    snapshot: ClusterSnapshot,
    spec: ClusterSpec,
    status: Mapping[str, Any],
    *,
    generation: int,
    now: datetime.datetime,
) -> VolumeStep:
    """The step; ``generation`` is the Cluster's as the pass sees it (a StatefulSet
    applied for a newer one means the spec changed meanwhile: nothing is done)."""
    record = dict(status.get(VOLUMES) or {})
    desired = frozenset(v.id for v in spec.volumes)
    statefulset = snapshot.statefulset
    templates = None if statefulset is None or statefulset.going else statefulset.templates
    if statefulset is not None and statefulset.made_for > generation:
        keep = (templates or frozenset()) | desired
        return VolumeStep(VolumeDecision(VolumeAction.WAIT, keep, reason="a newer spec is applied"))
    settled = _settled(status)
    mounted = (templates or frozenset()) | snapshot.mounted
    if settled and (templates == desired or mounted in (desired, frozenset())):
        return VolumeStep(VolumeDecision(VolumeAction.NONE, desired))
    brokers = snapshot.brokers
    running = snapshot.running or 0
    if brokers is None:
        keep = desired | (templates if templates is not None else snapshot.mounted)
        why = snapshot.unreachable or "no broker is ready"
        return VolumeStep(
            VolumeDecision(VolumeAction.WAIT, keep, reason=f"the brokers do not answer: {why}")
        )
    held: dict[int, int] = {}
    dirs: dict[int, dict[int, str]] = {}
    for broker, directories in brokers.log_dirs.items():
        dirs[broker] = {}
        for directory in directories:
            volume = volume_of(directory.path)
            if volume is not None:
                held[volume] = held.get(volume, 0) + len(directory.replicas)
                dirs[broker][volume] = directory.path
    seen = VolumeObservation(
        desired=desired,
        statefulset=templates,
        pods=snapshot.mounted,
        brokers=frozenset(range(running)),
        holding={b: frozenset(volumes) for b, volumes in dirs.items()},
        draining={
            b: frozenset(v for d in paths if (v := volume_of(d)) is not None)
            for b, paths in brokers.draining.items()
        },
        replicas_in=held,
    )
    step = removal_step(seen, record, now)
    decision = step.decision
    commands: list[Command] = []
    if decision.action in (VolumeAction.DRAIN, VolumeAction.CLEAR):
        for broker in decision.brokers:
            after = _draining_after(
                decision, brokers.draining.get(broker, frozenset()), dirs.get(broker, {})
            )
            commands.append(SetDrainingDirs(broker, tuple(after)))
    if decision.action is VolumeAction.CLEAR and spec.claim_retention == "Delete":
        claims = tuple(
            f"data-{volume}-{names.broker_pod(spec.name, broker)}"
            for volume in decision.volumes
            for broker in range(running)
        )
        commands.append(DeleteObjects("v1", "PersistentVolumeClaim", claims, spec.namespace))
    return replace(step, commands=tuple(commands))


def volumes_to_mount(
    spec: ClusterSpec, ids: frozenset[int], known: Mapping[int, Volume]
) -> tuple[Volume, ...]:
    """The volumes ``ids``: the spec's, or, for one the spec no longer has (being
    drained), as the StatefulSet or a pod has it."""
    found = {**known, **{v.id: v for v in spec.volumes}}
    return tuple(found[i] for i in sorted(ids) if i in found)


def _draining_after(
    decision: VolumeDecision, current: frozenset[str], mine: Mapping[int, str]
) -> list[str]:
    """A broker's draining dirs once the decision's volumes are added or withdrawn."""
    if decision.action is VolumeAction.CLEAR:
        return sorted(d for d in current if volume_of(d) not in decision.volumes)
    return sorted(current | {mine[v] for v in decision.volumes if v in mine})


def removal_step(
    seen: VolumeObservation, record: Mapping[str, Any], now: datetime.datetime
) -> VolumeStep:
    """The decision on ``seen`` (its ``unmounted``: the record's ``removed`` while its
    state is ``Unmounted``) and the record it leaves."""
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
    if decision.action in (VolumeAction.DRAIN, VolumeAction.WAIT) and removed:
        if record.get("state") != "Draining" or record.get("removed") != removed:
            record = {"removed": removed, "state": "Draining", "startedAt": stamp}
        return record | {"replicasLeft": left, "message": decision.reason}
    if decision.action is VolumeAction.UNMOUNT:
        ongoing = record.get("state") in ("Draining", "Unmounted")
        if not ongoing or record.get("removed") != removed:
            record = {"removed": removed, "startedAt": stamp}
        return record | {"state": "Unmounted", "replicasLeft": 0, "message": decision.reason}
    if decision.action is VolumeAction.CLEAR:
        return record | {"state": "Done", "finishedAt": stamp, "message": decision.reason}
    return record or None
