"""The roller's step of a pass, pure: each broker of the snapshot as the roller observes
it (``rolling.BrokerObservation``: its pod's revision against the StatefulSet's, running,
started, ready, going, its volumes, whether it is the controller, and what this roll did
to it), the decision (``rolling.decide_roll``), its command and the ``rolling`` record.

The status key it owns, ``rolling``, while a roll is under way: ``revision`` (the pod
template revision rolled to), ``broker`` and ``reason`` (the last decision), and
``restarts``: per broker the roll restarted, ``attempts``, ``at`` (the last restart)
and ``elected`` (its preferred leaders were elected once it was back in every ISR).
The record goes when the roll is done; a new revision starts a new record.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tidelog_operator.cluster.commands import Command, ElectPreferredLeaders, RestartBroker
from tidelog_operator.cluster.rolling import (
    DEFAULT_LIMITS,
    BrokerObservation,
    PartitionState,
    RollAction,
    RollDecision,
    RollLimits,
    decide_roll,
)
from tidelog_operator.cluster.snapshot import ClusterSnapshot

__all__ = ["ROLLING", "RollStep", "roll_step"]

ROLLING = "rolling"
_STAMP = "%Y-%m-%dT%H:%M:%SZ"


@dataclass(frozen=True)
class RollStep:
    decision: RollDecision
    commands: tuple[Command, ...] = ()
    status: dict[str, Any] = field(default_factory=dict)


def roll_step(
    snapshot: ClusterSnapshot,
    status: Mapping[str, Any],
    *,
    now: datetime.datetime,
    limits: RollLimits = DEFAULT_LIMITS,
) -> RollStep:
    statefulset = snapshot.statefulset
    if statefulset is None or statefulset.going:
        if not snapshot.pods:
            return RollStep(RollDecision(RollAction.NOTHING), status={ROLLING: None})
        return RollStep(
            RollDecision(RollAction.WAIT, reason="the brokers' StatefulSet is being made anew")
        )
    revision = statefulset.update_revision
    record = dict(status.get(ROLLING) or {})
    if record.get("revision") != revision:
        record = {"revision": revision, "restarts": {}}
    restarts: dict[str, dict[str, Any]] = {
        k: dict(v) for k, v in record.get("restarts", {}).items()
    }
    if not revision or (
        all(p.revision == revision for p in snapshot.pods)
        and all(r.get("elected") for r in restarts.values())
    ):
        return RollStep(RollDecision(RollAction.NOTHING), status={ROLLING: None})
    brokers = snapshot.brokers
    controller = None if brokers is None else brokers.controller
    observed = [
        _observation(
            pod, revision, statefulset.templates, controller, restarts.get(str(pod.id)), now
        )
        for pod in snapshot.pods
    ]
    missing = frozenset(range(statefulset.replicas)) - {p.id for p in snapshot.pods}
    partitions = (
        []
        if brokers is None
        else [
            PartitionState(
                p.topic,
                p.partition,
                p.replicas,
                p.isr,
                -1 if p.leader is None else p.leader,
                p.min_isr,
            )
            for p in brokers.partitions
        ]
    )
    decision = decide_roll(observed, partitions, missing, limits)
    if brokers is None and _needs_brokers(decision, observed):
        why = snapshot.unreachable or "no broker is ready"
        decision = RollDecision(
            RollAction.WAIT, decision.broker, f"the brokers do not answer: {why}"
        )
    commands: tuple[Command, ...] = ()
    if decision.action is RollAction.RESTART:
        entry = restarts.setdefault(str(decision.broker), {"attempts": 0})
        entry.update(attempts=entry["attempts"] + 1, at=now.strftime(_STAMP), elected=False)
        commands = (RestartBroker(decision.broker, decision.reason),)
    elif decision.action is RollAction.ELECT_PREFERRED:
        restarts[str(decision.broker)]["elected"] = True
        commands = (ElectPreferredLeaders(decision.partitions, "Restart"),)
    elif decision.action is RollAction.NOTHING:
        return RollStep(decision, status={ROLLING: None})
    updated = {**record, "restarts": restarts, "reason": decision.reason}
    if decision.broker is not None:
        updated["broker"] = decision.broker
    return RollStep(decision, commands, {ROLLING: updated})


def _needs_brokers(decision: RollDecision, observed: list[BrokerObservation]) -> bool:
    """Whether the decision leans on what only the brokers tell (ISRs, the controller):
    anything but the restart of a stale broker that is not ready."""
    if decision.action is RollAction.RESTART:
        broker = next(b for b in observed if b.id == decision.broker)
        return broker.ready
    return decision.action is RollAction.ELECT_PREFERRED


def _observation(pod, revision, templates, controller, restart, now) -> BrokerObservation:
    since = None
    if restart and restart.get("at"):
        at = datetime.datetime.strptime(restart["at"], _STAMP).replace(tzinfo=datetime.UTC)
        since = (now - at).total_seconds()
    return BrokerObservation(
        id=pod.id,
        stale=pod.revision != revision,
        pod_exists=True,
        running=pod.running,
        started=pod.started,
        ready=pod.ready,
        going=pod.going,
        lacks_volumes=not templates <= set(pod.claims),
        controller=pod.id == controller,
        restarted=bool(restart) and not restart.get("elected"),
        attempts=restart.get("attempts", 0) if restart else 0,
        since_restart_s=since,
    )
