"""The scaler's step of a pass, pure: from the snapshot, the spec and the status, the
decision (``scaling.decide_scale``), the commands that carry it out (a reassignment
planned by the planner with the throttle that ``kafka-reassign-partitions.sh
--throttle`` sets, its finish, a preferred-leader election, the StatefulSet's shrink)
and the status keys it sets (seed 003: 分区重分配, 修改主题限速, C Preferred领导者选举).

The status keys it owns:

* ``rebalance``: the last movement of replicas: ``operation`` (``AddBrokers``,
  ``RemoveBrokers``, ``Rebalance``, ``DrainFailedDirs``), ``brokers``, ``state``
  (``Running``, ``Done``, ``Refused``), ``partitions`` and ``partitionsDone``,
  ``replicas`` (replicas created), ``bytes`` and ``bytesDone`` (their bytes),
  ``imbalanceBefore`` and ``imbalanceAfter`` (replica spread over the brokers, the
  latter as planned), ``throttleBytesPerSecond`` (0: none), ``startedAt``,
  ``finishedAt``, ``message``;
* ``leaderElection``: the last preferred-leader election: ``trigger`` (``Schedule``,
  ``Request``), ``at``, ``leadersMoved``, ``imbalanceBefore``, ``imbalanceAfter``
  (leader spread over the brokers); written by the status function once the election's
  outcome is known (``election_record``).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tidelog.admin.groups import TopicPartition
from tidelog.admin.planner import (
    ClusterState,
    Plan,
    PlanError,
    plan_add_brokers,
    plan_rebalance_replicas,
    plan_remove_brokers,
    plan_replace_replicas,
)
from tidelog.cli.reassignment_file import throttled_replicas
from tidelog_operator.cluster.balance import election_due, replicas_of, spread
from tidelog_operator.cluster.commands import (
    Command,
    ElectPreferredLeaders,
    FinishReassignment,
    StartReassignment,
)
from tidelog_operator.cluster.scaling import (
    ScaleAction,
    ScaleDecision,
    ScaleObservation,
    decide_scale,
)
from tidelog_operator.cluster.snapshot import BrokersView
from tidelog_operator.spec import ClusterSpec

__all__ = ["LEADERS", "MOVE", "ScaleStep", "election_record", "scale_step"]

MOVE = "rebalance"
LEADERS = "leaderElection"
_OPERATIONS = {
    ScaleAction.ADD_BROKERS: "AddBrokers",
    ScaleAction.REMOVE_BROKERS: "RemoveBrokers",
    ScaleAction.REBALANCE_REPLICAS: "Rebalance",
    ScaleAction.REPLACE_LOST_REPLICAS: "DrainFailedDirs",
}
_REFUSED = {
    ScaleAction.REFUSE_SCALE_DOWN: "RemoveBrokers",
    ScaleAction.REFUSE_DRAIN: "DrainFailedDirs",
}


@dataclass(frozen=True)
class ScaleStep:
    """The decision, the commands carrying it out, the status keys it sets (None:
    removes the key), whether it carries out the annotation's request (which then goes)
    and, for a shrink, the brokers the StatefulSet gets."""

    decision: ScaleDecision
    commands: tuple[Command, ...] = ()
    status: dict[str, Any] = field(default_factory=dict)
    handled: bool = False
    shrink_to: int | None = None


def _stamp(now: datetime.datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def scale_step(
    brokers: BrokersView | None,
    spec: ClusterSpec,
    status: Mapping[str, Any],
    *,
    running: int | None,
    requested: str | None,
    now: datetime.datetime,
    unreachable: str | None = None,
) -> ScaleStep:
    """The step on ``brokers`` (None: they did not answer, ``unreachable`` says why);
    ``running`` is the StatefulSet's replicas (None: not there yet), ``requested`` the
    balancing the annotation asks for."""
    if running is None:
        return ScaleStep(
            ScaleDecision(ScaleAction.WAIT, reason="the brokers' StatefulSet is not there")
        )
    move = dict(status.get(MOVE) or {})
    ours = move.get("state") == "Running"
    if brokers is None:
        pending = ours or requested or spec.brokers.replicas != running
        reason = (
            f"cannot move data now: the brokers do not answer: {unreachable or 'no broker ready'}"
        )
        return ScaleStep(ScaleDecision(ScaleAction.WAIT, reason=reason, progressing=bool(pending)))
    last_election = (status.get(LEADERS) or {}).get("at")
    state = brokers.cluster_state()
    lost = _lost_replicas(brokers) if spec.drain_failed_dirs else {}
    # a replacement needs a live broker that holds no replica of the partition yet
    stranded = {
        tp: gone
        for tp, gone in lost.items()
        if len(state.brokers) - len(state.assignment[tp]) < len(gone)
    }
    decision = decide_scale(
        ScaleObservation(
            desired=spec.brokers.replicas,
            running=running,
            live=frozenset(state.brokers),
            assignment=state.assignment,
            reassigning=len(brokers.reassigning),
            ours_in_progress=ours,
            requested=requested,
            election_due=election_due(last_election, spec.rebalance.leader_interval_seconds, now),
            lost={tp: gone for tp, gone in lost.items() if tp not in stranded},
            stranded=stranded,
            failed_dirs=_failed_dirs(brokers),
        )
    )
    return _carry(decision, brokers, state, spec, move, requested, now, lost)


def _carry(
    decision: ScaleDecision,
    brokers: BrokersView,
    state: ClusterState,
    spec: ClusterSpec,
    move: dict[str, Any],
    requested: str | None,
    now: datetime.datetime,
    lost: Mapping[TopicPartition, frozenset[int]],
) -> ScaleStep:
    action = decision.action
    if action is ScaleAction.WAIT:
        if move.get("state") != "Running":
            return ScaleStep(decision)
        left = sum(
            state.sizes.get(tp, 0) * len(adding) for tp, adding in brokers.reassigning.items()
        )
        move["partitionsDone"] = max(0, move["partitions"] - len(brokers.reassigning))
        move["bytesDone"] = max(0, move["bytes"] - left)
        return ScaleStep(decision, status={MOVE: move})
    if action is ScaleAction.FINISH:
        move.update(
            state="Done",
            partitionsDone=move["partitions"],
            bytesDone=move["bytes"],
            finishedAt=_stamp(now),
        )
        topics = tuple(sorted({tp.topic for tp in state.assignment}))
        finish = FinishReassignment(tuple(sorted(state.brokers)), topics)
        return ScaleStep(decision, (finish,), {MOVE: move})
    if action in _REFUSED:
        refused = {
            "operation": _REFUSED[action],
            "brokers": list(decision.brokers),
            "state": "Refused",
            "message": decision.reason,
        }
        return ScaleStep(decision, status={MOVE: refused})
    if action in _OPERATIONS:
        return _move(decision, state, spec, move, _stamp(now), lost)
    if action is ScaleAction.ELECT_LEADERS:
        trigger = "Request" if requested == "leaders" else "Schedule"
        election = ElectPreferredLeaders(None, trigger)
        return ScaleStep(decision, (election,), handled=trigger == "Request")
    if action is ScaleAction.SHRINK:
        return ScaleStep(decision, shrink_to=spec.brokers.replicas)
    if action is ScaleAction.DONE:
        return ScaleStep(decision, status={MOVE: None} if move.get("state") == "Refused" else {})
    raise AssertionError(f"no step for {action}")


def _move(
    decision: ScaleDecision,
    state: ClusterState,
    spec: ClusterSpec,
    move: dict[str, Any],
    stamp: str,
    lost: Mapping[TopicPartition, frozenset[int]],
) -> ScaleStep:
    """Plan a movement of replicas; a plan without moves is done at once, and said."""
    action = decision.action
    handled = action is ScaleAction.REBALANCE_REPLICAS
    try:
        plan = _plan(action, state, decision.brokers, lost)
    except PlanError as error:
        waiting = ScaleDecision(
            ScaleAction.WAIT, decision.brokers, f"cannot move data now: {error}", True
        )
        return ScaleStep(waiting)
    throttle = spec.rebalance.throttle_bytes_per_second
    record = _record(action, decision, plan, state, throttle, stamp)
    if not plan.moves:
        nothing = (
            f"nothing to move onto brokers {_ids(decision.brokers)}: the replicas are as "
            "even as the planner can make them"
            if action is ScaleAction.ADD_BROKERS
            else decision.reason
        )
        done = ScaleDecision(ScaleAction.DONE, decision.brokers, nothing)
        same = {k: move.get(k) for k in ("operation", "brokers", "state", "partitions")}
        if same == {k: record[k] for k in same} | {"state": "Done"}:
            return ScaleStep(done, handled=handled)  # said already
        record.update(state="Done", finishedAt=stamp, message=nothing)
        return ScaleStep(done, status={MOVE: record}, handled=handled)
    throttled = throttled_replicas(plan.current, plan.moves) if throttle else {}
    start = StartReassignment(
        moves=dict(plan.moves),
        throttle=throttle,
        brokers=tuple(sorted(state.brokers)),
        throttled={topic: tuple(pair) for topic, pair in throttled.items()},
        what=f"{action.value} {list(decision.brokers)}",
    )
    return ScaleStep(decision, (start,), {MOVE: record}, handled=handled)


def _plan(
    action: ScaleAction,
    state: ClusterState,
    brokers: tuple[int, ...],
    lost: Mapping[TopicPartition, frozenset[int]],
) -> Plan:
    if action is ScaleAction.ADD_BROKERS:
        return plan_add_brokers(state, brokers)
    if action is ScaleAction.REMOVE_BROKERS:
        return plan_remove_brokers(state, brokers)
    if action is ScaleAction.REPLACE_LOST_REPLICAS:
        return plan_replace_replicas(state, lost)
    return plan_rebalance_replicas(state)


def _record(
    action: ScaleAction,
    decision: ScaleDecision,
    plan: Plan,
    state: ClusterState,
    throttle: int,
    stamp: str,
) -> dict[str, Any]:
    """The status of a movement as it starts."""
    staying = [
        b
        for b in state.brokers
        if action is not ScaleAction.REMOVE_BROKERS or b not in decision.brokers
    ]
    return {
        "operation": _OPERATIONS[action],
        "brokers": list(decision.brokers),
        "state": "Running",
        "partitions": len(plan.moves),
        "partitionsDone": 0,
        "replicas": plan.replicas_moved,
        "bytes": plan.bytes_moved,
        "bytesDone": 0,
        "imbalanceBefore": spread(replicas_of(plan.current), state.brokers),
        "imbalanceAfter": spread(replicas_of(plan.target), staying),
        "throttleBytesPerSecond": throttle,
        "startedAt": stamp,
        "message": decision.reason,
    }


def _failed_dirs(brokers: BrokersView) -> tuple[str, ...]:
    """``broker B: DIR`` of each offline log dir of a live broker."""
    return tuple(
        f"broker {broker}: {d.path}"
        for broker, dirs in sorted(brokers.log_dirs.items())
        for d in dirs
        if d.error is not None
    )


def _lost_replicas(brokers: BrokersView) -> dict[TopicPartition, frozenset[int]]:
    """Partition → live brokers whose replica of it is on a failed log dir (Metadata's
    offline replicas; those of brokers that are down are not lost to a dir)."""
    return {
        p.tp: frozenset(b for b in p.offline_replicas if b in brokers.racks)
        for p in brokers.partitions
        if any(b in brokers.racks for b in p.offline_replicas)
    }


def election_record(
    brokers: BrokersView, trigger: str, elected: Sequence[TopicPartition], stamp: str
) -> dict[str, Any]:
    """The ``leaderElection`` record of an election that moved ``elected``."""
    leaders = {p.tp: p.leader for p in brokers.partitions}
    assignment = brokers.assignment
    moved = [tp for tp in elected if tp in assignment]
    after = leaders | {tp: assignment[tp][0] for tp in moved}
    return {
        "trigger": trigger,
        "at": stamp,
        "leadersMoved": len(moved),
        "imbalanceBefore": spread(leaders.values(), brokers.racks),
        "imbalanceAfter": spread(after.values(), brokers.racks),
    }


def _ids(brokers: Sequence[int]) -> str:
    return ", ".join(map(str, brokers))
