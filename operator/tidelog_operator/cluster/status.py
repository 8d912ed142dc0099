"""The Cluster's whole status after a pass, from one function (pure): what the snapshot
shows (brokers, their pods, disks and replica counts, partition health, the
controller), the records of the steps (``rolling``, ``volumes``, ``rebalance``,
``leaderElection``, each CA's under ``certificates``) and the four conditions with the
reasons ``conditions.py`` documents. ``kube.patch_status`` writes it, only when it
changes.

``Progressing`` is set here alone and says what the operator is doing or waiting for,
first match wins: a roll given up (False, ``RollingRestartStuck``); the brokers being
created (True, ``Creating``, until the Cluster is first Ready); a roll (True,
``RollingRestart``); a refused scale-down or drain (False, ``ScaleDownRefused`` /
``DrainRefused``: what the user must change, even while removed volumes drain on);
removed volumes draining (True, ``DrainingVolumes``); a scaling, a replica rebalance or
a copy off failed dirs under way or waiting (True, ``Scaling``); otherwise False,
``Idle``. What only the brokers can tell (partition counts,
``Degraded``) is reported when they answered: otherwise the counts go (unknown) and
Degraded stays as last seen.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tidelog_operator import conditions
from tidelog_operator.broker_config import CheckedConfig
from tidelog_operator.builders.listeners import client_bootstrap, listener_status
from tidelog_operator.cluster.disks import VolumeAction
from tidelog_operator.cluster.roll_step import RollStep
from tidelog_operator.cluster.rolling import RollAction
from tidelog_operator.cluster.scale_step import LEADERS, ScaleStep, election_record
from tidelog_operator.cluster.scaling import ScaleAction
from tidelog_operator.cluster.snapshot import ClusterSnapshot
from tidelog_operator.cluster.volume_step import VolumeStep
from tidelog_operator.conditions import Reason
from tidelog_operator.spec import ClusterSpec

__all__ = [
    "Election",
    "PassOutcome",
    "Progress",
    "cluster_status",
    "invalid_spec_status",
    "progress",
]

_REFUSALS = {
    ScaleAction.REFUSE_SCALE_DOWN: Reason.SCALE_DOWN_REFUSED,
    ScaleAction.REFUSE_DRAIN: Reason.DRAIN_REFUSED,
}


@dataclass(frozen=True)
class Election:
    """A preferred-leader election the pass ran, and the partitions it moved."""

    trigger: str
    elected: Sequence[tuple[str, int]]


@dataclass(frozen=True)
class PassOutcome:
    """A pass's decisions, and what carrying them out returned."""

    config: CheckedConfig
    roll: RollStep
    volumes: VolumeStep
    scale: ScaleStep
    election: Election | None = None
    children_applied: bool = True  # False: ConfigValid stays as last written
    # each CA's record under ``status.certificates`` (``ca_renewal.CaRecord.as_status``)
    certificates: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class Progress:
    """The Progressing condition: whether it holds, its reason and message."""

    holds: bool
    reason: str
    message: str


def progress(
    outcome: PassOutcome, snapshot: ClusterSnapshot, current: Mapping[str, Any]
) -> Progress:
    roll, volumes, scale = outcome.roll.decision, outcome.volumes.decision, outcome.scale.decision
    if roll.action is RollAction.GIVE_UP:
        return Progress(False, Reason.ROLLING_RESTART_STUCK, roll.reason)
    if _creating(snapshot, current):
        ready = sum(p.ready for p in snapshot.pods)
        return Progress(True, Reason.CREATING, f"{ready} brokers ready")
    if roll.action in (RollAction.RESTART, RollAction.WAIT, RollAction.ELECT_PREFERRED):
        return Progress(True, Reason.ROLLING_RESTART, roll.reason)
    if scale.action in _REFUSALS:
        return Progress(False, _REFUSALS[scale.action], scale.reason)
    if volumes.action in (VolumeAction.DRAIN, VolumeAction.WAIT) and volumes.volumes:
        return Progress(True, Reason.DRAINING_VOLUMES, volumes.reason)
    if scale.progressing:
        return Progress(True, Reason.SCALING, scale.reason)
    said = scale.action is ScaleAction.DONE and scale.reason  # e.g. nothing to move onto
    return Progress(False, Reason.IDLE, said or "nothing to change")


def _creating(snapshot: ClusterSnapshot, current: Mapping[str, Any]) -> bool:
    """Until the Cluster is first Ready: no Ready condition yet, or still False while
    Progressing says Creating."""
    found = current.get("conditions", [])
    ready = conditions.condition_status(found, conditions.READY)
    creating = any(
        c.get("type") == conditions.PROGRESSING and c.get("reason") == Reason.CREATING
        for c in found
    )
    return (ready is None or (ready != "True" and creating)) and not _all_ready(snapshot)


def _all_ready(snapshot: ClusterSnapshot) -> bool:
    running = snapshot.running or 0
    return (
        snapshot.brokers is not None
        and running > 0
        and sum(p.ready for p in snapshot.pods) >= running
    )


def cluster_status(
    current: Mapping[str, Any],
    snapshot: ClusterSnapshot,
    spec: ClusterSpec,
    outcome: PassOutcome,
    *,
    generation: int,
    now: str,
) -> dict[str, Any]:
    status = _merged(dict(current), outcome.roll.status)
    status = _merged(status, outcome.volumes.status)
    status = _merged(status, outcome.scale.status)
    brokers = snapshot.brokers
    if outcome.election is not None and brokers is not None:
        record = election_record(brokers, outcome.election.trigger, outcome.election.elected, now)
        if outcome.election.trigger in ("Schedule", "Request"):
            status[LEADERS] = record
    if outcome.certificates:
        status["certificates"] = {**(status.get("certificates") or {}), **outcome.certificates}
    counts = {} if brokers is None else brokers.replicas_per_broker()
    registered = set() if brokers is None else set(brokers.racks)
    status.update(
        readyBrokers=sum(
            p.ready and (brokers is None or p.id in registered) for p in snapshot.pods
        ),
        bootstrap=client_bootstrap(spec),
        listeners=listener_status(spec),
        brokers=[_broker_entry(p, snapshot, counts) for p in sorted(snapshot.pods, key=_id)],
    )
    status.pop("spreadBrokers", None)
    offline_dirs = [] if brokers is None else _offline_dirs(snapshot)
    if brokers is not None:
        status.update(
            underReplicatedPartitions=sum(len(p.isr) < len(p.replicas) for p in brokers.partitions),
            offlinePartitions=sum(p.leader is None for p in brokers.partitions),
        )
    else:
        status.pop("underReplicatedPartitions", None)
        status.pop("offlinePartitions", None)
    if brokers is not None and brokers.controller is not None:
        status["controller"] = brokers.controller
    else:
        status.pop("controller", None)
    found = status.get("conditions", [])

    def put(type_: str, holds: bool, reason: str, message: str) -> None:
        nonlocal found
        found = conditions.set_condition(
            found, type_, holds, reason, message, generation=generation, now=now
        )

    checked = outcome.config
    if outcome.children_applied:
        put(
            conditions.CONFIG_VALID,
            checked.valid,
            Reason.CONFIG_APPLIED if checked.valid else Reason.INVALID_CONFIG,
            "every key applied" if checked.valid else f"not applied: {checked.message()}",
        )
    ready = status["readyBrokers"]
    desired = spec.brokers.replicas
    if not snapshot.zookeeper_ready:
        put(
            conditions.READY,
            False,
            Reason.ZOOKEEPER_NOT_READY,
            "ZooKeeper has no quorum of ready servers",
        )
    elif ready < desired or brokers is None:
        put(
            conditions.READY, False, Reason.BROKERS_NOT_READY, f"{ready} of {desired} brokers ready"
        )
    elif status["offlinePartitions"]:
        put(
            conditions.READY,
            False,
            Reason.PARTITIONS_OFFLINE,
            f"{status['offlinePartitions']} partitions have no leader",
        )
    else:
        put(conditions.READY, True, Reason.ALL_BROKERS_READY, f"{desired} brokers ready")
    if brokers is None:
        pass  # Degraded as last seen: only the brokers can tell
    elif offline_dirs:
        put(
            conditions.DEGRADED,
            True,
            Reason.LOG_DIR_OFFLINE,
            "offline log dirs: " + "; ".join(offline_dirs),
        )
    elif status["underReplicatedPartitions"]:
        put(
            conditions.DEGRADED,
            True,
            Reason.UNDER_REPLICATED,
            f"{status['underReplicatedPartitions']} partitions have fewer in-sync replicas "
            "than replicas",
        )
    else:
        put(conditions.DEGRADED, False, Reason.HEALTHY, "every partition fully replicated")
    moving = progress(outcome, snapshot, current)
    put(
        conditions.PROGRESSING,
        moving.holds,
        moving.reason,
        moving.message + _progress(status, moving),
    )
    status["conditions"] = found
    status["observedGeneration"] = generation
    return status


def _id(pod) -> int:
    return pod.id


def _offline_dirs(snapshot: ClusterSnapshot) -> list[str]:
    assert snapshot.brokers is not None
    return [
        f"broker {broker}: {d.path}"
        for broker, dirs in sorted(snapshot.brokers.log_dirs.items())
        for d in dirs
        if d.error is not None
    ]


def _broker_entry(pod, snapshot: ClusterSnapshot, counts: Mapping[int, int]) -> dict[str, Any]:
    brokers = snapshot.brokers
    registered = brokers is not None and pod.id in brokers.racks
    entry: dict[str, Any] = {
        "id": pod.id,
        "pod": pod.name,
        "ready": pod.ready and (brokers is None or registered),
    }
    if pod.node:
        entry["node"] = pod.node
    if registered and brokers.racks[pod.id]:
        entry["rack"] = brokers.racks[pod.id]
    if brokers is not None:
        entry["replicas"] = counts.get(pod.id, 0)
        dirs = []
        for d in brokers.log_dirs.get(pod.id, ()):
            listed: dict[str, Any] = {"path": d.path, "usedBytes": d.used_bytes}
            if d.total_bytes >= 0:
                listed["capacityBytes"] = d.total_bytes
            if d.error is not None:
                listed["error"] = d.error
            dirs.append(listed)
        if dirs:
            entry["logDirs"] = dirs
    return entry


def _merged(current: dict[str, Any], updates: Mapping[str, Any]) -> dict[str, Any]:
    """``current`` with ``updates`` (a key set to None goes)."""
    status = {**current, **updates}
    for key in [k for k, v in updates.items() if v is None]:
        del status[key]
    return status


def _progress(status: Mapping[str, Any], moving: Progress) -> str:
    move = status.get("rebalance") or {}
    if moving.reason != Reason.SCALING or move.get("state") != "Running":
        return ""
    return (
        f": {move['partitionsDone']}/{move['partitions']} partitions, "
        f"{move['bytesDone']}/{move['bytes']} bytes"
    )


def invalid_spec_status(
    current: Mapping[str, Any], message: str, *, generation: int, now: str
) -> dict[str, Any]:
    """The status of a Cluster whose spec cannot be read (a maintenance window that is
    not a cron expression): ConfigValid False with ``message``, the rest as it was (the
    pass decides nothing on a spec it cannot read)."""
    status = dict(current)
    status["conditions"] = conditions.set_condition(
        status.get("conditions", []),
        conditions.CONFIG_VALID,
        False,
        Reason.INVALID_CONFIG,
        message,
        generation=generation,
        now=now,
    )
    return status
